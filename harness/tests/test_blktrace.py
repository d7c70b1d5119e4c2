"""A traced cell's blktrace as blkparse prints it."""

from blklab import blktrace

# blkparse prints events in time order, so an event whose stamp went back
# comes out ahead of where its CPU's sequence puts it. CPU 1's event 3 is
# stamped before its event 2; CPU 0's events 2 and 3 share a stamp (not a
# reversal), and the other disk's CPU 1 counts apart.
TRACE = """\
259,0    1        3     0.000000000   140  Q   R 3000 + 8 [fio]
259,0    0        1     0.000001000   131  Q   R 1000 + 8 [fio]
259,0    0        2     0.000002000   131  D   R 1000 + 8 [fio]
259,0    0        3     0.000002000   131  Q   R 1008 + 8 [fio]
259,0    1        1     0.042500000   140  Q   R 2000 + 8 [fio]
259,0    1        2     0.042501000   140  D   R 2000 + 8 [fio]
8,0      1        1     0.042502000   140  Q   R 2000 + 8 [fio]
8,0      1        2     0.042503000     0  C   R 2000 + 8 [0]
CPU1 (259,0):
 Reads Queued:           3,       12KiB  Writes Queued:           0,        0KiB
"""


def test_time_reversals_count_stamps_that_fall_in_a_cpus_sequence():
    assert blktrace.time_reversals(TRACE) == 1


def test_a_sound_trace_has_none():
    sound = "\n".join(line for line in TRACE.splitlines() if " 140  Q   R 3000 " not in line)
    assert blktrace.time_reversals(sound) == 0
