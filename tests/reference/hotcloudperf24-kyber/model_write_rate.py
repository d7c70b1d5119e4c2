#!/usr/bin/env python3
"""The model's steady-state write rate as `blklab fit` evaluates this
reference (docs/characterize-a-drive.md, "Why the write rate misses"): a
profile with [ssd] keys changed (KEY=VALUE), preconditioned to steady state,
past its SLC cache, on the fit's proxy, run by devmodel-sim for the fit's
0.5 s + 1 s (seed 1), once with the QD256 writer alone and once with the
reference job (the QD1 reader beside it). Prints the write IOPS, the write
amplification and the dies' mean busy share of the simulated time, and with
--fitted the reference job's error table.

    cd harness && /usr/bin/python3 ../tests/reference/hotcloudperf24-kyber/model_write_rate.py \
        [--profile PATH] [KEY=VALUE...]
"""

import argparse
import json
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "harness"))

import drive_dir  # noqa: E402
from blklab import fit, simulate  # noqa: E402
from blklab.scenario import PROFILE_DIR  # noqa: E402

JOB = "read-beside-writes-max"
RAMP_S, RUNTIME_S = fit.DEFAULT_SIM_RAMP_S, fit.DEFAULT_SIM_RUNTIME_S


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--profile", type=Path, default=PROFILE_DIR / "samsung-980pro-1t.toml")
    p.add_argument("changes", nargs="*", metavar="KEY=VALUE")
    args = p.parse_args()
    changes = {}
    for c in args.changes:
        key, _, value = c.partition("=")
        changes[key] = tomllib.loads(f"v = {value}")["v"]
    text = args.profile.read_text()
    factor = fit.proxy_factor(fit.ssd_keys(text))
    if changes:
        text = fit.set_keys(text, "ssd", changes)
    with tempfile.TemporaryDirectory() as tmp:
        drive = fit.load_drive(drive_dir.write(Path(tmp)).parent, [], [], None)
        job = drive.jobs[JOB]
        ev = fit.Evaluator(drive, 1, RAMP_S, RUNTIME_S)
        evaluated = ev.eval_text(text, job, factor)
        writer = simulate.SimJob("writer", ("writer:rw=randwrite,bs=4k,iodepth=256",), True, False,
                                 4096)
        print(f"{args.profile.name} {' '.join(args.changes) or '(as shipped)'}, proxy 1/{factor}:")
        for name, sim in (("writer alone", writer), (JOB, job.sim)):
            doc = simulate.run(evaluated, sim, RAMP_S, RUNTIME_S, 1)
            c = doc["counters"]
            busy = sum(c["die_busy_ns"]) / len(c["die_busy_ns"]) / ((RAMP_S + RUNTIME_S) * 1e9)
            iops = sum(j["write"]["iops"] for j in doc["jobs"])
            print(f"  {name}: write IOPS {iops:.0f}, write amplification {c['waf']:.2f}, "
                  f"dies busy {busy:.0%} of the time")
        rows = ev.rows(text, [JOB], set(), factor)
        print("  " + json.dumps({f"{r.direction} {r.metric}": [round(r.model), round(r.error, 2)]
                                 for r in rows}))


if __name__ == "__main__":
    main()
