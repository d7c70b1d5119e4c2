"""Scenario parsing, validation messages and cell expansion."""

from pathlib import Path

import pytest

from blklab import kernels, scenario
from blklab.errors import ScenarioError

MINIMAL = """
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"

[[job]]
name = "j"
rw = "randread"
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_minimal_defaults(tmp_path):
    s = scenario.load(write(tmp_path, MINIMAL))
    assert s.name == "s"
    assert s.schedulers == ["none", "mq-deadline", "kyber", "bfq"]
    assert s.mode == "deterministic"
    # No [guest] kernel: the default series' amd64.
    assert s.guest == scenario.Guest(f"{kernels.default_series()}-amd64", 2, 1024,
                                     written="amd64")
    # The default preset, the Cascade Lake core: parallel clocks, each vCPU
    # at 4.08 instructions per ns, PAUSE 58 ns, 261 ns per interrupt and
    # 78 ns per system call (docs/cpus.md).
    assert (s.guest.cpu, s.guest.cpu_rate, s.guest.vcpu_clocks, s.guest.vcpu_quantum_ns,
            s.guest.pause_ns, s.guest.irq_ns, s.guest.syscall_ns, s.guest.wake_ns) == (
        "xeon-silver-4210r", 4.08, "parallel", 250, 58, 261, 78, 0)
    (d,) = s.devices
    assert (d.name, d.kind, d.backing, d.profile.name) == ("d0", "nvme", "file", "zero-latency")
    assert d.size_bytes == d.profile.capacity_bytes // 4096 * 4096
    assert s.jobs == [scenario.Job("j", (("rw", "randread"),))]
    assert [c.id for c in s.cells()] == ["d0.none.r0", "d0.mq-deadline.r0", "d0.kyber.r0",
                                         "d0.bfq.r0"]


NO_PROFILE = MINIMAL.replace('profile = "zero-latency"\n', "")


@pytest.mark.parametrize("head, override, why", [
    ("", None, "the default mode"),
    ('[scenario]\nmode = "deterministic"\n', None, "scenario.mode"),
    ('[scenario]\nmode = "realtime"\n', "deterministic", "--mode deterministic"),
])
def test_deterministic_mode_needs_a_profile_on_every_device(tmp_path, head, override, why):
    with pytest.raises(ScenarioError) as e:
        scenario.load(write(tmp_path, head + NO_PROFILE), mode=override)
    assert e.value.key == "device[0].profile"
    assert f"device 'd0' has no profile, and deterministic mode ({why}) needs one" in str(e.value)
    assert str(tmp_path / "s.toml") in str(e.value)


@pytest.mark.parametrize("written, rate, text", [
    ("", 4.08, "4.08"), ("cpu_rate = 1\n", 1.0, "1"), ("cpu_rate = 2.5\n", 2.5, "2.5"), ("cpu_rate = 3\n", 3.0, "3"),
    ("cpu_rate = 0.25\n", 0.25, "0.25"), ("cpu_rate = 1.234567\n", 1.234567, "1.234567"),
])
def test_cpu_rate(tmp_path, written, rate, text):
    s = scenario.load(write(tmp_path, "[guest]\n" + written + MINIMAL))
    assert (s.guest.cpu_rate, s.guest.cpu_rate_text) == (rate, text)


@pytest.mark.parametrize("written, clocks, quantum", [
    ("", "parallel", 250), ('vcpu_clocks = "shared"\n', "shared", None),
    ('vcpu_clocks = "parallel"\n', "parallel", 250),
    ('vcpu_clocks = "parallel"\nvcpu_quantum_ns = 500\n', "parallel", 500),
    ('vcpu_clocks = "parallel"\nvcpu_quantum_ns = 1000000\n', "parallel", 1000000),
    ("vcpu_quantum_ns = 100000\n", "parallel", 100000),
    ('vcpu_clocks = "shared"\nvcpu_quantum_ns = 100000\n', "shared", 100000),
])
def test_vcpu_clocks(tmp_path, written, clocks, quantum):
    s = scenario.load(write(tmp_path, "[guest]\n" + written + MINIMAL))
    assert (s.guest.vcpu_clocks, s.guest.vcpu_quantum_ns) == (clocks, quantum)


def test_vcpu_clocks_on_qemus_command_line(tmp_path):
    """Parallel clocks: -icount parallel=on with the quantum, an invariant
    TSC and no tsc=reliable, so the guest checks its TSC itself; shared
    clocks keep the command line every run had before."""
    from blklab.vm import VMConfig

    def cmd(**kw: object) -> str:
        cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                       mode="deterministic", cpu_rate="2.5", **kw)
        return " ".join(cfg.cmdline())

    shared = cmd()
    assert "-cpu qemu64 " in shared and "tsc=reliable" in shared
    assert "-icount rate=2.5,sleep=off " in shared
    # Shared clocks with a quantum: round-robin turns bounded (0034).
    assert "-icount rate=2.5,sleep=off,quantum=100000 " in cmd(vcpu_quantum_ns=100000)
    parallel = cmd(vcpu_clocks="parallel", vcpu_quantum_ns=250)
    assert "-cpu qemu64,+invtsc " in parallel and "tsc=reliable" not in parallel
    assert 'dyndbg="file arch/x86/kernel/tsc_sync.c +p"' in parallel
    assert "-icount rate=2.5,sleep=off,parallel=on,quantum=250 " in parallel


@pytest.mark.parametrize("written, pause", [
    ("", 58), ("pause_ns = 0\n", 0), ("pause_ns = 40\n", 40), ("pause_ns = 10000\n", 10000),
])
def test_pause_ns(tmp_path, written, pause):
    """[guest] pause_ns reaches QEMU as -icount pause=NS; 0 leaves the
    command line as every run had it before the key."""
    from blklab.vm import VMConfig

    s = scenario.load(write(tmp_path, "[guest]\n" + written + MINIMAL))
    assert s.guest.pause_ns == pause
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   mode="deterministic", cpu_rate="8.86", vcpu_clocks="parallel",
                   vcpu_quantum_ns=250, pause_ns=s.guest.pause_ns)
    icount = cfg.cmdline()[cfg.cmdline().index("-icount") + 1]
    assert icount == ("rate=8.86,sleep=off,parallel=on,quantum=250"
                      + (f",pause={pause}" if pause else ""))


@pytest.mark.parametrize("written, want", [
    ("", dict(cpu="xeon-silver-4210r", cpu_rate=4.08, pause_ns=58, irq_ns=261, syscall_ns=78,
              wake_ns=0)),
    ('cpu = "icelake-sp-axboe2020"\n', dict(cpu="icelake-sp-axboe2020", cpu_rate=8.86,
                                             pause_ns=40, irq_ns=0, syscall_ns=0, wake_ns=0)),
    ('cpu = "xeon-silver-4210r"\n', dict(cpu="xeon-silver-4210r", cpu_rate=4.08, pause_ns=58,
                                          irq_ns=261, syscall_ns=78, wake_ns=0)),
    # each key replaces the preset's value, the rest stay the preset's
    ('cpu = "xeon-silver-4210r"\nirq_ns = 0\ncpu_rate = 3\nwake_ns = 2000\n',
     dict(cpu="xeon-silver-4210r", cpu_rate=3.0, pause_ns=58, irq_ns=0, syscall_ns=78,
          wake_ns=2000)),
    ("syscall_ns = 100\n", dict(cpu="xeon-silver-4210r", cpu_rate=4.08, pause_ns=58,
                                irq_ns=261, syscall_ns=100, wake_ns=0)),
])
def test_cpu_presets(tmp_path, written, want):
    """[guest] cpu picks a preset of cpus/; [guest] keys override its values;
    QEMU gets the event times as -icount irq=, syscall=, wake= (none at 0)."""
    from blklab.vm import VMConfig

    g = scenario.load(write(tmp_path, "[guest]\n" + written + MINIMAL)).guest
    assert {k: getattr(g, k) for k in want} == want
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   mode="deterministic", cpu_rate=g.cpu_rate_text, vcpu_clocks="shared",
                   pause_ns=g.pause_ns, irq_ns=g.irq_ns, syscall_ns=g.syscall_ns,
                   wake_ns=g.wake_ns)
    icount = cfg.cmdline()[cfg.cmdline().index("-icount") + 1]
    events = "".join(f",{k}={want[k + '_ns']}" for k in ("irq", "syscall", "wake")
                     if want[k + "_ns"])
    assert icount == f"rate={g.cpu_rate_text},sleep=off,pause={want['pause_ns']}{events}"


@pytest.mark.parametrize("written, queues, on_cmdline", [
    ("", 0, None), ("nvme_poll_queues = 0\n", 0, None),
    ("nvme_poll_queues = 1\n", 1, "nvme.poll_queues=1"),
    ("vcpus = 4\nnvme_poll_queues = 4\n", 4, "nvme.poll_queues=4"),
])
def test_nvme_poll_queues(tmp_path, written, queues, on_cmdline):
    """[guest] nvme_poll_queues reaches the guest as the nvme module's
    parameter on the kernel command line; 0 leaves the command line as it
    was before the key existed."""
    from blklab.vm import VMConfig

    s = scenario.load(write(tmp_path, "[guest]\n" + written + MINIMAL))
    assert s.guest.nvme_poll_queues == queues
    append = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                      mode="deterministic", nvme_poll_queues=queues).kernel_append()
    if on_cmdline is None:
        assert "poll_queues" not in append
    else:
        assert on_cmdline in append.split()


def test_realtime_mode_has_no_cpu_rate(tmp_path):
    s = scenario.load(write(tmp_path, '[scenario]\nmode = "realtime"\n' + MINIMAL))
    assert (s.guest.cpu_rate, s.guest.cpu_rate_text) == (None, "")
    assert (s.guest.vcpu_clocks, s.guest.vcpu_quantum_ns, s.guest.pause_ns) == (None, None, None)


def test_realtime_runs_devices_without_a_profile(tmp_path):
    s = scenario.load(write(tmp_path, NO_PROFILE), mode="realtime")
    assert s.mode == "realtime" and s.devices[0].profile is None
    s = scenario.load(write(tmp_path, '[scenario]\nmode = "realtime"\n' + NO_PROFILE))
    assert s.mode == "realtime"


def test_shipped_default_scenario_loads():
    s = scenario.load(Path(__file__).resolve().parents[2] / "scenarios" / "default.toml")
    kinds = {c.device.kind for c in s.cells()}
    assert kinds == {"nvme", "ide-hd"}
    assert {c.scheduler for c in s.cells()} == set(scenario.SCHEDULERS)
    assert s.mode == "deterministic"
    hdd = [d for d in s.devices if d.kind == "ide-hd"][0]
    assert hdd.profile.rotation_rate == 7200  # the guest sees a rotating disk
    assert all(d.profile is not None for d in s.devices)


def test_matrix_expansion(tmp_path):
    text = """
[scenario]
schedulers = ["none", "mq-deadline"]
repeats = 2
seeds = [7, 8]

[queue]
read_ahead_kb = [128, 4096]

[iosched.mq-deadline]
read_expire = [100, 500]
fifo_batch = 16
""" + MINIMAL
    s = scenario.load(write(tmp_path, text))
    cells = s.cells()
    # none: 2 (queue) x 2 seeds x 2 repeats; mq-deadline: x2 read_expire
    assert len(cells) == 8 + 16
    ids = [c.id for c in cells]
    assert len(set(ids)) == len(ids)
    c = [c for c in cells if c.scheduler == "mq-deadline"][0]
    assert c.id == "d0.mq-deadline.read_ahead_kb=128.read_expire=100.fifo_batch=16.seed=7.r0"
    assert c.tunables() == [("read_ahead_kb", "128"), ("iosched/read_expire", "100"),
                            ("iosched/fifo_batch", "16")]
    assert {c.seed for c in cells} == {7, 8}


def test_device_queue_replaces_the_scenario_axis_for_that_device(tmp_path):
    text = """
[scenario]
schedulers = ["none"]

[queue]
read_ahead_kb = [128, 4096]
nr_requests = 64

[[device]]
name = "ssd"
kind = "nvme"
profile = "zero-latency"

[[device]]
name = "hdd"
kind = "ide-hd"
profile = "zero-latency"
queue = {read_ahead_kb = 1024, max_sectors_kb = [64, 256]}

[[job]]
name = "j"
rw = "randread"
"""
    s = scenario.load(write(tmp_path, text))
    by_device: dict[str, list] = {}
    for c in s.cells():
        by_device.setdefault(c.device.name, []).append(c)
    assert [c.queue for c in by_device["ssd"]] == [
        (("read_ahead_kb", "128"), ("nr_requests", "64")),
        (("read_ahead_kb", "4096"), ("nr_requests", "64"))]
    # the device's read_ahead_kb replaces the axis in place; its new key comes after
    assert [c.queue for c in by_device["hdd"]] == [
        (("read_ahead_kb", "1024"), ("nr_requests", "64"), ("max_sectors_kb", "64")),
        (("read_ahead_kb", "1024"), ("nr_requests", "64"), ("max_sectors_kb", "256"))]
    assert by_device["hdd"][1].id == "hdd.none.read_ahead_kb=1024.nr_requests=64.max_sectors_kb=256.r0"


def test_short_form_checks_expectation_tunables_against_the_device_queue(tmp_path):
    text = """
[scenario]
schedulers = ["none"]

[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
queue = {nr_requests = [64, 256]}

[[job]]
name = "j"
rw = "randread"

[[expect]]
what = "x"
metric = "iops"
device = "d0"
left = {tunables = {nr_requests = 256}}
right = {tunables = {nr_requests = 64}}
op = ">"
source = "block/blk-mq.c: blk_mq_update_nr_requests"
"""
    s = scenario.load(write(tmp_path, text + "[short]\nrepeats = 1\n"), short=True)
    assert len(s.expectations) == 1
    bad = text.replace("queue = {nr_requests = [64, 256]}", "queue = {nr_requests = 64}")
    with pytest.raises(ScenarioError) as e:
        scenario.load(write(tmp_path, bad + "[short]\nrepeats = 1\n", "b.toml"), short=True)
    assert e.value.key == "expect[0].left.tunables.nr_requests"


def test_job_args_render_fio_style(tmp_path):
    text = MINIMAL.replace('rw = "randread"', 'rw = "randread"\nbs = "4k"\niodepth = 32\n'
                           'direct = true\ntime_based = false')
    s = scenario.load(write(tmp_path, text))
    assert s.jobs[0].args() == ["--name=j", "--rw=randread", "--bs=4k", "--iodepth=32",
                                "--direct=1", "--time_based=0"]


# (scenario text, key named in the message, words the message must hold)
BAD = [
    ("", None, "is empty"),
    ("[[device]\n", None, "is not valid TOML"),
    ("bogus = 1\n" + MINIMAL, "bogus", "unknown key"),
    ("[scenario]\nmode = \"fast\"\n" + MINIMAL, "scenario.mode",
     "'fast' is not one of: deterministic, realtime"),
    ("[scenario]\nschedulers = [\"cfq\"]\n" + MINIMAL, "scenario.schedulers",
     "removed in Linux 5.0"),
    ("[scenario]\nschedulers = [\"noop\"]\n" + MINIMAL, "scenario.schedulers",
     "'noop' is not one of: none, mq-deadline, kyber, bfq"),
    ("[scenario]\nschedulers = []\n" + MINIMAL, "scenario.schedulers", "at least one"),
    ("[scenario]\nrepeats = 0\n" + MINIMAL, "scenario.repeats", "between 1 and 1000"),
    ("[scenario]\nrepeats = \"3\"\n" + MINIMAL, "scenario.repeats", "must be an integer"),
    ("[scenario]\nrepeats = true\n" + MINIMAL, "scenario.repeats", "not a boolean"),
    ("[scenario]\nseeds = [-1]\n" + MINIMAL, "scenario.seeds", "integers in [0, 2^32)"),
    ("[scenario]\ntimeout_s = 1\n" + MINIMAL, "scenario.timeout_s", "between 10 and"),
    ("[scenario]\nspeed = 1\n" + MINIMAL, "scenario.speed", "unknown key"),
    ("[guest]\nvcpus = 0\n" + MINIMAL, "guest.vcpus", "between 1 and 64"),
    ("[guest]\nkernel = \"686\"\n" + MINIMAL, "guest.kernel",
     "not one of: 6.12-amd64, 6.12-cloud-amd64, 6.12-rt-amd64, 6.1-amd64"),
    ("[guest]\nmemory_mib = 16\n" + MINIMAL, "guest.memory_mib", "between 256 and"),
    ("[guest]\ncpu_rate = 0.1\n" + MINIMAL, "guest.cpu_rate",
     "must be between 0.25 and 32 instructions per ns per vCPU, got 0.1"),
    ("[guest]\ncpu_rate = 33\n" + MINIMAL, "guest.cpu_rate", "between 0.25 and 32"),
    ("[guest]\ncpu_rate = 1.0000001\n" + MINIMAL, "guest.cpu_rate",
     "1.0000001 has more than 6 digits after the point"),
    ("[guest]\ncpu_rate = \"2\"\n" + MINIMAL, "guest.cpu_rate", "not a string"),
    ("[guest]\ncpu_rate = true\n" + MINIMAL, "guest.cpu_rate", "not a boolean"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\ncpu_rate = 2\n" + MINIMAL, "guest.cpu_rate",
     "sets the instruction rate of deterministic mode (icount); in realtime mode"),
    ("[guest]\nvcpu_clocks = \"own\"\n" + MINIMAL, "guest.vcpu_clocks",
     "'own' is not one of: shared, parallel"),
    ("[guest]\nvcpu_clocks = \"parallel\"\nvcpu_quantum_ns = 1000001\n" + MINIMAL,
     "guest.vcpu_quantum_ns", "must be between 1 and 1000000, got 1000001"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\nvcpu_quantum_ns = 100\n" + MINIMAL,
     "guest.vcpu_quantum_ns", "bounds the vCPUs' turns in deterministic mode"),
    ("[guest]\npause_ns = 10001\n" + MINIMAL,
     "guest.pause_ns", "must be between 0 and 10000, got 10001"),
    ("[guest]\npause_ns = -1\n" + MINIMAL, "guest.pause_ns", "must be between 0 and 10000, got -1"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\npause_ns = 40\n" + MINIMAL,
     "guest.pause_ns", "sets the time a PAUSE takes in deterministic mode"),
    ("[guest]\ncpu = \"pentium\"\n" + MINIMAL, "guest.cpu",
     "'pentium' is not one of: icelake-sp-axboe2020, xeon-silver-4210r"),
    ("[guest]\nirq_ns = 1000001\n" + MINIMAL, "guest.irq_ns",
     "must be between 0 and 1000000, got 1000001"),
    ("[guest]\nsyscall_ns = -5\n" + MINIMAL, "guest.syscall_ns", "must be between 0 and 1000000"),
    ("[guest]\nwake_ns = 1.5\n" + MINIMAL, "guest.wake_ns",
     "must be a whole number of ns between 0 and 1000000, got 1.5"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\ncpu = \"xeon-silver-4210r\"\n" + MINIMAL,
     "guest.cpu", "names the CPU deterministic mode's vCPUs follow"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\nirq_ns = 300\n" + MINIMAL,
     "guest.irq_ns", "sets the time an interrupt takes in deterministic mode"),
    ("[scenario]\nmode = \"realtime\"\n[guest]\nvcpu_clocks = \"shared\"\n" + MINIMAL,
     "guest.vcpu_clocks", "in realtime mode each vCPU is a host thread"),
    ("guest = 3\n" + MINIMAL, "guest", "must be a table"),
    ("[[job]]\nname = \"j\"\n", "device", "at least one [[device]] is required"),
    ("[[device]]\nname = \"d0\"\nkind = \"nvme\"\n", "job", "at least one [[job]]"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "scsi"'), "device[0].kind",
     "'scsi' is not one of: nvme, ide-hd, ahci-hd"),
    (MINIMAL.replace('kind = "nvme"', ''), "device[0].kind", "is required"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nrotation_rate = 7200'),
     "device[0].rotation_rate", "ide-hd and ahci-hd devices only"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "ide-hd"\nrotation_rate = 70000'),
     "device[0].rotation_rate", "between 1 and 65534"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nsize_gib = 0'), "device[0].size_gib",
     "must be above 0"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nbacking = "ram"'), "device[0].backing",
     "'ram' is not one of: null, file"),
    (MINIMAL.replace('name = "d0"', 'name = "a b"'), "device[0].name", "must be 1-64"),
    (MINIMAL + '[[device]]\nname = "d0"\nkind = "nvme"\n', "device", "two devices are named"),
    (MINIMAL.replace('rw = "randread"', 'filename = "/dev/sda"'), "job[0].filename",
     "set by blklab"),
    (MINIMAL.replace('rw = "randread"', 'rw = ["read"]'), "job[0].rw",
     "must be a string, number or boolean"),
    (MINIMAL.replace('name = "j"', ''), "job[0].name", "is required"),
    ("[queue]\nscheduler = \"bfq\"\n" + MINIMAL, "queue.scheduler", "scenario.schedulers"),
    ("[queue]\nnr_requests = []\n" + MINIMAL, "queue.nr_requests", "empty list"),
    ("[queue]\nnr_requests = [64, 64]\n" + MINIMAL, "queue.nr_requests", "same value twice"),
    ("[queue]\nNR = 1\n" + MINIMAL, "queue.NR", "not a sysfs attribute name"),
    ("[scenario]\nworkload = \"fio\"\n" + MINIMAL.replace('rw = "randread"', 'cgroup_bfq_weight = 100'),
     "job[0].cgroup_bfq_weight", "is blkgen's own option"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nqueue = 3'), "device[0].queue",
     "must be a table"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nqueue = {scheduler = "bfq"}'),
     "device[0].queue.scheduler", "scenario.schedulers"),
    (MINIMAL.replace('kind = "nvme"', 'kind = "nvme"\nqueue = {nr_requests = []}'),
     "device[0].queue.nr_requests", "empty list"),
    ("[queue]\nnr_requests = 1.5\n" + MINIMAL, "queue.nr_requests", "must be an integer"),
    ("[scenario]\nschedulers = [\"none\"]\n[iosched.kyber]\nread_lat_nsec = 1\n" + MINIMAL,
     "iosched.kyber", "not in scenario.schedulers"),
    ("[iosched.none]\nx = 1\n" + MINIMAL, "iosched.none", "no iosched attributes"),
    ("[iosched]\nkyber = 1\n" + MINIMAL, "iosched.kyber", "must be a table"),
]


@pytest.mark.parametrize("text,key,words", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_scenarios(tmp_path, text, key, words):
    p = write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        scenario.load(p)
    assert e.value.path == str(p)
    assert e.value.key == key
    assert words in e.value.message
    assert str(e.value).startswith(str(p))


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="no such scenario file"):
        scenario.load(tmp_path / "nope.toml")


def test_binary_garbage(tmp_path):
    p = tmp_path / "g.toml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ScenarioError, match="not UTF-8"):
        scenario.load(p)
