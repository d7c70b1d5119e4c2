"""The job bundle: a small newc cpio appended to the guest initramfs.

The kernel unpacks concatenated cpio archives in order, so the bundle's
files appear under /job in the guest next to the image's own files. The
guest init (guest-images/init) documents what it reads from them. The
archive is deterministic: fixed inode numbers, mtime 0, owner root.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from blklab.filesystem import Filesystem, mkfs_args, uuid_of
from blklab.scenario import Cell, Job
from blklab.observe import Observer
from blklab.observe import bundle_files as observe_files
from blklab.udev import UdevRules

_MAGIC = b"070701"
_DIR = 0o040755
_FILE = 0o100644


def _entry(ino: int, name: str, mode: int, data: bytes = b"") -> bytes:
    encoded = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 2 if mode == _DIR else 1, 0, len(data), 0, 0, 0, 0,
              len(encoded), 0]
    header = _MAGIC + b"".join(b"%08X" % f for f in fields)
    out = header + encoded
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def cpio_newc(files: dict[str, bytes]) -> bytes:
    """A newc archive holding `files` (path -> content) and their parent
    directories, entries sorted by path."""
    dirs = set()
    for path in files:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    entries = sorted([(d, None) for d in dirs] + list(files.items()))
    out = b""
    for ino, (path, data) in enumerate(entries, start=1):
        out += _entry(ino, path, _DIR if data is None else _FILE, data or b"")
    out += _entry(0, "TRAILER!!!", 0)
    out += b"\0" * (-len(out) % 512)
    return out


@dataclass(frozen=True)
class JobBundle:
    """What one cell's guest is told to do."""

    cell_id: str
    device_kind: str
    scheduler: str
    workload: str  # "blkgen", "fio", "command" or "probe"
    tunables: tuple[tuple[str, str], ...]  # (path under queue/, value)
    workload_args: tuple[str, ...]
    blktrace: bool = False
    guest_fault: str = "none"  # scenario.guest_fault: a guest panic or hang on purpose
    # The cell's device has [[fault]]s: the guest marks the workload's start
    # (blklab-jobpoint --origin), from which they count.
    device_faults: bool = False
    # The guest writes these to queue/scheduler in turn, one every
    # switch_interval_ms, while the workload runs; () = no switching.
    switch_schedulers: tuple[str, ...] = ()
    switch_interval_ms: int = 0
    # Files the jobs bring (traces, a fio job file): (name under
    # /job/files/, bytes).
    attachments: tuple[tuple[str, bytes], ...] = ()
    replay: bool = False  # a job replays a trace onto the device under test
    capture: bool = False  # run tools/blklab-capture.sh beside the workload
    apps: bool = False  # mount the applications' root ([guest] apps)
    seed: int | None = None  # the cell's seed, given to a command job as BLKLAB_SEED
    # [filesystem]: its type, mkfs's arguments before the device and the
    # mount options; "" = the workload runs on the raw device.
    fs_type: str = ""
    mkfs_args: tuple[str, ...] = ()
    mount_options: str = ""
    vm: tuple[tuple[str, int], ...] = ()  # [vm]: /proc/sys/vm settings
    udev_rules: UdevRules | None = None  # [udev]: applied before the scheduler is set
    observers: tuple[Observer, ...] = ()  # [[observe]]: run beside the workload
    # The command is blklab's application script (blklab.appjobs): with
    # device faults, it sets their origin itself, at the measured run.
    app_jobs: bool = False

    @classmethod
    def for_cell(cls, cell: Cell, workload: str, jobs: list[Job],
                 blktrace: bool = False, guest_fault: str = "none",
                 capture: bool = False, apps: bool = False,
                 device_faults: bool = False, fs: Filesystem | None = None,
                 vm: tuple[tuple[str, int], ...] = (),
                 udev_rules: UdevRules | None = None,
                 observers: tuple[Observer, ...] = (),
                 app_jobs: bool = False) -> "JobBundle":
        args: list[str] = []
        # A job file's jobs get the cell's seed as a command-line global
        # (the file's own [global] randseed= overrides it); options after
        # the last --name would belong to that job.
        if any(job.fio_file is not None for job in jobs):
            args.append(f"--randseed={cell.seed}")
        for job in jobs:
            if job.fio_file is not None:
                continue
            args += job.args()
            if not any(k == "randseed" for k, _ in job.options):
                args.append(f"--randseed={cell.seed}")
        for job in jobs:
            if job.fio_file is not None:
                args += job.args()
        if workload == "fio":
            args.append("--eta=never")
        attachments = tuple((f.name, f.data) for job in jobs for f in job.files)
        seed = None
        if workload == "command":
            args = []
            attachments = tuple(("command.sh", job.command.encode()) for job in jobs
                                if job.command is not None)
            seed = cell.seed
        fs_args = {}
        if fs is not None:
            fs_args = {"fs_type": fs.type, "mount_options": fs.mount_options,
                       "mkfs_args": tuple(mkfs_args(fs, uuid_of(cell.seed)))}
        return cls(cell.id, cell.device.kind, cell.scheduler, workload,
                   tuple(cell.tunables()), tuple(args), blktrace, guest_fault, device_faults,
                   cell.switch_schedulers, cell.switch_interval_ms, attachments,
                   any(job.replays for job in jobs), capture, apps, seed, vm=vm,
                   udev_rules=udev_rules, observers=observers,
                   app_jobs=app_jobs and workload == "command", **fs_args)

    @classmethod
    def probe(cls) -> "JobBundle":
        return cls("probe", "", "", "probe", (), ())

    def files(self) -> dict[str, bytes]:
        env = {
            "BLKLAB_CELL": self.cell_id,
            "BLKLAB_DEVICE_KIND": self.device_kind,
            "BLKLAB_SCHEDULER": self.scheduler,
            "BLKLAB_WORKLOAD": self.workload,
            "BLKLAB_BLKTRACE": "1" if self.blktrace else "0",
            "BLKLAB_GUEST_FAULT": self.guest_fault,
        }
        if self.device_faults:  # only then, so other cells' bundles stay as they were
            env["BLKLAB_DEVICE_FAULTS"] = "1"
            if self.app_jobs:  # the script marks the origin at the measured run
                env["BLKLAB_FAULT_ORIGIN"] = "command"
        if self.replay:  # only then, so other cells' bundles stay as they were
            env["BLKLAB_REPLAY"] = "1"
        if self.capture:  # likewise
            env["BLKLAB_CAPTURE"] = "1"
        if self.apps:  # likewise
            env["BLKLAB_APPS"] = "1"
        if self.seed is not None:  # a command job's only
            env["BLKLAB_SEED"] = str(self.seed)
        if self.udev_rules is not None:  # likewise
            env["BLKLAB_UDEV_RULES"] = self.udev_rules.name
        if self.fs_type:  # likewise
            env["BLKLAB_FS"] = self.fs_type
            env["BLKLAB_FS_MOUNT_OPTIONS"] = self.mount_options
        if self.switch_schedulers:  # only then, so other cells' bundles stay as they were
            env["BLKLAB_SWITCH_SCHEDULERS"] = " ".join(self.switch_schedulers)
            env["BLKLAB_SWITCH_INTERVAL_MS"] = str(self.switch_interval_ms)
        for value in list(env.values()) + [v for t in self.tunables for v in t] + list(
                self.workload_args) + list(self.mkfs_args) + [self.mount_options]:
            if "\n" in value:
                raise ValueError(f"job bundle value spans lines: {value!r}")
        files = {
            "job/job.env": "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()).encode(),
            "job/tunables": "".join(f"{k} {v}\n" for k, v in self.tunables).encode(),
            "job/workload.args": "".join(f"{a}\n" for a in self.workload_args).encode(),
        }
        if self.fs_type:
            files["job/mkfs.args"] = "".join(f"{a}\n" for a in self.mkfs_args).encode()
        if self.udev_rules is not None:
            files[f"job/files/udev/{self.udev_rules.name}"] = self.udev_rules.data
        files |= observe_files(self.observers)
        if self.vm:
            files["job/vm"] = "".join(f"{k} {v}\n" for k, v in self.vm).encode()
        for name, data in self.attachments:
            files[f"job/files/{name}"] = data
        return files

    def cpio(self) -> bytes:
        return cpio_newc(self.files())
