"""Application benchmarks as jobs: sysbench against MariaDB, pgbench against
PostgreSQL, a client's puts against etcd (blklab.etcdjob), on the
[filesystem] of the device under test.

A `workload = "command"` scenario's [[job]] tables may name an `app`
instead of a `command`. blklab then writes the command job's script itself
(`script`): it starts the servers the jobs need with their data in /data
(the device under test's filesystem), runs every job's prepare step
(sysbench's `prepare`, pgbench's `-i`) and a `sync`, then each job's
measured run in order, bracketed by the device's /sys/block stat and the
guest's uptime. Every step's output is a file in the command's /out, kept
with the cell; `results` parses them on the host into the cell JSON's
`workload.apps` (one entry per job, in order).

Seeds: sysbench and pgbench seed from the time of day unless told, so each
gets one from the cell's seed: pgbench `--random-seed=<seed>` (an unsigned
64-bit integer, pgbench.c set_random_seed), sysbench `--rand-seed=<seed mod
(2^31 - 1) + 1>` (sysbench 1.0.20 reads an int and takes 0 as "the time of
day", sb_rand.c; the mapping keeps it in 1..2^31-1 and is one-to-one on the
cells' seeds below 2^31 - 1). The prepare steps get the same seeds.

The prepare step runs in every cell, before the measured phase: its I/O
reaches the block layer's counters of the whole cell (`disk_stats`) but not
a job's own (`workload.apps[].disk_stats`, the measured window only). It
is not kept across cells: a cell starts from the guest saved before its
filesystem is made. The model's C ABI can save a drive's state after a
run and open a model from it (devmodel_save_state, devmodel_open_state),
but QEMU's glue and this harness do not use it yet, and without it a cell
restored on loaded data would be timed by a model that never saw the load
(scenarios/README.md, "Applications").

Latency percentiles: sysbench's from its own latency histogram
(`--histogram=on`: 1024 buckets, log-spaced from 0.001 ms to 100000 ms,
sysbench.c and sb_histogram.c; a latency goes to the bucket whose value is
nearest on the log scale, so that value is within 0.9% of it), by
sysbench's own rule (first bucket whose running count reaches floor(n *
p / 100 + 0.5)), so the 95th equals the one sysbench prints; pgbench's
exactly, by nearest rank, from its per-transaction log (`-l`), which the
guest reduces to a count of each latency in us.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from blklab import etcdjob
from blklab.errors import ScenarioError
from blklab.results import disk_delta, parse_diskstat

APPS = ("sysbench", "pgbench", etcdjob.APP)
# The guest's sysbench 1.0.20 (Debian 1.0.20+ds-5): its database tests,
# the Lua scripts in /usr/share/sysbench.
SYSBENCH_TESTS = ("bulk_insert", "oltp_delete", "oltp_insert", "oltp_point_select",
                  "oltp_read_only", "oltp_read_write", "oltp_update_index",
                  "oltp_update_non_index", "oltp_write_only", "select_random_points",
                  "select_random_ranges")
# sysbench's own options (sysbench --help, 1.0.20) a job may set.
SYSBENCH_GENERAL = ("threads", "events", "time", "forced-shutdown", "thread-stack-size",
                    "rate", "report-interval", "rand-type", "rand-spec-iter", "rand-spec-pct",
                    "rand-spec-res", "rand-pareto-h", "percentile", "db-ps-mode",
                    "mysql-ignore-errors")
# oltp_common.lua's sysbench.cmdline.options (every oltp_* and select_*
# script includes it; bulk_insert.lua has none of its own).
_OLTP = ("table-size", "range-size", "tables", "point-selects", "simple-ranges", "sum-ranges",
         "order-ranges", "distinct-ranges", "index-updates", "non-index-updates",
         "delete-inserts", "range-selects", "auto-inc", "skip-trx", "secondary",
         "create-secondary", "mysql-storage-engine", "pgsql-variant")
SYSBENCH_TEST_OPTIONS = {t: _OLTP for t in SYSBENCH_TESTS if t != "bulk_insert"}
SYSBENCH_TEST_OPTIONS["bulk_insert"] = ()
SYSBENCH_TEST_OPTIONS["select_random_points"] = _OLTP + ("random-points",)
SYSBENCH_TEST_OPTIONS["select_random_ranges"] = _OLTP + ("number-of-ranges", "delta")
# What blklab sets itself, and why.
SYSBENCH_RESERVED = {
    "rand-seed": "blklab seeds sysbench from the cell's seed (scenario.seeds)",
    "histogram": "blklab turns the histogram on to take the latency percentiles from it",
    "verbosity": "blklab parses sysbench's report at its default verbosity",
    "db-driver": "the job runs against the guest's MariaDB",
    "config-file": "give the options in the job's options table",
}
for _k in ("host", "port", "socket", "user", "password", "db"):
    SYSBENCH_RESERVED[f"mysql-{_k}"] = "blklab starts MariaDB and connects to it"

# pgbench 15's long options (its --help): initialisation (-i) and runs.
PGBENCH_INIT = ("scale", "fillfactor", "init-steps", "no-vacuum", "quiet", "foreign-keys",
                "unlogged-tables", "partitions", "partition-method")
PGBENCH_RUN = ("builtin", "client", "connect", "jobs", "latency-limit", "protocol",
               "no-vacuum", "progress", "rate", "select-only", "skip-some-updates",
               "transactions", "time", "vacuum-all", "max-tries", "failures-detailed",
               "verbose-errors", "report-per-command", "sampling-rate", "progress-timestamp")
PGBENCH_RESERVED = {
    "random-seed": "blklab seeds pgbench from the cell's seed (scenario.seeds)",
    "log": "blklab logs every transaction to take the latency percentiles from it",
    "log-prefix": "blklab names the transaction log",
    "aggregate-interval": "blklab reads the per-transaction log, which this replaces",
    "host": "blklab starts PostgreSQL and connects to it",
    "port": "blklab starts PostgreSQL and connects to it",
    "username": "blklab starts PostgreSQL and connects to it",
    "file": "a custom script is not supported yet; use builtin",
    "define": "a custom script is not supported yet; use builtin",
}
# A value reaches a shell command line unquoted: only these characters.
_VALUE = re.compile(r"^[A-Za-z0-9_.,:/+=-]{1,200}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PERCENTILES = (50.0, 95.0, 99.0, 99.9)
# pgbench's transactions are also counted per interval of their completion
# time (the log's epoch and epoch_us), to see latency over time.
INTERVAL_US = 100_000
# PostgreSQL's settings the cell records as in effect (pg_settings), those
# a checkpoint's timing rests on.
PG_SETTINGS_SHOWN = ("backend_flush_after", "bgwriter_flush_after", "checkpoint_completion_target",
                     "checkpoint_flush_after", "checkpoint_timeout", "full_page_writes",
                     "max_wal_size", "shared_buffers", "synchronous_commit", "wal_segment_size",
                     "wal_sync_method", "wal_writer_flush_after")
# The WAL's position in bytes (pg_lsn - pg_lsn is numeric).
WAL_BYTES_SQL = "select pg_current_wal_lsn() - '0/0'"
SYSBENCH_SEED_MODULUS = 2**31 - 1
MOUNT_POINT = "/data"


@dataclass(frozen=True)
class AppJob:
    """One [[job]] with an app: what it runs, with its options as given."""

    name: str
    app: str  # one of APPS
    test: str = ""  # sysbench: its test; pgbench: ""
    options: tuple[tuple[str, str], ...] = ()  # sysbench: prepare and run; pgbench: run
    init: tuple[tuple[str, str], ...] = ()  # pgbench -i

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "app": self.app, "test": self.test,
                "options": dict(self.options), "init": dict(self.init)}


# [mariadb] and [postgresql]: the servers' own settings, every cell. Each
# server checks its names and values when it starts; blklab keeps those it
# sets itself.
SERVERS = {"mariadb": "sysbench", "postgresql": "pgbench", "etcd": etcdjob.APP}
SERVER_RESERVED = {
    "mariadb": ("no-defaults", "defaults-file", "defaults-extra-file", "user", "datadir",
                "socket", "skip-networking", "port", "bind-address", "pid-file"),
    "postgresql": ("data-directory", "listen-addresses", "unix-socket-directories", "port",
                   "config-file", "hba-file", "ident-file"),
    "etcd": etcdjob.SERVER_RESERVED,
}
_SERVER_OPTION = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Servers:
    """The servers' own settings, as (name, value) in the order given:
    mariadbd --name=value, postgres -c name=value."""

    mariadb: tuple[tuple[str, str], ...] = ()
    postgresql: tuple[tuple[str, str], ...] = ()
    etcd: tuple[tuple[str, str], ...] = ()  # etcd --name=value

    def to_json(self) -> dict[str, Any]:
        return {"mariadb": dict(self.mariadb), "postgresql": dict(self.postgresql),
                "etcd": dict(self.etcd)}


def parse_servers(path: str, data: dict[str, Any], jobs: tuple["AppJob", ...],
                  reader: Callable[[dict[str, Any], str], Any]) -> Servers:
    """[mariadb] options and [postgresql] options, each beside a job that
    runs against that server."""
    found = {}
    for server, app in SERVERS.items():
        table = data.get(server)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ScenarioError(path, server, "must be a table")
        r = reader(table, server)
        options = r.get("options", dict, {})
        r.finish()
        if not any(j.app == app for j in jobs):
            raise ScenarioError(path, server, f"sets {server}'s options, and no [[job]] has "
                                f"app = \"{app}\", which runs against it")
        out = []
        for name, value in options.items():
            where = f"{server}.options.{name}"
            if not _SERVER_OPTION.match(name):
                raise ScenarioError(path, where, "a setting's name: lowercase letters, "
                                    "digits, _ . -")
            if name.replace("_", "-") in SERVER_RESERVED[server]:
                raise ScenarioError(path, where, "is set by blklab, which starts the server "
                                    "with its data on the device under test")
            if isinstance(value, bool):
                value = "on" if value else "off"
            if not isinstance(value, (int, float, str)) or not _VALUE.match(str(value)):
                raise ScenarioError(path, where, "a number, a boolean or 1-200 of letters, "
                                    "digits and _ . , : / + = -")
            out.append((name, str(value)))
        found[server] = tuple(out)
    return Servers(**found)


# How each server names a setting it refuses at its start (PostgreSQL 15's
# guc.c and xlog.c messages; MariaDB's my_getopt.c): the name is group 1.
_REFUSALS = (
    ("postgresql", re.compile(r'unrecognized configuration parameter "([^"]+)"')),
    ("postgresql", re.compile(r'(?:invalid value for|outside the valid range for) parameter '
                              r'"([^"]+)"')),
    ("postgresql", re.compile(r'parameter "([^"]+)" requires')),
    ("postgresql", re.compile(r'"([a-z_]+)" must be at least')),
    ("mariadb", re.compile(r"unknown (?:variable|option) '(?:--)?([^'=]+)")),
    ("mariadb", re.compile(r"Error while setting value '[^']*' to '([^']+)'")),
    *(("etcd", pattern) for pattern in etcdjob.REFUSALS),
)


SERVER_LOGS = {"postgresql": "postgres.txt", "mariadb": "mariadbd.txt", "etcd": etcdjob.LOG}


def refused_setting(files: dict[str, bytes], prefix: str = "command-") -> str | None:
    """When a server's log (the command's output files, sent as
    <prefix><file>) says it refused a setting at its start: the setting's
    scenario key ([mariadb] or [postgresql] options) as the server names it,
    and the server's line (`postgresql.options.max_wal_size: ... FATAL:
    ...`); else None."""
    for server, pattern in _REFUSALS:
        log = files.get(prefix + SERVER_LOGS[server], b"").decode(errors="replace")
        for line in log.splitlines():
            m = pattern.search(line)
            if m:
                return f"{server}.options.{m.group(1)}: {line.strip()}"
    return None


def is_app_job(table: Any) -> bool:
    return isinstance(table, dict) and "app" in table


def sysbench_seed(seed: int) -> int:
    """sysbench's --rand-seed for a cell's seed: 1..2^31-1 (0 is the time of day)."""
    return seed % SYSBENCH_SEED_MODULUS + 1


def parse(path: str, tables: list[dict[str, Any]],
          reader: Callable[[dict[str, Any], str], Any]) -> tuple[AppJob, ...]:
    """The [[job]] tables of an application workload, each read through the
    scenario's typed reader (reader(table, prefix))."""
    jobs = []
    for i, table in enumerate(tables):
        prefix = f"job[{i}]"
        if not is_app_job(table):
            raise ScenarioError(path, prefix, "a job with an app sits only beside other jobs "
                                "with an app; a command job runs alone")
        r = reader(table, prefix)
        name = r.get("name", str, required=True)
        if not _NAME.match(name):
            raise r.error("name", "must be 1-64 of letters, digits, '_', '.', '-'")
        if any(j.name == name for j in jobs):
            raise r.error("name", f"'{name}' names an earlier job too")
        app = r.choice("app", APPS, required=True)
        if app == "sysbench":
            test = r.choice("test", SYSBENCH_TESTS, required=True)
            allowed = SYSBENCH_GENERAL + SYSBENCH_TEST_OPTIONS[test]
            options = _options(r, "options", allowed, SYSBENCH_RESERVED, f"sysbench {test}",
                               sysbench_bool=True)
            jobs.append(AppJob(name, app, test, options))
        elif app == etcdjob.APP:
            options, init = etcdjob.parse_job(r, name)
            jobs.append(AppJob(name, app, "", options, init))
        else:
            init = _options(r, "init", PGBENCH_INIT, PGBENCH_RESERVED, "pgbench -i",
                            sysbench_bool=False)
            options = _options(r, "options", PGBENCH_RUN, PGBENCH_RESERVED, "pgbench",
                               sysbench_bool=False)
            jobs.append(AppJob(name, app, "", options, init))
        r.finish()
    return tuple(jobs)


def _options(r: Any, key: str, allowed: tuple[str, ...], reserved: dict[str, str],
             tool: str, sysbench_bool: bool) -> tuple[tuple[str, str], ...]:
    """A table of the tool's long options (written with '-' or '_'), as
    (name with '-', value) in the order given. sysbench's booleans are
    on/off values; pgbench's are flags (true: given, false: left out)."""
    table = r.get(key, dict, {})
    out = []
    for raw, value in table.items():
        name = raw.replace("_", "-")
        where = f"{key}.{raw}"
        if name in reserved:
            raise r.error(where, f"{tool}'s --{name} is set by blklab: {reserved[name]}")
        if name not in allowed:
            raise r.error(where, f"not an option of {tool} (allowed: {', '.join(allowed)})")
        if isinstance(value, bool):
            if sysbench_bool:
                out.append((name, "on" if value else "off"))
            elif value:
                out.append((name, ""))
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise r.error(where, "must be a finite number")
        if not isinstance(value, (int, float, str)):
            raise r.error(where, "must be a string, a number or a boolean")
        text = str(value)
        if not _VALUE.match(text):
            raise r.error(where, "1-200 of letters, digits and _ . , : / + = -")
        out.append((name, text))
    return tuple(out)


def _args(options: tuple[tuple[str, str], ...]) -> str:
    return " ".join(f"--{k}={v}" if v else f"--{k}" for k, v in options)


# The script's fixed parts. Every step's output goes to $BLKLAB_OUT/<step>.txt;
# the first failure stops the script with the step's last lines.
_HEAD = """# Written by blklab (harness/blklab/appjobs.py) for this scenario's jobs.
set -eu
out=$BLKLAB_OUT
dev=${BLKLAB_DEVICE#/dev/}
step() {  # step NAME COMMAND...: COMMAND's output into NAME.txt
    name=$1
    shift
    echo "== $name at $(cut -d" " -f1 /proc/uptime) s"
    "$@" > "$out/$name.txt" 2>&1 || { echo "$name failed:"; tail -n 20 "$out/$name.txt"; exit 1; }
}
wait_for() {  # wait_for WHAT PID COMMAND...: up to 60 s of the guest's time
    what=$1
    pid=$2
    shift 2
    i=0
    until "$@" > /dev/null 2>&1; do
        kill -0 "$pid" 2> /dev/null ||
            { echo "$what exited:"; tail -n 20 "$out/$what.txt"; exit 1; }
        i=$((i + 1))
        [ $i -le 600 ] || { echo "$what: not ready after 60 s"; exit 1; }
        sleep 0.1
    done
}
mark() {  # mark NAME: the device's stat and the guest's uptime now
    cat "/sys/block/$dev/stat" > "$out/$1-stat.txt"
    cut -d" " -f1 /proc/uptime > "$out/$1-uptime.txt"
}
grep -q " /data " /proc/mounts || { echo "no filesystem at /data"; exit 1; }
sbseed=$((BLKLAB_SEED % {modulus} + 1))
"""
_MARIADB = """
# MariaDB with its data on the device under test.
step mariadb-install mariadb-install-db --no-defaults --user=root --datadir=/data/mysql \\
    --skip-name-resolve --skip-test-db --auth-root-authentication-method=normal
mariadbd --no-defaults --user=root --datadir=/data/mysql --socket=/run/mysqld.sock \\
    --skip-networking --skip-name-resolve --pid-file=/run/mysqld.pid \\
    --innodb-buffer-pool-load-at-startup=OFF --innodb-buffer-pool-dump-at-shutdown=OFF \\
    {options}> "$out/mariadbd.txt" 2>&1 &
mariadb_pid=$!
wait_for mariadbd $mariadb_pid mariadb --socket=/run/mysqld.sock -e "select 1"
"""
_POSTGRES = """
# PostgreSQL 15 as its own user, with its data on the device under test.
pgbin=/usr/lib/postgresql/15/bin
mkdir -p /data/pg /run/pg
chown postgres:postgres /data/pg /run/pg
step postgres-initdb su -s /bin/sh postgres -c "$pgbin/initdb -D /data/pg/db -U postgres --auth=trust --no-locale -E UTF8"
su -s /bin/sh postgres -c "$pgbin/postgres -D /data/pg/db -c listen_addresses= -c unix_socket_directories=/run/pg -c jit=off -c log_line_prefix=%n: -c log_checkpoints=on{options}" \\
    > "$out/postgres.txt" 2>&1 &
wait_for postgres $! su -s /bin/sh postgres -c "$pgbin/pg_isready -h /run/pg -U postgres"
"""
_TAIL = """
echo "== stopping the servers at $(cut -d" " -f1 /proc/uptime) s"
"""


def _sysbench(job: AppJob, i: int, command: str) -> str:
    return (f"sysbench {job.test} --db-driver=mysql --mysql-socket=/run/mysqld.sock "
            f"--mysql-user=root --mysql-db=sbtest_{i} --rand-seed=$sbseed "
            f"{_args(job.options)} {command}").replace("  ", " ")


def _psql(sql: str, db: str) -> str:
    """psql's unaligned, tuples-only output of one statement (no double
    quotes in sql)."""
    return f'su -s /bin/sh postgres -c "$pgbin/psql -h /run/pg -U postgres -Atc \\"{sql}\\" {db}"'


def _pgbench(args: str, i: int) -> str:
    return (f'su -s /bin/sh postgres -c "$pgbin/pgbench -h /run/pg -U postgres {args} '
            f'pgbench_{i}"').replace("  ", " ")


# A scenario with [[fault]]s (script(..., faults=True)): in a cell whose
# device has faults the init leaves their origin to the script
# (BLKLAB_FAULT_ORIGIN=command, and blklab-jobpoint at /run in the
# applications' root), which marks it once, after the servers started and
# every prepare step ran, right before the first measured run; and a
# measured run that fails is the cell's outcome, not the harness's failure:
# its exit status goes to <job>-run-exit.txt and the script goes on.
_FAULT_ORIGIN = """
# Device faults count from here (docs/faults.md, "The origin").
if [ "${BLKLAB_FAULT_ORIGIN:-}" = command ]; then
    step fault-origin /run/blklab-jobpoint --origin
fi
"""
_FAULT_RUN = """measured() {  # measured NAME COMMAND...: as step, a failure kept in NAME-exit.txt
    name=$1
    shift
    echo "== $name at $(cut -d" " -f1 /proc/uptime) s"
    rc=0
    "$@" > "$out/$name.txt" 2>&1 || rc=$?
    echo $rc > "$out/$name-exit.txt"
    [ $rc -eq 0 ] || [ "${BLKLAB_FAULT_ORIGIN:-}" = command ] ||
        { echo "$name failed:"; tail -n 20 "$out/$name.txt"; exit 1; }
}
"""


def script(jobs: tuple[AppJob, ...], servers: Servers = Servers(), faults: bool = False) -> str:
    """The command job's shell script for these jobs; `faults`: the
    scenario has [[fault]]s (_FAULT_ORIGIN)."""
    text = _HEAD.replace("{modulus}", str(SYSBENCH_SEED_MODULUS))
    if faults:
        text += _FAULT_RUN
    if any(j.app == "sysbench" for j in jobs):
        text += _MARIADB.replace("{options}", "".join(f"--{k}={v} " for k, v in servers.mariadb))
    if any(j.app == "pgbench" for j in jobs):
        text += _POSTGRES.replace("{options}", "".join(f" -c {k}={v}"
                                                        for k, v in servers.postgresql))
        names = ", ".join(f"'{n}'" for n in PG_SETTINGS_SHOWN)
        sql = f"select name, setting, unit from pg_settings where name in ({names}) order by name"
        text += f"step postgres-settings {_psql(sql, 'postgres')}\n"
    if any(j.app == etcdjob.APP for j in jobs):
        text += etcdjob.server_script(servers.etcd)
    text += "\n# Prepare: not measured.\n"
    for i, j in enumerate(jobs):
        if j.app == "sysbench":
            text += (f'step {j.name}-createdb mariadb --socket=/run/mysqld.sock '
                     f'-e "create database sbtest_{i}"\n')
            text += f"step {j.name}-prepare {_sysbench(j, i, 'prepare')}\n"
        elif j.app == etcdjob.APP:
            text += etcdjob.prepare_script(j.name, i, dict(j.init), dict(j.options))
        else:
            text += (f'step {j.name}-createdb su -s /bin/sh postgres -c '
                     f'"$pgbin/createdb -h /run/pg -U postgres pgbench_{i}"\n')
            text += f"step {j.name}-prepare {_pgbench('-i ' + _args(j.init), i)}\n"
    text += "step prepare-sync sync\n"
    if faults:
        text += _FAULT_ORIGIN
    text += "\n# The measured runs, one after another.\n"
    run = "measured" if faults else "step"
    for i, j in enumerate(jobs):
        if j.app == etcdjob.APP:
            text += etcdjob.run_script(j.name, i, dict(j.init), dict(j.options), "mark")
            continue
        if j.app == "pgbench":
            text += f"step {j.name}-wal-start {_psql(WAL_BYTES_SQL, f'pgbench_{i}')}\n"
        text += f"mark {j.name}-start\n"
        if j.app == "sysbench":
            text += f"{run} {j.name}-run {_sysbench(j, i, '--histogram=on run')}\n"
        else:
            args = (f"--random-seed=$BLKLAB_SEED -l --log-prefix=/tmp/pgbench-log-{i} "
                    + _args(j.options))
            text += f"{run} {j.name}-run {_pgbench(args, i)}\n"
        text += f"mark {j.name}-end\n"
        if j.app == "pgbench":
            text += f"step {j.name}-wal-end {_psql(WAL_BYTES_SQL, f'pgbench_{i}')}\n"
            # pgbench writes one log per thread, <prefix>.<pid>[.<thread>],
            # a line per transaction; kept as the count of each latency (us),
            # which gives the same percentiles in far fewer bytes.
            text += (f"cat /tmp/pgbench-log-{i}.* | awk '{{ n[$3]++ }} END {{ for (k in n) "
                     f"print k, n[k] }}' | sort -n > \"$out/{j.name}-latency-us.txt\"\n"
                     f"cat /tmp/pgbench-log-{i}.* | awk '$3 ~ /^[0-9]+$/ {{ k = sprintf(\"%.0f\", "
                     f"int(($5 * 1000000 + $6) / {INTERVAL_US})); n[k]++; s[k] += $3; if ($3 > m[k]) m[k] = $3 }} "
                     f"END {{ for (k in n) printf \"%s %.0f %.0f %.0f\\n\", k, n[k], s[k], m[k] }}' | sort -n "
                     f"> \"$out/{j.name}-intervals.txt\"\n"
                     f"rm -f /tmp/pgbench-log-{i}.*\n")
    text += _TAIL
    if any(j.app == "sysbench" for j in jobs):
        text += "kill $mariadb_pid\nwait $mariadb_pid\n"
    if any(j.app == etcdjob.APP for j in jobs):
        text += etcdjob.STOP
    if any(j.app == "pgbench" for j in jobs):
        text += ('step postgres-stop su -s /bin/sh postgres -c '
                 '"$pgbin/pg_ctl -D /data/pg/db -m fast -w stop"\n')
    text += 'echo "== done at $(cut -d" " -f1 /proc/uptime) s"\n'
    return text


# --- Results -------------------------------------------------------------

_SB_COUNT = re.compile(r"^\s*(transactions|queries|ignored errors|reconnects):\s+(\d+)\s+"
                       r"\(([\d.]+) per sec\.\)", re.MULTILINE)
_SB_LAT = re.compile(r"^\s*(min|avg|max|sum|(\d+)th percentile):\s+([\d.]+)\s*$", re.MULTILINE)
_SB_TIME = re.compile(r"^\s*total time:\s+([\d.]+)s\s*$", re.MULTILINE)
_SB_HIST = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$", re.MULTILINE)


def sysbench_histogram(text: str) -> list[tuple[float, int]]:
    """(value in ms, count) of sysbench's latency histogram, in order."""
    start = text.find("Latency histogram")
    return [] if start < 0 else [(float(v), int(c)) for v, c in _SB_HIST.findall(text[start:])]


def histogram_percentile(hist: list[tuple[float, int]], pct: float) -> float | None:
    """sysbench's rule (sb_histogram.c): the value of the first bucket at
    which the running count reaches floor(total * pct / 100 + 0.5)."""
    total = sum(c for _, c in hist)
    if not total:
        return None
    return _value_at_rank(hist, math.floor(total * pct / 100.0 + 0.5))


def _value_at_rank(hist: list, rank: int) -> Any:
    """The value of the first (value, count) at which the running count
    reaches rank (hist in order of value, not empty)."""
    seen = 0
    for value, count in hist:
        seen += count
        if seen >= rank:
            return value
    return hist[-1][0]


def parse_sysbench(text: str) -> dict[str, Any]:
    counts = {k: (int(n), float(rate)) for k, n, rate in _SB_COUNT.findall(text)}
    if "transactions" not in counts:
        raise ValueError("no 'transactions:' line in sysbench's report")
    lat: dict[str, Any] = {}
    reported = {}
    for key, pct, value in _SB_LAT.findall(text):
        if pct:
            reported[pct] = float(value)
        else:
            lat[key] = float(value)
    hist = sysbench_histogram(text)
    lat["percentiles"] = {_pct_key(p): histogram_percentile(hist, p) for p in PERCENTILES}
    lat["reported_percentile"] = reported
    total = _SB_TIME.search(text)
    return {
        "transactions": counts["transactions"][0], "tps": counts["transactions"][1],
        "queries": counts.get("queries", (0, 0.0))[0], "qps": counts.get("queries", (0, 0.0))[1],
        "errors": counts.get("ignored errors", (0, 0.0))[0],
        "reconnects": counts.get("reconnects", (0, 0.0))[0],
        "time_s": float(total.group(1)) if total else None,
        "latency_ms": lat,
        "histogram_ms": [[v, c] for v, c in hist],
    }


_PG = {
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)", re.M),
    "errors": re.compile(r"^number of failed transactions: (\d+)", re.M),
    "avg": re.compile(r"^latency average = ([\d.]+) ms", re.M),
    "initial_connection_ms": re.compile(r"^initial connection time = ([\d.]+) ms", re.M),
    "tps": re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M),
}


def pgbench_latencies_us(counts: str) -> list[tuple[int, int]]:
    """(latency in us, transactions) from the script's count of the third
    field of pgbench's log (`client transaction time script epoch epoch_us
    [lag] [retries]`); a failed or skipped transaction has a word there and
    is left out."""
    out = []
    for line in counts.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            out.append((int(fields[0]), int(fields[1])))
    return sorted(out)


def nearest_rank(hist: list[tuple[int, int]], pct: float) -> int:
    """The ceil(pct/100 * n)-th smallest of the values counted in hist
    (sorted), in exact arithmetic (in floats 99.9/100 * 1000 is a little
    over 999)."""
    n = sum(c for _, c in hist)
    return _value_at_rank(hist, max(1, math.ceil(Fraction(str(pct)) * n / 100)))


def parse_pgbench(text: str, counts: str) -> dict[str, Any]:
    found = {k: r.search(text) for k, r in _PG.items()}
    if found["transactions"] is None or found["tps"] is None:
        raise ValueError("no transaction count or tps in pgbench's report")
    hist = pgbench_latencies_us(counts)
    n = sum(c for _, c in hist)
    if not n and int(found["transactions"].group(1)):
        raise ValueError("pgbench counted transactions and its transaction log has none")
    lat: dict[str, Any] = {"avg": float(found["avg"].group(1)) if found["avg"] else None}
    if n:
        lat.update({"min": hist[0][0] / 1000.0, "max": hist[-1][0] / 1000.0,
                    "mean": round(sum(v * c for v, c in hist) / n / 1000.0, 6)})
    lat["percentiles"] = {_pct_key(p): nearest_rank(hist, p) / 1000.0 if n else None
                          for p in PERCENTILES}
    return {
        "transactions": int(found["transactions"].group(1)),
        "errors": int(found["errors"].group(1)) if found["errors"] else 0,
        "tps": float(found["tps"].group(1)),
        "initial_connection_ms": (float(found["initial_connection_ms"].group(1))
                                  if found["initial_connection_ms"] else None),
        "logged_transactions": n,
        "latency_ms": lat,
    }


# PostgreSQL's checkpoint lines (log_checkpoints = on, log_line_prefix =
# "%n:", the epoch in s with ms), PG 15's format (xlog.c LogCheckpointEnd).
_CKPT_START = re.compile(r"^(\d+\.\d+):.*?LOG:  checkpoint starting:(.*)$", re.M)
_CKPT_DONE = re.compile(
    r"^(\d+\.\d+):.*?LOG:  checkpoint complete: wrote (\d+) buffers \([\d.]+%\); "
    r"(\d+) WAL file\(s\) added, (\d+) removed, (\d+) recycled; write=([\d.]+) s, "
    r"sync=([\d.]+) s, total=([\d.]+) s; sync files=(\d+), longest=([\d.]+) s, "
    r"average=[\d.]+ s; distance=(\d+) kB, estimate=\d+ kB", re.M)


def parse_checkpoints(log: str) -> list[dict[str, Any]]:
    """Each checkpoint PostgreSQL logged, in order: its start and end (epoch
    s), what started it, and what its end line says (buffers written, the
    write and sync phases' seconds, files synced, WAL distance). The
    checkpointer runs one at a time, so an end line closes the start line
    logged before it; the next may start in the same millisecond."""
    out = []
    start: tuple[float, str] | None = None
    for line in log.splitlines():
        m = _CKPT_START.match(line)
        if m:
            start = (float(m.group(1)), m.group(2).strip())
            continue
        m = _CKPT_DONE.match(line)
        if not m:
            continue
        began, why = start if start else (None, None)
        start = None
        out.append({"start_epoch_s": began, "end_epoch_s": float(m.group(1)), "reason": why,
                    "buffers": int(m.group(2)), "wal_added": int(m.group(3)),
                    "wal_removed": int(m.group(4)), "wal_recycled": int(m.group(5)),
                    "write_s": float(m.group(6)), "sync_s": float(m.group(7)),
                    "total_s": float(m.group(8)), "sync_files": int(m.group(9)),
                    "longest_sync_s": float(m.group(10)), "distance_kb": int(m.group(11))})
    return out


def parse_intervals(text: str) -> list[tuple[int, int, int, int]]:
    """(interval index since the epoch, transactions, their latencies' sum
    in us, the largest in us) from the script's per-interval count."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and all(x.isdigit() for x in f):
            out.append(tuple(int(x) for x in f))
    return sorted(out)


def _phase(t0: float, t1: float, ckpts: list[dict[str, Any]]) -> str:
    """What the checkpointer did in [t0, t1) (epoch s): "sync" if any
    checkpoint's sync phase (its end less sync_s, to its end) overlaps it,
    else "write" if a write phase (its start to its end less sync_s) does,
    else "-"."""
    phase = "-"
    for c in ckpts:
        if c["start_epoch_s"] is None:
            continue
        sync_from = c["end_epoch_s"] - c["sync_s"]
        if sync_from < t1 and c["end_epoch_s"] >= t0:
            return "sync"
        if c["start_epoch_s"] < t1 and sync_from >= t0:
            phase = "write"
    return phase


def _summary(rows: list[tuple[int, int, int, int]]) -> dict[str, Any]:
    n = sum(r[1] for r in rows)
    return {"intervals": len(rows), "transactions": n,
            "mean_ms": round(sum(r[2] for r in rows) / n / 1000.0, 6) if n else None,
            "max_ms": max(r[3] for r in rows) / 1000.0 if n else None}


def checkpoint_timeline(intervals_text: str, log: str) -> dict[str, Any]:
    """pgbench's transactions per INTERVAL_US of completion time beside
    PostgreSQL's checkpoints, both in s from the start of the run's first
    interval; and the transactions completed in intervals that a sync phase
    overlaps against the rest."""
    rows = parse_intervals(intervals_text)
    ckpts = parse_checkpoints(log)
    if not rows:
        return {"interval_ms": INTERVAL_US / 1000, "intervals": [], "checkpoints": []}
    step = INTERVAL_US / 1e6
    origin = rows[0][0] * step
    last = (rows[-1][0] + 1) * step
    shown, sync_rows, other_rows = [], [], []
    for k, n, total, top in rows:
        phase = _phase(k * step, (k + 1) * step, ckpts)
        (sync_rows if phase == "sync" else other_rows).append((k, n, total, top))
        shown.append([round(k * step - origin, 3), n, round(total / n / 1000.0, 3),
                      top / 1000.0, phase])
    in_run = [c for c in ckpts if c["start_epoch_s"] is not None
              and origin <= c["end_epoch_s"] <= last]
    return {
        "interval_ms": INTERVAL_US / 1000,
        "origin_epoch_s": round(origin, 3),
        "columns": ["t_s", "transactions", "mean_ms", "max_ms", "checkpointer"],
        "intervals": shown,
        "checkpoints": [{**{k: v for k, v in c.items() if not k.endswith("epoch_s")},
                         "start_s": (round(c["start_epoch_s"] - origin, 3)
                                     if c["start_epoch_s"] is not None else None),
                         "end_s": round(c["end_epoch_s"] - origin, 3),
                         "in_run": c in in_run} for c in ckpts],
        "checkpoints_in_run": len(in_run),
        "sync_phase": _summary(sync_rows),
        "other": _summary(other_rows),
    }


def parse_settings(text: str) -> dict[str, str]:
    """psql -At's name|setting|unit lines: name -> setting with its unit."""
    out = {}
    for line in text.splitlines():
        f = line.split("|")
        if len(f) == 3:
            out[f[0]] = f"{f[1]}{' ' + f[2] if f[2] else ''}"
    return out


# What an [[expect]] may read of an application job's results (its entry
# in workload.apps): name -> what it is. Latencies in ns, as the block
# layer's metrics; per transaction: the device's completed requests of the
# job's measured run (its disk_stats) over the transactions it committed.
APP_METRICS = {
    "app_tps": "transactions per second, as the benchmark reports them",
    "app_latency_mean_ns": "the benchmark's mean transaction latency",
    "app_latency_p95_ns": "the 95th percentile of the transaction latency",
    "app_latency_p99_ns": "the 99th percentile of the transaction latency",
    "app_writes_per_transaction": "write requests completed in the measured run per transaction",
    "app_flushes_per_transaction": "flush requests completed in the measured run per transaction",
    "app_latency_max_ns": "the slowest transaction",
    "app_checkpoints": "pgbench: PostgreSQL's checkpoints that ended within the measured run",
    "app_sync_phase_latency_mean_ns": "pgbench: the mean latency of the transactions completed "
                                      "in 100 ms intervals a checkpoint's sync phase overlaps",
    "app_sync_phase_latency_max_ns": "pgbench: the slowest of those",
    "app_other_latency_mean_ns": "pgbench: the mean latency of the other transactions",
    "app_other_latency_max_ns": "pgbench: the slowest of the other transactions",
    "app_wal_bytes_per_checkpoint": "pgbench: WAL bytes written in the measured run over the "
                                    "checkpoints that ended in it",
    **etcdjob.METRICS,
}


def metric(entry: dict[str, Any], name: str) -> float | None:
    """APP_METRICS[name] of one job's results, or None when the job has
    no such figure (an error, no transactions, no disk stats)."""
    if "error" in entry:
        return None
    if name in etcdjob.METRICS:
        return etcdjob.metric(entry, name) if entry.get("app") == etcdjob.APP else None
    lat = entry.get("latency_ms") or {}
    ms = None
    if name == "app_tps":
        return float(entry["tps"]) if entry.get("tps") is not None else None
    if name == "app_latency_mean_ns":
        ms = lat.get("avg")
    elif name in ("app_latency_p95_ns", "app_latency_p99_ns"):
        ms = (lat.get("percentiles") or {}).get(name[len("app_latency_p"):-len("_ns")])
    elif name == "app_latency_max_ns":
        ms = lat.get("max")
    elif name == "app_checkpoints":
        tl = entry.get("timeline")
        return float(tl["checkpoints_in_run"]) if tl and "checkpoints_in_run" in tl else None
    elif name.startswith(("app_sync_phase_", "app_other_")):
        part = (entry.get("timeline") or {}).get(
            "sync_phase" if name.startswith("app_sync_phase_") else "other") or {}
        ms = part.get("mean_ms" if name.endswith("_mean_ns") else "max_ms")
    elif name == "app_wal_bytes_per_checkpoint":
        n = (entry.get("timeline") or {}).get("checkpoints_in_run")
        wal = entry.get("wal_bytes")
        return float(wal) / n if n and wal is not None else None
    elif name in ("app_writes_per_transaction", "app_flushes_per_transaction"):
        delta = (entry.get("disk_stats") or {}).get("delta") or {}
        key = "write_ios" if name == "app_writes_per_transaction" else "flush_ios"
        n = entry.get("transactions")
        return float(delta[key]) / n if n and delta.get(key) is not None else None
    else:
        raise KeyError(name)
    return float(ms) * 1e6 if ms is not None else None


def _pct_key(p: float) -> str:
    return f"{p:g}"


# What the servers and the benchmark said went wrong: MariaDB's error log
# (mariadbd's stderr, $out/mariadbd.txt) lines at [ERROR], [Warning] or
# [FATAL] and its crash report, sysbench's FATAL lines. Kept whatever the
# command's exit, so a cell whose server aborted still says why.
_SERVER_LINE = re.compile(r"\[(ERROR|FATAL|Warning)\]|^mariadbd got signal|signal \d+ ")
_SERVER_STAMP = re.compile(r"^\d{4}-\d\d-\d\d +\d?\d:\d\d:\d\d +\d+ +")
_SYSBENCH_LINE = re.compile(r"^FATAL: |^\(last message repeated")


def error_lines(jobs: tuple[AppJob, ...], files: dict[str, bytes],
                prefix: str = "command-") -> dict[str, list[str]]:
    """Per output file, the error lines of the servers and the benchmarks
    the jobs ran, in order, the server's date, time and thread id taken
    off (`mariadbd`: the error log; `<job>-run`: sysbench's FATAL lines).
    A file the guest did not send is left out."""
    out: dict[str, list[str]] = {}

    def scan(name: str, pattern: re.Pattern, strip: re.Pattern | None) -> None:
        blob = files.get(f"{prefix}{name}.txt")
        if blob is None:
            return
        lines = blob.decode(errors="replace").splitlines()
        out[name] = [strip.sub("", ln) if strip else ln for ln in lines if pattern.search(ln)]

    if any(j.app == "sysbench" for j in jobs):
        scan("mariadbd", _SERVER_LINE, _SERVER_STAMP)
    for job in jobs:
        if job.app == "sysbench":
            scan(f"{job.name}-run", _SYSBENCH_LINE, None)
    return out


def _failed_run(exit_text: str) -> int | None:
    """The measured run's exit status as the script kept it in a cell
    with device faults (_FAULT_RUN), else None. A failed run is the cell's
    outcome: the job has `exit_status` and no report figures."""
    if not exit_text.strip():
        return None
    if not exit_text.strip().isdigit():
        raise ValueError(f"the measured run's exit status is not a number: {exit_text!r}")
    return int(exit_text)


def results(jobs: tuple[AppJob, ...], files: dict[str, bytes],
            prefix: str = "command-") -> list[dict[str, Any]]:
    """Each job's own results from the command's output files (the guest
    sends them as <prefix><file>), with the block layer's counters over its
    measured run. A job whose files are missing or do not parse says so
    under `error`."""
    def text(name: str) -> str:
        return files.get(prefix + name, b"").decode(errors="replace")

    out = []
    for job in jobs:
        entry: dict[str, Any] = job.to_json()
        try:
            failed = _failed_run(text(f"{job.name}-run-exit.txt"))
            if failed is not None:
                entry["exit_status"] = failed
            run = text(f"{job.name}-run.txt")
            if failed:
                pass  # no report: its error lines are in guest.app_errors
            elif job.app == "sysbench":
                entry.update(parse_sysbench(run))
            elif job.app == etcdjob.APP:
                entry.update(etcdjob.results(job.name, text, dict(job.options)))
            else:
                entry.update(parse_pgbench(run, text(f"{job.name}-latency-us.txt")))
                entry["server_settings"] = parse_settings(text("postgres-settings.txt"))
                w0, w1 = text(f"{job.name}-wal-start.txt"), text(f"{job.name}-wal-end.txt")
                entry["wal_bytes"] = (int(w1.strip()) - int(w0.strip())
                                      if w0.strip().isdigit() and w1.strip().isdigit() else None)
                entry["timeline"] = checkpoint_timeline(text(f"{job.name}-intervals.txt"),
                                                        text("postgres.txt"))
        except ValueError as e:
            entry["error"] = str(e)
        before, after = text(f"{job.name}-start-stat.txt"), text(f"{job.name}-end-stat.txt")
        if before and after:
            elapsed = None
            t0, t1 = text(f"{job.name}-start-uptime.txt"), text(f"{job.name}-end-uptime.txt")
            if t0.strip() and t1.strip():
                elapsed = round((float(t1) - float(t0)) * 1000.0, 3)
            entry["disk_stats"] = disk_delta(parse_diskstat(before), parse_diskstat(after),
                                             elapsed)
        out.append(entry)
    return out
