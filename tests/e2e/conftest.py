"""End-to-end tests: the real patched QEMU, the real guest image, real VMs.

They need `make qemu image` (make test builds both first)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(REPO / "harness"))

from blklab import kernels  # noqa: E402
from blklab.diverge import cells_of  # noqa: E402,F401 (the tests import it from here)

# The kernel a scenario gets without [guest] kernel, and its image.
DEFAULT_KERNEL = f"{kernels.default_series()}-amd64"
DEFAULT_IMAGE = REPO / "build" / "images" / DEFAULT_KERNEL


def run_blklab(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    return subprocess.run([PYTHON, "-m", "blklab", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO)


# make test-e2e runs these tests on pytest-xdist workers (--dist loadgroup).
# A test stays on one worker with the rest of its module, whose module- and
# session-scoped fixtures (each a run of VMs) then run once; modules sharing
# a session fixture share a group, and a test that names its own xdist_group
# (each scenario's short form) is scheduled alone. Workers take groups in
# order, so the longest go first and no long one is left to run by itself
# at the end.
SHARED_GROUPS = {"test_report.py": "test_spine.py"}  # four_schedulers
LONGEST_FIRST = [  # by the two-worker run's --durations (and cells added since)
    "test_apps.py",  # two 400 s application cells and three short ones
    "test_app_jobs.py",  # one application cell: sysbench and pgbench
    "test_mysql_app.py",  # one application cell: sysbench on the gp3 volume
    "test_vcpu_clocks.py", "test_determinism.py", "test_spine.py", "test_backends.py",
    "test_snapshot.py",
    "hdd-sorting-nr-requests", "ssd-gc-tail", "read-vs-background-writes",
    "hdd-ncq-vs-sorting", "multi-tenant-bfq", "test_flavours.py", "test_faults.py",
    "guest-cpu", "optane-class", "test_integrity.py", "cloud-mysql-incident-as-run",
    "mq-deadline-tuning",
    "test_customer_inputs.py", "test_cpu_rate.py", "kernel-generations-batched",
    "cloud-mysql-incident", "ai-inference"]


def pytest_configure(config):
    # Registered here too, so that a run without xdist (-p no:xdist) knows it.
    config.addinivalue_line("markers", "xdist_group(name): run with the group's other tests")
    config.addinivalue_line("markers", "long_short_form: a scenario's short form that make "
                            "test leaves to make test-short-forms (test_scenarios.py)")


def xdist_group(item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark:
        return mark.args[0] if mark.args else mark.kwargs["name"]
    return SHARED_GROUPS.get(item.path.name, item.path.name)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(xdist_group(item)))
    rank = {g: i for i, g in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(xdist_group(item), len(rank)))  # stable


@pytest.fixture(scope="session")
def built():
    for p in (REPO / "build/qemu/bin/qemu-system-x86_64", DEFAULT_IMAGE / "image.json"):
        if not p.exists():
            pytest.fail(f"{p} missing: run 'make qemu image' first")
    return REPO


@pytest.fixture(scope="session")
def apps_built(built):
    """The build, with the applications' root ([guest] apps) built too."""
    if not (REPO / "build" / "apps" / "apps.json").exists():
        pytest.fail("build/apps missing: run 'make apps' first")
    return REPO


def device(name: str, kind: str, profile: str | None = None, size_gib: int | None = None,
           seed: int | None = None) -> str:
    """A null-backed device, as scenario text; the keys given are set."""
    text = f'\n[[device]]\nname = "{name}"\nkind = "{kind}"\nbacking = "null"\n'
    if profile:
        text += f'profile = "{profile}"\n'
    if size_gib is not None:
        text += f"size_gib = {size_gib}\n"
    if seed is not None:
        text += f"seed = {seed}\n"
    return text


def nvme(size_gib: int = 1, profile: str | None = None) -> str:
    """A null-backed NVMe device named nvme0, as scenario text; with a
    device profile if given."""
    return device("nvme0", "nvme", profile, size_gib)


def job(name: str, rw: str, runtime: str, iodepth: int = 8, ioengine: str = "io_uring",
        rwmixread: int | None = None) -> str:
    """A time-based 4 KiB job with O_DIRECT, as scenario text."""
    mix = f"rwmixread = {rwmixread}\n" if rwmixread is not None else ""
    return (f'\n[[job]]\nname = "{name}"\nrw = "{rw}"\n{mix}bs = "4k"\n'
            f'iodepth = {iodepth}\nioengine = "{ioengine}"\ndirect = true\n'
            f'runtime = "{runtime}"\ntime_based = true\n')


def randread(runtime: str, iodepth: int = 8, name: str = "r") -> str:
    """A 4 KiB random-read job over io_uring with O_DIRECT, as scenario text."""
    return job(name, "randread", runtime, iodepth)


def mixed(runtime: str, iodepth: int = 8, ioengine: str = "io_uring") -> str:
    """The 70% read random mix the determinism tests run, as scenario text."""
    return job("mixed", "randrw", runtime, iodepth, ioengine, rwmixread=70)


# Every process the tests start inherits this, and so does every QEMU they
# run: a test finds its own QEMUs by it, not those of the other xdist worker.
os.environ["BLKLAB_E2E_WORKER"] = str(os.getpid())


def qemu_pids(marker: str = "") -> list[int]:
    """This test process's QEMUs (run by it or by a blklab it started, or
    left behind by one) whose command line contains `marker`."""
    token = f"BLKLAB_E2E_WORKER={os.getpid()}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            if "qemu-system" not in cmd or marker not in cmd:
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if token in env:
            pids.append(int(proc.name))
    return pids


def dispatches(cell_dir: Path) -> tuple[int, int, dict[str, int]]:
    """A traced cell's requests queued (Q), plugs (P) and dispatches (D) by
    process, as `blklab report --markdown` counts them from blkparse."""
    from blklab import blktrace

    d = blktrace.dispatches(cell_dir / "blktrace.bin")
    return d.queued, d.plugs, d.by


def check_queue_listing(cell: dict) -> None:
    """Every queue/ attribute the cell's guest read back is one that
    validation checks [queue] keys against: kernels.queue_attributes for its
    series, device kind and image config. The guest reads a fixed set:
    listing all of queue/ in every cell would change the guest init, and
    with it every deterministic cell's timeline."""
    from blklab import paths

    kernel = kernels.resolve(cell["request"]["kernel"])
    kind = cell["request"]["device"]["kind"]
    config = kernels.read_config(paths.image_dir(kernel.id) / "config")
    listed = kernels.queue_attributes(kernel.series, kind, config)
    read = set(cell["in_effect"]["queue"]) - {"nr_hw_queues", "size_sectors"}  # not files
    assert read and read <= set(listed), (kernel.id, kind, read - set(listed))
    assert all(listed[a] for a in ("nr_requests", "read_ahead_kb", "wbt_lat_usec"))


# Per kernel series, whether a lone io_uring submission (blkgen's one SQE
# per io_uring_enter) is plugged, and so who dispatches it under an
# elevator (docs/labs/12-the-kernel-upgrade.md): 5.10's io_uring plugs every
# submission; 5.11 (27926b683db0) plugs only when more than two SQEs are
# submitted at once, so on 6.1 blk_mq_submit_bio() leaves the request to an
# asynchronous run of the hardware queue, a kblockd worker; 6.10
# (060406c61c7c) plugs every bio in __submit_bio(). Unplugged, a request
# without an elevator is still issued directly by the submitting thread.
LONE_SUBMISSION_PLUGGED = {"5.10": True, "6.1": False, "6.12": True}


def check_pvh_boot(cell: dict, run_dir: Path, image_dir: Path) -> None:
    """The cell booted its image's kernel ELF (through the PVH entry) and
    the kernel used its initrd where QEMU put it: with an initrd that is not
    whole pages, the NVMe cells' kernels copied it away first ("Move
    RAMDISK", blklab.vm.guest_initrd)."""
    cmd = cell["host"]["qemu_cmdline"]
    assert cmd[cmd.index("-kernel") + 1] == str(image_dir / "vmlinux"), cmd
    console = (run_dir / cell["files"]["console_log"]).read_text(errors="replace")
    assert "RAMDISK: [mem " in console, cell["cell_id"]
    assert "Move RAMDISK" not in console, cell["cell_id"]


def check_dispatcher(cell: dict, cell_dir: Path, series: str) -> None:
    """The traced cell's plugs and dispatchers are what
    LONE_SUBMISSION_PLUGGED says of its kernel series."""
    queued, plugged, by = dispatches(cell_dir)
    plug = LONE_SUBMISSION_PLUGGED[series]
    elevator = cell["request"]["scheduler"] != "none"
    who = "kworker" if elevator and not plug else "blkgen"
    assert queued > 0
    assert (plugged, by) == (queued if plug else 0, {who: queued}), \
        (series, cell["cell_id"], queued, plugged, by)


SPINE_DEVICES = nvme(4) + """
[[device]]
name = "hdd0"
kind = "ide-hd"
backing = "file"
size_gib = 4
rotation_rate = 7200
queue = {read_ahead_kb = 256}
"""

SPINE_JOB = randread("2s", iodepth=32, name="randread")


@pytest.fixture(scope="session")
def four_schedulers(built, tmp_path_factory):
    """The four schedulers on NVMe and on an IDE hard disk, 2-second jobs."""
    tmp = tmp_path_factory.mktemp("spine")
    scenario = tmp / "spine.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\ntimeout_s = 300\n' + SPINE_DEVICES
                        + SPINE_JOB)
    out = tmp / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    return proc, out
