"""biolatency's histograms from blkparse's output."""

from blklab import biolatency

TRACE = """\
259,0    0        1     0.000000000   131  Q   R 1000 + 8 [blkgen]
259,0    0        2     0.000001000   131  I   R 1000 + 8 [blkgen]
259,0    0        3     0.000003000   131  D   R 1000 + 8 [blkgen]
259,0    0        4     0.000004000   131  D   W 2000 + 8 [blkgen]
259,0    0        5     0.000010000     0  C   R 1000 + 8 [0]
259,0    0        6     0.000104000     0  C   W 2000 + 8 [0]
259,0    0        7     0.000105000     0  C   R 5000 + 8 [0]
259,0    0        8     0.000106000   131  D  FN 0 + 0 [kworker/0:1H]
8,0      1        1     0.000200000   131  D   R 1000 + 8 [blkgen]
8,0      1        2     0.000200900     0  C   R 1000 + 8 [0]
CPU0 (259,0):
 Reads Queued:           1,        4KiB  Writes Queued:           0,        0KiB
"""


def test_issue_to_completion_per_device_and_direction():
    hs = {(h.device, h.direction): h for h in biolatency.histograms(TRACE)}
    # 7 us, 100 us, and 0.9 us on the other disk; the completion at sector
    # 5000 has no traced issue and the flush no data.
    assert set(hs) == {("259,0", "read"), ("259,0", "write"), ("8,0", "read")}
    assert hs[("259,0", "read")].buckets == [0, 0, 1]  # 7 us: 4 -> 7
    assert hs[("259,0", "write")].buckets == [0] * 6 + [1]  # 100 us: 64 -> 127
    assert hs[("8,0", "read")].buckets == [1]  # 0.9 us: 0 -> 1
    assert hs[("259,0", "read")].to_json()["mean_us"] == 7.0


def test_from_insert():
    (h,) = biolatency.histograms(TRACE, "insert")
    assert (h.device, h.direction, h.count, h.total_ns) == ("259,0", "read", 1, 9000)


def test_rendered_as_biolatency_prints():
    h = biolatency.Histogram("259,0", "read")
    for ns in (500, 3000, 3500, 70_000):
        h.add(ns)
    lines = h.render().splitlines()
    assert lines[1].startswith("         0 -> 1         : 1 ")
    assert lines[2].startswith("         2 -> 3         : 2 ")
    assert lines[2].endswith("|" + "*" * 40 + "|")
    assert lines[7].startswith("        64 -> 127       : 1 ")
