"""Turns and gaps of a job from blkgen's time series."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from blklab import turns
from blklab.errors import BlklabError

MS = 1_000_000
HARNESS = Path(__file__).resolve().parents[1]


def series(lengths_ms: list[float], reads: list[int], writes: list[int] | None = None,
           interval_ms: int = 100) -> dict:
    """A time series as blkgen writes it: each interval's end, and per
    direction its completions over its own length as IOPS."""
    ends, t = [], 0
    for length in lengths_ms:
        t += int(length * MS)
        ends.append(t)
    ts = {"interval_ns": interval_ms * MS, "end_ns": ends, "truncated": False}
    for d, counts in (("read", reads), ("write", writes)):
        if counts is not None:
            ts[d] = {"iops": [n / (length / 1000) for n, length in zip(counts, lengths_ms)],
                     "clat_p99_ns": [0] * len(counts)}
    return ts


def cell(ts: dict, cell_id: str = "hdd.bfq.r0", job: str = "tenant") -> dict:
    return {"cell_id": cell_id, "status": "ok",
            "workload": {"jobs": [{"jobname": job, "blkgen": {"time_series": ts}}]}}


def test_a_job_served_throughout_is_one_turn():
    spans = turns.spans_of(series([100] * 5 + [40], [12] * 5 + [5]), gap_ns=50 * MS)
    assert spans == [turns.Span("turn", 0, 540 * MS, {"read": 65})]


def test_an_overrun_of_the_gap_or_more_is_a_gap_and_adjacent_ones_merge():
    # 100, then 149.9 (held 49.9 ms: still a turn), 150 (held 50: a gap),
    # 3000 (a gap, merged with the one before), then 100 again.
    ts = series([100, 149.9, 150, 3000, 100], [10, 9, 2, 1, 11])
    spans = turns.spans_of(ts, gap_ns=50 * MS)
    assert [(s.kind, s.start_ns, s.end_ns, s.ios["read"]) for s in spans] == [
        ("turn", 0, int(249.9 * MS), 19),
        ("gap", int(249.9 * MS), int(3399.9 * MS), 3),
        ("turn", int(3399.9 * MS), int(3499.9 * MS), 11)]


def test_every_completion_of_every_direction_is_in_one_span():
    reads, writes = [7, 0, 3, 9, 1, 4], [2, 5, 0, 0, 8, 1]
    ts = series([100, 900, 100, 100, 2500, 60], reads, writes)
    spans = turns.spans_of(ts, gap_ns=50 * MS)
    assert [s.kind for s in spans] == ["turn", "gap", "turn", "gap", "turn"]
    assert sum(s.ios["read"] for s in spans) == sum(reads)
    assert sum(s.ios["write"] for s in spans) == sum(writes)
    assert all(a.end_ns == b.start_ns for a, b in zip(spans, spans[1:]))


def test_the_gap_defaults_to_half_the_interval_and_can_be_set():
    ts = series([20, 35, 20], [4, 4, 4], interval_ms=20)
    (jt,) = turns.analyze(cell(ts))
    assert jt.gap_ns == 10 * MS and [s.kind for s in jt.spans] == ["turn", "gap", "turn"]
    (jt,) = turns.analyze(cell(ts), gap_ms=20)
    assert [s.kind for s in jt.spans] == ["turn"]
    assert jt.served_ns == jt.length_ns == 75 * MS


def test_group_members_each_have_their_turns():
    c = cell({})
    c["workload"]["jobs"][0]["blkgen"] = {"time_series": None, "member_time_series": [
        series([100, 100], [5, 5]), series([100, 400], [5, 1])]}
    found = turns.analyze(c)
    assert [(jt.job, len(jt.turns)) for jt in found] == [("tenant[0]", 1), ("tenant[1]", 1)]
    assert found[1].spans[-1].kind == "gap"


def write_run(tmp_path: Path) -> Path:
    shares = cell(series([100, 100, 3550, 100], [13, 12, 5, 14]), "hdd.bfq.seed=1.r0", "b")
    even = cell(series([100] * 4, [10] * 4), "hdd.none.seed=1.r0", "b")
    for c in (shares, even):
        (tmp_path / f"cell-{c['cell_id']}.json").write_text(json.dumps(c))
    return tmp_path


def test_render_shows_each_span_with_its_completions(tmp_path):
    text = turns.render(write_run(tmp_path), "hdd.bfq.*")
    assert "hdd.none" not in text
    assert "-- b: 2 turn(s), served 8% of 3.85 s, 44 I/O" in text  # 0.3 s of 3.85
    (gap,) = [line.split() for line in text.splitlines() if line.lstrip().startswith("gap")]
    assert gap == ["gap", "0.20-3.75", "s", "3.55", "s", "5", "read", "I/O", "1/s"]


def test_as_json_gives_the_spans(tmp_path):
    data = json.loads(turns.as_json(write_run(tmp_path)))
    assert [(d["cell_id"], len(d["spans"])) for d in data] == [
        ("hdd.bfq.seed=1.r0", 3), ("hdd.none.seed=1.r0", 1)]
    assert data[0]["spans"][1] == {"kind": "gap", "start_ns": 200 * MS,
                                   "end_ns": 3750 * MS, "ios": {"read": 5}}


def test_a_glob_that_matches_nothing_names_the_cells(tmp_path):
    with pytest.raises(BlklabError, match="matches none of the cells: hdd.bfq.seed=1.r0, "
                       "hdd.none.seed=1.r0"):
        turns.load(write_run(tmp_path), "nvme.*")


def test_a_cell_file_that_is_not_json_is_named(tmp_path):
    run = write_run(tmp_path)
    (run / "cell-broken.r0.json").write_text("{\"cell_id\": ")
    with pytest.raises(BlklabError, match="cell-broken.r0.json: not a readable cell result"):
        turns.load(run, None)


def test_a_directory_without_cells_is_an_error(tmp_path):
    with pytest.raises(BlklabError, match="no cell-\\*.json"):
        turns.load(tmp_path, None)


def blklab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "blklab", *args], capture_output=True,
                          text=True, cwd=HARNESS)


def test_cli_refuses_a_gap_that_is_not_positive(tmp_path):
    run = write_run(tmp_path)
    proc = blklab("turns", "--gap-ms", "0", str(run))
    assert proc.returncode == 1 and "--gap-ms 0: must be above 0" in proc.stderr
    assert len(list(run.glob("cell-*.json"))) == 2  # nothing destroyed


def test_cli_prints_turns(tmp_path):
    proc = blklab("turns", "--cell", "hdd.none.*", str(write_run(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert "== hdd.none.seed=1.r0 (ok)" in proc.stdout and "1 turn(s), served 100%" in proc.stdout
