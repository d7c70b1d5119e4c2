"""The libvirt backend: one cell as a transient libvirt domain.

The domain runs blklab's QEMU as its emulator with the guest kernel and
initramfs as direct boot. Devices libvirt describes natively (the results
channel, file-backed IDE/SATA disks) are libvirt elements; what libvirt has
no element for (NVMe with blklab's properties, null backends, icount) goes
through libvirt's QEMU namespace. The domain is transient and destroyed on
guest reboot, so it is gone after the cell even when the cell fails.

The guest sees the same machine as with the direct backend (vm.VMConfig.
cmdline), so that a deterministic cell gives the same bytes through either:
what libvirt adds or sets differently and the guest can see is undone in
domain_xml (docs/determinism.md, "Through libvirt", says how each was found).

Use like VM:

    with LibvirtVM(config, uri) as vm:
        vm.wait(timeout_s)
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import xml.etree.ElementTree as ET

from blklab.errors import VMError
from blklab.vm import (DETERMINISTIC_RTC_BASE_EPOCH, DEVICE_COUNTERS, DISK_ID, HALT_GRACE_S,
                       PCI_SLOT_DISK, PCI_SLOT_RESULTS, POLL_S, RESULTS_PORT, VCPU_CLOCKS,
                       ConsoleWatch, ResultsWatch, VMConfig, _opt, parse_counters,
                       settled_vcpu_clocks, wait_for_halt)

log = logging.getLogger(__name__)

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
DEFAULT_URI = "qemu:///system"
# libvirt's user alias (QOM id) of the virtio-serial controller.
VSER_ID = "ua-blklab-vser0"
# The direct backend passes no -uuid, so QEMU's SMBIOS type 1 table and its
# fw_cfg UUID hold zeros. libvirt always passes the domain's UUID, which the
# guest reads from DMI and mixes into its entropy pool (user-space address
# randomisation, hash seeds: a different instruction count in every run).
# The domain keeps its own UUID in libvirt, so transient domains can still
# run side by side.
NO_UUID = "00000000-0000-0000-0000-000000000000"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    e = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attrs.items()})
    if text is not None:
        e.text = text
    return e


def _pci(parent: ET.Element, slot: int) -> None:
    _sub(parent, "address", type="pci", domain="0x0000", bus="0x00", slot=f"{slot:#04x}",
         function="0x0")


def domain_xml(config: VMConfig, name: str) -> str:
    """The transient domain for one cell."""
    if config.apps_path is not None:
        raise VMError("[guest] apps: the libvirt backend does not attach the applications' "
                      "disk; run with --backend direct", [])
    ET.register_namespace("qemu", QEMU_NS)
    dom = ET.Element("domain", {"type": "kvm" if config.accel == "kvm" else "qemu"})
    _sub(dom, "name", name)
    _sub(dom, "memory", str(config.memory_mib), unit="MiB")
    _sub(dom, "vcpu", str(config.vcpus))
    os_ = _sub(dom, "os")
    _sub(os_, "type", "hvm", arch="x86_64", machine="pc")
    _sub(os_, "kernel", str(config.kernel))
    _sub(os_, "initrd", str(config.initrd))
    _sub(os_, "cmdline", config.kernel_append())
    features = _sub(dom, "features")
    _sub(features, "acpi")
    if config.accel == "kvm":
        cpu = _sub(dom, "cpu", mode="host-passthrough")
    else:
        cpu = _sub(dom, "cpu", mode="custom", match="exact", check="none")
        _sub(cpu, "model", "qemu64", fallback="forbid")
    # `-smp N` on QEMU's "pc" machine means one socket with N cores; libvirt's
    # default is N sockets, which the guest sees in CPUID and its topology.
    _sub(cpu, "topology", sockets="1", dies="1", cores=str(config.vcpus), threads="1")
    if config.accel != "kvm":
        for name in config.cpu_features():
            _sub(cpu, "feature", policy="require", name=name)
    if config.mode == "deterministic":
        clock = _sub(dom, "clock", offset="absolute", start=str(DETERMINISTIC_RTC_BASE_EPOCH))
        _sub(clock, "timer", name="rtc", track="guest")
    else:
        _sub(dom, "clock", offset="utc")
    for event in ("on_poweroff", "on_reboot", "on_crash"):
        _sub(dom, event, "destroy")
    # Run blklab's QEMU as the daemon's own user: the guest files live in
    # blklab's cache, and nothing is relabelled.
    sec = _sub(dom, "seclabel", type="static", model="dac", relabel="no")
    _sub(sec, "label", "+0:+0")

    dev = _sub(dom, "devices")
    _sub(dev, "emulator", str(config.qemu))
    chan = _sub(dev, "channel", type="file")
    _sub(chan, "source", path=str(config.results_path))
    _sub(chan, "target", type="virtio", name=RESULTS_PORT)
    vser = _sub(dev, "controller", type="virtio-serial", index="0")
    _sub(vser, "alias", name=VSER_ID)
    _pci(vser, PCI_SLOT_RESULTS)
    _sub(dev, "controller", type="usb", model="none")
    _sub(dev, "memballoon", model="none")

    # These come after libvirt's own arguments: a later -uuid replaces
    # libvirt's, and -boot strict=off undoes libvirt's strict=on, which
    # appends HALT to the boot order SeaBIOS reads (the direct backend
    # leaves it unset). The console is made as the direct backend makes it:
    # libvirt's <serial> is an isa-serial -device, which QEMU creates after
    # the board's ISA devices, so COM1 would move in the ACPI DSDT.
    qemu_args = ["-uuid", NO_UUID, "-boot", "strict=off",
                 "-chardev", f"file,id=console,path={_opt(config.console_log)}",
                 "-serial", "chardev:console"] + config.job_args()
    # Properties libvirt's elements cannot set: (name, type, value) by the
    # alias of the device they go on.
    overrides: dict[str, list[tuple[str, str, str]]] = {
        # The guest's writes to the results port handled in the vCPU
        # thread, as with the direct backend (libvirt's <driver ioeventfd>
        # exists for virtio-scsi controllers only).
        VSER_ID: [("ioeventfd", "bool", "false")]}
    if config.mode == "deterministic":
        qemu_args += ["-icount", config.icount_option()]
    if config.trace_path is not None:
        qemu_args += ["-trace", "det_*", "-D", str(config.trace_path)]
    d = config.device
    if d is not None:
        native = d.kind in ("ide-hd", "ahci-hd") and d.backing == "file"
        if native:
            disk = _sub(dev, "disk", type="file", device="disk")
            _sub(disk, "driver", name="qemu", type="raw", discard="unmap")
            _sub(disk, "source", file=str(config.backing_path))
            _sub(disk, "target", dev="sda" if d.kind == "ahci-hd" else "hda",
                 bus="sata" if d.kind == "ahci-hd" else "ide")
            _sub(disk, "serial", f"blklab-{d.name}"[:20])
            _sub(disk, "alias", name=DISK_ID)
            # The QEMU namespace sets what libvirt has no element for (the
            # device model) and what its element cannot set here
            # (<target rotation_rate> needs a QEMU with scsi-hd). libvirt
            # makes the first disk its boot disk (bootindex=1, with -boot
            # strict=on): SeaBIOS would then read a boot order the direct
            # backend does not give it and run a different path to the
            # kernel.
            overrides[DISK_ID] = config.device_properties() + [("bootindex", "remove", "")]
            if d.kind == "ahci-hd":
                _pci(_sub(dev, "controller", type="sata", index="0"), PCI_SLOT_DISK)
        else:
            qemu_args += config._device_args(d)
    cmdline = ET.SubElement(dom, f"{{{QEMU_NS}}}commandline")
    for a in qemu_args:
        ET.SubElement(cmdline, f"{{{QEMU_NS}}}arg", {"value": a})
    over = ET.SubElement(dom, f"{{{QEMU_NS}}}override")
    for alias, props in overrides.items():
        front = ET.SubElement(ET.SubElement(over, f"{{{QEMU_NS}}}device", {"alias": alias}),
                              f"{{{QEMU_NS}}}frontend")
        for name, kind, value in props:
            attrs = {"name": name, "type": kind}
            if kind != "remove":
                attrs["value"] = value
            ET.SubElement(front, f"{{{QEMU_NS}}}property", attrs)
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode") + "\n"


class LibvirtVM:
    """One transient domain; the same interface as vm.VM."""

    def __init__(self, config: VMConfig, uri: str = DEFAULT_URI):
        self.config = config
        self.uri = uri
        self.name = f"blklab-{uuid.uuid4().hex[:12]}"
        self.xml = domain_xml(config, self.name)
        self.cmd = ["libvirt", uri, self.name]
        self._conn = None
        self._dom = None
        self.console_watch = ConsoleWatch(config.console_log)
        self.halt: str | None = None  # as vm.VM.halt

    def __enter__(self) -> "LibvirtVM":
        self.launch()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def console(self) -> str:
        try:
            return self.config.console_log.read_text(errors="replace")
        except (FileNotFoundError, PermissionError):
            return ""

    def launch(self) -> None:
        import libvirt

        c = self.config
        c.workdir.mkdir(parents=True, exist_ok=True)
        for p in (c.console_log, c.results_path):
            p.unlink(missing_ok=True)
        (c.workdir / "domain.xml").write_text(self.xml)
        try:
            self._conn = libvirt.open(self.uri)
            self._dom = self._conn.createXML(self.xml, 0)
        except libvirt.libvirtError as e:
            self._close()
            raise VMError(f"libvirt could not start the domain: {e}", self.cmd) from e

    def _active(self) -> bool:
        import libvirt

        try:
            return bool(self._dom.isActive())
        except libvirt.libvirtError:
            return False  # a transient domain is gone once it stops

    def wait(self, timeout_s: float) -> int:
        """As vm.VM.wait: until the guest has sent its results and halted,
        or the domain is gone."""
        deadline = time.monotonic() + timeout_s
        watch = ResultsWatch(self.config.results_path)
        while self._active():
            self.console_watch.poll()
            if watch.finished():
                self._wait_halted(min(deadline, time.monotonic() + HALT_GRACE_S))
                return 0
            if time.monotonic() > deadline:
                self.shutdown()
                raise VMError(f"guest did not finish within {timeout_s:g} s", self.cmd,
                              self.console())
            time.sleep(POLL_S)
        return 0

    def _wait_halted(self, until: float) -> None:
        self.halt = wait_for_halt(self.console_watch, self._active, until)

    def device_counters(self) -> dict | None:
        """The device model's counters through libvirt's QEMU monitor
        passthrough; None if the domain is gone."""
        return self.qom_json(DEVICE_COUNTERS)

    def vcpu_clocks(self) -> dict | None:
        """As vm.VM.vcpu_clocks; None if the domain is gone."""
        return settled_vcpu_clocks(lambda: self.qom_json(VCPU_CLOCKS), self.halt)

    def qom_json(self, prop: tuple[str, str, str]) -> dict | None:
        import libvirt
        import libvirt_qemu

        path, name, what = prop
        if self._dom is None or not self._active():
            return None
        cmd = json.dumps({"execute": "qom-get",
                          "arguments": {"path": path, "property": name}})
        try:
            reply = libvirt_qemu.qemuMonitorCommand(self._dom, cmd, 0)
        except libvirt.libvirtError as e:
            log.warning("reading %s: %s", what, e)
            return None
        return parse_counters(json.loads(reply), what)

    def shutdown(self, grace_s: float = 5.0) -> None:
        import libvirt

        try:
            if self._dom is not None and self._active():
                try:
                    self._dom.destroy()
                except libvirt.libvirtError as e:
                    log.debug("destroy %s: %s", self.name, e)
        finally:
            self._close()

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception as e:  # closing a broken connection must not mask the result
                log.debug("closing libvirt connection: %s", e)
            self._conn = None
