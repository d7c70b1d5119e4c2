"""The blklab command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from blklab import __version__, runner, scenario as scenario_mod, table
from blklab.errors import BlklabError


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="blklab", description="A lab for the Linux block layer.")
    p.add_argument("--version", action="version", version=f"blklab {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a scenario: one fresh VM per cell")
    r.add_argument("scenario", type=Path, help="scenario file (TOML)")
    r.add_argument("--repeats", type=_positive, help="override scenario.repeats")
    r.add_argument("--mode", choices=scenario_mod.MODES, help="override scenario.mode")
    r.add_argument("--accel", choices=("tcg", "kvm"), help="skip the KVM probe and use this")
    r.add_argument("--jobs", type=_positive, help="cells run in parallel (default: cores)")
    r.add_argument("--out", type=Path, help="run directory (default results/<scenario>/<run-id>)")

    v = sub.add_parser("validate", help="check a scenario file and list its cells")
    v.add_argument("scenario", type=Path)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "validate":
            s = scenario_mod.load(args.scenario)
            for c in s.cells():
                print(c.id)
            return 0
        if args.command == "run":
            s = scenario_mod.load(args.scenario)
            options = runner.RunOptions(mode=args.mode, accel=args.accel, jobs=args.jobs,
                                        out=args.out, repeats=args.repeats)
            run_dir, cells = runner.run(s, options)
            print(table.render(cells))
            failed = [c for c in cells if c["status"] != "ok"]
            print(f"results: {run_dir} ({len(cells) - len(failed)} ok, {len(failed)} failed)")
            return 1 if failed else 0
    except BlklabError as e:
        print(f"blklab: {e}", file=sys.stderr)
        return e.exit_code
    return 2
