"""`blklab report --markdown`: each cell over all its jobs (IOPS summed,
share of none's, the model's mean service, requests in the device by
Little's law, dies busy), and several runs of one scenario side by side."""

import json
from pathlib import Path

import pytest

from blklab import blktrace, cli, markdown

from test_summary import FIXTURES, make_run


def cell(cid: str, scheduler: str, iops: list[float], seconds: float = 2.0,
         tunables: dict | None = None, devmodel: dict | None = None) -> dict:
    c = json.loads((FIXTURES / "today-qemu.json").read_text())
    c["cell_id"] = cid
    c["request"]["scheduler"] = scheduler
    c["request"]["tunables"] = tunables or {}
    base = c["summary"][0]
    c["summary"] = [dict(base, job=f"j{i}", iops=x, total_ios=round(x * seconds))
                    for i, x in enumerate(iops)]
    c["devmodel"] = devmodel or {}
    return c


def test_totals_sum_the_jobs_and_apply_littles_law():
    # 4 dies, 2 s of workload, each die busy 0.5 s: 25%. 3000 reads served
    # in 300 us in all (100 ns each) at 30000 IOPS: 0.003 in the device.
    model = {"die_busy_ns": [500_000_000] * 4,
             "service_ns": {"read": {"count": 2000, "total": 200_000, "max": 1},
                            "write": {"count": 1000, "total": 100_000, "max": 1}}}
    t = markdown.totals(cell("d.none.r0", "none", [10000.0, 20000.0], devmodel=model))
    assert t.iops == 30000.0
    assert t.service_ns == 100.0
    assert t.in_device == pytest.approx(0.003)
    assert t.dies_busy == pytest.approx(0.25)


def test_a_model_without_dies_or_service_leaves_those_columns_empty():
    t = markdown.totals(cell("d.none.r0", "none", [500.0]))
    assert (t.service_ns, t.in_device, t.dies_busy) == (None, None, None)
    row = markdown.totals_table([cell("d.none.r0", "none", [500.0])])[2]
    assert row == "| d.none.r0 | 500 | 1.00 | - | - | - |"


def test_share_of_none_pairs_the_same_device_queue_and_seed():
    cells = [cell("d.none.nr_requests=4.r0", "none", [1000.0], tunables={"nr_requests": "4"}),
             cell("d.none.nr_requests=64.r0", "none", [2000.0], tunables={"nr_requests": "64"}),
             # kyber's own tunable does not keep it from its none cell
             cell("d.kyber.nr_requests=64.read_lat_nsec=1.r0", "kyber", [500.0],
                  tunables={"nr_requests": "64", "iosched/read_lat_nsec": "1"}),
             cell("d.bfq.nr_requests=4.r0", "bfq", [800.0], tunables={"nr_requests": "4"})]
    other_seed = cell("d.bfq.nr_requests=64.r0", "bfq", [100.0], tunables={"nr_requests": "64"})
    other_seed["request"]["seed"] = 7
    shares = markdown.shares_of_none(cells + [other_seed])
    assert shares == {"d.none.nr_requests=4.r0": 1.0, "d.none.nr_requests=64.r0": 1.0,
                      "d.kyber.nr_requests=64.read_lat_nsec=1.r0": 0.25,
                      "d.bfq.nr_requests=4.r0": 0.8}


def _runs(tmp_path: Path, guest_sets: list[list[str]], bfq: list[float | None]) -> list[Path]:
    runs = []
    for i, (gs, bfq_iops) in enumerate(zip(guest_sets, bfq)):
        (tmp_path / str(i)).mkdir(parents=True)
        run = make_run(tmp_path / str(i), short=False, bfq_iops=bfq_iops)
        manifest = json.loads((run / "manifest.json").read_text())
        manifest.update(run_id=f"run{i}", guest_set=gs,
                        scenario={"name": "s", "path": "/x/scenarios/s.toml"},
                        qemu={"cache_key": "k"}, image={"hash": "h" * 64})
        (run / "manifest.json").write_text(json.dumps(manifest))
        # The cells record what the guest ran with.
        for path in run.glob("cell-*.json"):
            c = json.loads(path.read_text())
            for item in gs:
                key, _, value = item.partition("=")
                c["request"][key] = float(value) if key == "cpu_rate" else value.strip('"')
            path.write_text(json.dumps(c))
        runs.append(run)
    return runs


def test_several_runs_side_by_side(tmp_path, capsys):
    a, b = _runs(tmp_path, [["cpu_rate=1"], ["cpu_rate=4"]], [5000.0, 15000.0])
    # b's bfq cell failed
    failed = json.loads((b / "cell-nvme0.bfq.r0.json").read_text())
    failed["status"] = "failed"
    (b / "cell-nvme0.bfq.r0.json").write_text(json.dumps(failed))
    assert cli.main(["report", "--markdown", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("Tables by `blklab report --markdown results/s/run0 results/s/run1`, "
                        "from these runs:")
    assert lines[2] == ("- `blklab run --guest cpu_rate=1 scenarios/s.toml` (run run0, "
                        "deterministic mode, QEMU build k, guest image hhhhhhhhhhhh)")
    assert "| cell | cpu_rate=1 | cpu_rate=4 |" in lines
    assert "| nvme0.none.r0 | 20,000 | 20,000 |" in lines
    assert "| nvme0.bfq.r0 | 5,000 | failed |" in lines
    assert "| nvme0.bfq.r0 | 0.25 | - |" in lines


def test_several_runs_need_markdown_and_one_scenario(tmp_path, capsys):
    a, b = _runs(tmp_path, [[], []], [None, None])
    assert cli.main(["report", str(a), str(b)]) != 0
    assert "only with --markdown" in capsys.readouterr().err
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["scenario"]["name"] = "t"
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert cli.main(["report", "--markdown", str(a), str(b)]) != 0
    err = capsys.readouterr().err
    assert "different scenarios" in err and "s, t" in err


def test_columns_are_headed_by_what_differs_else_the_run_id(tmp_path, capsys):
    # run0 sets nothing: its cells say what the file asked (kernel 6.1-amd64).
    a, b = _runs(tmp_path, [[], ['kernel="5.10-amd64"', "cpu_rate=1"]], [None, None])
    for path in a.glob("cell-*.json"):
        c = json.loads(path.read_text())
        c["request"].update(kernel="6.1-amd64", cpu_rate=1.0)
        path.write_text(json.dumps(c))
    assert cli.main(["report", "--markdown", str(a), str(b)]) == 0
    assert "| cell | kernel=6.1-amd64 | kernel=5.10-amd64 |" in capsys.readouterr().out.splitlines()
    c, d = _runs(tmp_path / "same", [[], []], [None, None])
    assert cli.main(["report", "--markdown", str(c), str(d)]) == 0
    assert "| cell | run0 | run1 |" in capsys.readouterr().out.splitlines()


def test_one_run_prints_the_totals_table(tmp_path, capsys):
    (run,) = _runs(tmp_path, [[]], [10000.0])
    assert cli.main(["report", "--markdown", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| nvme0.bfq.r0 | 10,000 | 0.50 | - | - | - |" in lines


def test_side_by_side_p99s_and_what_the_kernels_expose(tmp_path, capsys):
    """The kernel-generations lab's table: an attribute one kernel lacks
    shows '-', a default that differs shows both values, and agreeing ones
    are left out."""
    a, b = _runs(tmp_path, [['kernel="5.10-amd64"'], ['kernel="6.1-amd64"']], [5000.0, 6000.0])
    for run, p99, extra in ((a, 70000, {}), (b, 90000, {"prio_aging_expire": "10000"})):
        for path in run.glob("cell-*.json"):
            c = json.loads(path.read_text())
            c["summary"][0]["clat_p99_ns"] = p99
            sched = c["request"]["scheduler"]
            c["in_effect"] = {"scheduler": sched,
                              "iosched": {"fifo_batch": "16", **extra} if sched == "bfq" else {},
                              "queue": {"nr_requests": "1023",
                                        "wbt_lat_usec": "2000" if run == a else "0"}}
            path.write_text(json.dumps(c))
    assert cli.main(["report", "--markdown", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| cell | kernel=5.10-amd64 | kernel=6.1-amd64 |" in lines
    assert "| nvme0.bfq.r0 | r | read | 70 us | 90 us |" in lines
    assert "| nvme0 | bfq | prio_aging_expire | - | 10000 |" in lines
    assert "| nvme0 | none | queue/wbt_lat_usec | 2000 | 0 |" in lines
    assert not [line for line in lines if "fifo_batch" in line or "nr_requests" in line]


BLKPARSE = """\
259,0    0        1     0.000000000   131  Q   R 682966704 + 8 [blkgen]
259,0    0        2     0.000001029   131  G   R 682966704 + 8 [blkgen]
259,0    0        3     0.000001420   131  P   N [blkgen]
259,0    0        4     0.000001841   131  U   N [blkgen] 1
259,0    0        5     0.000002541   131  D   R 682966704 + 8 [blkgen]
259,0    1        6     0.000023897   131  Q   R 1311976496 + 8 [blkgen]
259,0    1        7     0.000024001    40  D   R 1311976496 + 8 [kworker/1:1H]
259,0    1        8     0.000090001     0  C   R 1311976496 + 8 [0]
CPU0 (nvme0n1):
 Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB
"""


def test_blkparse_lines_give_queued_plugs_and_dispatchers():
    d = blktrace.parse_dispatches(BLKPARSE)
    assert (d.queued, d.plugs, d.by) == (2, 1, {"blkgen": 1, "kworker": 1})


def test_a_traced_cell_gets_its_dispatch_row(tmp_path, capsys, monkeypatch):
    (run,) = _runs(tmp_path, [[]], [None])
    trace = run / "cells" / "nvme0.none.r0" / "blktrace.bin"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b"")
    monkeypatch.setattr(markdown, "dispatches", lambda path: blktrace.parse_dispatches(BLKPARSE))
    cell = json.loads((run / "cell-nvme0.none.r0.json").read_text())
    cell["workload"] = {"jobs": [{"ctx": 1000}]}
    (run / "cell-nvme0.none.r0.json").write_text(json.dumps(cell))
    assert cli.main(["report", "--markdown", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert markdown.DISPATCH_HEAD in lines
    # 1000 switches over the cell's 2000 I/Os
    assert "| nvme0.none.r0 | 2 | 1 | blkgen 1, kworker 1 | 0.50 |" in lines


def test_a_trace_blkparse_cannot_read_is_an_error_naming_it(tmp_path):
    from blklab.errors import BlklabError

    with pytest.raises(BlklabError) as e:
        blktrace.dispatches(tmp_path / "missing" / "blktrace.bin")
    assert str(tmp_path / "missing" / "blktrace.bin") in str(e.value)
    # What is not a trace reads as no events (blkparse exits 0 on it).
    junk = tmp_path / "blktrace.bin"
    junk.write_bytes(b"not a trace")
    assert blktrace.dispatches(junk) == blktrace.Dispatches(0, 0, {})
