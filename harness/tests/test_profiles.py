"""Device profiles in scenarios: lookup, the facts devmodel-info reads from
them, the properties they give QEMU, and the errors for bad ones."""

import dataclasses
from pathlib import Path

import pytest

from blklab import scenario
from blklab.errors import ScenarioError
from blklab.vm import DISK_ID, VMConfig

JOB = """
[[job]]
name = "j"
rw = "randread"
"""


def load(tmp_path: Path, device: str, mode: str = "deterministic") -> scenario.Scenario:
    p = tmp_path / "s.toml"
    p.write_text(f'[scenario]\nmode = "{mode}"\n[[device]]\nname = "d0"\n' + device + JOB)
    return scenario.load(p)


def error(tmp_path: Path, device: str) -> str:
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, device)
    return str(e.value)


def test_named_profile_sizes_the_device_from_its_capacity(tmp_path):
    d = load(tmp_path, 'kind = "nvme"\nprofile = "samsung-970evoplus-1t"\n').devices[0]
    assert d.profile.name == "samsung-970evoplus-1t"
    assert d.profile.path == str(scenario.PROFILE_DIR / "samsung-970evoplus-1t.toml")
    assert d.profile.capacity_bytes == 1000204886016
    assert d.size_bytes == 1000204886016 // 4096 * 4096
    assert d.profile.rotation_rate == 1
    assert len(d.profile.sha256) == 64


def test_hdd_profile_gives_its_rpm_to_ide_hd(tmp_path):
    d = load(tmp_path, 'kind = "ide-hd"\nprofile = "hdd-5400-laptop-1t"\nsize_gib = 16\n'
             ).devices[0]
    assert d.size_bytes == 16 << 30
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk", profile_path=tmp_path / "p.toml",
                   devmodel_seed=7)
    args = " ".join(cfg.cmdline())
    assert (f"ide-hd,id={DISK_ID},drive=disk0,serial=blklab-d0,devmodel-profile="
            f"{tmp_path}/p.toml,devmodel-seed=7,rotation_rate=5400,bus=ide.0") in args


def test_state_cache_reaches_the_model_and_not_the_snapshot_key(tmp_path):
    from blklab import snapshot
    d = load(tmp_path, 'kind = "nvme"\nprofile = "tlc-250g-used"\n').devices[0]
    cfg = VMConfig(qemu=tmp_path / "q", kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk", profile_path=tmp_path / "p.toml",
                   devmodel_seed=7)
    (tmp_path / "q").write_bytes(b"a QEMU")
    assert "devmodel-state-cache" not in " ".join(cfg.cmdline())
    cached = dataclasses.replace(cfg, devmodel_state_cache=tmp_path / "state")
    assert f",devmodel-state-cache={tmp_path}/state" in " ".join(cached.cmdline())
    # The model opens afresh at the job point: where it keeps its state is
    # not part of the guest saved there.
    assert snapshot.key_of(snapshot.inputs_of(cached, "img", fio=False)) == \
        snapshot.key_of(snapshot.inputs_of(cfg, "img", fio=False))


def test_user_rotation_rate_wins_over_the_profile(tmp_path):
    d = load(tmp_path, 'kind = "ahci-hd"\nprofile = "hdd-7200-desktop-1t"\n'
             'rotation_rate = 1\nncq_depth = 8\n').devices[0]
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk", profile_path=tmp_path / "p.toml")
    props = dict((n, v) for n, _, v in cfg.device_properties())
    assert props["rotation_rate"] == "1"
    assert props["ncq-depth"] == "8"


def test_nvme_queue_size(tmp_path):
    d = load(tmp_path, 'kind = "nvme"\nmqes = 31\n', mode="realtime").devices[0]
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk")
    assert ",mqes=31" in " ".join(cfg.cmdline())
    assert d.profile is None and "devmodel" not in " ".join(cfg.cmdline())


def nvme_front(args: list[str]) -> str:
    """The NVMe controller's -device value among QEMU's arguments."""
    (front,) = [a for a in args if a.startswith(f"nvme,id={DISK_ID},")]
    return front


@pytest.mark.parametrize("device, dbcs", [
    ('profile = "zero-latency"\n', "off"),  # a model-timed drive
    ("", "off"),  # no model (realtime): one guest path for every NVMe cell
    ('profile = "zero-latency"\nshadow_doorbells = false\n', "off"),
    ('profile = "zero-latency"\nshadow_doorbells = true\n', "on"),
])
def test_nvme_offers_shadow_doorbells_only_when_asked_on_both_backends(tmp_path, device, dbcs):
    """QEMU's NVMe offers Doorbell Buffer Config unless dbcs=off; blklab's
    does not unless the device asks (vm.VMConfig.device_properties says
    why). The libvirt backend passes the same -device through its QEMU
    namespace."""
    import xml.etree.ElementTree as ET

    from blklab.libvirt_vm import QEMU_NS, domain_xml

    modelled = "profile" in device
    d = load(tmp_path, 'kind = "nvme"\n' + device,
             mode="deterministic" if modelled else "realtime").devices[0]
    assert d.shadow_doorbells is (dbcs == "on")
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk",
                   profile_path=tmp_path / "p.toml" if modelled else None)
    front = nvme_front(cfg.cmdline())
    assert front.count(",dbcs=") == 1 and f",dbcs={dbcs}" in front, front
    args = [a.get("value") for a in ET.fromstring(domain_xml(cfg, "blklab-x"))
            .iter(f"{{{QEMU_NS}}}arg")]
    assert nvme_front(args) == front


@pytest.mark.parametrize("kind", ["ide-hd", "ahci-hd", "virtio-blk"])
def test_other_front_ends_have_no_doorbell_buffer_property(tmp_path, kind):
    d = load(tmp_path, f'kind = "{kind}"\nprofile = "zero-latency"\n').devices[0]
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk", profile_path=tmp_path / "p.toml")
    assert "dbcs" not in dict((n, v) for n, _, v in cfg.device_properties())
    assert not d.shadow_doorbells


def test_virtio_blk_queues_and_model(tmp_path):
    d = load(tmp_path, 'kind = "virtio-blk"\nprofile = "aws-gp3-100g"\n'
             'num_queues = 2\nqueue_depth = 32\n').devices[0]
    cfg = VMConfig(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                   device=d, backing_path=tmp_path / "disk", profile_path=tmp_path / "p.toml")
    line = " ".join(cfg.cmdline())
    assert "-device virtio-blk-pci,id=" in line and ",ioeventfd=off," in line
    props = dict((n, v) for n, _, v in cfg.device_properties())
    assert props["num-queues"] == "2" and "queue-size" not in props
    assert "virtio_blk.queue_depth=32" in cfg.kernel_append()
    assert "rotation_rate" not in props and "devmodel-profile" in props


def test_profile_path_relative_to_the_scenario(tmp_path):
    (tmp_path / "mine.toml").write_text(
        (scenario.PROFILE_DIR / "zero-latency.toml").read_text())
    d = load(tmp_path, 'kind = "nvme"\nprofile = "mine.toml"\nseed = 99\n').devices[0]
    assert d.profile.path == str(tmp_path / "mine.toml")
    assert d.profile.capacity_bytes == 64 << 30
    assert d.seed == 99


def test_unknown_profile_lists_the_known_ones(tmp_path):
    msg = error(tmp_path, 'kind = "nvme"\nprofile = "no-such-drive"\n')
    assert msg.startswith(f"{tmp_path}/s.toml: device[0].profile: 'no-such-drive': cannot read ")
    assert "No such file or directory" in msg
    assert "samsung-970evoplus-1t" in msg and "zero-latency" in msg


def test_profile_that_does_not_load_names_its_file_and_key(tmp_path):
    (tmp_path / "bad.toml").write_text('[device]\nmodel = "zero"\nname = "x"\n\n[zero]\n'
                                       'capacity_bytes = "big"\nlogical_block_bytes = 512\n'
                                       'latency_us = 0.0\n')
    msg = error(tmp_path, 'kind = "nvme"\nprofile = "bad.toml"\n')
    assert msg.startswith(f"{tmp_path}/s.toml: device[0].profile: 'bad.toml' does not load: "
                          f"{tmp_path}/bad.toml:")
    assert "capacity_bytes" in msg


@pytest.mark.parametrize("device, key, message", [
    ('kind = "nvme"\nprofile = "zero-latency"\nsize_gib = 65\n', "size_gib",
     "65 GiB is more than profile 'zero-latency' holds (68719476736 bytes)"),
    ('kind = "nvme"\nseed = 3\n', "seed", "seeds the device model and needs a profile"),
    ('kind = "ide-hd"\nmqes = 63\n', "mqes", "applies to nvme devices only"),
    ('kind = "nvme"\nmqes = 0\n', "mqes", "must be between 1 and 65535, got 0"),
    ('kind = "ahci-hd"\nshadow_doorbells = true\n', "shadow_doorbells",
     "applies to nvme devices only"),
    ('kind = "nvme"\nshadow_doorbells = "yes"\n', "shadow_doorbells",
     "must be a boolean, not a string"),
    ('kind = "nvme"\nshadow_doorbells = 1\n', "shadow_doorbells",
     "must be a boolean, not an integer"),
    ('kind = "ide-hd"\nncq_depth = 4\n', "ncq_depth", "applies to ahci-hd devices only"),
    ('kind = "ahci-hd"\nncq_depth = 33\n', "ncq_depth", "must be between 1 and 32, got 33"),
    ('kind = "virtio-blk"\nnum_queues = 0\n', "num_queues", "must be between 1 and 1024, got 0"),
    ('kind = "virtio-blk"\nqueue_depth = 2000\n', "queue_depth",
     "must be between 1 and 1024, got 2000"),
    ('kind = "ahci-hd"\nqueue_depth = 64\n', "queue_depth", "applies to virtio-blk devices only"),
    ('kind = "virtio-blk"\nqueue_size = 2048\n', "queue_size", "must be between 4 and 1024, got 2048"),
    ('kind = "virtio-blk"\nqueue_size = 96\n', "queue_size", "96 is not a power of two"),
    ('kind = "nvme"\nprofile = "../x y"\n', "profile", "cannot read"),
    ('kind = "nvme"\nprofile = 5\n', "profile", "must be a string, not an integer"),
])
def test_device_key_errors(tmp_path, device, key, message):
    msg = error(tmp_path, device)
    assert msg.startswith(f"{tmp_path}/s.toml: device[0].{key}: ")
    assert message in msg


def test_a_run_read_back_needs_no_profile_file(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('[[device]]\nname = "d0"\nkind = "nvme"\nprofile = "gone.toml"\n' + JOB)
    d = scenario.load(p, check_profiles=False).devices[0]
    assert d.profile.name == "gone.toml"


def test_precondition_replaces_the_profiles_ssd_state(tmp_path):
    base = load(tmp_path, 'kind = "nvme"\nprofile = "samsung-970evoplus-1t"\n').devices[0]
    d = load(tmp_path, 'kind = "nvme"\nprofile = "samsung-970evoplus-1t"\n'
             'precondition = "full"\n').devices[0]
    assert base.profile.precondition == "" and d.profile.precondition == "full"
    assert d.profile.sha256 != base.profile.sha256
    import hashlib
    assert d.profile.sha256 == hashlib.sha256(d.profile.text.encode()).hexdigest()
    lines = d.profile.text.splitlines()
    # one precondition line, first in [ssd]; every other line as the profile has it
    assert [x for x in lines if x.startswith("precondition =")] == [
        'precondition = "full"  # set by the scenario\'s [[device]]']
    assert lines[lines.index("[ssd]") + 1].startswith('precondition = "full"')
    assert [x for x in lines if not x.startswith("precondition =")] == [
        x for x in base.profile.text.splitlines() if not x.startswith("precondition =")]
    assert d.profile.capacity_bytes == base.profile.capacity_bytes


def test_precondition_text_when_the_profile_omits_the_key():
    text = '[device]\nmodel = "ssd"\n\n[ssd] # the drive\ncapacity_bytes = 1\n'
    out = scenario.profile_with_precondition(text, "steady")
    assert out == ('[device]\nmodel = "ssd"\n\n[ssd] # the drive\nprecondition = "steady"'
                   '  # set by the scenario\'s [[device]]\ncapacity_bytes = 1\n')
    # a key of that name in another table stays; no [ssd] table: None
    assert scenario.profile_with_precondition('[hdd]\nprecondition = 1\n', "full") is None


def test_precondition_errors_name_the_key_and_what_is_allowed(tmp_path):
    msg = error(tmp_path, 'kind = "nvme"\nprofile = "samsung-970evoplus-1t"\n'
                'precondition = "aged"\n')
    assert "device[0].precondition" in msg and "none, full, steady" in msg
    msg = error(tmp_path, 'kind = "ide-hd"\nprofile = "hdd-7200-desktop-1t"\n'
                'precondition = "full"\n')
    assert "device[0].precondition" in msg and "SSD profiles only" in msg and "model = \"hdd\"" in msg
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, 'kind = "nvme"\nprecondition = "full"\n', mode="realtime")
    assert "device[0].precondition" in str(e.value) and "needs an SSD profile" in str(e.value)
