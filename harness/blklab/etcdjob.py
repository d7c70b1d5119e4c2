"""etcd as an application job: a one-member etcd 3.4 with its data on the
device under test's filesystem, a client's puts, and a backup reading the
same device beside them (scenarios/etcd-backup.md says why each part is
what it is).

A [[job]] with `app = "etcd"` takes blklab's own options (not etcd's, which
go in [etcd] options):

  options.puts              puts, one after another by one client (required)
  options.value_bytes       bytes of each put's value (default 256)
  options.backup            "sequential-read": beside the puts, `dd
                            iflag=direct bs=<backup_block_kib>k` reads the
                            backup file from start to end, over and over,
                            until the puts end; "none": no backup
  options.backup_block_kib  dd's block size in KiB (default 1024)
  options.start_spread_ms   the puts start after a delay drawn from the
                            cell's seed, uniform over [0, start_spread_ms)
                            ms in whole us (default 100: bolt's batch
                            interval); 0: at once
  init.backup_file_mib      the backup file's size in MiB, written (zeros,
                            conv=fsync) in the prepare step (default 256)

Seeded start (scenarios/etcd-backup.md, "What the seed draws"): in a real
run neither the backup nor the client's requests wait for the other, so
the puts meet etcd's 100 ms backend commit and the backup's pass at any
phase. Each job draws, in the guest, from BLKLAB_SEED and its own index:
the delay before its first put (the backup, if any, reads meanwhile),
and, beside a backup, the block of the file its first pass starts at,
uniform over the file's blocks (later passes start at 0). The draw is
xorshift32 (Marsaglia 2003: 13, 17, 5), eight rounds from seed + 1 +
stream x 2654435769 mod 2^32, scaled to [0, n) as x * n / 2^32: shell
arithmetic in 64 bits without overflow for n < 2^31. The drawn values are
kept in <job>-seeded.txt and in the cell (`start_delay_us`,
`backup_skip_blocks`).

Each put is one `busybox wget --post-data` to etcd's gRPC gateway
(/v3/kv/put, key "blklab", the value base64-coded), a process per put;
etcd answers it after its WAL's fdatasync (a single member: raft's Ready
carries the entry, etcdserver's raft loop saves it with wal.Save, which
syncs). The cell reads etcd's /metrics before and after the puts; the
difference of each histogram is the measured run's.

Percentiles from a Prometheus histogram: etcd 3.4's disk histograms have
14 buckets, upper bounds 1 ms * 2^k (k = 0..13, to 8.192 s) and +Inf
(wal/metrics.go, mvcc/backend/metrics.go: ExponentialBuckets(0.001, 2,
14)). A percentile is reported as the bucket it falls in: the first
bucket whose running count reaches ceil(n * p / 100) (nearest rank), as
its lower and upper bound. The true percentile lies in between, so its
error is up to a factor of 2, or anywhere below 1 ms in the first bucket.
The mean (the histogram's _sum over its _count) is exact.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

APP = "etcd"
CLIENT_URL = "http://127.0.0.1:2379"
# Options of a job (blklab's, see above) and their defaults.
OPTIONS = {"puts": None, "value_bytes": 256, "backup": "sequential-read",
           "backup_block_kib": 1024, "start_spread_ms": 100}
INIT = {"backup_file_mib": 256}
BACKUPS = ("sequential-read", "none")
LIMITS = {"puts": (1, 1_000_000), "value_bytes": (1, 65536), "backup_block_kib": (4, 65536),
          "start_spread_ms": (0, 10_000), "backup_file_mib": (1, 65536)}
# The streams of job i's draws: 2i + DELAY_STREAM, 2i + SKIP_STREAM.
DELAY_STREAM, SKIP_STREAM = 0, 1
# etcd's own flags blklab sets: the member's name, data and URLs.
SERVER_RESERVED = ("name", "data-dir", "wal-dir", "listen-client-urls", "advertise-client-urls",
                   "listen-peer-urls", "initial-advertise-peer-urls", "initial-cluster",
                   "initial-cluster-state", "listen-metrics-urls", "config-file")
# How etcd 3.4 names a flag it refuses (Go's flag package, the first line
# etcd prints before its usage): the flag is group 1.
REFUSALS = (re.compile(r'^invalid value "[^"]*" for flag -+([a-z0-9-]+)'),
            re.compile(r"^flag provided but not defined: -+([a-z0-9-]+)"))
LOG = "etcd.txt"
# The histograms the cell keeps, by the name their metrics use here.
HISTOGRAMS = {"wal_fsync": "etcd_disk_wal_fsync_duration_seconds",
              "backend_commit": "etcd_disk_backend_commit_duration_seconds"}
PERCENTILES = (50.0, 99.0, 99.9)

METRICS = {
    "app_wal_fsync_p99_ns": "etcd: the upper bound of the wal_fsync_duration_seconds bucket "
                            "that holds the 99th percentile (within a factor of 2)",
    "app_wal_fsync_p99_lower_ns": "etcd: that bucket's lower bound",
    "app_wal_fsync_mean_ns": "etcd: the mean WAL fdatasync (the histogram's sum over count)",
    "app_wal_fsync_count": "etcd: WAL fdatasyncs in the measured run",
    "app_backend_commit_p99_ns": "etcd: the upper bound of the backend_commit_duration_seconds "
                                 "bucket that holds the 99th percentile",
    "app_backend_commit_mean_ns": "etcd: the mean backend commit",
    "app_backup_mib_s": "etcd: the backup's reads, MiB per second of the measured run (the "
                        "device's read sectors over the run's time)",
}


def parse_job(r: Any, name: str) -> tuple[tuple[tuple[str, str], ...],
                                           tuple[tuple[str, str], ...]]:
    """A job's options and init, checked, with their defaults filled in,
    as (name, value) pairs; r is the scenario's typed reader of the job."""
    return (_table(r, "options", OPTIONS, required=("puts",)),
            _table(r, "init", INIT, required=()))


def _table(r: Any, key: str, allowed: dict[str, Any], required: tuple[str, ...]
           ) -> tuple[tuple[str, str], ...]:
    table = r.get(key, dict, {})
    for raw in table:
        if raw.replace("-", "_") not in allowed:
            raise r.error(f"{key}.{raw}", f"not an option of an etcd job (allowed: "
                          f"{', '.join(allowed)})")
    values = {raw.replace("-", "_"): v for raw, v in table.items()}
    out = []
    for name, default in allowed.items():
        where = f"{key}.{name}"
        value = values.get(name, default)
        if value is None:
            if name in required:
                raise r.error(where, "required: the number of puts the client makes")
            continue
        if name == "backup":
            if value not in BACKUPS:
                raise r.error(where, f"'{value}' is not one of {', '.join(BACKUPS)}")
        else:
            lo, hi = LIMITS[name]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise r.error(where, f"an integer from {lo} to {hi}")
        out.append((name, str(value)))
    return tuple(out)


# seeded STREAM N: a number in [0, N) drawn from the cell's seed and STREAM
# (the module's docstring: xorshift32, eight rounds; N < 2^31).
SEEDED = """seeded() {  # seeded STREAM N: a number in [0, N) from the cell's seed and STREAM
    x=$(( (BLKLAB_SEED + 1 + $1 * 2654435769) & 4294967295 ))
    [ $x -ne 0 ] || x=1
    r=0
    while [ $r -lt 8 ]; do
        x=$(( x ^ ((x << 13) & 4294967295) ))
        x=$(( x ^ (x >> 17) ))
        x=$(( x ^ ((x << 5) & 4294967295) ))
        r=$((r + 1))
    done
    echo $(( x * $2 >> 32 ))
}
"""


def server_script(options: tuple[tuple[str, str], ...]) -> str:
    """Starts a one-member etcd with its data on /data, waiting until it
    answers on its client URL; defines the runs' shell functions."""
    flags = "".join(f" --{k}={v}" for k, v in options)
    return f"""
# etcd, one member, with its data on the device under test.
etcd --name=n0 --data-dir=/data/etcd --listen-client-urls={CLIENT_URL} \\
    --advertise-client-urls={CLIENT_URL} --listen-peer-urls=http://127.0.0.1:2380 \\
    --initial-advertise-peer-urls=http://127.0.0.1:2380 \\
    --initial-cluster=n0=http://127.0.0.1:2380 --initial-cluster-state=new{flags} \\
    > "$out/{LOG}" 2>&1 &
etcd_pid=$!
wait_for etcd $etcd_pid wget -q -O /dev/null {CLIENT_URL}/health
etcd_puts() {{  # etcd_puts N VALUE: N puts of key blklab, one after another
    n=0
    while [ $n -lt $1 ]; do
        wget -q -O /dev/null --post-data "{{\\"key\\":\\"YmxrbGFi\\",\\"value\\":\\"$2\\"}}" \\
            {CLIENT_URL}/v3/kv/put || {{ echo "put $n failed"; return 1; }}
        n=$((n + 1))
    done
    echo "puts: $n"
}}
backup_reads() {{  # backup_reads FILE BS SKIP: FILE from block SKIP to its end, then
    skip=$3       # from its start, over and over, until the stop file
    while [ ! -e /tmp/backup-stop ]; do
        dd if=$1 of=/dev/null bs=$2 skip=$skip iflag=direct 2> /dev/null || return 1
        skip=0
    done
}}
{SEEDED}"""


def prepare_script(name: str, i: int, init: dict[str, str], options: dict[str, str]) -> str:
    if options["backup"] == "none":
        return ""
    return (f"step {name}-backup-file dd if=/dev/zero of=/data/backup-{i}.img bs=1048576 "
            f"count={init['backup_file_mib']} conv=fsync\n")


def backup_blocks(init: dict[str, str], options: dict[str, str]) -> int:
    """The backup file's blocks of backup_block_kib (a last partial one
    counts): the range its first pass's start is drawn from."""
    kib, block = int(init["backup_file_mib"]) * 1024, int(options["backup_block_kib"])
    return -(-kib // block)


def run_script(name: str, i: int, init: dict[str, str], options: dict[str, str],
               mark: str) -> str:
    """The measured run: the seeded start drawn (the module's docstring),
    the backup started at its drawn block, the delay, the puts between two
    marks and two reads of /metrics, the backup stopped after the second
    mark."""
    spread_us = int(options["start_spread_ms"]) * 1000
    text = (f"v=$(head -c {options['value_bytes']} /dev/zero | tr '\\000' v | base64 -w 0)\n"
            f"step {name}-metrics-start wget -q -O - {CLIENT_URL}/metrics\n"
            f"delay=$(seeded {2 * i + DELAY_STREAM} {spread_us})\n"
            f"echo \"start_delay_us $delay\" > \"$out/{name}-seeded.txt\"\n")
    backup = options["backup"] != "none"
    if backup:
        text += (f"skip=$(seeded {2 * i + SKIP_STREAM} {backup_blocks(init, options)})\n"
                 f"echo \"backup_skip_blocks $skip\" >> \"$out/{name}-seeded.txt\"\n"
                 f"rm -f /tmp/backup-stop\n"
                 f"backup_reads /data/backup-{i}.img {options['backup_block_kib']}k $skip "
                 f"> \"$out/{name}-backup.txt\" 2>&1 &\nbackup_pid=$!\n")
    text += ("[ $delay -eq 0 ] || sleep $((delay / 1000000)).$(printf %06d $((delay % 1000000)))\n"
             f"{mark} {name}-start\n"
             f"step {name}-run etcd_puts {options['puts']} \"$v\"\n"
             f"{mark} {name}-end\n")
    if backup:
        text += ("touch /tmp/backup-stop\n"
                 f"wait $backup_pid || {{ echo \"the backup failed\"; exit 1; }}\n")
    text += f"step {name}-metrics-end wget -q -O - {CLIENT_URL}/metrics\n"
    return text


STOP = "kill $etcd_pid\nwait $etcd_pid || true\n"

# --- Results -------------------------------------------------------------

_SAMPLE = re.compile(r'^([a-z_:][a-z0-9_:]*)(?:\{le="([^"]+)"\})? ([0-9.eE+-]+|NaN)\s*$')


def parse_metrics(text: str) -> dict[str, dict[str, Any]]:
    """The histograms of Prometheus's text format: name -> {"buckets":
    [(upper bound s, cumulative count)] in order of bound (+Inf as
    math.inf), "sum": s, "count": n}. Other samples are left out."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if not m:
            continue
        name, le, value = m.groups()
        for suffix, field in (("_bucket", "buckets"), ("_sum", "sum"), ("_count", "count")):
            if name.endswith(suffix) and (le is not None) == (suffix == "_bucket"):
                h = out.setdefault(name[:-len(suffix)], {"buckets": []})
                if field == "buckets":
                    h["buckets"].append((math.inf if le == "+Inf" else float(le),
                                         int(float(value))))
                elif field == "count":
                    h["count"] = int(float(value))
                else:
                    h["sum"] = float(value)
    for h in out.values():
        h["buckets"].sort()
    return out


def histogram_delta(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """after less before (before None: after), bucket by bucket; the two
    must have the same bounds."""
    if before is None:
        return {"buckets": list(after["buckets"]), "sum": after.get("sum", 0.0),
                "count": after.get("count", 0)}
    bounds_a = [b for b, _ in after["buckets"]]
    if [b for b, _ in before["buckets"]] != bounds_a:
        raise ValueError("the histogram's buckets changed between the two reads")
    buckets = [(b, ca - cb) for (b, ca), (_, cb) in zip(after["buckets"], before["buckets"])]
    if any(c < 0 for _, c in buckets):
        raise ValueError("a bucket's count fell between the two reads")
    return {"buckets": buckets, "sum": after.get("sum", 0.0) - before.get("sum", 0.0),
            "count": after.get("count", 0) - before.get("count", 0)}


def bucket_percentile(buckets: list[tuple[float, int]], pct: float
                      ) -> tuple[float, float] | None:
    """(lower, upper) bound in s of the bucket that holds the pct-th
    percentile by nearest rank (the ceil(n * pct / 100)-th smallest, in
    exact arithmetic) of a cumulative histogram; None when it counts
    nothing. The first bucket's lower bound is 0."""
    n = buckets[-1][1] if buckets else 0
    if not n:
        return None
    rank = max(1, math.ceil(Fraction(str(pct)) * n / 100))
    lower = 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            return lower, upper
        lower = upper
    raise ValueError("the histogram's +Inf bucket counts fewer than its total")


def summary(h: dict[str, Any]) -> dict[str, Any]:
    """A measured histogram as the cell keeps it: per-bucket (not
    cumulative) counts, count, sum, mean and percentiles' buckets."""
    per, prev = [], 0
    for upper, cumulative in h["buckets"]:
        per.append(["+Inf" if math.isinf(upper) else upper, cumulative - prev])
        prev = cumulative
    n = h["count"]
    pcts = {}
    for p in PERCENTILES:
        found = bucket_percentile(h["buckets"], p)
        pcts[f"{p:g}"] = (None if found is None else
                          {"lower_s": found[0], "upper_s": None if math.isinf(found[1])
                           else found[1]})
    return {"count": n, "sum_s": round(h["sum"], 9),
            "mean_s": round(h["sum"] / n, 9) if n else None,
            "buckets": per, "percentiles": pcts}


def results(name: str, text: Any, options: dict[str, Any]) -> dict[str, Any]:
    """One etcd job's results from its output files (text(file) -> str):
    its puts, their rate, and the two histograms over the measured run."""
    run = text(f"{name}-run.txt")
    m = re.search(r"^puts: (\d+)$", run, re.M)
    if m is None:
        raise ValueError(f"no 'puts:' line in {name}-run.txt: the put loop did not finish")
    before = parse_metrics(text(f"{name}-metrics-start.txt"))
    after = parse_metrics(text(f"{name}-metrics-end.txt"))
    out: dict[str, Any] = {"transactions": int(m.group(1))}
    for key, metric_name in HISTOGRAMS.items():
        if metric_name not in after:
            raise ValueError(f"{metric_name} is not in etcd's /metrics after the run")
        out[key] = summary(histogram_delta(before.get(metric_name), after[metric_name]))
    t0, t1 = text(f"{name}-start-uptime.txt").strip(), text(f"{name}-end-uptime.txt").strip()
    if t0 and t1:
        seconds = float(t1) - float(t0)
        out["run_s"] = round(seconds, 3)
        out["tps"] = round(out["transactions"] / seconds, 3) if seconds > 0 else None
    out["backup"] = options.get("backup")
    out.update(seeded(text(f"{name}-seeded.txt"), name))
    return out


SEEDED_FIELDS = ("start_delay_us", "backup_skip_blocks")


def seeded(text: str, name: str) -> dict[str, int | None]:
    """The seeded start a job drew (<name>-seeded.txt: "field value"
    lines): start_delay_us, and backup_skip_blocks (None without a
    backup)."""
    out: dict[str, int | None] = dict.fromkeys(SEEDED_FIELDS)
    for line in text.splitlines():
        field, _, value = line.partition(" ")
        if field in out and value.isdigit():
            out[field] = int(value)
    if out["start_delay_us"] is None:
        raise ValueError(f"no start_delay_us line in {name}-seeded.txt: the seeded start "
                         "was not drawn")
    return out


def metric(entry: dict[str, Any], name: str) -> float | None:
    """METRICS[name] of one etcd job's entry in workload.apps, or None."""
    if name == "app_backup_mib_s":
        delta = (entry.get("disk_stats") or {}).get("delta") or {}
        seconds = entry.get("run_s")
        sectors = delta.get("read_sectors")
        return (float(sectors) * 512 / 2**20 / seconds
                if seconds and sectors is not None else None)
    key = "wal_fsync" if name.startswith("app_wal_fsync") else "backend_commit"
    h = entry.get(key)
    if not h:
        return None
    if name.endswith("_count"):
        return float(h["count"])
    if name.endswith("_mean_ns"):
        return h["mean_s"] * 1e9 if h.get("mean_s") is not None else None
    p99 = h["percentiles"].get("99")
    if p99 is None:
        return None
    bound = p99["lower_s"] if name.endswith("_lower_ns") else p99["upper_s"]
    return bound * 1e9 if bound is not None else None
