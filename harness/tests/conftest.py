import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest  # noqa: E402

from blklab import cited_runs, paths  # noqa: E402

# The reference drive's published runs (read-beside-writes-max under kyber).
REFERENCE_RUNS = paths.REPO / "tests" / "reference" / "hotcloudperf24-kyber" / "runs.toml"
REFERENCE_JOB = "read-beside-writes-max"


@pytest.fixture(scope="session")
def reference_drive(tmp_path_factory) -> Path:
    """The reference drive's rep_0 as a drive directory, as
    tests/reference/hotcloudperf24-kyber/drive_dir.py writes it."""
    out = tmp_path_factory.mktemp("hotcloudperf24-kyber") / "rep_0"
    doc = cited_runs.load(REFERENCE_RUNS).fio_doc("rep_0")
    cited_runs.write_drive_dir(out, {REFERENCE_JOB: doc})
    return out
