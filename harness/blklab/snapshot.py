"""Guests booted once, saved at their job point, and restored for each cell.

A cell's guest boots as far as it can without its job and then reaches its
job point (guest-images/init, workload/jobpoint.cc): the QEMU device
blklab-jobpoint (qemu-patches/0046) stops the VM at that instruction. Up to
there nothing depends on the cell's job, scheduler, tunables, device model
profile or seed: only on the QEMU build, the image, the machine and the
shape of its devices, which is what a snapshot's inputs hold. So the first
cell of a guest boots it with the job point held, saves it there (QMP
`migrate` to a file while the VM is stopped, so the saved bytes do not
depend on when the host got there) and every cell of that guest starts from
the file (-incoming), its job given by fw_cfg.

A snapshot lives in the cache under the hash of its inputs, beside the
inputs themselves (inputs.json) and the console up to the job point. A
snapshot whose recorded inputs are not a cell's is refused with what
differs; QEMU refuses one whose devices are not the cell's.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from blklab import channel, paths
from blklab.errors import BlklabError, VMError
from blklab.vm import JOBPOINT_ID, POLL_S, VMConfig, qmp_command

log = logging.getLogger(__name__)

# Bumped when what a snapshot holds or how it is made changes.
SNAPSHOT_FORMAT = 1
STATE = "state"  # the migration stream
INPUTS = "inputs.json"
CONSOLE = "console.log"  # the guest's console up to its job point
NO_JOB = "no-job.cpio"  # the empty job file of the QEMU that saves the guest

# Placeholders for what differs between the cells of one guest and is not
# part of its boot (paths into each cell's scratch directory).
_BOOT_PATHS = {"workdir": "/cell", "kernel": "/image/vmlinux", "initrd": "/image/initrd",
               "qmp_path": "/cell/qmp.sock"}


class SnapshotError(BlklabError):
    """A guest could not be saved at its job point, or a saved one does not
    match the cell that would start from it."""


@dataclass(frozen=True)
class Snapshot:
    key: str
    dir: Path
    made: bool  # by this call, rather than found in the cache

    @property
    def state(self) -> Path:
        return self.dir / STATE

    def console(self) -> bytes:
        try:
            return (self.dir / CONSOLE).read_bytes()
        except FileNotFoundError:
            return b""


_qemu_ids: dict[tuple[str, int, int], str] = {}


def qemu_id(qemu: Path) -> str:
    """The sha256 of the QEMU binary (cached per path, size and mtime)."""
    st = qemu.stat()
    k = (str(qemu), st.st_size, st.st_mtime_ns)
    if k not in _qemu_ids:
        h = hashlib.sha256()
        with open(qemu, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _qemu_ids[k] = h.hexdigest()
    return _qemu_ids[k]


def boot_config(config: VMConfig, workdir: Path) -> VMConfig:
    """`config` as the QEMU that boots the guest to its job point and holds
    it there: an empty job (the firmware reads the fw_cfg directory as it
    reads a cell's, which has the job's file), no trace, nothing restored."""
    return dataclasses.replace(config, workdir=workdir, job_path=workdir / NO_JOB,
                               trace_path=None, incoming=None, hold_at_job_point=True,
                               qmp_path=None)


def inputs_of(config: VMConfig, image_hash: str, fio: bool,
              apps_hash: str | None = None) -> dict[str, Any]:
    """What the guest's state at its job point depends on: the QEMU binary,
    the image, the initrd's parts, the applications' root (apps_hash, when
    its disk is attached) and the QEMU command line of its boot with every
    per-cell path and the device model's profile and seed replaced by
    placeholders and its state cache left out (the model is opened afresh
    at the job point)."""
    placeholders = {name: Path(p) for name, p in _BOOT_PATHS.items()}
    if config.backing_path is not None:
        placeholders["backing_path"] = Path("/cell/disk.raw")
    if config.profile_path is not None:
        placeholders["profile_path"] = Path("/cell/profile.toml")
    if config.apps_path is not None:
        placeholders["apps_path"] = Path("/apps/apps.squashfs")
        placeholders["apps_profile_path"] = Path("/apps/profile.toml")
    boot = dataclasses.replace(boot_config(config, placeholders.pop("workdir")),
                               devmodel_seed=0, devmodel_state_cache=None, **placeholders)
    cmdline = boot.cmdline()
    parts = ["initramfs.cpio"] + (["fio.cpio"] if fio else []) + (
        ["apps.cpio"] if config.apps_path is not None else [])
    inputs = {
        "format": SNAPSHOT_FORMAT,
        "qemu_sha256": qemu_id(config.qemu),
        "image": image_hash,
        "initrd": " + ".join(parts),
        "qemu_cmdline": ["qemu-system-x86_64"] + cmdline[1:],
    }
    if config.apps_path is not None:  # only then, so other guests keep their keys
        inputs["apps"] = apps_hash
    return inputs


def key_of(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def snapshots_dir() -> Path:
    return paths.cache_dir() / "snapshots"


def differences(saved: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs between a snapshot's recorded inputs and a cell's, one
    line per input; for the command line, the arguments that differ."""
    out = []
    for name in sorted(set(saved) | set(wanted)):
        a, b = saved.get(name), wanted.get(name)
        if a == b:
            continue
        if name == "qemu_cmdline" and isinstance(a, list) and isinstance(b, list):
            only_saved = [x for x in a if x not in b]
            only_cell = [x for x in b if x not in a]
            if only_saved or only_cell:
                out.append(f"qemu_cmdline: the snapshot has {only_saved or 'nothing more'}, "
                           f"the cell {only_cell or 'nothing more'}")
            else:
                out.append("qemu_cmdline: the same arguments in another order")
        else:
            out.append(f"{name}: the snapshot has {a!r}, the cell {b!r}")
    return out


def check(snap_dir: Path, inputs: dict[str, Any]) -> None:
    """Raises SnapshotError naming what differs if the snapshot in
    `snap_dir` was not made from `inputs`, or is incomplete."""
    try:
        saved = json.loads((snap_dir / INPUTS).read_text())
    except (OSError, ValueError) as e:
        raise SnapshotError(f"snapshot {snap_dir}: {INPUTS} unreadable ({e}); remove the "
                            f"directory to make it again") from e
    diff = differences(saved, inputs) if isinstance(saved, dict) else [f"{INPUTS} is not an object"]
    if diff:
        raise SnapshotError(f"snapshot {snap_dir} does not match this cell's inputs: "
                            + "; ".join(diff))
    if not (snap_dir / STATE).is_file():
        raise SnapshotError(f"snapshot {snap_dir}: {STATE} is missing; remove the directory "
                            f"to make it again")


def ensure(config: VMConfig, inputs: dict[str, Any], timeout_s: float,
           make_vm: Callable[[VMConfig], Any]) -> Snapshot:
    """The snapshot of `config`'s guest at its job point: found in the cache
    (checked against `inputs`) or made now by booting it. One process makes
    a snapshot at a time; others wait for it (a lock beside it)."""
    key = key_of(inputs)
    root = snapshots_dir()
    root.mkdir(parents=True, exist_ok=True)
    snap_dir = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if snap_dir.exists():
            check(snap_dir, inputs)
            os.utime(snap_dir)  # recently used
            return Snapshot(key, snap_dir, made=False)
        tmp = root / f"{key}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            (tmp / NO_JOB).write_bytes(b"")
            _make(boot_config(config, tmp), tmp / STATE, timeout_s, make_vm)
            (tmp / INPUTS).write_text(json.dumps(inputs, indent=1, sort_keys=True) + "\n")
            for name in ("results.bin", "cmdline.txt", NO_JOB):
                (tmp / name).unlink(missing_ok=True)
            os.rename(tmp, snap_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    prune(root, keep=snap_dir)
    return Snapshot(key, snap_dir, made=True)


# The most the snapshots in the cache may take, in GiB (BLKLAB_SNAPSHOT_CACHE_GIB),
# and how long a snapshot stays after its last use whatever the total.
DEFAULT_CACHE_GIB = 20.0
KEEP_RECENT_S = 3600.0


def prune(root: Path, keep: Path, now: float | None = None) -> list[Path]:
    """Remove the least recently used snapshots until the cache is within
    its size (a snapshot's directory time is its last use), never `keep`
    nor one used in the last KEEP_RECENT_S (a cell may be about to start
    from it). Returns the removed directories."""
    limit = float(os.environ.get("BLKLAB_SNAPSHOT_CACHE_GIB", DEFAULT_CACHE_GIB)) * (1 << 30)
    now = time.time() if now is None else now
    entries = []
    for d in root.iterdir():
        if d.is_dir() and (d / INPUTS).exists():
            size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
            entries.append((d.stat().st_mtime, d, size))
    total = sum(size for _, _, size in entries)
    removed = []
    for mtime, d, size in sorted(entries):
        if total <= limit:
            break
        if d == keep or now - mtime < KEEP_RECENT_S:
            continue
        shutil.rmtree(d, ignore_errors=True)
        (root / f"{d.name}.lock").unlink(missing_ok=True)
        total -= size
        removed.append(d)
        log.info("snapshot cache: removed %s (last used %.0f s ago)", d.name, now - mtime)
    return removed


def _make(config: VMConfig, state: Path, timeout_s: float,
          make_vm: Callable[[VMConfig], Any]) -> None:
    """Boot `config` (held at its job point), wait until the guest has
    reached it and the VM has stopped, save it to `state`, end QEMU."""
    deadline = time.monotonic() + timeout_s
    vm = make_vm(config)
    with vm:
        assert config.qmp_path is not None

        def qmp(command: str, arguments: dict | None = None) -> dict:
            reply = qmp_command(config.qmp_path, command, arguments)
            if "error" in reply:
                raise SnapshotError(f"saving the guest at its job point: QMP {command}: "
                                    f"{reply['error'].get('desc', reply['error'])}")
            return reply["return"]

        def waiting(what: str) -> None:
            if vm.proc is not None and vm.proc.poll() is not None:
                raise VMError(f"QEMU exited with status {vm.proc.returncode} before {what}: "
                              f"{vm.read_stderr().strip()}", vm.cmd, vm.console())
            data = channel.parse(config.results_path.read_bytes()) \
                if config.results_path.exists() else channel.ChannelData()
            if data.status is not None:
                raise SnapshotError(f"the guest failed before its job point: {data.reason} "
                                    f"(console: {config.console_log})")
            if time.monotonic() > deadline:
                raise VMError(f"the guest did not reach its job point within {timeout_s:g} s",
                              vm.cmd, vm.console())
            time.sleep(POLL_S)

        while True:
            try:
                if qmp("qom-get", {"path": f"/machine/peripheral/{JOBPOINT_ID}",
                                   "property": "reached"}) is True \
                        and qmp("query-status")["status"] == "paused":
                    break
            except (OSError, ValueError):
                pass  # the monitor is not up yet
            waiting("the guest reached its job point")
        qmp("migrate", {"uri": f"file:{state}"})
        while True:
            status = qmp("query-migrate").get("status")
            if status == "completed":
                break
            if status in ("failed", "cancelled"):
                error = qmp("query-migrate").get("error-desc", status)
                raise SnapshotError(f"saving the guest at its job point failed: {error}")
            waiting("the guest was saved")
