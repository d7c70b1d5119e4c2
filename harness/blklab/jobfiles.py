"""Files a scenario's jobs bring into the guest: a customer's fio job file
(`[[job]] fio_file = ...`) and the traces that jobs replay (`read_iolog`).

Both are read when the scenario is validated, so a bad option or a missing
trace is an error before any VM boots, and their bytes travel with the
scenario (a remote worker needs no copy). In the guest they sit under
/job/files/. A fio job file is used unchanged but for `filename` (and
`directory`, which only places it): those lines are left out, so that the
device under test, which the guest passes on the command line, applies.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from blklab.errors import ScenarioError

GUEST_DIR = "/job/files"
_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
_PER_CPU = re.compile(r"^(.*\.blktrace\.)(\d+)$")
# Lines blklab leaves out of a customer's job file: the guest names the file.
DROPPED_OPTIONS = ("filename", "directory")
MAX_FILE_BYTES = 256 << 20


@dataclass(frozen=True)
class Attachment:
    """A file that goes to the guest as /job/files/<name>."""

    name: str
    data: bytes
    source: str  # where it was read, for messages and the manifest
    sha256: str

    @property
    def guest_path(self) -> str:
        return f"{GUEST_DIR}/{self.name}"


def _read(path: Path, shown: str, key: str, as_given: str) -> bytes:
    """The file's bytes; errors name it as the scenario gives it (relative
    to the scenario's directory)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(shown, key, f"{as_given}: no such file (paths are relative to "
                            "the scenario file)") from None
    except IsADirectoryError:
        raise ScenarioError(shown, key, f"{as_given}: is a directory") from None
    except OSError as e:
        raise ScenarioError(shown, key, f"{as_given}: cannot be read: {e.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(shown, key, f"{as_given}: {len(data)} bytes; at most "
                            f"{MAX_FILE_BYTES} go into the guest's initramfs")
    return data


def _attachment(name: str, data: bytes, source: Path) -> Attachment:
    return Attachment(name, data, str(source), hashlib.sha256(data).hexdigest())


def trace_files(scenario_path: Path, shown: str, key: str, value: str,
                workload: str, prefix: str) -> list[Attachment]:
    """The file(s) read_iolog names, relative to the scenario's directory:
    one iolog or blktrace dump, or blktrace's per-CPU files (naming one,
    `<dev>.blktrace.<n>`, takes them all). fio replays one file only."""
    if ":" in value:
        raise ScenarioError(shown, key, "one trace per job (fio's ':' list assigns files to "
                            "numjobs clones, which blklab does not do)")
    path = (scenario_path.parent / value).resolve()
    m = _PER_CPU.match(path.name)
    if not m:
        return [_attachment(f"{prefix}{path.name}", _read(path, shown, key, value), path)]
    siblings = sorted((p for p in path.parent.glob(m.group(1) + "*")
                       if _PER_CPU.match(p.name) and _PER_CPU.match(p.name).group(1) == m.group(1)),
                      key=lambda p: int(_PER_CPU.match(p.name).group(2)))
    if path not in siblings:
        _read(path, shown, key, value)  # raises: it does not exist
    if workload == "fio" and len(siblings) > 1:
        raise ScenarioError(shown, key, f"{value} is one of {len(siblings)} per-CPU blktrace "
                            "files; fio replays one file: merge them with 'blkparse -i "
                            f"{m.group(1)[:-len('.blktrace.')]} -d merged.bin -O' and name that, "
                            "or run with workload = \"blkgen\", which merges them")
    return [_attachment(f"{prefix}{p.name}", _read(p, shown, key, str(p)), p) for p in siblings]


@dataclass(frozen=True)
class JobFile:
    attachment: Attachment  # the rewritten file, as the guest gets it
    sections: tuple[str, ...]  # job sections that run
    dropped: tuple[str, ...]  # "file:line: option" lines left out


def parse_fio_file(scenario_path: Path, shown: str, key: str, value: str,
                   sections: list[str] | None, known: dict[str, dict] | None,
                   not_yet: tuple[str, ...], workload: str, prefix: str) -> JobFile:
    """Reads and checks a fio job file. `known` is blkgen's option table
    (None: blkgen is not built and the run checks the names); with workload
    blkgen every option must be in it, with fio none of blkgen's own may
    appear. With `sections`, only those job sections (and
    every [global]) are kept, as fio --section does."""
    path = (scenario_path.parent / value).resolve()
    data = _read(path, shown, key, value)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(shown, key, f"{value}: not UTF-8 text (byte {e.start})") from None
    out: list[str] = []
    found: list[str] = []
    dropped: list[str] = []
    current: str | None = None
    keep = True
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{value}:{n}"
        if not line or line[0] in ";#":
            out.append(raw)
            continue
        m = _SECTION.match(line)
        if m:
            current = m.group(1).strip()
            if current != "global":
                found.append(current)
            keep = current == "global" or sections is None or current in sections
            if keep:
                out.append(raw)
            continue
        if current is None:
            raise ScenarioError(shown, key, f"{where}: option outside a [section]: {line[:60]!r}")
        name = line.split("=", 1)[0].split()[0].replace("-", "_")
        if name == "include":
            raise ScenarioError(shown, key, f"{where}: 'include' is not supported: put the "
                                "included options into the file")
        if name in DROPPED_OPTIONS:
            dropped.append(f"{where}: {name}")
            continue
        if known is None:
            pass
        elif workload == "blkgen" and name not in known:
            why = ("is not supported by blkgen yet; run it with workload = \"fio\""
                   if name in not_yet else "is not a blkgen option (blkgen --help lists them)")
            raise ScenarioError(shown, key, f"{where}: option '{name}' {why}")
        if workload == "fio" and name in known and not known[name]["fio"]:
            raise ScenarioError(shown, key, f"{where}: option '{name}' is blkgen's own and fio "
                                "has none of that name; run it with workload = \"blkgen\"")
        if keep:
            out.append(raw)
    if not found:
        raise ScenarioError(shown, key, f"{value}: defines no job (only [global] or nothing)")
    for s in sections or []:
        if s not in found:
            raise ScenarioError(shown, key.rsplit(".", 1)[0] + ".sections",
                                f"'{s}' is not a job section of {value} "
                                f"(it has: {', '.join(found)})")
    if len(set(found)) != len(found):
        dup = next(s for s in found if found.count(s) > 1)
        raise ScenarioError(shown, key, f"{value}: job section [{dup}] appears twice")
    body = ("\n".join(out) + "\n").encode()
    return JobFile(_attachment(f"{prefix}{path.name}", body, path),
                   tuple(sections) if sections else tuple(found), tuple(dropped))
