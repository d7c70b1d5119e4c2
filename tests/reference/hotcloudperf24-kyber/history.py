#!/usr/bin/env python3
"""What the reference drive had been through before each cited run
(runs.toml), from the original repository's own fio outputs: every fio JSON
of the raw-device experiments (micro-bench-*), ordered by its timestamp,
with the writes its "disk_util" counted on the device (write_ios x bs, the
ramp included), and per cited run the bytes written to the same device
before it and its write IOPS per 60 s of its measured time (fio's IOPS
log). Every figure is the original's or a sum of them.

    git clone https://github.com/stonet-research/hotcloudperf24-kyber-artifact-public src
    git -C src checkout 269a4f8526fe887d31c04fe2ceb678ed4e90bbed
    python3 tests/reference/hotcloudperf24-kyber/history.py src
"""

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "harness"))

from blklab import cited_runs  # noqa: E402

SIZES = {"k": 1 << 10, "m": 1 << 20}


def fio_json(path: Path) -> dict:
    text = path.read_text()
    return json.loads(text[text.index("{"):])


def block_bytes(options: dict) -> int:
    bs = options["bs"].lower()
    return int(bs[:-1]) * SIZES[bs[-1]] if bs[-1] in SIZES else int(bs)


def runs(src: Path) -> list[tuple[int, str, str, int]]:
    """(timestamp, path, device, bytes written to it) of every raw-device run."""
    out = []
    for path in sorted(src.glob("micro-bench-*/results_*/rep_*/fio_output/*.txt")):
        doc = fio_json(path)
        options = doc["global options"]
        for util in doc.get("disk_util", []):
            out.append((doc["timestamp"], str(path.relative_to(src)), util["name"],
                        util["write_ios"] * block_bytes(options)))
    return sorted(out)


def main(src: Path) -> None:
    history = runs(src)
    first, last = history[0][0], history[-1][0]
    devices = sorted({r[2] for r in history})
    print(f"{len(history)} raw-device runs on {', '.join(devices)}, "
          f"{time.strftime('%Y-%m-%d', time.gmtime(first))} to "
          f"{time.strftime('%Y-%m-%d', time.gmtime(last))}, "
          f"{sum(r[3] for r in history) / 1e12:.1f} TB written")
    for rep, run in cited_runs.load(HERE / "runs.toml").runs.items():
        name = run.path
        doc = fio_json(src / name)
        device = doc["disk_util"][0]["name"]
        before = [r for r in history if r[0] < doc["timestamp"] and r[2] == device]
        options = doc["global options"]
        print(f"{rep}: {time.strftime('%Y-%m-%d %H:%M', time.gmtime(doc['timestamp']))} UTC "
              f"on {options['filename']} (size={options['size']}, "
              f"ramp_time={options['ramp_time']}, runtime={options['runtime']}): "
              f"{len(before)} runs before it wrote {sum(r[3] for r in before) / 1e12:.1f} TB "
              f"to {device}; write IOPS {doc['jobs'][0]['write']['iops']:.0f}")
        log = src / name.replace("fio_output/", "iops_log/").replace(".txt", "_iops_iops.2.log")
        if log.exists():
            per_s = [int(line.split(",")[1]) for line in log.read_text().splitlines()]
            means = [sum(per_s[i:i + 60]) / len(per_s[i:i + 60]) for i in range(0, len(per_s), 60)]
            print("  writer IOPS per 60 s of the measured time: "
                  + ", ".join(f"{m / 1000:.0f}K" for m in means))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
