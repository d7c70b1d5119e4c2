"""The blklab command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from blklab import __version__, characterize_compare, paths, scenario as scenario_mod
from blklab.errors import BlklabError

# Commands import what they need when they run: validating a scenario must
# not wait for numpy and matplotlib.


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_guest_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--guest", action="append", default=[], metavar="KEY=VALUE",
                        help="set a [guest] key for this run in place of the file's, e.g. "
                        "--guest cpu_rate=4 --guest vcpus=4 (repeatable; keys: "
                        + ", ".join(scenario_mod.GUEST_KEYS) + ")")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="blklab", description="A lab for the Linux block layer.")
    p.add_argument("--version", action="version", version=f"blklab {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    p.add_argument("--results", type=Path, default=None,
                   help="results root (default: results/ in the repository)")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a scenario: one fresh VM per cell, then report")
    r.add_argument("scenario", type=Path, help="scenario file (TOML)")
    r.add_argument("--short", action="store_true",
                   help="run the scenario's short form: its [short] table applied")
    r.add_argument("--repeats", type=_positive, help="override scenario.repeats")
    r.add_argument("--mode", choices=scenario_mod.MODES, help="override scenario.mode")
    _add_guest_flag(r)
    r.add_argument("--accel", choices=("tcg", "kvm"), help="skip the KVM probe and use this")
    r.add_argument("--jobs", type=_positive, help="cells run in parallel (default: cores)")
    r.add_argument("--out", type=Path, help="run directory (default results/<scenario>/<run-id>)")
    r.add_argument("--no-report", action="store_true", help="do not write report.html")
    r.add_argument("--backend", choices=("direct", "libvirt"), default="direct",
                   help="start QEMU directly (default) or as transient libvirt domains")
    r.add_argument("--connect", default="qemu:///system", metavar="URI",
                   help="libvirt URI for --backend libvirt (default qemu:///system)")
    r.add_argument("--cluster", metavar="ADDRESS",
                   help="run cells on a Dask cluster, e.g. tcp://host:8786 (default: locally)")

    v = sub.add_parser("validate", help="check a scenario file and list its cells")
    v.add_argument("scenario", type=Path)
    v.add_argument("--short", action="store_true", help="list the short form's cells")
    _add_guest_flag(v)
    v.add_argument("--kernel", action="store_true",
                   help="print the guest kernel, <series>-<flavour> ([guest] kernel), "
                   "instead of the cells")

    sw = sub.add_parser("switches", help="each scheduler switch of RUN (scenario."
                        "switch_schedulers) against the workload's time series")
    sw.add_argument("run", type=Path)

    tu = sub.add_parser("turns", help="when each job of RUN was served: its turns on the "
                        "device and the gaps with no completion between them, from blkgen's "
                        "time series")
    tu.add_argument("run", type=Path)
    tu.add_argument("--cell", metavar="GLOB",
                    help="only the cells whose id matches, e.g. 'hdd.bfq.*' (default: all)")
    tu.add_argument("--gap-ms", type=float, metavar="MS",
                    help="how far past its nominal length an interval must last to be a gap "
                    "(default: half the series' interval)")
    tu.add_argument("--json", action="store_true", help="print the turns as JSON")

    bl = sub.add_parser("biolatency", help="biolatency's histograms of each traced cell of RUN "
                        "(scenario.blktrace), per device and direction, from its blktrace")
    bl.add_argument("run", type=Path)
    bl.add_argument("--cell", metavar="GLOB", help="only the cells whose id matches "
                    "(default: all)")
    bl.add_argument("--from", dest="start", choices=["insert", "issue"],
                    default="issue", help="issue: from the request's issue to the driver "
                    "(biolatency); insert: from its insertion into the scheduler "
                    "(biolatency -Q)")
    bl.add_argument("--json", action="store_true", help="print the histograms as JSON")

    rep = sub.add_parser("report", help="write RUN/report.html, or print RUN's tables as "
                         "Markdown (--markdown)")
    rep.add_argument("run", type=Path, nargs="+",
                     help="a run directory; with --markdown, several runs of one scenario "
                     "give one table with a column per run")
    rep.add_argument("-o", "--output", type=Path, help="default: RUN/report.html")
    rep.add_argument("--markdown", action="store_true",
                     help="print the run's figures, notes and expectations as Markdown tables "
                     "for a scenario README (the command that made the run comes first)")
    rep.add_argument("--against", metavar="BASELINE",
                     help="baseline name or JSON: warn in the report about each guest or QEMU "
                     "input that differs from it")

    c = sub.add_parser("check", help="evaluate RUN's expectations; exit 1 on a failure not "
                       "marked known_failure, an unexpected pass or an undecided one")
    c.add_argument("run", type=Path)

    b = sub.add_parser("baseline", help="save a run's metrics as a named baseline")
    bsub = b.add_subparsers(dest="baseline_command", required=True)
    bs = bsub.add_parser("save", help="save RUN as baseline NAME")
    bs.add_argument("run", type=Path)
    bs.add_argument("name")

    dv = sub.add_parser("diverge", help="run one cell twice with QEMU's determinism trace and "
                        "print the first event the guest saw differently; exit 1 if any")
    dv.add_argument("scenario", type=Path)
    dv.add_argument("--cell", help="cell id (see 'blklab validate'; default: the first cell)")
    dv.add_argument("--mode", choices=scenario_mod.MODES, default="deterministic",
                    help="timing mode of both runs (default: deterministic)")
    dv.add_argument("--out", type=Path,
                    help="where both runs and their traces go "
                    "(default results/<scenario>/diverge/<cell>)")
    dv.add_argument("--context", type=int, default=5,
                    help="common events shown before the first difference (default 5)")

    iw = sub.add_parser("irq-waits", help="how long interrupts waited for their vCPU in a "
                        "determinism trace (blklab diverge writes one): per kind, and the "
                        "longest")
    iw.add_argument("trace", type=Path, help="a det_* trace log, e.g. "
                    "results/<scenario>/diverge/<cell>/a/trace.log")
    iw.add_argument("--top", type=int, default=5, help="longest waits listed (default 5)")

    cf = sub.add_parser("compare-fio", help="a customer's fio JSON beside RUN's cells: IOPS and "
                        "clat mean, p50, p99, p99.9, p99.99 per direction, with ratios")
    cf.add_argument("run", type=Path)
    cf.add_argument("customer_json", type=Path, help="fio --output-format=json output (fio 3.x)")

    ch = sub.add_parser("characterize", help="run the characterization suite "
                        "(tools/characterize/*.fio) against a device profile, or with "
                        "--compare set a drive's results beside a run's")
    ch.add_argument("target", nargs="?", metavar="PROFILE_OR_SCENARIO",
                    help="a profile name (devmodel/profiles), a profile TOML, or a scenario "
                    "whose first [[device]] with a profile is used with its [guest]")
    ch.add_argument("--out", type=Path, help="directory for the jobs' scenarios and runs "
                    "(nothing in it is overwritten)")
    ch.add_argument("--job", action="append", default=[], metavar="NAME",
                    help="run (or compare) only this job; repeatable (default: every job "
                    "whose knobs have values; --list names them)")
    ch.add_argument("--runtime", metavar="TIME", help="each timed job's measured time, "
                    "fio syntax (default: tools/characterize/defaults.env)")
    ch.add_argument("--ramp", metavar="TIME", help="time each timed job runs before it is "
                    "measured (default: tools/characterize/defaults.env)")
    ch.add_argument("--fill-size", metavar="SIZE", help="run the fill job over this much of "
                    "the drive, e.g. 8g or 100%% (default: no fill)")
    ch.add_argument("--scheduler", default="none", choices=scenario_mod.SCHEDULERS,
                    help="the guest's I/O scheduler (default: none)")
    ch.add_argument("--precondition", choices=scenario_mod.PRECONDITIONS,
                    help="an SSD profile's starting state (default: full, as a drive after "
                    "the fill; steady for steady-state writes)")
    ch.add_argument("--list", action="store_true", help="list the suite's jobs and knobs")
    ch.add_argument("--compare", nargs=2, type=Path, metavar=("DRIVE_DIR", "RUN_DIR"),
                    help="print the drive's figures (tools/characterize-drive.sh --out) "
                    "beside the run's (blklab characterize --out): IOPS, p50, p99, p99.9 "
                    "per job and direction, with model/drive")
    ch.add_argument("--format", choices=characterize_compare.FORMATS, default="text",
                    help="with --compare: the table as text (default), JSON or Markdown, "
                    "or an HTML page with it and its plots (the reader's latency against "
                    "the write rate, the fill curve)")
    ch.add_argument("-o", "--output", type=Path, help="with --compare: write the table to "
                    "this new file (refused if it exists) instead of printing it")

    ft = sub.add_parser("fit", help="fit an SSD profile's parameters to a drive's "
                        "characterization results (tools/characterize-drive.sh --out) on the "
                        "host simulator; write the profile and print its error per job")
    from blklab import fit

    fit.add_arguments(ft)

    pe = sub.add_parser("profile-errors", help="a shipped SSD profile against its drive's "
                        "published figures (tests/reference/*/figures.toml), run on the host "
                        "simulator: model, figure and error per row")
    from blklab import profile_errors

    profile_errors.add_arguments(pe)

    im = sub.add_parser("import", help="turn a capture (tools/blklab-capture.sh) into a "
                        "scenario skeleton; says what it could not map")
    im.add_argument("capture", type=Path)
    im.add_argument("-o", "--output", type=Path, help="scenario file to write (default: stdout)")
    im.add_argument("--device", help="the captured device to model (default: the busiest)")

    im = sub.add_parser("image", help="carry a guest image and the QEMU build's inputs "
                        "between machines (when a pinned package has left the archive)")
    isub = im.add_subparsers(dest="image_command", required=True)
    ie = isub.add_parser("export", help="write FILE: the images of the kernels named and the "
                         "QEMU build's downloads")
    ie.add_argument("file", type=Path)
    ie.add_argument("--kernel", action="append", metavar="KERNEL",
                    help="<series>-<flavour> or a flavour of the default series; repeatable "
                    "(default: the default series' amd64)")
    ii = isub.add_parser("import", help="unpack FILE into the cache and link the images this "
                         "checkout would build")
    ii.add_argument("file", type=Path)

    ref = sub.add_parser("reference", help="write the reference pages (scenario keys, profile "
                         "keys, blkgen options, this command line, the cell JSON) generated "
                         "from the code")
    ref.add_argument("--out", type=Path, default=paths.REPO / "docs" / "reference",
                     help="directory to write (default: docs/reference in the repository)")
    ref.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if a page in --out differs from what the "
                     "code generates")

    cmp_ = sub.add_parser("compare", help="compare RUN with a baseline; exit 1 on a regression")
    cmp_.add_argument("baseline", help="baseline name or path to a baseline JSON")
    cmp_.add_argument("run", type=Path)
    cmp_.add_argument("--tolerance", type=float, default=0.0,
                      help="percent change tolerated for exact (deterministic) values")
    return p


def _results_root(args: argparse.Namespace) -> Path:
    return args.results or (paths.REPO / "results")


def _print_outcomes(outcomes: list) -> None:
    from blklab import expectations

    if outcomes:
        print("expectations:")
        for o in outcomes:
            print("  " + o.line().replace("\n", "\n  "))
    print(f"expectations: {expectations.summary(outcomes)}")


def _write_report(run, outcomes: list, output: Path | None = None,
                  against: dict | None = None) -> Path:
    from blklab import report
    from blklab.results import write_atomic

    out = output or run.path / "report.html"
    write_atomic(out, report.render(run.path, run.cells, run.manifest, outcomes, against))
    return out


def _baseline_file(args: argparse.Namespace, name: str) -> Path:
    from blklab import baseline

    as_path = Path(name)
    return as_path if as_path.suffix == ".json" else baseline.baseline_path(
        _results_root(args), name)


def _run(args: argparse.Namespace) -> int:
    s = scenario_mod.load(args.scenario, short=args.short, mode=args.mode,
                          guest_set=scenario_mod.parse_guest_set(args.guest))
    from blklab import expectations, runner, table

    options = runner.RunOptions(mode=args.mode, accel=args.accel, jobs=args.jobs, out=args.out,
                                repeats=args.repeats, results_root=_results_root(args),
                                backend=args.backend, libvirt_uri=args.connect,
                                cluster=args.cluster)
    run_dir, cells = runner.run(s, options)
    print(table.render(cells))
    outcomes = expectations.evaluate(s, cells)
    _print_outcomes(outcomes)
    if not args.no_report:
        print(f"report: {_write_report(runner.load_run(run_dir), outcomes)}")
    failed = [c for c in cells if c["status"] != "ok"]
    missing = len(s.cells()) - len(cells)
    print(f"results: {run_dir} ({len(cells) - len(failed)} ok, {len(failed)} failed"
          + (f", {missing} without results" if missing else "") + ")")
    return 1 if failed or missing else 0


def _image(args: argparse.Namespace) -> int:
    from blklab import image_archive, kernels

    if args.image_command == "export":
        names = []
        for written in args.kernel or ["amd64"]:
            k = kernels.resolve(written)
            if k is None:
                raise BlklabError(f"--kernel '{written}' is not one of: {kernels.allowed_text()}")
            names.append(k.id)
        index = image_archive.export(args.file, names)
        for img in index["images"]:
            print(f"image {img['dir']} ({img['kernel_package']} {img['kernel_package_version']})")
        print(f"QEMU inputs: qemu {index['qemu']['qemu_source']['version']}, "
              f"{len(index['qemu']['files'])} files")
        print(f"export: {args.file}")
        return 0
    for line in image_archive.import_(args.file):
        print(line)
    return 0


def _characterize(args: argparse.Namespace) -> int:
    from blklab import characterize as ch

    jobs = ch.suite()
    if args.list:
        knobs = ch.defaults()
        for j in jobs:
            print(f"{j.name}: {j.description}" + (" (needs --fill-size)" if j.optional else ""))
        print("knobs: " + ", ".join(f"{k}={v}" for k, v in knobs.items()))
        return 0
    if args.compare:
        from blklab.results import write_atomic

        cc = characterize_compare

        if args.target or args.out:
            raise BlklabError("characterize --compare DRIVE_DIR RUN_DIR takes no profile and "
                              "no --out")
        if args.output is not None and args.output.exists():
            raise BlklabError(f"{args.output}: already exists; nothing is overwritten")
        drive_dir, run_dir = args.compare
        rows = cc.compare(drive_dir, run_dir, args.job)
        if args.format == "html":
            from blklab import characterize_plots

            text = characterize_plots.render_html(drive_dir, run_dir, rows)
        else:
            text = cc.render(drive_dir, run_dir, rows, args.format)
        for line in cc.scheduler_warnings(drive_dir, run_dir, rows):
            print(f"warning: {line}", file=sys.stderr)
        if args.output is not None:
            write_atomic(args.output, text)
            print(f"table: {args.output}")
        else:
            print(text, end="")
        return 0
    if not args.target or not args.out:
        raise BlklabError("characterize: give a profile (or scenario) and --out DIR, "
                          "or --compare DRIVE_DIR RUN_DIR, or --list")
    if args.output is not None or args.format != "text":
        raise BlklabError("characterize: --format and -o shape --compare's table")
    knobs = {"RUNTIME": args.runtime, "RAMP": args.ramp, "FILL_SIZE": args.fill_size}
    prepared, scenarios = ch.plan(args.target, args.out, args.job, knobs, args.scheduler,
                                  args.precondition)
    from blklab import runner, table

    status = 0
    for p, s in zip(prepared, scenarios):
        print(f"== {p.job.name}: {p.job.description}")
        _, cells = runner.run(s, runner.RunOptions(out=p.run_dir, jobs=1,
                                                   results_root=_results_root(args)))
        print(table.render(cells))
        if any(c["status"] != "ok" for c in cells) or not cells:
            status = 1
    print(f"results: {args.out}")
    print(f"compare: blklab characterize --compare DRIVE_DIR {args.out}")
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "validate":
            s = scenario_mod.load(args.scenario, short=args.short,
                                  guest_set=scenario_mod.parse_guest_set(args.guest))
            if args.kernel:
                print(s.guest.kernel)
                return 0
            for c in s.cells():
                print(c.id)
            return 0
        if args.command == "switches":
            from blklab import switches

            print(switches.render(args.run))
            return 0
        if args.command == "biolatency":
            from blklab import biolatency

            show = biolatency.as_json if args.json else biolatency.render
            print(show(args.run, args.cell, args.start))
            return 0
        if args.command == "turns":
            from blklab import turns

            if args.gap_ms is not None and args.gap_ms <= 0:
                raise BlklabError(f"--gap-ms {args.gap_ms:g}: must be above 0")
            show = turns.as_json if args.json else turns.render
            print(show(args.run, args.cell, args.gap_ms))
            return 0
        if args.command == "run":
            return _run(args)
        if args.command == "reference":
            from blklab import reference

            if args.check:
                stale = reference.differences(args.out)
                for path in stale:
                    print(f"{path}: differs from what 'blklab reference' generates",
                          file=sys.stderr)
                return 1 if stale else 0
            for path in reference.write(args.out):
                print(path)
            return 0
        if args.command == "import":
            from blklab import importer

            result = importer.import_capture(args.capture, args.device)
            if args.output:
                from blklab.results import write_atomic

                write_atomic(args.output, result.toml)
                print(f"scenario: {args.output}")
            else:
                print(result.toml, end="")
            for line in result.unmapped:
                print(f"not mapped: {line}", file=sys.stderr)
            return 0
        if args.command == "image":
            return _image(args)
        if args.command == "characterize":
            return _characterize(args)
        if args.command == "fit":
            from blklab import fit

            return fit.main(args)
        if args.command == "profile-errors":
            from blklab import profile_errors

            return profile_errors.main(args)
        if args.command == "irq-waits":
            from blklab import diverge, paths

            if not args.trace.is_file():
                raise BlklabError(f"irq-waits: {args.trace}: no such trace file")
            qemu = paths.qemu_binary()
            symbols = diverge.Symbols(qemu) if qemu.is_file() else None
            print(diverge.render_waits(diverge.interrupt_waits(diverge.read_trace(args.trace)),
                                       symbols, args.top))
            return 0
        if args.command == "diverge":
            from blklab import diverge

            found, text = diverge.run(args.scenario, args.cell, args.out, args.mode,
                                      _results_root(args), args.context)
            print(text)
            return 0 if found.comparison.identical and not found.result_diffs else 1
        from blklab import baseline, expectations, runner

        if args.command == "report":
            if len(args.run) > 1:
                if not args.markdown:
                    raise BlklabError("report: several runs are shown side by side only with "
                                      "--markdown; report.html is written for one run at a time")
                from blklab import markdown

                runs = [runner.load_run(path) for path in args.run]
                try:
                    print(markdown.render_runs([(r.cells, r.manifest) for r in runs],
                                               [r.path for r in runs]), end="")
                except ValueError as e:
                    raise BlklabError(f"report: {e}") from None
                return 0
            run = runner.load_run(args.run[0])
            outcomes = expectations.evaluate(run.scenario, run.cells)
            if args.markdown:
                from blklab import markdown

                print(markdown.render(run.cells, run.manifest, outcomes, run.path), end="")
                return 0
            against = baseline.load(_baseline_file(args, args.against)) if args.against else None
            print(f"report: {_write_report(run, outcomes, args.output, against)}")
            return 0
        if args.command == "compare-fio":
            from blklab import compare_fio

            run = runner.load_run(args.run)
            customer = compare_fio.load_fio_json(args.customer_json)
            print(compare_fio.render(args.customer_json,
                                     compare_fio.compare(args.customer_json, customer, run.cells)))
            return 0
        if args.command == "check":
            run = runner.load_run(args.run)
            outcomes = expectations.evaluate(run.scenario, run.cells)
            _print_outcomes(outcomes)
            return 1 if expectations.failing(outcomes) else 0
        if args.command == "baseline":
            run = runner.load_run(args.run)
            path = baseline.baseline_path(_results_root(args), args.name)
            baseline.save(path, run.cells, run.manifest)
            print(f"baseline {args.name}: {path}")
            return 0
        if args.command == "compare":
            path = _baseline_file(args, args.baseline)
            base = baseline.load(path)
            run = runner.load_run(args.run)
            new = baseline.snapshot(run.cells, run.manifest)
            changes = baseline.compare(base, new, args.tolerance)
            print(baseline.render(changes))
            for w in baseline.input_warnings(base, new):
                print(f"warning: {w}")
            regressed = [c for c in changes if c.verdict in ("regressed", "missing")]
            print(f"{len(regressed)} regression(s) against {path}")
            unknown = sum(c.verdict == "no interval" for c in changes)
            if unknown:
                print(f"{unknown} metric(s) with no verdict: one realtime sample on a side "
                      "gives no interval; use --repeats 3 or more, or deterministic mode")
            return 1 if regressed else 0
    except BlklabError as e:
        print(f"blklab: {e}", file=sys.stderr)
        return e.exit_code
    return 2
