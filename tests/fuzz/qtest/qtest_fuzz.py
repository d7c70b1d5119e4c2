#!/usr/bin/python3
"""blklab's device fuzzer: the patched QEMU's NVMe, AHCI and PIIX IDE with a
device model attached, driven through qtest by a careless guest.

An input (tests/fuzz/qtest/<family>/{corpus,regressions}/*.bin) is bytes: a
header that picks the machine, profile and device options, then 24-byte
records, one operation each (blkfuzz/fuzzinput.py; the operations are in
blkfuzz/nvme.py, ahci.py, ide.py). The same bytes give the same operations.
A run fails when QEMU dies by a signal, asserts or aborts, prints a sanitizer
report, exits on its own, or does not answer a qtest command in --timeout s.

  qtest_fuzz.py check FAMILY SECONDS   replay regressions and corpus, then
                                       fuzz; fails on the first failure
  qtest_fuzz.py fuzz FAMILY SECONDS    fuzz, keep going, minimise failures
  qtest_fuzz.py run FAMILY FILE...     run inputs (--trace prints operations)
  qtest_fuzz.py minimize FAMILY FILE OUT
  qtest_fuzz.py distill FAMILY OUT FILE...   a small corpus from many inputs
                                       (--marks: by the fault paths reached)
  qtest_fuzz.py unpack LOG OUT         the failing input a check printed
  qtest_fuzz.py selftest               the harness sees a crash, an abort,
                                       a hang, a busy process, runs are
                                       reproducible, known failures are
                                       reported and fail once they pass

FAMILY: nvme, ahci, ide, virtio-blk. Output: build/fuzz/qtest/<family>/ (crash-*.bin,
crash-*.txt with the verdict, QEMU's stderr and the minimised operations;
corpus/ with inputs that reached new trace-event pairs).
QEMU: --qemu, or $BLKLAB_QEMU_DIR/bin/qemu-system-x86_64 (default
build/qemu; build/qemu-asan is the sanitizer build), which is also how a
sanitizer build is fuzzed.
"""

import argparse
import base64
import contextlib
import io
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from blkfuzz import fuzzinput, runner           # noqa: E402
from blkfuzz.ahci import Ahci                    # noqa: E402
from blkfuzz.ide import Ide                      # noqa: E402
from blkfuzz.nvme import Nvme                    # noqa: E402
from blkfuzz.virtio_blk import VirtioBlk         # noqa: E402
from blkfuzz.qtest import BUSY_SHARE, QemuGone, QTestVM, busy_share  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
FAMILIES = {"nvme": Nvme, "ahci": Ahci, "ide": Ide, "virtio-blk": VirtioBlk}
SELFTEST_SEED = 7           # an input every family runs cleanly
# The marks (run --marks) that are a fault path: the device model's fault
# events, an NVMe Unrecovered Read Error or Write Fault, CSTS.CFS, an IDE
# error register with UNC, a virtio-blk or AHCI NCQ media error, the AHCI
# NCQ Command Error log read with a failed command in it.
FAULT_MARK = re.compile(r"^device_model_(?!origin)|status 0x28[01]$|csts cfs|"
                        r"^ide error 0x[4-7][0-9a-f] |media error|"
                        r"ncq error log read$")
INPUT_BEGIN = "----- failing input (zlib, base64) -----"
INPUT_END = "----- end of failing input -----"


def qemu_binary(arg):
    if arg:
        p = pathlib.Path(arg)
        return p / "bin" / "qemu-system-x86_64" if p.is_dir() else p
    qdir = os.environ.get("BLKLAB_QEMU_DIR") or str(
        pathlib.Path(os.environ.get("BLKLAB_BUILD", REPO / "build")) / "qemu")
    return pathlib.Path(qdir) / "bin" / "qemu-system-x86_64"


def checked_in(family, root=HERE):
    """(path, Input) of the regressions, then the corpus."""
    out = []
    for sub in ("regressions", "corpus"):
        for p in sorted((root / family / sub).glob("*.bin")):
            out.append((p, fuzzinput.Input.from_bytes(p.read_bytes())))
    return out


def known_failures(family, root=HERE):
    """(path, Input) of the family's known failures: crashes found and not
    yet fixed, each with a .txt note. Every check replays them and reports
    each one; none is a seed (mutating a crash finds the same crash)."""
    return [(p, fuzzinput.Input.from_bytes(p.read_bytes()))
            for p in sorted((root / family / "known-failures").glob("*.bin"))]


def shown(path):
    """`path` as a message names it: from the checkout's top when inside it."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def out_dir(family):
    return REPO / "build" / "fuzz" / "qtest" / family


def print_failure(path, result):
    v = result.verdict
    print(f"FAIL {path}: {v.kind}: {v.detail}")
    print(f"     at record {result.failed_at}, last qtest command: {v.command[:120]}")
    for line in v.stderr_tail.splitlines()[-15:]:
        print(f"     | {line}")


def print_found(path):
    """Prints a fuzzed failure's note and the input itself, so that a run
    whose build directory is gone (a CI run) still gives both: the
    input comes back with `qtest_fuzz.py unpack LOG OUT`."""
    for line in path.with_suffix(".txt").read_text().splitlines()[:30]:
        print(f"     | {line}")
    print(INPUT_BEGIN)
    text = base64.b64encode(zlib.compress(path.read_bytes(), 9)).decode()
    for i in range(0, len(text), 76):
        print(text[i:i + 76])
    print(INPUT_END)


def cmd_unpack(args):
    """Writes the input that print_found() printed into `args.log` to
    `args.out`."""
    text = pathlib.Path(args.log).read_text(errors="replace")
    start, end = text.find(INPUT_BEGIN), text.find(INPUT_END)
    if start < 0 or end < start:
        print(f"qtest_fuzz: {args.log} holds no input between "
              f"'{INPUT_BEGIN}' and '{INPUT_END}'", file=sys.stderr)
        return 2
    body = "".join(re.sub(r"^>\s?", "", ln).strip() for ln in
                   text[start + len(INPUT_BEGIN):end].splitlines())
    data = zlib.decompress(base64.b64decode(body))
    fuzzinput.Input.from_bytes(data)          # refuses what is not an input
    pathlib.Path(args.out).write_bytes(data)
    print(f"{args.out}: {len(data)} bytes")
    return 0


def cmd_run(args):
    fam = FAMILIES[args.family]
    failed = 0
    for f in args.files:
        inp = fuzzinput.Input.from_bytes(pathlib.Path(f).read_bytes())
        r = runner.run_input(fam, inp, args.qemu, out_dir(args.family) / "work",
                             args.timeout, trace=args.trace,
                             extra_args=args.qemu_arg,
                             devmodel=not args.no_devmodel,
                             coverage=args.marks)
        if not r.verdict.ok and args.keep_stderr:
            print(f"     QEMU's stderr: {r.verdict.stderr_path}")
        if args.trace:
            print("\n".join(r.trace))
        if args.marks:
            print(f"     fault paths: {', '.join(sorted(r.marks)) or 'none'}")
        if r.verdict.ok:
            print(f"ok   {f}: {len(inp.records)} records, {r.commands} "
                  f"commands, {r.seconds:.1f} s")
        else:
            failed += 1
            print_failure(f, r)
    return 1 if failed else 0


def replay(args, fam, root=HERE, extra_args=()):
    """Runs every checked-in input under `root` (the inputs' tree: this
    directory but in the selftest); returns (count, failures, seeds)."""
    seeds, failures = [], 0
    work = out_dir(args.family) / "work"
    for path, inp in checked_in(args.family, root):
        r = runner.run_confirmed(fam, inp, args.qemu, work, args.timeout,
                                 extra_args=extra_args)
        seeds.append(inp)
        if not r.verdict.ok:
            failures += 1
            print_failure(shown(path), r)
            note = path.with_suffix(".txt")
            if note.is_file():
                print(f"     (a regression: {shown(note)})")
    for path, inp in known_failures(args.family, root):
        r = runner.run_confirmed(fam, inp, args.qemu, work, args.timeout,
                                 extra_args=extra_args)
        rel = shown(path)
        if r.verdict.ok:
            # Fixed: it belongs in regressions/ now, with the fixing patch.
            failures += 1
            print(f"FAIL {rel}: a known failure now passes; move it and its note "
                  f"to {args.family}/regressions/ with the patch that fixed it")
        else:
            print(f"KNOWN FAILURE {rel}: {r.verdict.kind}: {r.verdict.detail} "
                  f"(not fixed: {shown(path.with_suffix('.txt'))})")
    return len(seeds), failures, seeds


def cmd_check(args):
    fam = FAMILIES[args.family]
    start = time.monotonic()
    n, failures, seeds = replay(args, fam)
    replay_s = time.monotonic() - start
    if failures:
        print(f"qtest-fuzz {args.family}: {failures} of {n} checked-in inputs fail")
        return 1
    left = max(0.0, args.seconds - replay_s)
    fz = runner.Fuzzer(fam, args.qemu, out_dir(args.family), seeds,
                       args.seed if args.seed is not None else time.time_ns(),
                       args.timeout, log=lambda s: None,
                       slow_host=not args.no_slow_host,
                       feedback=args.runs is None)
    fz.run(left, stop_on_failure=True, minimize_s=0, runs=args.runs)
    total = time.monotonic() - start
    tried = f"inputs sha1 {fz.inputs_sha1.hexdigest()[:12]}"
    if fz.failures:
        path = next(iter(fz.failures.values()))
        print(f"qtest-fuzz {args.family}: FAILED after {fz.runs} runs ({tried}); input "
              f"{path} ({path.with_suffix('.txt')}); minimise with "
              f"tests/fuzz/qtest/qtest_fuzz.py minimize {args.family} {path} OUT")
        print_found(path)
        return 1
    print(f"qtest-fuzz {args.family}: ok, {n} checked-in inputs in "
          f"{replay_s:.0f} s, then {fz.runs} fuzzed runs ({tried}), {total:.0f} s")
    return 0


def cmd_fuzz(args):
    fam = FAMILIES[args.family]
    n, failures, seeds = replay(args, fam)
    print(f"fuzz {args.family}: {n} checked-in inputs, {failures} fail")
    seed = args.seed if args.seed is not None else time.time_ns()
    print(f"fuzz {args.family}: seed {seed}")
    fz = runner.Fuzzer(fam, args.qemu, out_dir(args.family), seeds, seed,
                       args.timeout, max_records=args.max_records)
    fz.run(args.seconds, stop_on_failure=False, minimize_s=args.minimize_seconds)
    print(f"fuzz {args.family}: {fz.runs} runs, {len(fz.seen)} trace-event "
          f"pairs, {len(fz.failures)} distinct failures")
    print(f"fuzz {args.family}: runs by fault kind: " + ", ".join(
        f"{kind} {n}" for kind, n in sorted(fz.fault_kinds.items())))
    print(f"fuzz {args.family}: runs by fault path reached: " + (", ".join(
        f"{mark} {n}" for mark, n in sorted(fz.marks.items())
        if FAULT_MARK.search(mark)) or "none"))
    for sig, path in fz.failures.items():
        print(f"  {sig}\n    {path}")
    return 1 if fz.failures or failures else 0


def cmd_minimize(args):
    fam = FAMILIES[args.family]
    inp = fuzzinput.Input.from_bytes(pathlib.Path(args.file).read_bytes())
    r = runner.run_input(fam, inp, args.qemu, out_dir(args.family) / "work",
                         args.timeout)
    if r.verdict.ok:
        print("minimize: the input does not fail")
        return 1
    sig = r.verdict.signature()
    print(f"minimize: {sig}")
    small = runner.minimize(fam, inp, args.qemu, out_dir(args.family) / "work",
                            sig, args.budget, args.timeout)
    pathlib.Path(args.out).write_bytes(small.to_bytes())
    print(f"minimize: {len(inp.records)} -> {len(small.records)} records, "
          f"written to {args.out}")
    return 0


def cmd_distill(args):
    """Picks a few inputs that together reach most of the trace-event pairs
    the given ones reach (greedy: most new pairs per second of run first),
    skipping failing ones, and copies them to OUT as <sha1>.bin."""
    fam = FAMILIES[args.family]
    runs = []
    for f in args.files:
        data = pathlib.Path(f).read_bytes()
        inp = fuzzinput.Input.from_bytes(data)
        r = runner.run_input(fam, inp, args.qemu, out_dir(args.family) / "work",
                             args.timeout, coverage=True)
        if r.verdict.ok and r.seconds < args.max_seconds:
            runs.append((data, {m for m in r.marks if FAULT_MARK.search(m)}
                           if args.marks else r.coverage, r.seconds))
    covered, chosen = set(), []
    total = set().union(*(c for _, c, _ in runs)) if runs else set()
    while runs and len(chosen) < args.max:
        best = max(runs, key=lambda x: len(x[1] - covered) / (1 + x[2]))
        if not best[1] - covered:
            break
        covered |= best[1]
        chosen.append(best)
        runs.remove(best)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for data, cov, secs in chosen:
        (out / f"{runner.sha1(data)}.bin").write_bytes(data)
    print(f"distill: {len(chosen)} inputs reach {len(covered)} of "
          f"{len(total)} {'fault paths' if args.marks else 'pairs'}, "
          f"{sum(c[2] for c in chosen):.1f} s; in {out}")
    for data, cov, secs in chosen if args.marks else ():
        print(f"  {runner.sha1(data)}.bin: {', '.join(sorted(cov))}")
    return 0


def cmd_selftest(args):
    """Shows that the harness detects what it must: an abort from a bad
    qtest command, QEMU killed mid-run, QEMU that stops answering, a process
    spinning on the CPU, a QEMU kept busy by a timer, that the same input
    gives the same operations and verdict twice, that a seed without
    feedback gives the same inputs, that a failing input printed in a
    log comes back whole, and that a known failure is reported while it
    fails and fails the check once it passes."""
    work = out_dir("selftest")
    work.mkdir(parents=True, exist_ok=True)
    base = ["-machine", "pc,accel=qtest", "-m", "16M"]
    ok = True

    def expect(name, verdict, kinds):
        nonlocal ok
        good = verdict.kind in kinds
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {name}: {verdict.kind}: "
              f"{verdict.detail}")

    # 1. A qtest command QEMU cannot parse: qtest g_assert()s and aborts.
    with QTestVM(str(args.qemu), base, work / "stderr-1", timeout=10) as vm:
        gone = None
        try:
            vm.cmd("clock_step 0")
            vm.cmd("clock_set not-a-number")
        except QemuGone as e:
            gone = e
        expect("invalid qtest command", vm.verdict(gone), {"assert", "signal"})

    # 2. QEMU killed by a signal between two commands.
    with QTestVM(str(args.qemu), base, work / "stderr-2", timeout=10) as vm:
        gone = None
        try:
            vm.cmd("clock_step 0")
            os.kill(vm.proc.pid, signal.SIGSEGV)
            vm.proc.wait(timeout=10)
            vm.cmd("clock_step 0")
        except QemuGone as e:
            gone = e
        # A sanitizer build's own SIGSEGV handler reports the signal (and
        # then aborts): that report is the verdict there.
        expect("QEMU killed (SIGSEGV)", vm.verdict(gone),
               {"sanitizer"} if runner.is_sanitizer_build(args.qemu) else {"signal"})

    # 3. QEMU that stops answering (SIGSTOP) is a hang after the timeout.
    with QTestVM(str(args.qemu), base, work / "stderr-3", timeout=2) as vm:
        gone = None
        try:
            vm.cmd("clock_step 0")
            os.kill(vm.proc.pid, signal.SIGSTOP)
            vm.cmd("clock_step 0")
        except QemuGone as e:
            gone = e
        os.kill(vm.proc.pid, signal.SIGCONT)
        expect("QEMU stops answering", vm.verdict(gone, backtrace=False),
               {"hang"})

    # 4. The busy-loop check's measure: a process spinning on the CPU and
    # one asleep, whatever else the host runs (run_input() below shows an
    # idle QEMU is not "busy").
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    nap = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.2)
        busy, idle = busy_share(spin.pid, 1.0), busy_share(nap.pid, 1.0)
    finally:
        spin.kill()
        nap.kill()
        spin.wait()
        nap.wait()
    good = busy >= BUSY_SHARE > idle
    ok &= good
    print(f"{'ok  ' if good else 'FAIL'} time wanting a CPU: a spinning process {busy:.0%}, "
          f"a sleeping one {idle:.0%} (busy from {BUSY_SHARE:.0%})")

    # 5. A timer that re-arms itself forever is "busy" however long QEMU
    # gets to settle: the PIT as a rate generator with a count of 2, due
    # every 1.7 us of a virtual clock that qtest holds still.
    with QTestVM(str(args.qemu), base, work / "stderr-5", timeout=10) as vm:
        gone = None
        try:
            for command in ("outb 0x43 0x34", "outb 0x40 0x02", "outb 0x40 0x00"):
                vm.cmd(command)
            vm.check_idle()
        except QemuGone as e:
            gone = e
        expect("a timer due every 1.7 us, forever", vm.verdict(gone, backtrace=False),
               {"busy"})

    # 6. A healthy QEMU is "ok", and the same input runs the same way twice.
    for family, cls in FAMILIES.items():
        inp = fuzzinput.seeded(SELFTEST_SEED, 80)
        a = runner.run_input(cls, inp, args.qemu, work, args.timeout, trace=True)
        b = runner.run_input(cls, inp, args.qemu, work, args.timeout, trace=True)
        same = a.trace == b.trace and a.verdict.kind == b.verdict.kind
        ok &= same and a.verdict.ok
        print(f"{'ok  ' if same and a.verdict.ok else 'FAIL'} {family}: "
              f"seed {SELFTEST_SEED} twice: {a.verdict.kind}, {len(a.trace) - 1} "
              f"operations, {'identical' if same else 'DIFFERENT'} traces")

    # 7. Without feedback a seed gives the same inputs: those of a check
    # with --runs depend on the seed and the checked-in inputs alone.
    def inputs(family, seed, n):
        corpus = [inp for _, inp in checked_in(family)]
        fz = runner.Fuzzer(FAMILIES[family], args.qemu, work, corpus, seed,
                           args.timeout, log=lambda s: None, slow_host=False,
                           feedback=False)
        return [fz.next_input().to_bytes() for _ in range(n)]

    for family in FAMILIES:
        once, again, other = inputs(family, 1, 40), inputs(family, 1, 40), inputs(family, 2, 40)
        good = once == again and once != other
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {family}: seed 1 gives the same 40 inputs "
              f"twice{'' if once == again else ' (it did NOT)'}, seed 2 "
              f"{'others' if once != other else 'THE SAME'}")

    # 8. A failing check's log gives its input back, as a CI log quotes it.
    inp = fuzzinput.seeded(SELFTEST_SEED, 600)
    found = work / "crash-selftest.bin"
    found.write_bytes(inp.to_bytes())
    found.with_suffix(".txt").write_text("verdict: selftest\n")
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        print_found(found)
    quoted = work / "quoted.log"
    quoted.write_text("".join(f"> {ln}\n" for ln in log.getvalue().splitlines()))
    back = work / "unpacked.bin"
    with contextlib.redirect_stdout(io.StringIO()):
        cmd_unpack(argparse.Namespace(log=quoted, out=back))
    same = back.is_file() and back.read_bytes() == found.read_bytes()
    ok &= same
    print(f"{'ok  ' if same else 'FAIL'} a failing input printed in a log "
          f"({len(log.getvalue().splitlines())} lines) unpacks to "
          f"{'the same' if same else 'OTHER'} {len(inp.to_bytes())} bytes")

    # 9. A known failure is replayed and reported but does not fail a check
    # while it still fails, and fails the check once it passes. The input
    # fails here by a device QEMU does not have, so QEMU exits at its start.
    tree = work / "known-failures-tree"
    kf = tree / "nvme" / "known-failures"
    kf.mkdir(parents=True, exist_ok=True)
    (kf / "selftest.bin").write_bytes(fuzzinput.seeded(SELFTEST_SEED, 80).to_bytes())
    (kf / "selftest.txt").write_text("selftest: a known failure\n")
    ns = argparse.Namespace(family="nvme", qemu=args.qemu, timeout=args.timeout)
    for name, extra, want_failures, want_line in (
            ("still failing", ["-device", "blklab-selftest-no-such-device"], 0,
             "KNOWN FAILURE "),
            ("now passing", [], 1, "a known failure now passes")):
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            n, failures, seeds = replay(ns, FAMILIES["nvme"], tree, extra)
        good = (n, failures, seeds) == (0, want_failures, []) and want_line in log.getvalue()
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} a known failure {name}: {failures} "
              f"failures, {len(seeds)} seeds: {log.getvalue().strip()[:100]}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qemu", help="QEMU binary or build dir (default: "
                    "$BLKLAB_QEMU_DIR or build/qemu)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds QEMU has to answer a command (default 10, "
                    "30 for a sanitizer build)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("check")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("seconds", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--runs", type=int,
                   help="fuzz exactly this many runs instead of for SECONDS, "
                   "mutating only the checked-in inputs (no coverage "
                   "feedback), so that a --seed gives the same inputs on "
                   "any host; the output names their sha1")
    p.add_argument("--no-slow-host", action="store_true",
                   help="fuzzed inputs get no host latency (checked-in "
                   "inputs keep theirs): with --seed and --runs, the same "
                   "runs every time, whatever the host's speed")
    p = sub.add_parser("fuzz")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("seconds", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--max-records", type=int, default=600)
    p.add_argument("--minimize-seconds", type=float, default=300)
    p = sub.add_parser("run")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("files", nargs="+")
    p.add_argument("--trace", action="store_true",
                   help="print each record's operation")
    p.add_argument("--qemu-arg", action="append", default=[],
                   help="one more QEMU argument (e.g. -trace=dma_*), repeatable")
    p.add_argument("--no-devmodel", action="store_true",
                   help="drop devmodel-profile (and ncq-depth, mqes) from the "
                   "devices, to see whether a failure needs the model")
    p.add_argument("--keep-stderr", action="store_true",
                   help="print where QEMU's stderr of a failing run is")
    p.add_argument("--marks", action="store_true",
                   help="print the fault paths each input reaches (the device "
                   "model's fault trace events, error statuses the guest saw)")
    p = sub.add_parser("minimize")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("file")
    p.add_argument("out")
    p.add_argument("--budget", type=float, default=600)
    p = sub.add_parser("distill")
    p.add_argument("family", choices=FAMILIES)
    p.add_argument("out")
    p.add_argument("files", nargs="+")
    p.add_argument("--max", type=int, default=8)
    p.add_argument("--max-seconds", type=float, default=4)
    p.add_argument("--marks", action="store_true",
                   help="pick by the fault paths reached (run --marks), not "
                   "by trace-event pairs")
    sub.add_parser("selftest")
    p = sub.add_parser("unpack")
    p.add_argument("log", help="output of a failed check (a CI log)")
    p.add_argument("out")
    args = ap.parse_args()
    if args.cmd == "unpack":
        return cmd_unpack(args)
    args.qemu = qemu_binary(args.qemu)
    if not args.qemu.is_file():
        print(f"qtest_fuzz: no QEMU at {args.qemu}; run 'make qemu'",
              file=sys.stderr)
        return 2
    if args.timeout is None:
        args.timeout = 30.0 if runner.is_sanitizer_build(args.qemu) else 10.0
    return {"run": cmd_run, "check": cmd_check, "fuzz": cmd_fuzz,
            "minimize": cmd_minimize, "distill": cmd_distill,
            "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
