"""Choosing the accelerator: KVM only when a guest really boots under it.

/dev/kvm existing is not enough: on some hosts (nested virtualisation) a
guest hangs right after the kernel decompresses. The probe boots blklab's
guest under KVM with a job that only reports back, and falls back to TCG.
The answer is cached per host boot, QEMU build and image.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from blklab import channel
from blklab.bundle import JobBundle
from blklab.errors import VMError
from blklab.results import write_atomic
from blklab.vm import VM, VMConfig, guest_initrd, image_kernel

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 20.0


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def kvm_boots(qemu: Path, image_dir: Path, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Boot the guest under KVM with the probe job; True if it reported back."""
    with tempfile.TemporaryDirectory(prefix="blklab-probe-") as tmp:
        work = Path(tmp)
        initrd = work / "initrd.cpio"
        guest_initrd(initrd, image_dir)
        job = work / "job.cpio"
        job.write_bytes(JobBundle.probe().cpio())
        config = VMConfig(qemu=qemu, kernel=image_kernel(image_dir), initrd=initrd, workdir=work,
                          vcpus=1, memory_mib=512, accel="kvm", mode="realtime", job_path=job)
        try:
            with VM(config) as vm:
                vm.wait(timeout_s)
        except VMError as e:
            log.info("KVM probe: %s", e)
            return False
        data = channel.parse(config.results_path.read_bytes())
        return data.status == "ok"


NO_KVM_DEVICE = "TCG, not KVM: /dev/kvm is missing or not usable by this user"
KVM_DID_NOT_BOOT = (f"TCG, not KVM: a guest did not boot under KVM here (the KVM probe gave up "
                    f"after {PROBE_TIMEOUT_S:.0f} s)")


def probe(qemu: Path, image_dir: Path, cache_file: Path) -> tuple[str, str]:
    """('kvm', '') if a guest boots under KVM here, else ('tcg', why not
    KVM): the fallback that the run's manifest, each cell and the console
    report."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", NO_KVM_DEVICE
    key = {"boot_id": _boot_id(), "qemu": str(qemu.resolve()), "image": str(image_dir.resolve())}
    try:
        cached = json.loads(cache_file.read_text())
        if cached.get("key") == key:
            return cached["accel"], ("" if cached["accel"] == "kvm" else KVM_DID_NOT_BOOT)
    except (OSError, ValueError, KeyError):
        pass
    log.info("probing KVM (up to %.0f s)", PROBE_TIMEOUT_S)
    accel = "kvm" if kvm_boots(qemu, image_dir) else "tcg"
    write_atomic(cache_file, json.dumps({"key": key, "accel": accel}) + "\n")
    return accel, ("" if accel == "kvm" else KVM_DID_NOT_BOOT)
