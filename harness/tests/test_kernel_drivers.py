"""A scenario that pairs a guest kernel flavour with a device kind the
flavour has no driver for is rejected at validation, from the image's own
record (image.json, written by guest-images/build-image.sh)."""

import json
from pathlib import Path

import pytest

from blklab import scenario
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


def devices(*kinds: str) -> str:
    return "".join(f'[[device]]\nname = "d{i}"\nkind = "{k}"\nbacking = "null"\n'
                   for i, k in enumerate(kinds))


def write_scenario(tmp_path: Path, kernel: str, *kinds: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(f'[scenario]\nmode = "realtime"\n[guest]\nkernel = "{kernel}"\n'
                 + devices(*kinds) + '[[job]]\nname = "j"\nrw = "randread"\n')
    return p


@pytest.fixture
def build(tmp_path, monkeypatch):
    """A build directory holding a cloud-amd64 image record and nothing else."""
    d = tmp_path / "build"
    (d / "images" / "cloud-amd64").mkdir(parents=True)
    (d / "images" / "cloud-amd64" / "image.json").write_text(json.dumps(CLOUD_IMAGE))
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


def test_a_run_read_back_is_not_checked(build, tmp_path):
    # Reports of an old run load it without checks against the builds.
    s = scenario.load(write_scenario(tmp_path, "cloud-amd64", "ahci-hd"), check_profiles=False)
    assert s.devices[0].kind == "ahci-hd"
