"""Running one cell: a fresh VM with the cell's job bundle, then its result.

A cell fails (status "failed", with the reason, the console log and the
QEMU command line kept) when QEMU fails, the guest panics or times out, the
guest reports a failure (missing device, a tunable the kernel refuses, a
workload error), or what is in effect differs from what was asked. A cell
never fails silently.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import (appjobs, blktrace, channel, device_faults, model_timing, notes, observe, paths,
                    snapshot, udev)
from blklab.bundle import JobBundle
from blklab.filesystem import parse_guest_record
from blklab.errors import BlklabError, VMError
from blklab.results import (CellResult, disk_delta, parse_btt, parse_diskstat, parse_kv,
                            summarize)
from blklab.scenario import PROFILE_DIR, Cell, Scenario
from blklab.vm import APPS_PROFILE, VM, VMConfig, guest_initrd, image_kernel

log = logging.getLogger(__name__)


@dataclass
class CellContext:
    """Everything a cell needs besides the scenario."""

    qemu: Path
    image_dir: Path
    image: dict[str, Any]  # image.json of the guest image
    accel: str
    mode: str
    backend: str = "direct"  # "direct" (QEMU as a child process) or "libvirt"
    libvirt_uri: str = "qemu:///system"
    qemu_cache_key: str = ""  # of the QEMU build, so that cluster workers can match it
    # Why the run has another accelerator than it would have chosen (the
    # KVM probe failed); "" when it has the one asked for or probed.
    accel_fallback: str = ""

    def make_vm(self, config: VMConfig):
        if self.backend == "libvirt":
            from blklab.libvirt_vm import LibvirtVM

            return LibvirtVM(config, self.libvirt_uri)
        return VM(config)


def cell_json_path(run_dir: Path, cell_id: str) -> Path:
    return run_dir / f"cell-{cell_id}.json"


def scheduler_in_effect(text: str) -> str | None:
    """'mq-deadline [kyber] bfq none' -> 'kyber'."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def request_of(cell: Cell, scenario: Scenario, ctx: CellContext,
               bundle: JobBundle) -> dict[str, Any]:
    d = cell.device
    device: dict[str, Any] = {"name": d.name, "kind": d.kind, "backing": d.backing,
                              "size_bytes": d.size_bytes, "rotation_rate": d.rotation_rate,
                              "mqes": d.mqes, "ncq_depth": d.ncq_depth}
    if d.kind == "virtio-blk":
        device |= {"num_queues": d.num_queues, "queue_depth": d.queue_depth,
                   "queue_size": d.queue_size}
    if d.kind == "nvme":
        device["shadow_doorbells"] = d.shadow_doorbells
    if d.profile is not None:
        device["profile"] = {"name": d.profile.name, "sha256": d.profile.sha256,
                             "seed": devmodel_seed(cell)}
        if d.profile.precondition:
            device["profile"]["precondition"] = d.profile.precondition
    return {
        "faults": [f.to_json() for f in faults_of(cell, scenario)],
        "scenario": scenario.name,
        "device": device,
        "scheduler": cell.scheduler,
        "tunables": dict(cell.tunables()),
        "seed": cell.seed,
        "repeat": cell.repeat,
        "workload": scenario.workload,
        "workload_args": list(bundle.workload_args),
        "mode": ctx.mode,
        "accel": ctx.accel,
        "vcpus": scenario.guest.vcpus,
        "memory_mib": scenario.guest.memory_mib,
        "cpu_rate": scenario.guest.cpu_rate,
        "vcpu_clocks": scenario.guest.vcpu_clocks,
        "vcpu_quantum_ns": scenario.guest.vcpu_quantum_ns,
        "pause_ns": scenario.guest.pause_ns,
        "cpu": scenario.guest.cpu,
        "irq_ns": scenario.guest.irq_ns,
        "syscall_ns": scenario.guest.syscall_ns,
        "wake_ns": scenario.guest.wake_ns,
        "nvme_poll_queues": scenario.guest.nvme_poll_queues,
        "kernel_flavour": scenario.guest.flavour,
        "kernel": scenario.guest.kernel,
    } | ({"apps": True} if scenario.guest.apps else {}) | (
        {"filesystem": scenario.filesystem.to_json() | {"mkfs_args": list(bundle.mkfs_args)}}
        if scenario.filesystem else {}) | ({"vm": dict(scenario.vm)} if scenario.vm else {}) | (
        {"udev": scenario.udev_rules.to_json()} if scenario.udev_rules else {}) | (
        {"observe": [o.to_json() for o in scenario.observers]} if scenario.observers else {})


def faults_of(cell: Cell, scenario: Scenario) -> list[device_faults.DeviceFault]:
    """The scenario's [[fault]]s on this cell's device, in the order given
    (the order of the model's counters)."""
    return [f for f in scenario.faults if f.device == cell.device.name]


def bundle_of(cell: Cell, scenario: Scenario) -> JobBundle:
    """What the cell's guest is told to do."""
    return JobBundle.for_cell(cell, scenario.workload, scenario.jobs, scenario.blktrace,
                              scenario.guest_fault, scenario.capture, apps=scenario.guest.apps,
                              device_faults=bool(faults_of(cell, scenario)),
                              fs=scenario.filesystem, vm=scenario.vm,
                              udev_rules=scenario.udev_rules, observers=scenario.observers,
                              app_jobs=bool(scenario.app_jobs))


def devmodel_seed(cell: Cell) -> int:
    """The device's own seed if the scenario gives one, else the cell's."""
    return cell.device.seed if cell.device.seed is not None else cell.seed


def failed_result(cell: Cell, scenario: Scenario, ctx: CellContext, error: str) -> CellResult:
    bundle = bundle_of(cell, scenario)
    return CellResult(cell_id=cell.id, status="failed", error=error,
                      request=request_of(cell, scenario, ctx, bundle), image=ctx.image,
                      host={"qemu_cmdline": [], "wall_seconds": 0.0})


def run_cell(cell: Cell, scenario: Scenario, ctx: CellContext
             ) -> tuple[CellResult, dict[str, bytes]]:
    """Run one cell in a private scratch directory (the initramfs copy, the
    backing file, the channel) and return its result and the files to keep
    beside it, keyed by their path relative to the run directory."""
    scratch_root = paths.cache_dir() / "scratch"
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="cell-", dir=scratch_root))
    try:
        return _run_cell_in(cell, scenario, ctx, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_cell_in(cell: Cell, scenario: Scenario, ctx: CellContext, scratch: Path
                 ) -> tuple[CellResult, dict[str, bytes]]:
    bundle = bundle_of(cell, scenario)
    fio = scenario.workload == "fio"
    apps = scenario.guest.apps
    initrd = scratch / "initrd.cpio"
    guest_initrd(initrd, ctx.image_dir, fio=fio, apps=apps)
    job = scratch / "job.cpio"
    job.write_bytes(bundle.cpio())
    backing = None
    if cell.device.backing == "file":
        backing = scratch / "disk.raw"
        with open(backing, "wb") as f:
            f.truncate(cell.device.size_bytes)
    profile_path = None
    if cell.device.profile is not None:
        # The profile's bytes travel with the scenario, so a remote worker
        # runs exactly what the submitting host validated.
        profile_path = scratch / "profile.toml"
        profile_path.write_text(cell.device.profile.text)

    config = VMConfig(
        qemu=ctx.qemu, kernel=image_kernel(ctx.image_dir), initrd=initrd, workdir=scratch,
        vcpus=scenario.guest.vcpus, memory_mib=scenario.guest.memory_mib, accel=ctx.accel,
        mode=ctx.mode, cpu_rate=scenario.guest.cpu_rate_text,
        vcpu_clocks=scenario.guest.vcpu_clocks or "shared",
        vcpu_quantum_ns=scenario.guest.vcpu_quantum_ns or 0,
        pause_ns=scenario.guest.pause_ns or 0, irq_ns=scenario.guest.irq_ns or 0,
        syscall_ns=scenario.guest.syscall_ns or 0, wake_ns=scenario.guest.wake_ns or 0,
        device=cell.device,
        backing_path=backing, profile_path=profile_path, devmodel_seed=devmodel_seed(cell),
        devmodel_state_cache=paths.devmodel_state_dir(),
        nvme_poll_queues=scenario.guest.nvme_poll_queues, job_path=job)
    apps_image: dict[str, Any] = {}
    if apps:
        apps_dir = paths.apps_dir()
        apps_image = json.loads((apps_dir / "apps.json").read_text())
        config.apps_path = apps_dir / "apps.squashfs"
        config.apps_profile_path = scratch / "apps-profile.toml"
        shutil.copyfile(PROFILE_DIR / f"{APPS_PROFILE}.toml", config.apps_profile_path)
    result = CellResult(cell_id=cell.id, status="failed", error=None,
                        request=request_of(cell, scenario, ctx, bundle), image=ctx.image)
    if apps:
        result.host["apps_image"] = apps_image
    vm_error = None
    started = time.monotonic()
    vm = None
    snap = None
    cold_why = cold_boot_reason(scenario, ctx)
    result.host["qemu_cmdline"] = []  # until a QEMU starts
    try:
        if cold_why is None:
            inputs = snapshot.inputs_of(config, ctx.image.get("hash", ""), fio,
                                        apps_image.get("hash"))
            result.host["boot"] = {"from": "snapshot", "snapshot": snapshot.key_of(inputs)}
            snap = snapshot.ensure(config, inputs, scenario.timeout_s, ctx.make_vm)
            config.incoming = snap.state
            result.host["boot"] |= {"made_by_this_cell": snap.made,
                                    "seconds_before_restore": round(time.monotonic() - started, 3)}
        else:
            result.host["boot"] = {"from": "cold", "why": cold_why}
        vm = ctx.make_vm(config)
        launched = time.monotonic()
        result.host["qemu_cmdline"] = vm.cmd
        result.host["backend"] = ctx.backend
        if ctx.accel_fallback:
            result.host["accel_fallback"] = ctx.accel_fallback
        with vm:
            vm.wait(scenario.timeout_s)
            if vm.halt is not None:
                result.host["halt"] = vm.halt
            if config.parallel_vcpu_clocks:
                result.vcpu_clocks = vm.vcpu_clocks()
            if cell.device.profile is not None:
                result.devmodel = vm.device_counters()
                result.model_timing = model_timing.assess(result.devmodel)
                if faults_of(cell, scenario):
                    result.faults = device_faults.fired(faults_of(cell, scenario),
                                                        result.devmodel)
    except BlklabError as e:
        vm_error = str(e)
    finally:
        result.host["wall_seconds"] = round(time.monotonic() - started, 3)
        if vm is not None:
            vm.console_watch.poll()
            result.host["workload_wall_seconds"] = vm.console_watch.workload_seconds()
            if "workload_start" in vm.console_watch.seen:
                # From QEMU's start (after any snapshot was made) to the
                # guest's "workload start" line, as the harness saw it
                # (to POLL_S).
                result.host["seconds_to_workload"] = round(
                    vm.console_watch.seen["workload_start"] - launched, 3)

    try:
        blob = config.results_path.read_bytes()
    except FileNotFoundError:
        blob = b""
    data = channel.parse(blob)
    _fill_from_guest(result, data)
    if (result.btt or {}).get("time_reversals"):
        log.warning("cell %s: %d blktrace events are stamped earlier than the event before them "
                    "on their CPU: the guest's clock went back, and btt pairs events by time",
                    cell.id, result.btt["time_reversals"])
    if scenario.workload == "command" and data.status == "ok":
        # What the command left in its output directory, kept beside the cell.
        result.workload = {"command": {"exit_code": 0, "files": sorted(
            name[len(COMMAND_FILE_PREFIX):] for name in data.files
            if name.startswith(COMMAND_FILE_PREFIX))}}
        if scenario.app_jobs:
            # The applications' own results, beside the block layer's.
            result.workload["apps"] = appjobs.results(scenario.app_jobs, data.files,
                                                      COMMAND_FILE_PREFIX)

    if scenario.app_jobs and data.files:
        # The servers' and benchmarks' error lines, also when the command
        # failed (a server that aborted, a benchmark that stopped).
        result.guest["app_errors"] = appjobs.error_lines(scenario.app_jobs, data.files,
                                                         COMMAND_FILE_PREFIX)

    keep: dict[str, bytes] = {}
    rel_dir = f"cells/{cell.id}"
    for name in ("console.log", "cmdline.txt", "domain.xml"):
        try:
            keep[f"{rel_dir}/{name}"] = (scratch / name).read_bytes()
        except FileNotFoundError:
            pass
    if snap is not None:
        # The guest's console from its boot to its job point, then this cell's.
        keep[f"{rel_dir}/console.log"] = snap.console() + keep.get(f"{rel_dir}/console.log", b"")
    # Usually empty: kept when QEMU said something (a warning, a sanitizer
    # report in a sanitizer build).
    stderr = config.stderr_log.read_bytes() if config.stderr_log.exists() else b""
    if stderr:
        keep[f"{rel_dir}/{config.stderr_log.name}"] = stderr
    result.workload_notes = (
        notes.blkgen_notes(data.files.get("workload.stderr", b"").decode(errors="replace"))
        if scenario.workload == "blkgen" else notes.fio_notes(result.workload)
        if scenario.workload == "fio" else [])
    for n in result.workload_notes:
        log.warning("cell %s: %s: %s", cell.id, scenario.workload, n)
    for name in ("workload.stderr", "dmesg.txt", "btt.txt", "blktrace.log", "blktrace.bin",
                 "switches.txt", "capture.txt"):
        if data.files.get(name):
            keep[f"{rel_dir}/{name}"] = data.files[name]
    for name, blob_ in data.files.items():
        if name.startswith(observe.FILE_PREFIX):  # kept even when empty
            keep[f"{rel_dir}/{name}"] = blob_
    if scenario.workload == "command":
        for name, blob_ in data.files.items():
            if name == "workload.stdout" or name.startswith(COMMAND_FILE_PREFIX):
                keep[f"{rel_dir}/{name.replace(COMMAND_FILE_PREFIX, 'command/', 1)}"] = blob_
    result.files = {KEPT_FILE_KEYS.get(rel.rsplit("/", 1)[1], rel.rsplit("/", 1)[1]): rel
                    for rel in keep}
    console = keep.get(f"{rel_dir}/console.log", b"").decode(errors="replace")
    # A guest that logged a kernel WARNING or BUG may have run on corrupted
    # state even if its workload finished: say so on the cell.
    result.guest["kernel_warnings"] = kernel_warnings(console)
    # What the kernel said about a failing device (a media_error fault's
    # I/O errors; timeouts and resets): its lines, in order.
    result.guest["kernel_errors"] = device_faults.kernel_error_lines(console)

    result.error = _failure(cell, result, data, vm_error, console)
    result.status = "failed" if result.error else "ok"
    if result.in_effect:
        result.in_effect["adjusted"] = adjusted_tunables(cell, result.in_effect)
        for a in result.in_effect["adjusted"]:
            log.warning("cell %s: %s=%s was written, the kernel has %s", cell.id,
                        a["tunable"], a["asked"], a["in_effect"])
    if result.error:
        log.warning("cell %s failed: %s", cell.id, result.error)
    return result, keep


def cold_boot_reason(scenario: Scenario, ctx: CellContext) -> str | None:
    """Why the cell boots its guest rather than starting from the guest
    saved at its job point (blklab.snapshot); None if it starts from there."""
    if scenario.guest.boot == "cold":
        return "[guest] boot = \"cold\""
    if ctx.mode != "deterministic":
        return ("realtime mode: a guest saved at its job point is restored only in "
                "deterministic mode, where its state is the same on every host")
    if ctx.backend != "direct":
        return f"the {ctx.backend} backend starts its own QEMU; it boots every cell"
    return None


def adjusted_tunables(cell: Cell, in_effect: dict[str, Any]) -> list[dict[str, str]]:
    """The tunables the guest wrote without an error but reads back with
    another value: the kernel adjusted them (queue_requests_store() raises
    nr_requests below BLKDEV_MIN_RQ to 4, for example). The cell still runs
    with what the kernel has; its id keeps the value asked for."""
    out = []
    for path, asked in cell.tunables():
        if path.startswith("iosched/"):
            now = in_effect.get("iosched", {}).get(path[len("iosched/"):])
        else:
            now = in_effect.get("queue", {}).get(path)
        if now is not None and now.strip() != str(asked).strip():
            out.append({"tunable": path, "asked": str(asked), "in_effect": now.strip()})
    return out


def kernel_warnings(console: str) -> list[str]:
    """The guest kernel's WARNING: and BUG: lines, without their timestamps."""
    return [line.split("] ", 1)[-1].strip() for line in console.splitlines()
            if "WARNING: CPU:" in line or "BUG:" in line]


# The guest sends a command job's own output files (its /out) under this
# prefix; the cell keeps them under cells/<id>/command/.
COMMAND_FILE_PREFIX = "command-"
# Names under which a cell's JSON refers to its kept files.
KEPT_FILE_KEYS = {"console.log": "console_log", "cmdline.txt": "cmdline",
                  "domain.xml": "domain_xml", "qemu-stderr.log": "qemu_stderr"}


def _fill_from_guest(result: CellResult, data: channel.ChannelData) -> None:
    f = data.files
    if "guest.txt" in f:
        result.guest = parse_kv(f["guest.txt"].decode(errors="replace"))
    if "image.json" in f:
        try:
            result.guest["image"] = json.loads(f["image.json"])
        except ValueError:
            pass
    if "sysfs.txt" in f:
        kv = parse_kv(f["sysfs.txt"].decode(errors="replace"))
        result.in_effect = {
            "scheduler": scheduler_in_effect(kv.pop("scheduler", "")) or "",
            "iosched": {k[len("iosched/"):]: v for k, v in kv.items() if k.startswith("iosched/")},
            "queue": {k: v for k, v in kv.items() if not k.startswith("iosched/")},
        }
    if "device.txt" in f:
        result.guest["device"] = parse_kv(f["device.txt"].decode(errors="replace"))
    if "filesystem.txt" in f:
        result.guest["filesystem"] = parse_guest_record(f["filesystem.txt"].decode(
            errors="replace"))
    if "observe.txt" in f:
        result.guest["observe"] = observe.parse_guest_record(f["observe.txt"].decode(
            errors="replace"))
    if "udev.txt" in f:
        result.guest["udev"] = udev.parse_guest_record(f["udev.txt"].decode(errors="replace"))
    if "vm.txt" in f:
        result.guest["vm"] = {k: int(v) if v.lstrip("-").isdigit() else v
                              for k, v in parse_kv(f["vm.txt"].decode(errors="replace")).items()}
    if "stat_before.txt" in f and "stat_after.txt" in f:
        elapsed = None
        if "uptime_before.txt" in f and "uptime_after.txt" in f:
            t0 = float(f["uptime_before.txt"].split()[0])
            t1 = float(f["uptime_after.txt"].split()[0])
            elapsed = round((t1 - t0) * 1000.0, 3)
        result.disk_stats = disk_delta(parse_diskstat(f["stat_before.txt"].decode()),
                                       parse_diskstat(f["stat_after.txt"].decode()), elapsed)
    if "btt.txt" in f:
        result.btt = parse_btt(f["btt.txt"].decode(errors="replace"))
        if f.get("blktrace.bin"):  # kept up to 32 MiB (guest-images/init)
            try:
                result.btt["time_reversals"] = blktrace.time_reversals(
                    blktrace.blkparse_bytes(f["blktrace.bin"], "the cell's blktrace.bin"))
            except BlklabError as e:  # the figures stand; their check is missing
                log.warning("%s", e)
    if "workload.json" in f:
        try:
            result.workload = json.loads(f["workload.json"])
            result.summary = summarize(result.workload)
        except ValueError as e:
            result.workload = None
            result.guest["workload_json_error"] = str(e)


def _failure(cell: Cell, result: CellResult, data: channel.ChannelData,
             vm_error: str | None, console: str) -> str | None:
    """The reason the cell failed, or None."""
    if data.status == "fail":
        refused = appjobs.refused_setting(data.files, COMMAND_FILE_PREFIX)
        if refused is not None:
            key, line = refused.split(": ", 1)
            return (f"{key}: the server refused this setting at its start: {line} "
                    f"(guest: {data.reason})")
        return f"guest: {data.reason}"
    panic = next((line.strip() for line in console.splitlines()
                  if "Kernel panic - not syncing" in line), None)
    if panic is not None and data.status != "ok":
        return f"guest kernel panic: {panic.split('] ', 1)[-1]}"
    if vm_error:
        return vm_error
    if data.status != "ok":
        if data.hello is None:
            return "guest never reached blklab's init (see the console log)"
        return "guest ended without reporting a result (see the console log)"
    if result.workload is None:
        return "guest reported success but sent no workload JSON"
    in_effect = result.in_effect.get("scheduler")
    if in_effect != cell.scheduler:
        return f"scheduler in effect is '{in_effect}', asked for '{cell.scheduler}'"
    if "command" in result.workload:  # its exit status is its verdict
        bad = next((a for a in result.workload.get("apps", []) if "error" in a), None)
        return None if bad is None else f"job '{bad['name']}' ({bad['app']}): {bad['error']}"
    if not any(row["total_ios"] for row in result.summary):
        return "the workload completed no I/O"
    if cell.device.profile is not None and result.devmodel is None:
        return "the device model's counters could not be read from QEMU"
    asked = [device_faults.DeviceFault(**f) for f in result.request.get("faults", [])]
    if (why := device_faults.failure(asked, result.devmodel)) is not None:
        return why
    return model_timing.failure(result.model_timing, result.request["mode"])
