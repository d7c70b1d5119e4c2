"""Runs one input against one QEMU, and the loops built on that: replaying a
corpus, fuzzing for a time, minimising a failing input.

A run starts QEMU with the family's command line, runs its setup, executes
the input's records in order and its finish, and takes QEMU's verdict
(qtest.QTestVM.verdict). With `coverage`, QEMU also logs the family's trace
events, and the set of (event, previous event) pairs the run produced is its
coverage: an input that adds pairs joins the in-memory corpus that mutation
draws from. That is all the feedback there is; QEMU is not instrumented.
"""

import collections
import dataclasses
import hashlib
import os
import pathlib
import random
import re
import tempfile
import time

from . import fuzzinput
from .common import Header
from .qtest import QemuGone, QTestVM

TRACE_RE = re.compile(rb"^(?:\d+@[0-9.]+:)?([a-z][a-z0-9_]*) ", re.M)


@dataclasses.dataclass
class Result:
    verdict: object
    failed_at: int          # index of the record running when QEMU failed
    records_run: int
    commands: int
    seconds: float
    trace: list             # one line per record (when asked for)
    coverage: frozenset
    # The fault paths it reached (with coverage): what the trace log shows
    # (Family.marks, the device model's fault events) and what the fuzzer
    # saw as the guest (Family.observed: error statuses, a failed
    # controller). They count as coverage too.
    marks: frozenset = frozenset()


def is_sanitizer_build(qemu):
    """Whether `qemu` (a bin/qemu-system-x86_64 path) is a sanitizer build,
    as its build's manifest.json says (build-qemu.sh's variant)."""
    manifest = pathlib.Path(qemu).resolve().parents[1] / "manifest.json"
    return manifest.is_file() and '"variant": "sanitize"' in manifest.read_text()


def qemu_env(qemu):
    """The environment QEMU runs in: sanitizer options for a sanitizer
    build, from tests/sanitizers.env when it is there, but without leak
    detection unless BLKLAB_FUZZ_LEAKS=1: what the fuzzer looks for is a
    guest crashing, aborting or hanging QEMU and memory errors, and stock
    QEMU code leaks small allocations on error paths at every exit."""
    env = dict(os.environ)
    sanitize = is_sanitizer_build(qemu)
    defaults = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:print_summary=1",
                "UBSAN_OPTIONS": "halt_on_error=1:abort_on_error=1:print_stacktrace=1"}
    env_file = pathlib.Path(__file__).resolve().parents[3] / "sanitizers.env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            m = re.match(r"^(ASAN_OPTIONS|UBSAN_OPTIONS)='?([^']*)'?$", line)
            if m:
                defaults[m.group(1)] = m.group(2)
    if os.environ.get("BLKLAB_FUZZ_LEAKS") != "1":
        defaults["ASAN_OPTIONS"] = re.sub(
            r"detect_leaks=[0-9]", "", defaults["ASAN_OPTIONS"]).strip(":")
        defaults["ASAN_OPTIONS"] += ":detect_leaks=0"
    if sanitize:
        for k, v in defaults.items():
            env.setdefault(k, v)
    return env


def run_input(family_cls, inp, qemu, workdir, timeout=10.0, trace=False,
              coverage=False, stop_at=None, extra_args=(), devmodel=True):
    """Runs `inp` (a fuzzinput.Input) once; returns a Result."""
    fam = family_cls(inp.header)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    fd, stderr_path = tempfile.mkstemp(prefix="stderr-", dir=workdir)
    os.close(fd)
    trace_path = stderr_path.replace("stderr-", "trace-")
    args = fam.qemu_args() + fam.header.fault_args() + list(extra_args)
    if not devmodel:
        # For triage: the same devices as stock QEMU has them.
        args = [re.sub(r",(devmodel-[a-z]+|ncq-depth|mqes)=[^,]*", "", a)
                for a in args]
    if coverage:
        for pattern in fam.TRACE_EVENTS:
            args += ["-trace", f"enable={pattern}"]
        args += ["-D", trace_path]
    lines = [f"# {fam.describe()}"] if trace else []
    records = inp.records if stop_at is None else inp.records[:stop_at]
    start = time.monotonic()
    gone = None
    done = 0
    with QTestVM(str(qemu), args, stderr_path, timeout=timeout,
                 env=qemu_env(qemu)) as vm:
        try:
            fam.header.start_faults(vm)
            fam.setup(vm)
            for i, rec in enumerate(records):
                desc = fam.execute(vm, rec)
                done = i + 1
                if trace:
                    lines.append(f"{i:5d} {desc}")
            fam.finish(vm)
            vm.check_idle()
        except QemuGone as e:
            gone = e
            if trace and done < len(records):
                op = fam.table[records[done][0]]
                lines.append(f"{done:5d} {op} (QEMU failed during it)")
        verdict = vm.verdict(gone)
    cov = frozenset()
    marks = set()
    if coverage and os.path.exists(trace_path):
        with open(trace_path, "rb") as f:
            text = f.read()
        names = TRACE_RE.findall(text)
        cov = frozenset(zip([b""] + names, names))
        marks = {n.decode() for n in set(names) if n.decode() in fam.FAULT_EVENTS}
        marks |= fam.marks(text.decode(errors="replace"))
        os.unlink(trace_path)
    if coverage:
        marks |= fam.observed
        cov |= {(b"mark", m.encode()) for m in marks}
    if verdict.ok:
        os.unlink(stderr_path)
    else:
        verdict.stderr_path = stderr_path
    return Result(verdict, done, done, vm.commands, time.monotonic() - start,
                  lines, cov, frozenset(marks))


def run_confirmed(family_cls, inp, qemu, workdir, timeout, **kw):
    """run_input(), but a hang must happen again with three times the
    timeout to count: on a loaded machine a slow answer is not a hang."""
    r = run_input(family_cls, inp, qemu, workdir, timeout, **kw)
    if r.verdict.kind == "hang":
        again = run_input(family_cls, inp, qemu, workdir, 3 * timeout, **kw)
        if again.verdict.kind != "hang":
            return again
    return r


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def minimize(family_cls, inp, qemu, workdir, signature, budget_s, timeout,
             log=print):
    """Drops records while the failure keeps its signature, within budget_s
    seconds: first everything after the record that failed, then chunks
    (halves, quarters, ... single records). Returns the smallest input."""
    deadline = time.monotonic() + budget_s

    def fails(candidate):
        r = run_input(family_cls, candidate, qemu, workdir, timeout)
        same = (not r.verdict.ok) and r.verdict.signature() == signature
        if r.verdict.stderr_path:
            os.unlink(r.verdict.stderr_path)
        return same, r

    best = inp
    ok, r = fails(best)
    if not ok:
        log(f"minimize: the failure does not reproduce ({r.verdict.kind})")
        return best
    cut = best.with_records(best.records[:r.failed_at + 1])
    if len(cut.records) < len(best.records):
        ok, _ = fails(cut)
        if ok:
            best = cut
    chunk = max(1, len(best.records) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i = 0
        removed = False
        while i < len(best.records) and time.monotonic() < deadline:
            candidate = best.with_records(best.records[:i] +
                                          best.records[i + chunk:])
            ok, _ = fails(candidate)
            if ok:
                best = candidate
                removed = True
            else:
                i += chunk
        log(f"minimize: {len(best.records)} records (chunk {chunk})")
        if chunk == 1 and not removed:
            break
        chunk = chunk // 2 if chunk > 1 else 1
        if chunk == 1 and not removed and len(best.records) > 64:
            break
    return best


def fault_kind(family_cls, inp):
    """The fault kind `inp`'s header draws for the family's drive under
    test, or "none"."""
    header = Header(inp.header)
    header.set_fault(family_cls.DEVICE_KIND)
    return header.fault.kind if header.fault else "none"


class Fuzzer:
    """Generates and mutates inputs for `seconds`, starting from `seeds`
    (inputs already replayed). Failing inputs are written to `out` as
    crash-<sha1>.bin with a .txt note; new-coverage inputs to out/corpus."""

    def __init__(self, family_cls, qemu, out, seeds, rng_seed, timeout,
                 max_records=600, log=print, slow_host=True, feedback=True):
        self.family_cls = family_cls
        self.qemu = qemu
        self.out = pathlib.Path(out)
        self.corpus = list(seeds)
        self.rng = random.Random(rng_seed)
        self.timeout = timeout
        self.max_records = max_records
        self.log = log
        self.seen = set()
        self.failures = {}          # signature -> path
        self.runs = 0
        # Without a slow host (null-co latency-ns, which is host time) a run
        # depends on its input only.
        self.slow_host = slow_host
        # With feedback, an input that reaches new trace-event pairs joins
        # the corpus that mutation draws from. Which pairs a run logs
        # depends a little on the host (a bottom half runs before or after
        # the next qtest command arrives), so only without feedback does a
        # seed give the same inputs every time.
        self.feedback = feedback
        self.inputs_sha1 = hashlib.sha1()   # of every input tried, in order
        # How many runs drew each fault kind from their header ("none": no
        # fault), so a report can say which fault paths the runs tried.
        self.fault_kinds = collections.Counter()
        # How many runs reached each fault path (Result.marks, with feedback).
        self.marks = collections.Counter()

    def next_input(self):
        r = self.rng
        if not self.corpus or r.randrange(4) == 0:
            inp = fuzzinput.generate(r, r.randint(20, self.max_records))
        else:
            inp = fuzzinput.mutate(r, r.choice(self.corpus), self.corpus,
                                   self.max_records)
        if not self.slow_host:
            inp = fuzzinput.Input(Header.without_slow_host(inp.header), inp.records)
        return inp

    def note_coverage(self, inp, result):
        new = result.coverage - self.seen
        if new:
            self.seen |= new
            if self.runs > 0:
                self.corpus.append(inp)
                path = self.out / "corpus" / f"{sha1(inp.to_bytes())}.bin"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(inp.to_bytes())
        return len(new)

    def record_failure(self, inp, result, minimize_s):
        v = result.verdict
        sig = v.signature()
        data = inp.to_bytes()
        name = f"crash-{sha1(data)}"
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"{name}.bin").write_bytes(data)
        stderr = pathlib.Path(v.stderr_path).read_text(errors="replace")
        note = [f"verdict: {v.kind}: {v.detail}",
                f"failed at record {result.failed_at} of {len(inp.records)}",
                f"last qtest command: {v.command}", "", "QEMU stderr (tail):",
                *stderr.splitlines()[-40:]]
        if v.kind in ("hang", "busy"):
            note += ["", "QEMU's main thread when it stopped answering:" if v.kind == "hang"
                     else "QEMU's main thread in its busy loop:",
                     v.stderr_tail]
        if sig not in self.failures and minimize_s > 0:
            small = minimize(self.family_cls, inp, self.qemu, self.out / "work",
                             sig, minimize_s, self.timeout, self.log)
            sdata = small.to_bytes()
            (self.out / f"{name}.min.bin").write_bytes(sdata)
            rerun = run_input(self.family_cls, small, self.qemu,
                              self.out / "work", self.timeout, trace=True)
            note += ["", f"minimized: {name}.min.bin, {len(small.records)} "
                     "records; its operations:", *rerun.trace]
        (self.out / f"{name}.txt").write_text("\n".join(note) + "\n")
        self.failures.setdefault(sig, self.out / f"{name}.bin")
        return self.out / f"{name}.bin"

    def run(self, seconds, stop_on_failure=True, minimize_s=0, runs=None):
        """Fuzzes for `seconds`, or for exactly `runs` runs if given."""
        end = time.monotonic() + seconds
        self.out.mkdir(parents=True, exist_ok=True)
        while (self.runs < runs) if runs is not None else (time.monotonic() < end):
            inp = self.next_input()
            self.inputs_sha1.update(inp.to_bytes())
            self.fault_kinds[fault_kind(self.family_cls, inp)] += 1
            result = run_confirmed(self.family_cls, inp, self.qemu,
                                   self.out / "work", self.timeout,
                                   coverage=self.feedback)
            self.runs += 1
            self.marks.update(result.marks)
            new = self.note_coverage(inp, result) if self.feedback else 0
            if not result.verdict.ok:
                path = self.record_failure(inp, result, minimize_s)
                self.log(f"FAILURE {result.verdict.kind}: {result.verdict.detail}"
                         f" -> {path}")
                if stop_on_failure:
                    return False
            elif new:
                self.log(f"run {self.runs}: {len(inp.records)} records, "
                         f"{result.commands} commands, {result.seconds:.1f} s, "
                         f"+{new} pairs ({len(self.seen)} total)")
        return not self.failures
