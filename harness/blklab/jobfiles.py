"""Files a scenario's jobs bring into the guest: a customer's fio job file
(`[[job]] fio_file = ...`) or fio command line (`[[job]] fio_command =
...`, turned into the job file fio would read), and the traces that jobs
replay (`read_iolog`).

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
import shlex
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
    body, found, dropped = _check_job_text(text, shown, key, value, sections, known, not_yet,
                                           workload)
    return JobFile(_attachment(f"{prefix}{path.name}", body, path),
                   tuple(sections) if sections else tuple(found), tuple(dropped))


# fio's own command-line options (init.c l_opts), which are not job
# options. The harness runs fio and reads its JSON, so the ones that only
# shape fio's output are left out; the others would change what fio is.
_OUTPUT_ONLY = ("output", "output-format", "minimal", "append-terse", "terse-version", "eta",
                "eta-interval", "eta-newline", "status-interval")
_NOT_JOB_OPTIONS = ("latency-log", "bandwidth-log", "version", "help", "cmdhelp", "enghelp",
                    "showcmd", "readonly", "debug", "parse-only", "section", "inflate-log",
                    "alloc-size", "profile", "warnings-fatal", "max-jobs", "server",
                    "daemonize", "client", "remote-config", "cpuclock-test", "crctest",
                    "memcpytest", "idle-prof", "trigger-file", "trigger-timeout", "trigger",
                    "trigger-remote", "aux-path", "merge-blktrace-only")


def fio_command_job_text(command: str, shown: str, key: str) -> tuple[str, list[str]]:
    """A fio command line as the job file fio builds from it: options
    before the first --name go to [global], each --name=N starts job [N],
    --opt=value and --flag become lines of the current section. The
    command is kept as a comment at the top. Returns the text and the
    options left out (fio's output options, which the harness sets)."""
    try:
        argv = shlex.split(command, comments=False)
    except ValueError as e:
        raise ScenarioError(shown, key, f"cannot be split into words like a shell: {e}") from None
    if not argv or Path(argv[0]).name != "fio":
        raise ScenarioError(shown, key, "must be a fio command line, starting with 'fio' "
                            "(e.g. \"fio --name=r --rw=randread --bs=4k\")")
    sections: list[tuple[str, list[str]]] = [("global", [])]
    dropped: list[str] = []
    previous = ""
    for arg in argv[1:]:
        if not arg.startswith("-") or arg in ("-", "--"):
            if previous.startswith("-") and "=" not in previous:
                raise ScenarioError(shown, key, f"'{arg}' follows '{previous}': write "
                                    f"{previous}={arg} (blklab reads --option=value and --flag)")
            raise ScenarioError(shown, key, f"'{arg}' is not a --option: blklab reads "
                                "--option=value and --flag; a job file given to fio goes in "
                                "fio_file instead")
        previous = arg
        name, eq, value = arg.lstrip("-").partition("=")
        if not name:
            raise ScenarioError(shown, key, f"'{arg}' names no option")
        if name in _OUTPUT_ONLY:
            dropped.append(f"{key}: {arg}")
            continue
        if name in _NOT_JOB_OPTIONS:
            raise ScenarioError(shown, key, f"'{arg}' is one of fio's own command-line options, "
                                "not a job option; blklab runs fio itself and leaves out only "
                                f"those that shape its output ({', '.join(_OUTPUT_ONLY)})")
        if name == "name":
            if not value:
                raise ScenarioError(shown, key, f"'{arg}': --name needs a job name")
            if "]" in value or "\n" in value:
                raise ScenarioError(shown, key, f"'{arg}': a job name cannot hold ']'")
            sections.append((value, []))
            continue
        sections[-1][1].append(f"{name}={value}" if eq else name)
    lines = ["; " + shlex.join(argv)]
    for section, options in sections:
        if section == "global" and not options:
            continue
        lines.append(f"[{section}]")
        lines.extend(options)
    return "\n".join(lines) + "\n", dropped


def _command_origins(text: str) -> list[str]:
    """For each line of fio_command_job_text's file, the argument it came
    from (--name=N for a section), so that messages name what the user
    wrote and not a line of a file they never saw."""
    out = []
    for line in text.splitlines():
        m = _SECTION.match(line)
        if line.startswith(";"):
            out.append("the command")
        elif m:
            out.append(f"'--name={m.group(1)}'")
        else:
            out.append(f"'--{line}'")
    return out


def with_runtime(command: str, runtime: str) -> str:
    """The command with each --runtime=... set to `runtime` (a short form's
    runtime); a command that cannot be split is returned as it is, for
    validation to name."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    out = [f"{a.split('=', 1)[0]}={runtime}" if a.lstrip("-").startswith("runtime=") else a
           for a in argv]
    return shlex.join(out) if out != argv else command


def fio_command_sections(command: str, shown: str, key: str) -> list[str]:
    """The job sections a fio command line defines, in order."""
    text, _ = fio_command_job_text(command, shown, key)
    return [m.group(1).strip() for m in map(_SECTION.match, text.splitlines())
            if m and m.group(1).strip() != "global"]


def parse_fio_command(shown: str, key: str, command: str, known: dict[str, dict] | None,
                      not_yet: tuple[str, ...], workload: str, prefix: str) -> JobFile:
    """A fio command line, turned into its job file and checked like one
    (parse_fio_file): the guest gets that file."""
    text, left_out = fio_command_job_text(command, shown, key)
    body, found, dropped = _check_job_text(text, shown, key, key, None, known, not_yet,
                                           workload, _command_origins(text))
    att = Attachment(f"{prefix}command.fio", body, f"{shown}: {key}",
                     hashlib.sha256(body).hexdigest())
    return JobFile(att, tuple(found), tuple(left_out + dropped))


def _check_job_text(text: str, shown: str, key: str, value: str, sections: list[str] | None,
                    known: dict[str, dict] | None, not_yet: tuple[str, ...], workload: str,
                    origins: list[str] | None = None) -> tuple[bytes, list[str], list[str]]:
    """A fio job file's text checked as parse_fio_file says: the text the
    guest gets, the job sections found and the lines left out. `value`
    names the text in messages (the file, or the command line's key);
    `origins`, when given, names each line's source instead of file:line."""
    out: list[str] = []
    found: list[str] = []
    dropped: list[str] = []
    current: str | None = None
    keep = True
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = origins[n - 1] if origins else f"{value}:{n}"
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
        if workload == "fio" and known is not None and name in known and not known[name]["fio"]:
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
    return ("\n".join(out) + "\n").encode(), found, dropped
