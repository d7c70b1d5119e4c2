"""One guest VM: command line, launch, bounded wait, guaranteed teardown.

Use as a context manager:

    with VM(config) as vm:
        vm.wait(timeout_s)

Leaving the block always ends QEMU: gracefully through QMP `quit`, then
SIGTERM, then SIGKILL. A VM that does not finish within its timeout raises
VMError carrying the command line and the console log.
"""

from __future__ import annotations

import ctypes
import json
import logging
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from blklab.errors import BuildMissingError, VMError
from blklab.scenario import Device

log = logging.getLogger(__name__)

RESULTS_PORT = "org.blklab.results"
# Fixed PCI slots, so that the guest sees the same topology whichever
# backend starts QEMU (libvirt places its own devices from slot 2 up).
PCI_SLOT_RESULTS = 3  # virtio-serial-pci carrying the results port
PCI_SLOT_DISK = 4  # nvme, virtio-blk-pci, or ich9-ahci for ahci-hd
PCI_SLOT_APPS = 5  # virtio-blk-pci carrying the applications' root ([guest] apps)
# The applications' root's disk: its serial (the guest's init finds it by
# that) and the device model that times its reads, so that every byte an
# application loads arrives in virtual time as from a drive of that profile.
APPS_SERIAL = "blklab-apps"
APPS_PROFILE = "samsung-980pro-1t"
# Fixed RTC start for deterministic mode: the guest never sees the host date.
DETERMINISTIC_RTC_BASE = "2020-01-01T00:00:00"
DETERMINISTIC_RTC_BASE_EPOCH = 1577836800  # the same instant, in seconds since 1970 (UTC)
# The QOM id of the device under test with either backend (libvirt's user
# aliases must start with "ua-"): /machine/peripheral/<DISK_ID>.
DISK_ID = "ua-blklab-disk0"
# The read-only QOM property holding the device model's counters (JSON).
COUNTERS_PROPERTY = "devmodel-counters"


# The initrd's size is made a whole number of pages (see guest_initrd).
INITRD_ALIGN = 4096
# The fw_cfg file holding a cell's job bundle, which the guest reads after its
# job point (workload/jobpoint.cc).
JOB_FW_CFG_NAME = "opt/org.blklab/job"
# The QOM path of the job point device (qemu-patches/0046).
JOBPOINT_ID = "blklab-jobpoint0"


def image_kernel(image_dir: Path) -> Path:
    """The kernel a guest boots: the ELF inside the image's vmlinuz, which
    QEMU starts through its PVH entry, so that no cell spends host time
    decompressing the same kernel again (guest-images/vmlinux-from-bzimage.py)."""
    kernel = image_dir / "vmlinux"
    if not kernel.exists():
        raise BuildMissingError(
            f"{kernel}: missing; this image was built before guests booted through PVH: "
            f"rebuild it with 'make images' (or import an image exported since)")
    return kernel


def guest_initrd(path: Path, image_dir: Path, fio: bool = False, apps: bool = False) -> None:
    """Write the image's initramfs, then its fio.cpio if `fio` (fio and the
    libraries only it needs: 70 MB that a blkgen cell's kernel would unpack
    into RAM for nothing), then its apps.cpio if `apps` (the drivers of the
    applications' root and its filesystems), zero-padded to a whole page (the kernel's
    unpacker reads the archives in turn and skips zeros). The same for every
    cell of a guest: the job reaches the guest after its job point, as an
    fw_cfg file (VMConfig.job_path).

    QEMU loads the initrd so that it ends as high as it may (below the
    ACPI tables), its start rounded down to a page. A size that is not a
    whole number of pages leaves its last bytes in the page that holds that
    limit, and with an NVMe controller SeaBIOS reserves that page in the
    e820 map for its own use; Linux then finds its initrd partly outside RAM
    and copies all 100 MB of it elsewhere through early_memremap()
    (relocate_initrd(), arch/x86/kernel/setup.c: "Move RAMDISK"), which
    costs 110 ms of the guest's time and seconds of host time under TCG.
    Whole pages end the initrd below that page."""
    parts = ["initramfs.cpio"] + (["fio.cpio"] if fio else []) + (["apps.cpio"] if apps else [])
    with open(path, "wb") as out:
        for name in parts:
            with open(image_dir / name, "rb") as part:
                shutil.copyfileobj(part, out, 1 << 20)
        out.write(bytes(-out.tell() % INITRD_ALIGN))


@dataclass
class VMConfig:
    qemu: Path
    kernel: Path
    initrd: Path
    workdir: Path  # console.log, qemu-stderr.log, results.bin and qmp.sock go here
    vcpus: int = 2
    memory_mib: int = 1024
    accel: str = "tcg"  # "tcg" or "kvm"
    mode: str = "realtime"  # "deterministic" (TCG + icount) or "realtime"
    cpu_rate: str = "1"  # instructions per ns per vCPU in deterministic mode
    # Deterministic mode: "shared", one clock for every vCPU, or "parallel",
    # each vCPU on its own (-icount parallel=on), at most quantum ns apart.
    vcpu_clocks: str = "shared"
    # With "shared", 0 leaves each vCPU's round-robin turn unbounded (half
    # the time to the next deadline), N bounds it to N ns (-icount quantum=N
    # without parallel=on, qemu-patches/0034).
    vcpu_quantum_ns: int = 0
    # Deterministic mode: the ns a PAUSE takes (-icount pause=NS,
    # qemu-patches/0039); 0: one instruction's time.
    pause_ns: int = 0
    # Deterministic mode: the ns a vCPU spends besides its instructions on
    # each hardware interrupt, system call and wake-up from halt (-icount
    # irq=, syscall=, wake=; qemu-patches/0050); 0 leaves the option out.
    irq_ns: int = 0
    syscall_ns: int = 0
    wake_ns: int = 0
    device: Device | None = None
    backing_path: Path | None = None  # for device.backing == "file"
    profile_path: Path | None = None  # the device's profile, as QEMU reads it
    devmodel_seed: int = 0
    # Directory for the model's built state (QEMU's devmodel-state-cache): a
    # steady-preconditioned SSD loads it instead of replaying its
    # precondition; the same model either way. None: replay at every start.
    devmodel_state_cache: Path | None = None
    # The nvme driver's poll queues ([guest] nvme_poll_queues; 0: none).
    nvme_poll_queues: int = 0
    extra_append: str = ""
    # QEMU's determinism trace (the det_* trace events), for blklab diverge.
    trace_path: Path | None = None
    # The QMP socket; a Unix socket path must stay under 108 bytes, so by
    # default it lives in a short temporary directory, not in workdir.
    qmp_path: Path | None = None
    # The cell's job bundle (a cpio archive), given to the guest as the fw_cfg
    # file JOB_FW_CFG_NAME; None: no job (a guest saved at its job point).
    job_path: Path | None = None
    # Stay stopped at the job point, for the harness to save the guest there
    # (blklab.snapshot); otherwise the guest runs on from it at once.
    hold_at_job_point: bool = False
    # Start from a guest saved at its job point (a QEMU migration file)
    # instead of booting.
    incoming: Path | None = None
    # The applications' root (build/apps/apps.squashfs), attached read-only
    # as a virtio-blk disk of its own timed by APPS_PROFILE (apps_profile_path,
    # the profile as QEMU reads it); None: no such disk.
    apps_path: Path | None = None
    apps_profile_path: Path | None = None

    @property
    def console_log(self) -> Path:
        return self.workdir / "console.log"

    @property
    def stderr_log(self) -> Path:
        """QEMU's own stderr: its error messages and, in a sanitizer build,
        the sanitizers' reports (whenever QEMU writes them, exit included)."""
        return self.workdir / "qemu-stderr.log"

    @property
    def results_path(self) -> Path:
        return self.workdir / "results.bin"

    def kernel_append(self) -> str:
        # panic=-1: a panic reboots at once and -no-reboot turns that into a
        # QEMU exit, so a crashed guest ends the cell instead of hanging it.
        # nokaslr: no randomised layout from host entropy.
        # tsc=reliable: QEMU's TSC follows one clock for every vCPU (the
        # virtual clock under icount), but Linux's warp check fails on
        # round-robin vCPUs and falls back to acpi_pm, which makes every
        # clock read in the guest (blkgen's, fio's, the block layer's
        # ktime_get) a port read trapped by QEMU instead of a vDSO rdtsc.
        # With vcpu_clocks = "parallel" every clock is monotonic across vCPUs
        # and the CPU says its TSC is invariant (cpu_model()): the guest
        # runs its own TSC checks (the warp check at bring-up, the
        # clocksource watchdog) and tests read what it says of them.
        # The warp check's verdict for each CPU brought up is a pr_debug():
        # enabled, and with the console taking KERN_DEBUG (a dozen more
        # lines, all at boot), the console says "TSC synchronization
        # [CPU#0 -> CPU#n]: passed".
        parts = ["console=ttyS0", "panic=-1", "oops=panic", "nokaslr", "random.trust_cpu=off"]
        if self.parallel_vcpu_clocks:
            parts += ['dyndbg="file arch/x86/kernel/tsc_sync.c +p"', "loglevel=8"]
        else:
            parts.append("tsc=reliable")
        d = self.device
        if d is not None and d.kind == "virtio-blk" and d.queue_depth is not None:
            # The guest driver's tag depth (drivers/block/virtio_blk.c,
            # module parameter queue_depth; default: the ring's size).
            parts.append(f"virtio_blk.queue_depth={d.queue_depth}")
        if self.nvme_poll_queues:
            # A module parameter on the command line reaches the module
            # when it loads (the guest's init loads nvme).
            parts.append(f"nvme.poll_queues={self.nvme_poll_queues}")
        if not self.job_point:
            parts.append("blklab.jobpoint=off")  # the guest's init reads only the job
        if self.extra_append:
            parts.append(self.extra_append)
        return " ".join(parts)

    @property
    def job_point(self) -> bool:
        """Whether the guest stops at its job point: in deterministic mode,
        the only one whose guests are saved there (cell.cold_boot_reason).
        Realtime mode runs on stock QEMU too, which has no such device."""
        return self.mode == "deterministic"

    @property
    def parallel_vcpu_clocks(self) -> bool:
        return self.mode == "deterministic" and self.vcpu_clocks == "parallel"

    def icount_option(self) -> str:
        """-icount's value in deterministic mode."""
        opt = f"rate={self.cpu_rate},sleep=off"
        if self.parallel_vcpu_clocks:
            opt += f",parallel=on,quantum={self.vcpu_quantum_ns}"
        elif self.vcpu_quantum_ns:
            opt += f",quantum={self.vcpu_quantum_ns}"
        if self.pause_ns:
            opt += f",pause={self.pause_ns}"
        for name, ns in (("irq", self.irq_ns), ("syscall", self.syscall_ns),
                         ("wake", self.wake_ns)):
            if ns:
                opt += f",{name}={ns}"
        return opt

    def cpu_features(self) -> list[str]:
        """Features added to qemu64: an invariant TSC (qemu-patches/0032) when
        every vCPU has its own clock, so that the guest trusts and checks
        its TSC (Linux trusts a multi-vCPU TSC only on Intel otherwise)."""
        return ["invtsc"] if self.parallel_vcpu_clocks else []

    def cmdline(self) -> list[str]:
        if self.mode == "deterministic" and self.accel != "tcg":
            raise ValueError("deterministic mode needs the tcg accelerator")
        cpu = "".join(["qemu64"] + [f",+{f}" for f in self.cpu_features()])
        cmd = [
            str(self.qemu),
            "-M", f"pc,accel={self.accel}",
            "-cpu", "host" if self.accel == "kvm" else cpu,
            "-smp", str(self.vcpus),
            "-m", str(self.memory_mib),
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", str(self.kernel),
            "-initrd", str(self.initrd),
            "-append", self.kernel_append(),
            "-chardev", f"file,id=console,path={_opt(self.console_log)}",
            "-serial", "chardev:console",
            "-qmp", f"unix:{_opt(self.qmp_path)},server=on,wait=off",
            "-device", f"virtio-serial-pci,id=vser0,addr={PCI_SLOT_RESULTS:#x},ioeventfd=off",
            "-chardev", f"file,id=results,path={_opt(self.results_path)}",
            "-device", f"virtserialport,bus=vser0.0,chardev=results,name={RESULTS_PORT}",
        ] + self.job_args()
        if self.mode == "deterministic":
            cmd += ["-icount", self.icount_option(),
                    "-rtc", f"clock=vm,base={DETERMINISTIC_RTC_BASE}"]
        if self.trace_path is not None:
            cmd += ["-trace", "det_*", "-D", str(self.trace_path)]
        if self.device is not None:
            cmd += self._device_args(self.device)
        if self.apps_path is not None:
            cmd += self._apps_args()
        if self.incoming is not None:
            cmd += ["-incoming", f"file:{self.incoming}"]
        return cmd

    def job_args(self) -> list[str]:
        """The job point device (deterministic mode) and the job's fw_cfg
        file (both backends)."""
        args = []
        if self.job_point:
            jobpoint = f"blklab-jobpoint,id={JOBPOINT_ID}"
            if self.hold_at_job_point:
                jobpoint += ",hold=on"
                # The saved stream leaves out the run state (paused, at the
                # job point), so that a QEMU restored from it runs at once.
                args += ["-global", "migration.store-global-state=off"]
            args += ["-device", jobpoint]
        if self.job_path is not None:
            args += ["-fw_cfg", f"name={JOB_FW_CFG_NAME},file={_opt(self.job_path)}"]
        return args

    def _device_args(self, d: Device) -> list[str]:
        if d.backing == "null":
            backend = ["-blockdev",
                       f"driver=null-co,node-name=disk0,size={d.size_bytes},read-zeroes=on"]
        else:
            if self.backing_path is None:
                raise ValueError("a file-backed device needs backing_path")
            # discard=unmap: a guest's NVMe deallocate or ATA TRIM punches a
            # hole in the file, so the block reads back as zeros, as the
            # NVMe namespace's DLFEAT promises (QEMU's default, ignore,
            # keeps the data).
            backend = ["-blockdev",
                       f"driver=file,node-name=file0,filename={_opt(self.backing_path)}"
                       ",discard=unmap",
                       "-blockdev", "driver=raw,node-name=disk0,file=file0,discard=unmap"]
        serial = f"serial=blklab-{d.name}"[:27]
        extra = "".join(f",{name}={_opt(value)}" for name, _, value in self.device_properties())
        if d.kind == "nvme":
            front = ["-device",
                     f"nvme,id={DISK_ID},drive=disk0,addr={PCI_SLOT_DISK:#x},{serial}{extra}"]
        elif d.kind == "virtio-blk":
            # ioeventfd=off: the guest's notify is handled in its MMIO
            # write, at a virtual instant (QEMU refuses a model without it).
            front = ["-device",
                     f"virtio-blk-pci,id={DISK_ID},drive=disk0,addr={PCI_SLOT_DISK:#x},"
                     f"ioeventfd=off,{serial}{extra}"]
        else:
            props = f"ide-hd,id={DISK_ID},drive=disk0,{serial}{extra}"
            if d.kind == "ide-hd":
                front = ["-device", props + ",bus=ide.0,unit=0"]
            else:
                front = ["-device", f"ich9-ahci,id=ahci0,addr={PCI_SLOT_DISK:#x}",
                         "-device", props + ",bus=ahci0.0"]
        return backend + front


    def _apps_args(self) -> list[str]:
        if self.apps_profile_path is None:
            raise ValueError("the applications' disk needs apps_profile_path")
        return ["-blockdev", f"driver=file,node-name=appsfile,filename={_opt(self.apps_path)}"
                             ",read-only=on",
                "-blockdev", "driver=raw,node-name=apps,file=appsfile,read-only=on",
                "-device", f"virtio-blk-pci,id=blklab-apps,drive=apps,addr={PCI_SLOT_APPS:#x},"
                           f"ioeventfd=off,serial={APPS_SERIAL},"
                           f"devmodel-profile={_opt(self.apps_profile_path)},devmodel-seed=0"]

    def device_properties(self) -> list[tuple[str, str, str]]:
        """blklab's properties of the device under test as (name, QOM type,
        value): the device model's profile and seed, the rotation rate, the
        queue size and NCQ depth, the block size, NVMe's shadow doorbells."""
        d = self.device
        assert d is not None
        props: list[tuple[str, str, str]] = []
        if d.profile is not None:
            if self.profile_path is None:
                raise ValueError("a device with a profile needs profile_path")
            props += [("devmodel-profile", "string", str(self.profile_path)),
                      ("devmodel-seed", "unsigned", str(self.devmodel_seed))]
            if self.devmodel_state_cache is not None:
                props.append(("devmodel-state-cache", "string", str(self.devmodel_state_cache)))
            if d.profile.logical_block_bytes != 512:
                size = str(d.profile.logical_block_bytes)
                props += [("logical_block_size", "unsigned", size),
                          ("physical_block_size", "unsigned", size)]
        rotation = d.rotation_rate
        if rotation is None and d.profile is not None and d.kind in ("ide-hd", "ahci-hd"):
            rotation = d.profile.rotation_rate
        if rotation is not None:
            props.append(("rotation_rate", "unsigned", str(rotation)))
        if d.mqes is not None:
            props.append(("mqes", "unsigned", str(d.mqes)))
        if d.kind == "nvme":
            # Shadow doorbells (Doorbell Buffer Config, OACS bit 8, made for
            # emulated controllers): QEMU's NVMe offers them unless dbcs=off;
            # the drives the profiles model (970 EVO Plus, 980 PRO, P5800X)
            # do not, and their host rings every doorbell through the BAR.
            # It matters beyond cost: a controller forgets the buffers at a
            # reset, and 6.1's nvme_reset_work() restarts the I/O queues
            # before it gives them again (nvme_dbbuf_set() after nvme_start_queues()), so on
            # QEMU's default a 6.1 guest's I/O stalls after every controller
            # reset (docs/faults.md). Off on NVMe without a model too: every
            # NVMe cell then takes one guest path, and the benchmarks' stock
            # realtime step (tests/bench) differs from blklab's steps in QEMU
            # only. [[device]] shadow_doorbells = true gives QEMU's default.
            props.append(("dbcs", "bool", "on" if d.shadow_doorbells else "off"))
        if d.ncq_depth is not None:
            props.append(("ncq-depth", "unsigned", str(d.ncq_depth)))
        if d.num_queues is not None:
            props.append(("num-queues", "unsigned", str(d.num_queues)))
        if d.queue_size is not None:
            props.append(("queue-size", "unsigned", str(d.queue_size)))
        return props


def _die_with_parent() -> None:
    """In the child before exec: end QEMU if the process that started it
    dies (a killed harness or cluster worker must not leave VMs running)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _opt(value: object) -> str:
    """A value inside a QEMU option string: commas are doubled."""
    return str(value).replace(",", ",,")


class VM:
    def __init__(self, config: VMConfig):
        self._sockdir: str | None = None
        if config.qmp_path is None:
            self._sockdir = tempfile.mkdtemp(prefix="blklab-qmp-")
            config.qmp_path = Path(self._sockdir) / "qmp.sock"
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.cmd = config.cmdline()
        self.returncode: int | None = None
        self.stderr = ""
        self.console_watch = ConsoleWatch(config.console_log)
        # After the results: "clean", or why the guest did not halt
        # cleanly (see wait_for_halt); None before.
        self.halt: str | None = None

    def __enter__(self) -> "VM":
        self.launch()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def launch(self) -> None:
        c = self.config
        c.workdir.mkdir(parents=True, exist_ok=True)
        for p in (c.console_log, c.results_path, c.qmp_path):
            if p is not None:
                p.unlink(missing_ok=True)
        (c.workdir / "cmdline.txt").write_text(shlex.join(self.cmd) + "\n")
        log.debug("launch: %s", shlex.join(self.cmd))
        # A file rather than a pipe: what QEMU writes after the harness
        # stops reading (at quit, at exit) is kept too.
        try:
            with open(c.stderr_log, "wb") as stderr:
                self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=stderr,
                                             preexec_fn=_die_with_parent)
        except OSError as e:
            raise VMError(f"cannot start QEMU: {e}", self.cmd) from e

    def read_stderr(self) -> str:
        """What QEMU has written to its stderr so far."""
        try:
            return self.config.stderr_log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def console(self) -> str:
        try:
            return self.config.console_log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait(self, timeout_s: float) -> int:
        """Wait until the guest has sent its results (it then halts and
        stays, so that the device model's counters can be read) or QEMU
        exits (a panicking guest reboots, and -no-reboot ends QEMU). Raises
        VMError on timeout or when QEMU fails."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        watch = ResultsWatch(self.config.results_path)
        while True:
            try:
                self.proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            self.console_watch.poll()
            if watch.finished():
                self._wait_halted(min(deadline, time.monotonic() + HALT_GRACE_S))
                return 0
            if time.monotonic() > deadline:
                self.shutdown()
                raise VMError(f"guest did not finish within {timeout_s:g} s", self.cmd,
                              self.console())
        self.stderr = self.read_stderr()
        self.returncode = self.proc.returncode
        if self.returncode != 0:
            raise VMError(f"QEMU exited with status {self.returncode}: {self.stderr.strip()}",
                          self.cmd, self.console())
        return self.returncode

    def _wait_halted(self, until: float) -> None:
        assert self.proc is not None
        self.halt = wait_for_halt(self.console_watch, lambda: self.proc.poll() is None, until)

    def device_counters(self) -> dict | None:
        """The device model's counters, read over QMP from the running QEMU;
        None if QEMU is gone or the device has no model."""
        return self.qom_json(DEVICE_COUNTERS)

    def vcpu_clocks(self) -> dict | None:
        """-icount parallel=on's figures (VCPU_CLOCKS), final if the guest
        halted cleanly (settled_vcpu_clocks); None if QEMU is gone."""
        return settled_vcpu_clocks(lambda: self.qom_json(VCPU_CLOCKS), self.halt)

    def qom_json(self, prop: tuple[str, str, str]) -> dict | None:
        path, name, what = prop
        if self.proc is None or self.proc.poll() is not None:
            return None
        assert self.config.qmp_path is not None
        try:
            reply = qmp_command(self.config.qmp_path, "qom-get",
                                {"path": path, "property": name})
        except (OSError, ValueError) as e:
            log.warning("reading %s: %s", what, e)
            return None
        return parse_counters(reply, what)

    def shutdown(self, grace_s: float = 5.0) -> None:
        """End QEMU if it still runs: QMP quit, then SIGTERM, then SIGKILL."""
        try:
            self._end_qemu(grace_s)
        finally:
            if self._sockdir is not None:
                shutil.rmtree(self._sockdir, ignore_errors=True)
                self._sockdir = None

    def _end_qemu(self, grace_s: float) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        assert self.config.qmp_path is not None
        try:
            qmp_command(self.config.qmp_path, "quit", timeout_s=grace_s)
        except (OSError, ValueError) as e:
            log.debug("QMP quit failed: %s", e)
        for action in (None, p.terminate, p.kill):
            if action is not None:
                action()
            try:
                p.wait(timeout=grace_s)
                return
            except subprocess.TimeoutExpired:
                continue


POLL_S = 0.1  # how often a waiting harness looks at QEMU and the results file
HALT_GRACE_S = 60.0  # host seconds a guest has to halt once its results are in


def wait_for_halt(console: "ConsoleWatch", running, until: float) -> str:
    """After its results the guest halts, and its drivers' shutdown still
    sends the device commands (a cache flush, a controller shutdown). Wait
    for the halt, so that the device model's counters read next are the
    same in every run, whatever the host's speed. `running()` says whether
    the VM still runs. Returns "clean", or why the counters are not from a
    clean halt (the cell records it: host.halt)."""
    while "halted" not in console.seen:
        if not running():
            console.poll()
            if "halted" in console.seen:
                break
            return "QEMU ended before the guest's halt line; the device model's counters " \
                   "were not read after a clean halt"
        if time.monotonic() > until:
            log.warning("the guest did not halt within %.0f s of its results; the device "
                        "model's counters may include its shutdown or not", HALT_GRACE_S)
            return (f"no halt within {HALT_GRACE_S:.0f} s of its results: the device model's "
                    "counters may include the guest's shutdown or not")
        time.sleep(POLL_S)
        console.poll()
    return "clean"


def settled_vcpu_clocks(read, halt: str | None) -> dict | None:
    """QEMU's vcpu-clocks figures once no vCPU can run (qemu-patches/0037):
    they grow while any vCPU runs, and the guest goes on after its halt line
    (Linux's machine_halt() stops the other CPUs, then its own), so a read
    at that line would get as far as the host's speed let the guest. After
    a clean halt `read()` is repeated until vcpus_runnable is 0, for up to
    HALT_GRACE_S; otherwise (halt says why the guest did not halt) it is
    read once. A figure read with vCPUs still runnable keeps its non-zero
    vcpus_runnable, so the cell shows that it is not final."""
    until = time.monotonic() + HALT_GRACE_S
    while True:
        clocks = read()
        if clocks is None or clocks["vcpus_runnable"] == 0 or halt != "clean":
            return clocks
        if time.monotonic() >= until:
            log.warning("%d vCPUs could still run %.0f s after the guest's halt: the vCPU "
                        "clocks' figures are not final", clocks["vcpus_runnable"], HALT_GRACE_S)
            return clocks
        time.sleep(POLL_S)


class ConsoleWatch:
    """Notes the host's monotonic time at which each of the guest init's
    marker lines first appears in the console log (read incrementally)."""

    MARKERS = {"blklab: workload start": "workload_start",
               "blklab: workload end": "workload_end",
               # The kernel's last line of `halt -f`, after its drivers'
               # shutdown (NVMe controller shutdown, disk cache flush).
               "reboot: System halted": "halted"}

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.tail = b""
        self.seen: dict[str, float] = {}

    def poll(self) -> None:
        if len(self.seen) == len(self.MARKERS):
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except (FileNotFoundError, PermissionError):
            return
        if not chunk:
            return
        now = time.monotonic()
        self.offset += len(chunk)
        lines = (self.tail + chunk).split(b"\n")
        self.tail = lines.pop()
        for line in lines:
            text = line.decode(errors="replace")
            for marker, name in self.MARKERS.items():
                if marker in text and name not in self.seen:
                    self.seen[name] = now

    def workload_seconds(self) -> float | None:
        s = self.seen
        if "workload_start" in s and "workload_end" in s:
            return round(s["workload_end"] - s["workload_start"], 3)
        return None


class ResultsWatch:
    """Tells when the results file holds the guest's BLKLAB-END line,
    parsing it again only when it has grown."""

    def __init__(self, path: Path):
        self.path = path
        self.size = -1

    def finished(self) -> bool:
        from blklab import channel

        try:
            size = self.path.stat().st_size
        except (FileNotFoundError, PermissionError):
            return False
        if size == self.size:
            return False
        self.size = size
        try:
            blob = self.path.read_bytes()
        except (FileNotFoundError, PermissionError):
            return False
        return channel.parse(blob).status is not None


# QOM properties blklab reads as JSON when a cell ends: (QOM path, property,
# what it is, for messages).
DEVICE_COUNTERS = (f"/machine/peripheral/{DISK_ID}", COUNTERS_PROPERTY,
                   "the device model's counters")
# How far apart the vCPUs' own clocks ran and how late interrupts found
# their vCPU, under -icount parallel=on (qemu-patches/0033).
VCPU_CLOCKS = ("/machine", "vcpu-clocks", "the vCPU clocks' figures")


def parse_counters(reply: dict, what: str = DEVICE_COUNTERS[2]) -> dict | None:
    """A JSON object out of a qom-get reply ({"return": "<JSON text>"})."""
    if "return" not in reply:
        log.warning("reading %s: %s", what, reply.get("error"))
        return None
    try:
        value = json.loads(reply["return"])
    except (TypeError, ValueError) as e:
        log.warning("%s are not JSON: %s", what, e)
        return None
    return value if isinstance(value, dict) else None


def qmp_command(sock_path: Path, command: str, arguments: dict | None = None,
                timeout_s: float = 10.0) -> dict:
    """Run one QMP command on a QEMU's monitor socket and return its reply."""
    deadline = time.monotonic() + timeout_s
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(str(sock_path))
        f = s.makefile("rwb")

        def read() -> dict:
            while time.monotonic() < deadline:
                line = f.readline()
                if not line:
                    raise ConnectionError("QMP socket closed")
                msg = json.loads(line)
                if "event" not in msg:
                    return msg
            raise TimeoutError("QMP reply timed out")

        def send(cmd: str, args: dict | None = None) -> dict:
            msg: dict = {"execute": cmd}
            if args:
                msg["arguments"] = args
            f.write(json.dumps(msg).encode() + b"\n")
            f.flush()
            return read()

        read()  # greeting
        send("qmp_capabilities")
        return send(command, arguments)
