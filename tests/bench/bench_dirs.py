"""Where a benchmark script's files and runs go."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def add_keep_option(parser) -> None:
    parser.add_argument("--keep", type=Path,
                        help="keep the runs here (default: a temporary directory)")


@contextlib.contextmanager
def bench_dirs(keep: Path | None, prefix: str) -> Iterator[tuple[Path, Path]]:
    """(scratch, out): a temporary directory for the script's own files
    (scenarios it writes, QEMU variants it builds), removed at the end, and
    the directory its runs go to: `keep` if given, else the scratch one."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield scratch, keep or scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
