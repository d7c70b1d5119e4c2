"""A scenario that asks of its guest kernel what the kernel lacks (a device
kind without a driver, a scheduler or a cgroup control left out of its
config) is rejected at validation, from the image's own record (image.json
and config, written by guest-images/build-image.sh). [guest] kernel names a
kernel of guest-images/kernels.lock."""

import json
from pathlib import Path

import pytest

from blklab import kernels, scenario
from blklab.errors import ScenarioError

# What build-image.sh writes for Debian's cloud-amd64 6.1 kernel, which is
# built without CONFIG_SATA_AHCI (the image's other keys are not read here).
CLOUD_IMAGE = {
    "flavour": "cloud-amd64",
    "kernel_package": "linux-image-6.1.0-57-cloud-amd64",
    "kernel_package_version": "6.1.192-3",
    "kernel_release": "6.1.0-57-cloud-amd64",
    "drivers": {
        "nvme": {"state": "builtin", "config": "CONFIG_BLK_DEV_NVME=y"},
        "ata_piix": {"state": "module", "config": "CONFIG_ATA_PIIX=m"},
        "sd_mod": {"state": "module", "config": "CONFIG_BLK_DEV_SD=m"},
        "ahci": {"state": "missing", "config": "CONFIG_SATA_AHCI is not set"},
    },
    "device_kinds": {
        "nvme": {"drivers": ["nvme"], "missing": []},
        "ide-hd": {"drivers": ["ata_piix", "sd_mod"], "missing": []},
        "ahci-hd": {"drivers": ["ahci", "sd_mod"], "missing": ["ahci"]},
    },
}


# Lines of a kernel config as Debian's packages write them; the test
# changes one at a time.
CONFIG = """CONFIG_MQ_IOSCHED_DEADLINE=y
CONFIG_MQ_IOSCHED_KYBER=m
CONFIG_IOSCHED_BFQ=m
CONFIG_BFQ_GROUP_IOSCHED=y
CONFIG_BLK_DEV_THROTTLING=y
CONFIG_BLK_CGROUP_IOCOST=y
# CONFIG_BLK_CGROUP_IOLATENCY is not set
"""


def devices(*kinds: str) -> str:
    return "".join(f'[[device]]\nname = "d{i}"\nkind = "{k}"\nbacking = "null"\n'
                   for i, k in enumerate(kinds))


def write_scenario(tmp_path: Path, kernel: str, *kinds: str, schedulers=None,
                   job_extra: str = "") -> Path:
    p = tmp_path / "s.toml"
    scheds = "" if schedulers is None else \
        "schedulers = [" + ", ".join(f'"{x}"' for x in schedulers) + "]\n"
    p.write_text(f'[scenario]\nmode = "realtime"\n{scheds}[guest]\nkernel = "{kernel}"\n'
                 + devices(*kinds) + '[[job]]\nname = "j"\nrw = "randread"\n' + job_extra)
    return p


def image_name(flavour: str) -> str:
    return f"{kernels.default_series()}-{flavour}"


@pytest.fixture
def build(tmp_path, monkeypatch):
    """A build directory holding a cloud-amd64 image record of the default
    series and nothing else."""
    d = tmp_path / "build"
    image = d / "images" / image_name("cloud-amd64")
    image.mkdir(parents=True)
    (image / "image.json").write_text(json.dumps(CLOUD_IMAGE))
    (image / "config").write_text(CONFIG)
    monkeypatch.setenv("BLKLAB_BUILD", str(d))
    return d


def test_kind_without_a_driver_is_rejected_with_file_key_and_allowed(build, tmp_path):
    path = write_scenario(tmp_path, "cloud-amd64", "nvme", "ahci-hd")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.path == str(path)
    assert e.value.key == "device[1].kind"
    assert e.value.message == (
        "device 'd1' is kind 'ahci-hd', which cannot run on guest.kernel = \"cloud-amd64\": "
        "linux-image-6.1.0-57-cloud-amd64 6.1.192-3 has no driver ahci "
        "(CONFIG_SATA_AHCI is not set). Allowed with this kernel: nvme, ide-hd; "
        "or choose another guest.kernel")


def test_kinds_with_their_drivers_pass(build, tmp_path):
    s = scenario.load(write_scenario(tmp_path, "cloud-amd64", "nvme", "ide-hd"))
    assert [d.kind for d in s.devices] == ["nvme", "ide-hd"]


def test_no_image_built_leaves_the_check_to_the_run(build, tmp_path):
    # rt-amd64 has no image in this build directory: nothing to check against.
    s = scenario.load(write_scenario(tmp_path, "rt-amd64", "ahci-hd"))
    assert s.guest.flavour == "rt-amd64"
    assert s.guest.kernel == image_name("rt-amd64")


@pytest.mark.parametrize("k", kernels.pinned(), ids=lambda k: k.id)
def test_every_pinned_kernel_is_a_choice(build, tmp_path, k):
    s = scenario.load(write_scenario(tmp_path, k.id, "nvme"))
    assert (s.guest.kernel, s.guest.series, s.guest.flavour) == (k.id, k.series, k.flavour)


def test_an_unpinned_kernel_is_refused_with_the_allowed_ones(build, tmp_path):
    path = write_scenario(tmp_path, "4.19-amd64", "nvme")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.key == "guest.kernel"
    for k in kernels.pinned():
        assert k.id in e.value.message
    assert "'4.19-amd64' is not one of" in e.value.message


@pytest.mark.parametrize("sched", sorted(kernels.SCHEDULER_CONFIG))
def test_a_scheduler_the_config_leaves_out_is_refused(build, tmp_path, sched):
    symbol = kernels.SCHEDULER_CONFIG[sched]
    image = build / "images" / image_name("cloud-amd64")
    (image / "config").write_text(
        CONFIG.replace(f"CONFIG_{symbol}=y", f"# CONFIG_{symbol} is not set")
        .replace(f"CONFIG_{symbol}=m", f"# CONFIG_{symbol} is not set"))
    path = write_scenario(tmp_path, "cloud-amd64", "nvme", schedulers=["none", sched])
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.key == "scenario.schedulers"
    assert f"CONFIG_{symbol} is not set" in e.value.message
    assert e.value.message.startswith(f"'{sched}' is not in guest.kernel = \"cloud-amd64\"")
    # The others stay allowed.
    assert f"Allowed with this kernel: none, " in e.value.message
    assert sched not in e.value.message.split("Allowed with this kernel: ")[1]


@pytest.mark.parametrize("option", sorted(kernels.CGROUP_OPTION_CONFIG))
def test_a_cgroup_control_the_config_leaves_out_is_refused(build, tmp_path, option):
    cgroup_file, symbol = kernels.CGROUP_OPTION_CONFIG[option]
    value = {"cgroup_io_max": "wbps=1048576", "cgroup_io_weight": "100",
             "cgroup_bfq_weight": "100"}[option]
    path = write_scenario(tmp_path, "cloud-amd64", "nvme", schedulers=["bfq"],
                          job_extra=f'{option} = "{value}"\n')
    scenario.load(path)  # every control is in CONFIG
    image = build / "images" / image_name("cloud-amd64")
    (image / "config").write_text(CONFIG.replace(f"CONFIG_{symbol}=y",
                                                 f"# CONFIG_{symbol} is not set"))
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.key == f"job[0].{option}"
    assert cgroup_file in e.value.message and f"CONFIG_{symbol} is not set" in e.value.message


def test_a_run_read_back_is_not_checked(build, tmp_path):
    # Reports of an old run load it without checks against the builds.
    s = scenario.load(write_scenario(tmp_path, "cloud-amd64", "ahci-hd"), check_profiles=False)
    assert s.devices[0].kind == "ahci-hd"


def _with_iosched(tmp_path: Path, kernel: str, sched: str, key: str) -> Path:
    path = write_scenario(tmp_path, kernel, "nvme", schedulers=[sched])
    path.write_text(path.read_text() + f'[iosched.{sched}]\n{key} = ["1"]\n')
    return path


@pytest.mark.parametrize("series", sorted(kernels.IOSCHED_ATTRIBUTES))
@pytest.mark.parametrize("sched", ["mq-deadline", "kyber", "bfq"])
def test_each_attribute_a_series_lists_is_accepted(build, tmp_path, series, sched):
    for key in kernels.IOSCHED_ATTRIBUTES[series][sched]:
        s = scenario.load(_with_iosched(tmp_path, f"{series}-amd64", sched, key))
        assert s.iosched_axes == {sched: {key: ["1"]}}


def test_an_attribute_the_series_lacks_is_refused_with_what_it_has(build, tmp_path):
    path = _with_iosched(tmp_path, "5.10-amd64", "mq-deadline", "async_depth")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert (e.value.path, e.value.key) == (str(path), "iosched.mq-deadline.async_depth")
    assert e.value.message == (
        "mq-deadline in Linux 5.10 (guest.kernel = \"5.10-amd64\") has no attribute "
        "'async_depth' under queue/iosched/; it has: fifo_batch, front_merges, read_expire, "
        "write_expire, writes_starved")
    # The same key is one of 6.1's and 6.12's.
    for series in ("6.1", "6.12"):
        scenario.load(_with_iosched(tmp_path, f"{series}-amd64", "mq-deadline", "async_depth"))


def test_every_pinned_series_has_its_attributes_listed():
    assert {k.series for k in kernels.pinned()} == set(kernels.IOSCHED_ATTRIBUTES)


def _with_queue(tmp_path: Path, kernel: str, kind: str, key: str, on_device=False) -> Path:
    path = write_scenario(tmp_path, kernel, kind)
    text = path.read_text()
    if on_device:  # the device's own [device.queue] table
        text = text.replace("[[job]]", f"queue = {{{key} = 1}}\n[[job]]", 1)
    else:
        text += f"[queue]\n{key} = 1\n"
    path.write_text(text)
    return path


@pytest.mark.parametrize("series", sorted(kernels.QUEUE_ATTRIBUTES))
@pytest.mark.parametrize("kind", ["nvme", "ide-hd", "virtio-blk"])
def test_each_writable_queue_attribute_a_device_lists_is_accepted(build, tmp_path, series, kind):
    listed = kernels.queue_attributes(series, kind, None)
    for key in sorted(n for n, rw in listed.items() if rw and n != "scheduler"):
        s = scenario.load(_with_queue(tmp_path, f"{series}-amd64", kind, key))
        assert s.queue_axes == {key: ["1"]}


def test_a_read_only_queue_attribute_is_refused_with_the_writable_ones(build, tmp_path):
    path = _with_queue(tmp_path, "6.1-amd64", "nvme", "max_hw_sectors_kb", on_device=True)
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert (e.value.path, e.value.key) == (str(path), "device[0].queue.max_hw_sectors_kb")
    assert e.value.message.startswith(
        "queue/max_hw_sectors_kb is read-only in Linux 6.1 (guest.kernel = \"6.1-amd64\") "
        "(mode 0444, block/blk-sysfs.c); writable: add_random, discard_max_bytes, io_poll, ")
    assert "scheduler" not in e.value.message.split("writable: ")[1]


def test_a_queue_attribute_the_series_lacks_is_refused(build, tmp_path):
    path = _with_queue(tmp_path, "6.12-amd64", "nvme", "throttle_sample_time")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.key == "queue.throttle_sample_time"
    assert e.value.message.startswith(
        "Linux 6.12 (guest.kernel = \"6.12-amd64\") has no attribute 'throttle_sample_time' "
        "under queue/; writable: ")
    with pytest.raises(ScenarioError) as e:
        scenario.load(_with_queue(tmp_path, "6.1-amd64", "nvme", "no_such_attribute"))
    assert e.value.key == "queue.no_such_attribute"


def test_a_queue_attribute_its_config_leaves_out_is_refused_naming_the_line(build, tmp_path):
    # The fixture's config does not mention BLK_DEV_THROTTLING_LOW; 6.1 has
    # the attribute only with it (6.12 has it not at all, above).
    image = build / "images" / "6.1-cloud-amd64"
    image.mkdir()
    (image / "image.json").write_text(json.dumps(CLOUD_IMAGE))
    (image / "config").write_text(CONFIG)
    path = _with_queue(tmp_path, "6.1-cloud-amd64", "nvme", "throttle_sample_time")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.message.startswith(
        "Linux 6.1 (guest.kernel = \"6.1-cloud-amd64\") lists it only with "
        "CONFIG_BLK_DEV_THROTTLING_LOW, and its config has CONFIG_BLK_DEV_THROTTLING_LOW "
        "absent from the config; writable: ")
    (image / "config").write_text(CONFIG + "CONFIG_BLK_DEV_THROTTLING_LOW=y\n")
    assert scenario.load(path).queue_axes == {"throttle_sample_time": ["1"]}


def test_io_timeout_is_refused_on_virtio_blk_alone(build, tmp_path):
    path = write_scenario(tmp_path, "6.1-amd64", "nvme", "virtio-blk")
    path.write_text(path.read_text() + "[queue]\nio_timeout = 30000\n")
    with pytest.raises(ScenarioError) as e:
        scenario.load(path)
    assert e.value.key == "queue.io_timeout"
    assert e.value.message.startswith(
        "device 'd1' is kind 'virtio-blk', whose queue/ hides it (queue_attr_visible, "
        "block/blk-sysfs.c); writable: ")
    assert "io_timeout" not in e.value.message.split("writable: ")[1]
    scenario.load(_with_queue(tmp_path, "6.1-amd64", "nvme", "io_timeout"))


def test_every_pinned_series_has_its_queue_attributes_listed():
    assert {k.series for k in kernels.pinned()} == set(kernels.QUEUE_ATTRIBUTES)
