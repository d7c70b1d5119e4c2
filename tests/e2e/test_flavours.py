"""Debian's other kernel flavours, cloud-amd64 and rt-amd64, as guests.

Each flavour of the default series boots in deterministic mode with every
device kind it has drivers for, each device on a device model, and runs a
100 ms job under the four schedulers (1 vCPU, 512 MiB). The flavour without
AHCI (6.1's cloud-amd64: Debian 12 builds it without CONFIG_SATA_AHCI; 13's
has it) is refused an ahci-hd device when the scenario is validated, before
any VM starts. amd64 is what every other end-to-end test boots.

The images come from `make images` (make test builds them); BLKLAB_BUILD
points the harness and this test at another build directory."""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import cells_of, check_pvh_boot, device, mixed, run_blklab
from blklab import kernels, paths, results
from blklab.errors import BuildMissingError

SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
PROFILES = {"nvme": "samsung-970evoplus-1t", "ide-hd": "hdd-7200-desktop-1t",
            "ahci-hd": "hdd-7200-desktop-1t"}

# What each flavour's kernel package has, read from it (config-* of
# Debian's 6.12.118+deb13 and 6.1 kernels): the device kinds it runs, the
# kinds it lacks a driver for, the drivers built into the kernel and those
# shipped as modules.
FLAVOURS = {
    "6.12-cloud-amd64": {"runs": ("nvme", "ide-hd", "ahci-hd"), "lacks": {},
                         "builtin": ("nvme", "virtio_pci", "virtio_console"),
                         "modules": ("ata_piix", "sd_mod", "ahci", "mq-deadline")},
    "6.12-rt-amd64": {"runs": ("nvme", "ide-hd", "ahci-hd"), "lacks": {},
                      "builtin": ("virtio_pci", "virtio_console", "mq-deadline"),
                      "modules": ("nvme", "ata_piix", "ahci", "sd_mod")},
    "6.1-cloud-amd64": {"runs": ("nvme", "ide-hd"), "lacks": {"ahci-hd": "ahci"},
                        "builtin": ("nvme",),
                        "modules": ("ata_piix", "sd_mod", "virtio_pci", "virtio_console")},
}
COMMON_MODULES = ("virtio_blk", "kyber-iosched", "bfq")
# The flavours booted: those of the default series (make images builds
# them; of 6.1 only cloud-amd64, for the refusal).
BOOTED = sorted(f for f in FLAVOURS if f.startswith(kernels.default_series() + "-"))

JOB = mixed("100ms")


def kind_device(kind: str) -> str:
    return device(kind.replace("-", ""), kind, PROFILES[kind], size_gib=1)


def scenario_text(flavour: str, kinds) -> str:
    scheds = ", ".join(f'"{s}"' for s in SCHEDULERS)
    return (f'[scenario]\nname = "flavour-{flavour}"\nmode = "deterministic"\n'
            f'timeout_s = 900\nschedulers = [{scheds}]\n'
            f'[guest]\nkernel = "{flavour}"\nvcpus = 1\nmemory_mib = 512\n'
            + "".join(kind_device(k) for k in kinds) + JOB)


def image_name(flavour: str) -> str:
    """The image of [guest] kernel = flavour (a bare flavour is the default
    series')."""
    return kernels.resolve(flavour).id


def flavour_of(kernel: str) -> str:
    """"cloud-amd64" of "6.12-cloud-amd64"."""
    return kernels.resolve(kernel).flavour


def image_of(flavour: str) -> dict:
    try:
        d = paths.image_dir(image_name(flavour))
    except BuildMissingError as e:
        pytest.fail(f"{e} (make test builds every flavour: 'make images')")
    return json.loads((d / "image.json").read_text())


@pytest.fixture(scope="module", params=BOOTED)
def flavour_run(request, built, tmp_path_factory):
    """One run of a flavour: every kind it runs, the four schedulers."""
    flavour = request.param
    image = image_of(flavour)
    tmp = tmp_path_factory.mktemp(flavour)
    path = tmp / "s.toml"
    path.write_text(scenario_text(flavour, FLAVOURS[flavour]["runs"]))
    proc = run_blklab("run", str(path), "--out", str(tmp / "run"), "--no-report")
    return flavour, image, proc, tmp / "run"


def test_every_cell_ok_with_the_scheduler_asked(flavour_run):
    flavour, _, proc, out = flavour_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    assert len(cells) == len(FLAVOURS[flavour]["runs"]) * len(SCHEDULERS)
    seen = set()
    for cid, c in cells.items():
        results.validate(c)
        assert c["status"] == "ok", (cid, c["error"])
        assert c["in_effect"]["scheduler"] == c["request"]["scheduler"], cid
        assert c["guest"]["kernel_warnings"] == [], (cid, c["guest"]["kernel_warnings"])
        assert {row["direction"] for row in c["summary"]} == {"read", "write"}, cid
        assert all(row["total_ios"] > 0 for row in c["summary"]), cid
        seen.add((c["request"]["device"]["kind"], c["request"]["scheduler"]))
    assert seen == {(k, s) for k in FLAVOURS[flavour]["runs"] for s in SCHEDULERS}


def test_guest_ran_the_flavours_kernel(flavour_run):
    flavour, image, _, out = flavour_run
    release = image["kernel_release"]
    assert release.endswith("-" + flavour_of(flavour))
    assert release.startswith(kernels.default_series() + ".")
    for cid, c in cells_of(out).items():
        version = c["guest"]["kernel_version"]
        assert c["guest"]["kernel_release"] == release, cid
        # /proc/version: "Linux version 6.1.0-57-rt-amd64 (...) #1 SMP
        # PREEMPT_RT Debian 6.1.192-3 (2025-...)": the release and the
        # Debian package version of the running kernel.
        assert version.startswith(f"Linux version {release} "), (cid, version)
        assert f" Debian {image['kernel_package_version']} " in version, (cid, version)
        assert ("PREEMPT_RT" in version) == (flavour_of(flavour) == "rt-amd64"), (cid, version)
        check_pvh_boot(c, out, paths.image_dir(image["kernel"]))


def test_manifest_records_the_kernel_package(flavour_run):
    flavour, image, _, out = flavour_run
    manifest = json.loads((out / "manifest.json").read_text())
    recorded = manifest["image"]
    assert recorded["flavour"] == flavour_of(flavour)
    assert recorded["kernel"] == image_name(flavour)
    assert recorded["kernel_package"] == f"linux-image-{image['kernel_release']}"
    [pinned] = [k for k in kernels.pinned() if k.id == image_name(flavour)]
    assert recorded["kernel_package_version"] == pinned.version
    assert recorded["kernel_package_version"] == image["kernel_package_version"]
    for c in cells_of(out).values():
        assert c["image"]["kernel_package_version"] == recorded["kernel_package_version"]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_image_holds_the_modules_and_records_the_builtins(built, flavour):
    image = image_of(flavour)
    facts = FLAVOURS[flavour]
    drivers = image["drivers"]
    for d in facts["builtin"]:
        assert drivers[d]["state"] == "builtin", (d, drivers[d])
    for d in facts["modules"] + COMMON_MODULES:
        assert drivers[d]["state"] == "module", (d, drivers[d])
    for kind, driver in facts["lacks"].items():
        assert drivers[driver]["state"] == "missing"
        assert image["device_kinds"][kind]["missing"] == [driver]
    # virtio_blk is a module of every flavour (COMMON_MODULES): virtio-blk
    # runs on each, though the runs above leave it out to save CI time.
    for kind in facts["runs"] + ("virtio-blk",):
        assert image["device_kinds"][kind]["missing"] == []
    listing = subprocess.run(
        ["cpio", "-t", "--quiet"],
        stdin=open(paths.image_dir(image_name(flavour)) / "initramfs.cpio", "rb"),
        capture_output=True, text=True, check=True).stdout.split()
    kos = {Path(p).name[:-len(".ko")].replace("-", "_") for p in listing if p.endswith(".ko")}
    for d in facts["modules"] + COMMON_MODULES:
        assert d.replace("-", "_") in kos, d
    for d in facts["builtin"] + tuple(facts["lacks"].values()):
        assert d.replace("-", "_") not in kos, d


@pytest.mark.parametrize("flavour", sorted(f for f in FLAVOURS if FLAVOURS[f]["lacks"]))
def test_a_kind_without_its_driver_is_refused_before_any_vm(built, flavour, tmp_path):
    image = image_of(flavour)
    # The kinds the image has every driver of (what it runs is checked
    # against the package in test_image_holds_the_modules_and_records_the_builtins).
    runnable = [k for k, v in image["device_kinds"].items() if not v["missing"]]
    assert set(FLAVOURS[flavour]["runs"]) <= set(runnable)
    for kind, driver in FLAVOURS[flavour]["lacks"].items():
        path = tmp_path / f"{kind}.toml"
        path.write_text(scenario_text(flavour, ("nvme", kind)))
        config = image["drivers"][driver]["config"]
        # What the package says: its config-* leaves the driver out.
        assert config.endswith(" is not set"), config
        expected = (f"{path}: device[1].kind: device '{kind.replace('-', '')}' is kind "
                    f"'{kind}', which cannot run on guest.kernel = \"{flavour}\": "
                    f"{image['kernel_package']} {image['kernel_package_version']} has no "
                    f"driver {driver} ({config}). Allowed with this kernel: "
                    f"{', '.join(runnable)}; or choose another guest.kernel")
        for args in (("validate", str(path)),
                     ("run", str(path), "--out", str(tmp_path / "run"), "--no-report")):
            proc = run_blklab(*args, timeout=120)
            assert proc.returncode == 2, proc.stdout + proc.stderr
            assert proc.stderr.strip() == f"blklab: {expected}"
        assert not (tmp_path / "run").exists()
