"""Every scenario in scenarios/ in its short form, end to end: `blklab run
--short --jobs 2`, then `blklab check` (every expectation it runs holds or
fails as its known_failure says; none holds against its mark). The labs in
docs/labs/ run these same commands, so this tests them too, with checks of
their own: the scheduler defaults and attributes the guest kernel reports
(lab 1), the scheduler-switch log (lab 8), the request pool the kernel
raises (lab 7) and who dispatches a traced request (lab 12).

Every short form with an expectation runs three seeds; the budget, file by
file, is in scenarios/README.md ("The short form"), and each test prints its
run's time. `make test` runs all but the LONG_SHORT_FORMS (below); `make
test-short-forms` runs every one."""

import time
import tomllib
from pathlib import Path

import pytest

from conftest import (LONE_SUBMISSION_PLUGGED, REPO, cells_of, check_dispatcher,
                      check_queue_listing, dispatches, run_blklab)
from blklab import kernels

SCENARIOS = sorted(p.stem for p in (REPO / "scenarios").glob("*.toml") if p.stem != "default")
# Scenarios whose short form another test runs and checks (once is enough).
RUN_ELSEWHERE = {"data-integrity": "test_integrity.py"}
# Short forms `make test` leaves to `make test-short-forms`, marked
# long_short_form: the costliest whose run no lab test here reads. Wall
# seconds of each short form's test (pytest --durations, the eight that were
# out run together on two workers, the machine shared with other work at
# load 5 to 7): multi-tenant-bfq 550, ai-inference 343,
# cloud-mysql-incident-as-run 255 (its expectations stay in make test
# through test_customer_inputs.py's blkgen run of the same file) stay out;
# optane-class 181, ssd-gc-tail 103, cloud-mysql-incident-fio 85,
# hdd-ncq-vs-sorting 61 and cloud-mysql-incident-flusher 31 are in.
# scenarios/README.md, "The short form".
# cloud-mysql-incident-app (MariaDB and sysbench, 12 cells; make test runs
# one of them in test_mysql_app.py against the file's own bounds) was
# measured alone: 867 host seconds (scenarios/cloud-mysql-incident-app.md, "Cost").
# etcd-backup (6 cells): 1,185 host seconds (131-352 a cell) on
# a loaded machine (scenarios/etcd-backup.md, "Cost").
# database-tuning-claims (MariaDB and sysbench, 12 cells; lab 13):
# scenarios/database-tuning-claims.md, "Cost".
LONG_SHORT_FORMS = {"ai-inference", "multi-tenant-bfq", "cloud-mysql-incident-as-run",
                    "cloud-mysql-incident-app", "postgres-checkpoint",
                    "mariadb-media-error", "etcd-backup", "database-tuning-claims"}
assert LONG_SHORT_FORMS <= set(SCENARIOS), LONG_SHORT_FORMS - set(SCENARIOS)

_runs: dict[str, Path] = {}


def short_run(name: str, tmp_path_factory) -> Path:
    """Run scenarios/NAME.toml's short form once per session; its run dir."""
    if name not in _runs:
        out = tmp_path_factory.mktemp(name) / "run"
        started = time.monotonic()
        proc = run_blklab("run", "--short", "--jobs", "2", "--out", str(out),
                          f"scenarios/{name}.toml")
        print(f"{name}: short form in {time.monotonic() - started:.0f} s wall")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        _runs[name] = out
    return _runs[name]


# Each short form is its own xdist group (conftest.py), with the lab tests
# that read the same run.
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xdist_group(n)]
                 + ([pytest.mark.long_short_form] if n in LONG_SHORT_FORMS else []))
    for n in SCENARIOS if n not in RUN_ELSEWHERE])
def test_short_form_expectations_hold(name, built, request, tmp_path_factory):
    if tomllib.loads((REPO / "scenarios" / f"{name}.toml").read_text()).get(
            "guest", {}).get("apps"):
        request.getfixturevalue("apps_built")  # its applications' root
    run = short_run(name, tmp_path_factory)
    proc = run_blklab("check", str(run))
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.xdist_group("mariadb-media-error")
@pytest.mark.long_short_form
def test_mariadb_media_error_s_cells_as_derived(built, apps_built, tmp_path_factory):
    """scenarios/mariadb-media-error.md's checks on each of its short form's
    cells (seeds 1, 2, 3): test_mariadb_media_error.check_cell."""
    from test_mariadb_media_error import check_cell

    run = short_run("mariadb-media-error", tmp_path_factory)
    cells = cells_of(run)
    for cid, cell in cells.items():
        print(cid, cell["host"]["wall_seconds"], "s of host time,",
              cell["faults"][0]["requests"], "picks")
    assert len(cells) == 3
    for cell in cells.values():
        check_cell(run, cell)


# What Linux 6.1 sets (block/mq-deadline.c dd_init_sched, block/kyber-iosched.c
# kyber_latency_targets, block/bfq-iosched.c bfq_init_queue), as sysfs shows
# it on Debian's kernel (HZ=250). docs/labs/01-scheduler-defaults.md explains
# each value and what is commonly written instead.
KERNEL_DEFAULTS = {
    "mq-deadline": {"read_expire": "500", "write_expire": "5000", "writes_starved": "2",
                    "fifo_batch": "16", "front_merges": "1", "prio_aging_expire": "10000"},
    "kyber": {"read_lat_nsec": "2000000", "write_lat_nsec": "10000000"},
    "bfq": {"slice_idle": "8", "slice_idle_us": "8000", "low_latency": "1",
            "fifo_expire_sync": "125", "fifo_expire_async": "250", "back_seek_max": "16384",
            "back_seek_penalty": "2", "timeout_sync": "124", "max_budget": "0",
            "strict_guarantees": "0"},
}


@pytest.mark.xdist_group("cloud-mysql-incident")
def test_lab_scheduler_defaults_as_the_guest_reports_them(built, tmp_path_factory):
    cells = cells_of(short_run("cloud-mysql-incident", tmp_path_factory))
    seen = set()
    for cell in cells.values():
        effect = cell["in_effect"]
        sched = effect["scheduler"]
        seen.add(sched)
        for key, value in KERNEL_DEFAULTS.get(sched, {}).items():
            assert effect["iosched"][key] == value, (sched, key)
        if sched != "none":
            # What validation checks [iosched.*] keys against.
            assert sorted(effect["iosched"]) == \
                sorted(kernels.IOSCHED_ATTRIBUTES[kernels.default_series()][sched]), sched
        check_queue_listing(cell)  # NVMe and virtio-blk
        queue = effect["queue"]
        assert queue["nr_hw_queues"] == "2"
        # The tag set's depth: NVMe's 1023 (its queue of 1024 less one
        # entry), virtio-blk's ring (QEMU's default queue-size, 256;
        # qemu-patches/0028), which its driver fills.
        depth = {"nvme": "1023", "virtio-blk": "256"}[cell["request"]["device"]["kind"]]
        if sched == "none":
            assert queue["nr_requests"] == depth
        else:
            # blk_mq_init_sched: 2 x min(queue depth, BLKDEV_DEFAULT_RQ 128)
            assert queue["nr_requests"] == "256"
        if sched == "mq-deadline":
            # 6.1.0 set 3/4 of nr_requests; the stable backport of "Fix the tag
            # reservation code" (Debian's 6.1) sets all of it.
            assert effect["iosched"]["async_depth"] in (queue["nr_requests"], "192")
        # A multi-queue device gets none by default (elevator_get_default).
        assert cell["guest"]["device"]["default_scheduler"].startswith("[none]")
    assert seen == {"none", "mq-deadline", "kyber", "bfq"}


@pytest.mark.xdist_group("scheduler-switch-under-load")
def test_lab_scheduler_switch_log(built, tmp_path_factory):
    """Lab 8: every switch stops the I/O while the queue is frozen: once
    the requests in flight have drained, blk_queue_enter holds back every
    new one, and blkgen, held in io_uring_enter(), neither submits nor
    reaps. blkgen ends a W ns interval at its first step past W, so a
    freeze of D ns that starts a ns into an interval leaves it at most a ns
    of I/O: over a span of a + D when a + D >= W (a share a / (a + D) <
    W / (W + D)), over W otherwise (a share (W - D) / W). For D >= W either
    is under half, so some interval around each switch loses at least half
    its IOPS. Its p99 need not move: a switch holds back at most the job's
    32 requests, well under 1% of an interval's I/Os at the calibrated
    CPU."""
    from blklab import switches

    run = short_run("scheduler-switch-under-load", tmp_path_factory)
    loaded = switches.load_run(run)
    assert len(loaded) == 3  # one cell on each of the short form's seeds
    for cell, log in loaded:
        assert cell["status"] == "ok"
        assert len(log) >= 4 and all(s.ok for s in log), log
        assert {s.scheduler for s in log} >= {"mq-deadline", "kyber", "bfq", "none"}
        for cs in switches.analyze(cell, log):
            for sp in cs.spikes:
                took_ns = sp.switch.duration_us * 1000
                print(f"seed {cell['request']['seed']} {cs.job} {cs.direction}: switch to "
                      f"{sp.switch.scheduler} took {took_ns / 1e6:.1f} ms (held "
                      f"{sp.held_ns / 1e6:.1f} ms past an interval), lowest interval "
                      f"IOPS {sp.iops:.0f} against {cs.baseline_iops:.0f} away from switches, "
                      f"worst p99 {sp.p99_ns / 1e3:.0f} us against "
                      f"{cs.baseline_p99_ns / 1e3:.0f} us")
                # The derivation's premise: the freeze outlasts an interval.
                assert took_ns >= cs.interval_ns, sp.switch
                assert sp.iops < 0.5 * cs.baseline_iops, sp.switch
    proc = run_blklab("switches", str(run))
    assert proc.returncode == 0 and "switches, 0 failed" in proc.stdout


@pytest.mark.xdist_group("scheduler-switch-under-load")
def test_turns_account_for_every_io_and_find_each_switch_freeze(built, tmp_path_factory):
    """`blklab turns` on real cells: a job's turns and gaps tile its
    measured phase and hold every completion blkgen counted (jobs[].read
    and .write total_ios), and a gap shows wherever the switch log (lab 8,
    above) found the workload held past an interval by at least the gap:
    the same freeze seen through the switch log and through the series."""
    import json

    from blklab import switches

    run = short_run("scheduler-switch-under-load", tmp_path_factory)
    gap_ms = 5.0
    proc = run_blklab("turns", "--json", "--gap-ms", str(gap_ms), str(run))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {(t["cell_id"], t["job"]): t for t in json.loads(proc.stdout)}
    freezes = 0
    for cell, log in switches.load_run(run):
        for job in cell["workload"]["jobs"]:
            t = found[(cell["cell_id"], job["jobname"])]
            spans = t["spans"]
            assert spans[0]["start_ns"] == 0
            assert all(a["end_ns"] == b["start_ns"] and a["kind"] != b["kind"]
                       for a, b in zip(spans, spans[1:]))
            assert spans[-1]["end_ns"] == job["blkgen"]["time_series"]["end_ns"][-1]
            for d in ("read", "write"):
                assert sum(s["ios"].get(d, 0) for s in spans) == job[d]["total_ios"], (t["job"], d)
        for cs in switches.analyze(cell, log):
            gaps = [s for s in found[(cell["cell_id"], cs.job)]["spans"] if s["kind"] == "gap"]
            for sp in cs.spikes:
                if sp.held_ns < gap_ms * 1e6:
                    continue
                freezes += 1
                lo = sp.switch.start_us * 1000 - cs.interval_ns
                hi = (sp.switch.start_us + sp.switch.duration_us) * 1000 + 2 * cs.interval_ns
                assert any(g["start_ns"] < hi and g["end_ns"] > lo for g in gaps), sp.switch
    print(f"{freezes} switch freezes held the workload {gap_ms:g} ms or more past an interval;"
          " each is a gap in `blklab turns`")
    assert freezes > 0
    text = run_blklab("turns", str(run))
    assert text.returncode == 0 and "turn(s), served" in text.stdout


@pytest.mark.xdist_group("hdd-sorting-nr-requests")
def test_a_pool_written_as_2_is_4_and_the_run_says_so(built, tmp_path_factory):
    """block/blk-sysfs.c: queue_requests_store() raises nr_requests below
    BLKDEV_MIN_RQ (4) to 4, although the kernel's own default for a depth-1
    disk is 2 (blk_mq_init_sched). Each cell records what the kernel changed,
    and the run's table says it."""
    from blklab import table

    cells = cells_of(short_run("hdd-sorting-nr-requests", tmp_path_factory))
    assert len(cells) == 18  # two tunings x three schedulers x three seeds
    for cell in cells.values():
        check_queue_listing(cell)  # a SATA disk (sd)
        asked = cell["request"]["tunables"]["nr_requests"]
        assert cell["in_effect"]["queue"]["nr_requests"] == ("4" if asked == "2" else "64")
        expected = ([{"tunable": "nr_requests", "asked": "2", "in_effect": "4"}]
                    if asked == "2" else [])
        assert cell["in_effect"]["adjusted"] == expected, cell["cell_id"]
    notes = [line for line in table.render(list(cells.values())).splitlines()
             if line.startswith("note: ") and "nr_requests" in line]
    assert len(notes) == 9 and all(n.endswith("nr_requests was written as 2, the kernel has 4")
                                   for n in notes), notes


@pytest.mark.xdist_group("kernel-generations")
def test_lab_who_dispatches_a_lone_submission(built, tmp_path_factory):
    """Lab 12 on the default series: blktrace's plugs and dispatchers are
    those conftest.LONE_SUBMISSION_PLUGGED states for it, and on a series
    that does not plug, every request an elevator holds costs the
    submitting thread a context switch (a kblockd worker dispatches it),
    which none does not. Where blkgen dispatches, nothing it wakes has to
    preempt it: its involuntary switches (blkgen's ctx_involuntary) stay
    few. Its voluntary ones are not the dispatch's: on a drive slower than
    the guest's CPU, blkgen sleeps in io_uring_enter() until a completion."""
    run = short_run("kernel-generations", tmp_path_factory)
    series = kernels.default_series()
    for cell in cells_of(run).values():
        check_dispatcher(cell, run / "cells" / cell["cell_id"], series)
        ios = sum(s["total_ios"] for s in cell["summary"])
        switches = sum(job["ctx"] for job in cell["workload"]["jobs"])
        preempted = sum(job["blkgen"]["ctx_involuntary"] for job in cell["workload"]["jobs"])
        print(f"{cell['cell_id']}: {switches} context switches, {preempted} of them "
              f"involuntary, {ios} I/Os")
        if cell["request"]["scheduler"] != "none" and not LONE_SUBMISSION_PLUGGED[series]:
            assert 0.95 * ios <= switches <= 1.05 * ios, cell["cell_id"]
        else:
            assert preempted < 0.05 * ios, cell["cell_id"]


@pytest.mark.xdist_group("kernel-generations-batched")
def test_lab_a_batched_submission_is_dispatched_by_its_thread(built, tmp_path_factory):
    """Lab 12's way out on 6.1: four SQEs per io_uring_enter are plugged
    (io_uring plugs a submission of more than two), so every request is
    dispatched by blkgen itself, under mq-deadline as under none, and no
    request costs it a preemption (its involuntary context switches; the
    voluntary ones are its sleeps waiting for completions)."""
    run = short_run("kernel-generations-batched", tmp_path_factory)
    for cell in cells_of(run).values():
        queued, plugged, by = dispatches(run / "cells" / cell["cell_id"])
        ios = sum(s["total_ios"] for s in cell["summary"])
        switches = sum(job["ctx"] for job in cell["workload"]["jobs"])
        preempted = sum(job["blkgen"]["ctx_involuntary"] for job in cell["workload"]["jobs"])
        print(f"{cell['cell_id']}: {queued} queued, {plugged} plugs, dispatched by {by}, "
              f"{switches} context switches, {preempted} of them involuntary")
        assert plugged > 0 and by == {"blkgen": queued}, cell["cell_id"]
        assert preempted < 0.05 * ios, cell["cell_id"]
