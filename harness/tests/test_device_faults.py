"""[[fault]] in a scenario: each fault reaches its device's profile (as the
library reads it), the job bundle tells the guest to mark the workload's
start, the cell records what the model's counters say fired, and a fault
the model did not apply fails the cell."""

import subprocess

import pytest

from blklab import device_faults, paths, report, scenario
from blklab.bundle import JobBundle
from blklab.device_faults import DeviceFault

SCENARIO = """
[scenario]
schedulers = ["none"]
[[device]]
name = "d0"
kind = "nvme"
profile = "fixed-10us"
[[device]]
name = "d1"
kind = "nvme"
profile = "fixed-10us"
[[job]]
name = "r"
rw = "randread"
startdelay = "20ms"
runtime = "300ms"
[[fault]]
device = "d0"
kind = "stall"
at_ms = 100
duration_ms = 50
[[fault]]
device = "d0"
kind = "slow"
at_ms = 200
duration_ms = 100.5
factor = 4
"""


def load(tmp_path, text=SCENARIO):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return scenario.load(p)


def test_faults_reach_their_device_profile_only(tmp_path):
    s = load(tmp_path)
    assert s.faults == (DeviceFault("d0", "stall", 100.0, 50.0),
                        DeviceFault("d0", "slow", 200.0, 100.5, 4.0))
    d0, d1 = s.devices
    assert d0.profile.text.endswith('[[fault]]\nkind = "stall"\nat_ms = 100.0\n'
                                    'duration_ms = 50.0\n\n[[fault]]\nkind = "slow"\n'
                                    'at_ms = 200.0\nduration_ms = 100.5\nfactor = 4.0\n')
    assert "[[fault]]" not in d1.profile.text
    assert d0.profile.sha256 != d1.profile.sha256
    # The library QEMU links reads the profile as the cell writes it.
    path = tmp_path / "profile.toml"
    path.write_text(d0.profile.text)
    subprocess.run([str(paths.devmodel_info()), "--check", str(path)], check=True,
                   capture_output=True)


def test_a_media_error_reaches_the_profile_with_its_range(tmp_path):
    text = SCENARIO.split("[[fault]]")[0] + (
        '[[fault]]\ndevice = "d1"\nkind = "media_error"\nlba_start = 2048\nlba_count = 16\n'
        'retry_ms = 1.5\n')
    s = load(tmp_path, text)
    (f,) = s.faults
    assert f == DeviceFault("d1", "media_error", 0.0, None, None, 2048, 16, 1.5, None)
    assert f.to_json() == {"device": "d1", "kind": "media_error", "at_ms": 0.0,
                           "duration_ms": None, "factor": None, "lba_start": 2048,
                           "lba_count": 16, "retry_ms": 1.5}
    # A stall's record keeps the keys it always had.
    assert set(DeviceFault("d0", "stall", 1.0, 2.0).to_json()) == {
        "device", "kind", "at_ms", "duration_ms", "factor"}
    d1 = s.devices[1]
    assert d1.profile.text.endswith('[[fault]]\nkind = "media_error"\nat_ms = 0.0\n'
                                    'lba_start = 2048\nlba_count = 16\nretry_ms = 1.5\n')
    path = tmp_path / "profile.toml"
    path.write_text(d1.profile.text)
    subprocess.run([str(paths.devmodel_info()), "--check", str(path)], check=True,
                   capture_output=True)


def test_a_timeout_reaches_the_profile_with_or_without_a_range(tmp_path):
    text = SCENARIO.split("[[fault]]")[0] + (
        '[[fault]]\ndevice = "d0"\nkind = "timeout"\nat_ms = 100\nduration_ms = 50\n'
        '[[fault]]\ndevice = "d1"\nkind = "timeout"\nat_ms = 10\nduration_ms = 5\n'
        'lba_start = 8\nlba_count = 8\nwrites = true\n')
    s = load(tmp_path, text)
    every, ranged = s.faults
    assert every == DeviceFault("d0", "timeout", 100.0, 50.0)
    assert every.to_json() == {"device": "d0", "kind": "timeout", "at_ms": 100.0,
                               "duration_ms": 50.0, "factor": None}
    assert ranged == DeviceFault("d1", "timeout", 10.0, 5.0, None, 8, 8, None, True)
    assert ranged.to_json() == {"device": "d1", "kind": "timeout", "at_ms": 10.0,
                                "duration_ms": 5.0, "factor": None, "lba_start": 8,
                                "lba_count": 8, "writes": True}
    d0, d1 = s.devices
    assert d0.profile.text.endswith('[[fault]]\nkind = "timeout"\nat_ms = 100.0\n'
                                    'duration_ms = 50.0\n')
    assert d1.profile.text.endswith('[[fault]]\nkind = "timeout"\nat_ms = 10.0\n'
                                    'duration_ms = 5.0\nlba_start = 8\nlba_count = 8\n'
                                    'writes = true\n')
    for d in (d0, d1):  # the library QEMU links reads both
        path = tmp_path / "profile.toml"
        path.write_text(d.profile.text)
        subprocess.run([str(paths.devmodel_info()), "--check", str(path)], check=True,
                       capture_output=True)


def test_a_reset_reaches_the_profile_at_its_time_without_a_duration(tmp_path):
    text = SCENARIO.split("[[fault]]")[0] + (
        '[[fault]]\ndevice = "d0"\nkind = "reset"\nat_ms = 100\n')
    s = load(tmp_path, text)
    (reset,) = s.faults
    assert reset == DeviceFault("d0", "reset", 100.0, None)
    assert reset.to_json() == {"device": "d0", "kind": "reset", "at_ms": 100.0,
                               "duration_ms": None, "factor": None}
    d0, _ = s.devices
    assert d0.profile.text.endswith('[[fault]]\nkind = "reset"\nat_ms = 100.0\n')
    path = tmp_path / "profile.toml"
    path.write_text(d0.profile.text)
    subprocess.run([str(paths.devmodel_info()), "--check", str(path)], check=True,
                   capture_output=True)


def test_a_reset_that_the_host_ended_is_recorded_with_its_end():
    asked = [DeviceFault("d0", "reset", 50.0, None)]
    counters = {"fault_origin_ns": 1000, "host_resets": 2,
                "faults": [{"kind": "reset", "start_ns": 50_001_000, "end_ns": 400_000_000,
                            "requests": 1}]}
    (f,) = device_faults.fired(asked, counters)
    assert f["fired"] and f["requests"] == 1
    assert (f["start_ns"], f["end_ns"]) == (50_001_000, 400_000_000)
    assert device_faults.failure(asked, counters) is None


def test_kernel_error_lines_are_picked_from_the_console():
    console = (
        "[    1.000000] nvme nvme0: pci function 0000:00:04.0\n"
        "[    5.100000] nvme0n1: I/O Cmd(0x2) @ LBA 2048, 8 blocks, I/O Error "
        "(sct 0x2 / sc 0x81) DNR \n"
        "[    5.200000] Yama: disabled by default; enable with sysctl kernel.yama.*\n"
        "[    5.100001] critical medium error, dev nvme0n1, sector 2048 op 0x0:(READ) "
        "flags 0x4800 phys_seg 1 prio class 2\n"
        "blkgen: io_u error on file /dev/nvme0n1: Input/output error\n"
        "[    6.000000] nvme nvme0: I/O tag 12 (100c) opcode 0x2 (I/O Cmd) QID 1 timeout, "
        "aborting req_op:READ(0) size:4096\n"
        "[    6.000100] nvme nvme0: Abort status: 0x0\n"
        "[    7.000000] nvme nvme0: I/O tag 12 (100c) opcode 0x2 (I/O Cmd) QID 1 timeout, "
        "reset controller\n"
        "[    7.100000] nvme nvme0: 1/0/0 default/read/poll queues\n"
        "[    8.000000] nvme nvme0: controller is down; will reset: CSTS=0x3, "
        "PCI_STATUS=0x10\n"
        "[    8.100000] nvme 0000:00:04.0: enabling device (0000 -> 0002)\n"
        "[    9.000000] ata1.00: exception Emask 0x0 SAct 0x1 SErr 0x0 action 0x6 frozen\n"
        "[    9.000001] ata1.00: failed command: READ FPDMA QUEUED\n"
        "[    9.000002] ata1.00: cmd 60/08:00:00:08:00/00:00:00:00:00/40 tag 0 ncq dma 4096 in\n"
        "[    9.000003]          res 40/00:01:00:00:00/00:00:00:00:00/00 Emask 0x4 (timeout)\n"
        "[    9.000004] ata1.00: status: { DRDY }\n"
        "[    9.000005] ata1: hard resetting link\n"
        "[    9.200000] ata1: SATA link up 1.5 Gbps (SStatus 113 SControl 300)\n"
        "[    9.300000] ata2: soft resetting link\n")
    assert device_faults.kernel_error_lines(console) == [
        "nvme0n1: I/O Cmd(0x2) @ LBA 2048, 8 blocks, I/O Error (sct 0x2 / sc 0x81) DNR",
        "critical medium error, dev nvme0n1, sector 2048 op 0x0:(READ) flags 0x4800 phys_seg 1 "
        "prio class 2",
        "nvme nvme0: I/O tag 12 (100c) opcode 0x2 (I/O Cmd) QID 1 timeout, aborting "
        "req_op:READ(0) size:4096",
        "nvme nvme0: Abort status: 0x0",
        "nvme nvme0: I/O tag 12 (100c) opcode 0x2 (I/O Cmd) QID 1 timeout, reset controller",
        "nvme nvme0: controller is down; will reset: CSTS=0x3, PCI_STATUS=0x10",
        "ata1.00: exception Emask 0x0 SAct 0x1 SErr 0x0 action 0x6 frozen",
        "ata1.00: failed command: READ FPDMA QUEUED",
        "res 40/00:01:00:00:00/00:00:00:00:00/00 Emask 0x4 (timeout)",
        "ata1: hard resetting link",
        "ata2: soft resetting link"]


def test_the_run_length_counts_startdelay(tmp_path):
    # 20 ms + 300 ms: a window ending at 320 ms fits, one past it does not.
    text = SCENARIO.replace("duration_ms = 100.5", "duration_ms = 120")
    assert load(tmp_path, text).faults[1].duration_ms == 120
    try:
        load(tmp_path, SCENARIO.replace("duration_ms = 100.5", "duration_ms = 120.5"))
    except scenario.ScenarioError as e:
        assert e.key == "fault[1].duration_ms"
        assert "320 ms" in e.message
    else:
        raise AssertionError("a window past the run was accepted")


def test_a_fault_without_a_window_needs_no_run_length(tmp_path):
    # A probability picks to the end of the run, and a media error from the
    # start without a duration lasts to it: neither can end past the run,
    # so a job without a runtime (an application's) is fine. A window
    # still needs the run's length.
    head = SCENARIO.split("[[fault]]")[0].replace('runtime = "300ms"\n', "")
    picked = head + """[[fault]]
device = "d0"
kind = "media_error"
probability = 0.01
[[fault]]
device = "d1"
kind = "media_error"
lba_start = 0
lba_count = 8
"""
    assert [f.kind for f in load(tmp_path, picked).faults] == ["media_error", "media_error"]
    with pytest.raises(scenario.ScenarioError) as e:
        load(tmp_path, picked + 'duration_ms = 10\n')
    assert e.value.key == "fault[1]" and "run's length is not known" in e.value.message


def test_bundle_marks_the_workload_start_only_with_faults(tmp_path):
    s = load(tmp_path)
    envs = {}
    for cell in s.cells():
        b = JobBundle.for_cell(cell, s.workload, s.jobs,
                               device_faults=any(f.device == cell.device.name for f in s.faults))
        envs[cell.device.name] = b.files()["job/job.env"].decode()
    assert "BLKLAB_DEVICE_FAULTS=1\n" in envs["d0"]
    assert "BLKLAB_DEVICE_FAULTS" not in envs["d1"]
    assert "BLKLAB_GUEST_FAULT=none\n" in envs["d1"]


COUNTERS = {"model": "zero", "fault_origin_ns": 5_000_000_000,
            "faults": [{"kind": "stall", "at_ns": 100_000_000, "duration_ns": 50_000_000,
                        "start_ns": 5_100_000_000, "end_ns": 5_150_000_000, "requests": 1},
                       {"kind": "slow", "at_ns": 200_000_000, "duration_ns": 100_500_000,
                        "start_ns": 5_200_000_000, "end_ns": 5_300_500_000, "factor": 4.0,
                        "requests": 0}]}


def test_fired_reads_the_model_counters(tmp_path):
    asked = load(tmp_path).faults
    fired = device_faults.fired(asked, COUNTERS)
    assert fired[0] | {} == {"device": "d0", "kind": "stall", "at_ms": 100.0,
                             "duration_ms": 50.0, "factor": None, "origin_ns": 5_000_000_000,
                             "start_ns": 5_100_000_000, "end_ns": 5_150_000_000,
                             "requests": 1, "fired": True, "first_request": None}
    assert fired[1]["fired"] is False and fired[1]["factor"] == 4.0
    assert device_faults.failure(asked, COUNTERS) is None


def test_a_fault_the_model_did_not_apply_fails_the_cell(tmp_path):
    asked = load(tmp_path).faults
    no_origin = COUNTERS | {"fault_origin_ns": None}
    assert "never reached the device model" in device_faults.failure(asked, no_origin)
    assert "reports 0 faults" in device_faults.failure(asked, {"model": "zero"})
    swapped = COUNTERS | {"faults": COUNTERS["faults"][::-1]}
    assert "kind 'slow', asked 'stall'" in device_faults.failure(asked, swapped)
    assert device_faults.failure((), {"model": "zero"}) is None


def test_report_lists_each_fault_of_each_cell(tmp_path):
    asked = load(tmp_path).faults
    cell = {"cell_id": "d0.none.r0", "request": {"faults": [f.to_json() for f in asked]},
            "faults": device_faults.fired(asked, COUNTERS)}
    rows = report.fault_rows([cell, {"cell_id": "d0.none.r1",
                                     "request": {"faults": [asked[0].to_json()]}}])
    assert [(r["cell_id"], r["kind"], r["requests"], r["fired"]) for r in rows] == [
        ("d0.none.r0", "stall", "1", "yes"), ("d0.none.r0", "slow", "0", "no"),
        ("d0.none.r1", "stall", "-", "-")]
    assert rows[1]["factor"] == "4" and rows[0]["end_ns"] == "5,150,000,000"


def test_the_timeline_shades_every_kind():
    assert set(report.FAULT_COLOURS) == set(device_faults.KINDS)


# ---- When a fault starts: at_ms, after_requests, probability.

BASE = SCENARIO.split("[[fault]]")[0]


def test_after_requests_and_probability_reach_the_profile(tmp_path):
    text = BASE + (
        '[[fault]]\ndevice = "d0"\nkind = "stall"\nafter_requests = 1000\nduration_ms = 5\n'
        '[[fault]]\ndevice = "d1"\nkind = "media_error"\nprobability = 0.01\n'
        '[[fault]]\ndevice = "d1"\nkind = "timeout"\nprobability = 1\nlba_start = 8\n'
        'lba_count = 8\n'
        '[[fault]]\ndevice = "d1"\nkind = "media_error"\nafter_requests = 0\nlba_start = 8\n'
        'lba_count = 8\n')
    s = load(tmp_path, text)
    stall, picked, lost, counted = s.faults
    assert stall == DeviceFault("d0", "stall", None, 5.0, after_requests=1000)
    assert stall.trigger == "after_requests"
    assert stall.to_json() == {"device": "d0", "kind": "stall", "at_ms": None,
                               "duration_ms": 5.0, "factor": None, "after_requests": 1000}
    assert picked == DeviceFault("d1", "media_error", None, None, probability=0.01)
    assert picked.trigger == "probability"
    assert picked.to_json() == {"device": "d1", "kind": "media_error", "at_ms": None,
                                "duration_ms": None, "factor": None, "probability": 0.01}
    assert lost == DeviceFault("d1", "timeout", None, None, None, 8, 8, probability=1.0)
    assert counted == DeviceFault("d1", "media_error", None, None, None, 8, 8,
                                  after_requests=0)
    # A record reads back as the fault it was made from (cell.py's check).
    for f in s.faults:
        assert DeviceFault(**f.to_json()) == f
    d0, d1 = s.devices
    assert d0.profile.text.endswith('[[fault]]\nkind = "stall"\nafter_requests = 1000\n'
                                    'duration_ms = 5.0\n')
    assert d1.profile.text.endswith(
        '[[fault]]\nkind = "media_error"\nprobability = 0.01\n\n'
        '[[fault]]\nkind = "timeout"\nprobability = 1.0\nlba_start = 8\nlba_count = 8\n\n'
        '[[fault]]\nkind = "media_error"\nafter_requests = 0\nlba_start = 8\nlba_count = 8\n')
    for d in (d0, d1):  # the library QEMU links reads both
        path = tmp_path / "profile.toml"
        path.write_text(d.profile.text)
        subprocess.run([str(paths.devmodel_info()), "--check", str(path)], check=True,
                       capture_output=True)


FAULT_HEAD = '[[fault]]\ndevice = "d0"\n'
BAD_WHEN = [
    # (the fault's keys after device, the key named, words of the message)
    ('kind = "stall"\nat_ms = 1\nafter_requests = 5\nduration_ms = 1\n',
     "after_requests", "cannot be given with at_ms: a fault starts at one of at_ms, "
     "after_requests"),
    ('kind = "timeout"\nafter_requests = 5\nprobability = 0.5\n',
     "probability", "cannot be given with after_requests: a fault starts at one of at_ms, "
     "after_requests, probability"),
    ('kind = "media_error"\nat_ms = 0\nprobability = 0.5\n', "probability",
     "cannot be given with at_ms"),
    ('kind = "stall"\nprobability = 0.5\nduration_ms = 1\n', "probability",
     'applies to kinds "media_error" and "timeout" only (a chance per request picks single '
     'requests; "stall" is a window: start it with at_ms or after_requests)'),
    ('kind = "slow"\nprobability = 0.5\nduration_ms = 1\nfactor = 2\n', "probability",
     '"slow" is a window'),
    ('kind = "reset"\nprobability = 0.5\n', "probability", '"reset" is a window'),
    ('kind = "timeout"\nprobability = 0\n', "probability",
     "must be above 0 and at most 1 (the chance per request), got 0"),
    ('kind = "timeout"\nprobability = 1.5\n', "probability", "got 1.5"),
    ('kind = "timeout"\nprobability = -0.1\n', "probability", "got -0.1"),
    ('kind = "timeout"\nprobability = "often"\n', "probability",
     "must be an integer or a number, not a string"),
    ('kind = "timeout"\nprobability = true\n', "probability", "not a boolean"),
    ('kind = "stall"\nafter_requests = -1\nduration_ms = 1\n', "after_requests",
     "must be between 0 and 1000000000000 (requests the device receives after the workload "
     "starts before the fault does), got -1"),
    ('kind = "stall"\nafter_requests = 10000000000000\nduration_ms = 1\n', "after_requests",
     "got 10000000000000"),
    ('kind = "stall"\nafter_requests = 1.5\nduration_ms = 1\n', "after_requests",
     "must be an integer, not a number"),
    ('kind = "stall"\nafter_requests = true\nduration_ms = 1\n', "after_requests",
     "not a boolean"),
    ('kind = "media_error"\nprobability = 0.1\nduration_ms = 5\n', "duration_ms",
     "does not apply with probability: it picks requests from the workload's start to the "
     "end of the run"),
    ('kind = "media_error"\nprobability = 0.1\nlba_start = 5\n', "lba_count",
     'a "media_error" fault with probability takes both lba_start and lba_count (a range) '
     "or neither (every block)"),
    ('kind = "media_error"\nprobability = 0.1\nlba_start = 1099511627776\nlba_count = 8\n',
     "lba_count", "ends past device 'd0'"),
    ('kind = "timeout"\nprobability = 0.1\nretry_ms = 3\n', "retry_ms",
     'applies to kind "media_error" only'),
    ('kind = "stall"\nafter_requests = 3\n', "duration_ms", "is required"),
    ('kind = "stall"\nafter_requests = 3\nduration_ms = 320.5\n', "duration_ms",
     "the window of 320.5 ms is longer than the run: the longest job's startdelay + runtime "
     "is 320 ms"),
    ('kind = "stall"\nduration_ms = 1\n', "at_ms",
     "is required, or one of after_requests (when the fault starts)"),
    ('kind = "timeout"\nduration_ms = 1\n', "at_ms",
     "is required, or one of after_requests, probability (when the fault starts)"),
    ('kind = "slow"\nafter_requests = 3\nduration_ms = 1\n', "factor", "is required"),
]


@pytest.mark.parametrize("keys,key,words", BAD_WHEN)
def test_every_bad_trigger_is_refused_naming_the_file_and_the_key(tmp_path, keys, key, words):
    p = tmp_path / "s.toml"
    p.write_text(BASE + FAULT_HEAD + keys)
    with pytest.raises(scenario.ScenarioError) as e:
        scenario.load(p)
    assert e.value.key == f"fault[0].{key}", (e.value.key, e.value.message)
    assert words in e.value.message, e.value.message
    assert str(p) in str(e.value), str(e.value)


def test_a_probability_needs_a_front_end_and_deterministic_mode(tmp_path):
    virtio = BASE.replace('name = "d0"\nkind = "nvme"', 'name = "d0"\nkind = "virtio-blk"')
    try:
        load(tmp_path, virtio + FAULT_HEAD + 'kind = "timeout"\nprobability = 0.1\n')
    except scenario.ScenarioError as e:
        assert e.key == "fault[0].kind" and "no timeout handler" in e.message
    else:
        raise AssertionError("a timeout on virtio-blk was accepted")
    realtime = BASE.replace('[scenario]\n', '[scenario]\nmode = "realtime"\n')
    try:
        load(tmp_path, realtime + FAULT_HEAD + 'kind = "timeout"\nprobability = 0.1\n')
    except scenario.ScenarioError as e:
        assert e.key == "fault[0]" and "deterministic mode" in e.message
    else:
        raise AssertionError("a fault in realtime mode was accepted")


def on(kind: str) -> str:
    """BASE with device d0 of front end `kind`."""
    return BASE.replace('name = "d0"\nkind = "nvme"', f'name = "d0"\nkind = "{kind}"')


MEDIA = 'kind = "media_error"\nlba_start = 800\nlba_count = 8\n'
REFUSED_FRONT_ENDS = [
    # (front end, the fault's keys after device, the key named, words of the message)
    ("ahci-hd", MEDIA + "writes = true\n", "writes",
     "a write error on ahci-hd (device 'd0') is not built yet: nvme, virtio-blk only (an "
     "IDE or AHCI drive reports it as DF and ABRT"),
    ("virtio-blk", 'kind = "timeout"\nat_ms = 1\nduration_ms = 1\n', "kind",
     "'timeout' does not fit device 'd0' (virtio-blk): the guest's virtio_blk driver has no "
     "timeout handler (virtio_mq_ops has no .timeout)"),
    ("virtio-blk", 'kind = "reset"\nat_ms = 1\n', "kind",
     "'reset' does not fit device 'd0' (virtio-blk): the guest's virtio_blk driver has no "
     "timeout handler"),
    ("ide-hd", MEDIA + "writes = true\n", "writes",
     "a write error on ide-hd (device 'd0') is not built yet: nvme, virtio-blk only"),
]


@pytest.mark.parametrize("front,keys,key,words", REFUSED_FRONT_ENDS)
def test_a_kind_the_front_end_cannot_report_is_refused_with_the_reason(
        tmp_path, front, keys, key, words):
    p = tmp_path / "s.toml"
    p.write_text(on(front) + FAULT_HEAD + keys)
    with pytest.raises(scenario.ScenarioError) as e:
        scenario.load(p)
    assert e.value.key == f"fault[0].{key}", (e.value.key, e.value.message)
    assert words in e.value.message, e.value.message
    assert str(p) in str(e.value), str(e.value)


@pytest.mark.parametrize("front", ["ide-hd", "ahci-hd"])
def test_a_timeout_on_ide_and_ahci_reaches_the_profile(tmp_path, front):
    s = load(tmp_path, on(front) + FAULT_HEAD
             + 'kind = "timeout"\nat_ms = 50\nduration_ms = 1\nwrites = true\n')
    (f,) = s.faults
    assert f == DeviceFault("d0", "timeout", 50.0, 1.0, None, None, None, None, True)
    (d0,) = [d for d in s.devices if d.name == "d0"]
    assert d0.kind == front
    assert d0.profile.text.endswith('[[fault]]\nkind = "timeout"\nat_ms = 50.0\n'
                                    'duration_ms = 1.0\nwrites = true\n'), d0.profile.text


@pytest.mark.parametrize("front", ["ide-hd", "ahci-hd"])
def test_a_reset_on_ide_and_ahci_reaches_the_profile(tmp_path, front):
    s = load(tmp_path, on(front) + FAULT_HEAD + 'kind = "reset"\nat_ms = 50\n')
    (f,) = s.faults
    assert f.device == "d0" and f.kind == "reset" and f.at_ms == 50.0
    (d0,) = [d for d in s.devices if d.name == "d0"]
    assert d0.kind == front
    assert d0.profile.text.endswith('[[fault]]\nkind = "reset"\nat_ms = 50.0\n'), d0.profile.text


@pytest.mark.parametrize("front,keys", [
    ("ide-hd", MEDIA), ("ide-hd", MEDIA + "writes = false\n"), ("virtio-blk", MEDIA),
    ("virtio-blk", MEDIA + "writes = true\n"), ("nvme", MEDIA + "writes = true\n"),
    ("ide-hd", 'kind = "media_error"\nprobability = 0.1\n'),
    ("ahci-hd", MEDIA), ("ahci-hd", MEDIA + "writes = false\n"),
    ("ahci-hd", 'kind = "media_error"\nprobability = 0.1\n'),
])
def test_a_media_error_on_ide_ahci_and_virtio_blk_reaches_the_profile(tmp_path, front, keys):
    s = load(tmp_path, on(front) + FAULT_HEAD + keys)
    (f,) = s.faults
    assert f.device == "d0" and f.kind == "media_error"
    expected = {"writes = true\n": True, "writes = false\n": False}
    assert f.writes == next((v for k, v in expected.items() if k in keys), None)


PICKED_COUNTERS = {
    "model": "zero", "fault_origin_ns": 1000, "requests_since_origin": 300,
    "faults": [{"kind": "media_error", "trigger": "probability", "probability": 0.01,
                "start_ns": 1000, "end_ns": None, "requests": 2,
                "first_request": {"request": 17, "ns": 5000},
                "picks": [{"request": 17, "ns": 5000}, {"request": 230, "ns": 9000}]},
               {"kind": "stall", "trigger": "after_requests", "after_requests": 100,
                "start_ns": 7000, "end_ns": 5_007_000, "requests": 1,
                "first_request": {"request": 101, "ns": 7000},
                "trigger_request": {"request": 101, "ns": 7000}}]}
PICKED_ASKED = (DeviceFault("d0", "media_error", None, None, probability=0.01),
                DeviceFault("d0", "stall", None, 5.0, after_requests=100))


def test_fired_lists_the_picks_and_the_trigger_request():
    picked, counted = device_faults.fired(PICKED_ASKED, PICKED_COUNTERS)
    assert picked["fired"] and picked["requests"] == 2
    assert picked["picks"] == PICKED_COUNTERS["faults"][0]["picks"]
    assert picked["first_request"] == {"request": 17, "ns": 5000}
    assert "trigger_request" not in picked
    assert counted["trigger_request"] == {"request": 101, "ns": 7000}
    assert (counted["start_ns"], counted["end_ns"]) == (7000, 5_007_000)
    assert "picks" not in counted
    assert device_faults.failure(PICKED_ASKED, PICKED_COUNTERS) is None
    # A library that starts it another way (or does not say: an older one).
    other = {**PICKED_COUNTERS, "faults": [
        PICKED_COUNTERS["faults"][0], {**PICKED_COUNTERS["faults"][1], "trigger": "at_ms"}]}
    assert "starts it by 'at_ms', asked 'after_requests'" in \
        device_faults.failure(PICKED_ASKED, other)
    old = {**PICKED_COUNTERS, "faults": [
        {k: v for k, v in f.items() if k != "trigger"} for f in PICKED_COUNTERS["faults"]]}
    assert "starts it by 'at_ms', asked 'probability'" in \
        device_faults.failure(PICKED_ASKED, old)


def test_report_says_when_each_fault_starts_and_what_fired_it():
    cell = {"cell_id": "d0.none.r0", "request": {"faults": [f.to_json() for f in PICKED_ASKED]},
            "faults": device_faults.fired(PICKED_ASKED, PICKED_COUNTERS)}
    picked, counted = report.fault_rows([cell])
    assert picked["when"] == "p = 0.01 per request" and picked["trigger_request"] == "-"
    assert picked["first_request"] == "#17 at 5,000 ns"
    assert counted["when"] == "after 100 requests"
    assert counted["trigger_request"] == "#101 at 7,000 ns"
    assert report.fault_when(DeviceFault("d0", "stall", 100.0, 5.0).to_json()) == "at 100 ms"
