"""What each scenario key means, for the generated reference
(docs/reference/scenario-keys.md, `blklab reference`).

Types, defaults, allowed values and integer bounds are not written here:
the reference takes them from the validator itself (blklab.reference runs
it with a recorder on scenario.py's _Reader). This table adds what the
validator cannot say: the unit and one line of meaning. Where a validator
checks a range by hand rather than through _Reader.integer, `range` names it
from the same constants the check uses; where a default depends on the file
(the scenario's name, the CPU preset's values), `default` says so.

A key is "section.key"; an array of tables ([[device]]) is named without an
index; <attribute>, <scheduler>, <server> and <option> stand for names the
validator accepts by pattern. harness/tests/test_reference.py fails when
the validator reads a key that is not here, or this names a key the
validator does not read.
"""

from __future__ import annotations

from typing import NamedTuple

from blklab import cpus, device_faults


class Doc(NamedTuple):
    unit: str
    meaning: str
    default: str | None = None  # when the validator's default depends on the file
    range: str | None = None  # when the validator checks the range by hand


_MS = f"0..{device_faults.MAX_MS:.0f}"
_EVENT = f"0..{cpus.EVENT_MAX_NS}"

KEYS: dict[str, Doc] = {
    # [scenario]
    "scenario.name": Doc("", "the scenario's name in results/ and reports",
                         default="the file name without .toml",
                         range="1-64 of letters, digits, _ . -"),
    "scenario.description": Doc("", "one paragraph shown in the report"),
    "scenario.schedulers": Doc("", "the blk-mq schedulers to run, one cell each",
                               range="none, mq-deadline, kyber, bfq; each once"),
    "scenario.repeats": Doc("count", "runs of every cell per seed"),
    "scenario.seeds": Doc("", "each job's randseed (unless the job sets one) and the device "
                          "model's seed; one cell per seed", range="integers in [0, 2^32)"),
    "scenario.mode": Doc("", "deterministic (icount: same inputs, same bytes) or realtime "
                         "(host-timed)"),
    "scenario.timeout_s": Doc("s", "host time one cell may take before it is stopped"),
    "scenario.workload": Doc("", "what runs the jobs: blkgen, fio, or a shell command in the "
                             "applications' root"),
    "scenario.blktrace": Doc("", "trace each cell's workload; btt's figures go into the cell"),
    "scenario.capture": Doc("", "run tools/blklab-capture.sh in the guest beside the workload"),
    "scenario.guest_fault": Doc("", "make the guest kernel panic or hang, to test blklab itself"),
    "scenario.customer_fio": Doc("path", "a customer's fio JSON shown beside the cells in the "
                                 "report (relative to the scenario file)"),
    "scenario.switch_schedulers": Doc("", "switch the scheduler under load through this list, "
                                      "one step per interval"),
    "scenario.switch_interval_ms": Doc("ms", "time between two scheduler switches",
                                       default="250 with switch_schedulers"),
    # [guest]
    "guest.kernel": Doc("", "the guest kernel: <series>-<flavour> or a flavour of the default "
                        "series", range="a kernel of guest-images/kernels.lock"),
    "guest.vcpus": Doc("count", "virtual CPUs"),
    "guest.memory_mib": Doc("MiB", "guest memory"),
    "guest.cpu": Doc("", "the CPU preset (cpus/) whose rates the deterministic guest follows"),
    "guest.cpu_rate": Doc("instructions/ns per vCPU", "deterministic mode's instruction rate",
                          default="the cpu preset's",
                          range=f"{cpus.CPU_RATE_MIN:g}..{cpus.CPU_RATE_MAX:g}, at most "
                          f"{cpus.CPU_RATE_DIGITS} digits after the point"),
    "guest.pause_ns": Doc("ns", "virtual time an x86 PAUSE takes", default="the cpu preset's",
                          range=f"0..{cpus.PAUSE_MAX_NS}, whole ns"),
    "guest.irq_ns": Doc("ns", "time a vCPU spends on each hardware interrupt besides its "
                        "instructions", default="the cpu preset's", range=_EVENT + ", whole ns"),
    "guest.syscall_ns": Doc("ns", "time each system call's entry takes besides its "
                            "instructions", default="the cpu preset's",
                            range=_EVENT + ", whole ns"),
    "guest.wake_ns": Doc("ns", "time each wake-up from HLT takes", default="the cpu preset's",
                         range=_EVENT + ", whole ns"),
    "guest.vcpu_clocks": Doc("", "parallel: each vCPU its own clock; shared: one stream of "
                             "cpu_rate for all"),
    "guest.vcpu_quantum_ns": Doc("ns", "parallel: how far apart two running vCPUs' clocks may "
                                 "get; shared: the longest round-robin turn",
                                 default="250 with parallel clocks, none with shared"),
    "guest.nvme_poll_queues": Doc("count", "the nvme driver's poll queues (nvme.poll_queues)",
                                  range="0..vcpus"),
    "guest.boot": Doc("", "restore: boot once, save at the job point, start each cell there; "
                      "cold: boot every cell"),
    "guest.apps": Doc("", "mount the applications' root (databases, fio, bcc tools) from a "
                      "disk of its own"),
    # [[device]]
    "device.name": Doc("", "the device's name in cell ids, selectors and faults",
                       range="1-64 of letters, digits, _ . -"),
    "device.kind": Doc("", "the front end: NVMe, PIIX IDE (depth 1), AHCI (NCQ) or "
                       "virtio-blk"),
    "device.backing": Doc("", "file: a sparse raw file; null: reads zeros, writes dropped"),
    "device.profile": Doc("", "the device model: a name in devmodel/profiles/ or a path to a "
                          ".toml; none: stock QEMU timing (realtime only)"),
    "device.precondition": Doc("", "SSD profiles: the state the drive starts in, in place of "
                               "the profile's"),
    "device.size_gib": Doc("GiB", "the size the guest sees",
                           default="the profile's capacity (8 without a profile)",
                           range="> 0, at most the profile's capacity"),
    "device.seed": Doc("", "the device model's seed", default="the cell's seed"),
    "device.rotation_rate": Doc("rpm", "ide-hd and ahci-hd: the rotation rate reported to the "
                                "guest (1 = non-rotating)", default="the profile's"),
    "device.mqes": Doc("entries, 0's based", "nvme: CAP.MQES, entries per queue"),
    "device.shadow_doorbells": Doc("", "nvme: offer shadow doorbells (Doorbell Buffer Config)",
                                   default="false"),
    "device.ncq_depth": Doc("tags", "ahci-hd: NCQ tags the drive accepts"),
    "device.num_queues": Doc("count", "virtio-blk: virtqueues", default="one per vCPU"),
    "device.queue_size": Doc("entries", "virtio-blk: entries of each ring, a power of two",
                             default="QEMU's 256"),
    "device.queue_depth": Doc("requests", "virtio-blk: the depth the guest's driver uses "
                              "(virtio_blk.queue_depth)", default="the ring's size"),
    "device.queue.<attribute>": Doc("the attribute's", "this device's own queue/ attribute: a "
                                    "value or a list (a matrix axis)"),
    # [queue], [iosched.<scheduler>]
    "queue.<attribute>": Doc("the attribute's", "a /sys/block/<dev>/queue/ attribute for every "
                             "cell: a value or a list of values (a matrix axis)",
                             range="a name of lowercase letters, digits, _"),
    "iosched.<scheduler>.<attribute>": Doc("the attribute's", "a queue/iosched/ attribute of "
                                           "one scheduler of scenario.schedulers: a value or "
                                           "a list (a matrix axis)"),
    # [[job]]
    "job.name": Doc("", "the job's name in cell ids and selectors",
                    range="1-64 of letters, digits, _ . -"),
    "job.<option>": Doc("the option's", "a fio option of blkgen's or fio's (blkgen-options.md); "
                        "booleans become 1/0", range="a fio option name"),
    "job.fio_file": Doc("path", "a fio job file (relative to the scenario file) whose sections "
                        "are the jobs"),
    "job.sections": Doc("", "with fio_file: the file's job sections to run",
                        default="all of them"),
    "job.fio_command": Doc("", "a fio command line whose jobs are the jobs"),
    "job.command": Doc("", "workload = \"command\": the shell script run in the applications' "
                       "root"),
    "job.app": Doc("", "the benchmark an application job runs against its database server "
                   "(sysbench, pgbench), or etcd: a one-member etcd and a client's puts"),
    "job.test": Doc("", "sysbench: the test to run"),
    "job.options": Doc("", "the benchmark's own --options for the run; etcd: puts, "
                       "value_bytes, backup (\"sequential-read\" or \"none\"), "
                       "backup_block_kib, start_spread_ms (the puts start after a delay "
                       "drawn from the cell's seed, uniform over [0, start_spread_ms) ms)"),
    "job.init": Doc("", "the benchmark's --options for preparing its tables; etcd: "
                    "backup_file_mib, the backup file's size"),
    "<server>.options": Doc("", "the database server's (mariadb, postgresql, etcd) "
                            "configuration options"),
    # [[expect]]
    "expect.what": Doc("", "the expectation, in a sentence"),
    "expect.metric": Doc("the metric's", "the figure compared"),
    "expect.direction": Doc("", "which side of the I/O the figure is of; not with an app_ "
                            "metric"),
    "expect.device": Doc("", "check on this device only", default="every device"),
    "expect.left": Doc("", "the selector of the left side: scheduler, job, tunables, device"),
    "expect.right": Doc("", "the selector of the right side (with op or ratio)"),
    "expect.left.scheduler": Doc("", "the left side's scheduler"),
    "expect.left.job": Doc("", "the left side's job"),
    "expect.left.tunables": Doc("", "the left side's tunable values"),
    "expect.left.device": Doc("", "the left side's device"),
    "expect.right.scheduler": Doc("", "the right side's scheduler"),
    "expect.right.job": Doc("", "the right side's job"),
    "expect.right.tunables": Doc("", "the right side's tunable values"),
    "expect.right.device": Doc("", "the right side's device (needs expect.device)"),
    "expect.op": Doc("", "left op factor x right"),
    "expect.factor": Doc("x", "the factor applied to the right side", range="> 0"),
    "expect.ratio": Doc("", "instead of op: low <= left / right <= high",
                        range="[low, high], 0 <= low <= high"),
    "expect.below": Doc("the metric's", "without right: the left side is below this"),
    "expect.above": Doc("the metric's", "without right: the left side is above this"),
    "expect.source": Doc("", "the kernel code or model that predicts it"),
    "expect.full_only": Doc("", "not checked in the short form"),
    "expect.known_failure": Doc("", "why it is known to fail, in a sentence"),
    "expect.quorum": Doc("", "all: holds on every seed; median: decided on the seeds' median"),
    # [[fault]]
    "fault.device": Doc("", "the [[device]] (with a profile) that misbehaves"),
    "fault.kind": Doc("", "stall, slow, media_error, timeout or reset (NVMe, IDE, AHCI)"),
    "fault.at_ms": Doc("ms", "when the fault starts, after the workload starts",
                       range=_MS + ", before the run's end"),
    "fault.after_requests": Doc("requests", "or: the fault starts after the first N requests",
                                range=f"0..{device_faults.MAX_REQUESTS}"),
    "fault.probability": Doc("", "or (media_error, timeout): the chance each request fails",
                             range="0 < p <= 1"),
    "fault.duration_ms": Doc("ms", "the window's length", range=f"> 0, at most {_MS[3:]}"),
    "fault.factor": Doc("x", "slow: service times multiplied by this",
                        range=f"> 1, at most {device_faults.MAX_FACTOR:.0f}"),
    "fault.lba_start": Doc("logical blocks", "media_error, timeout: the range's first block",
                           range=">= 0"),
    "fault.lba_count": Doc("logical blocks", "with lba_start: the range's length",
                           range="> 0, within the device"),
    "fault.retry_ms": Doc("ms", "media_error: the drive's own retries before it reports the "
                          "error", range=f"0..{device_faults.MAX_RETRY_MS:.0f}"),
    "fault.writes": Doc("", "media_error, timeout: writes to the range fail or are lost too",
                        default="false"),
    # [filesystem], [vm], [udev], [[observe]]
    "filesystem.type": Doc("", "the filesystem made on the device under test"),
    "filesystem.mkfs_options": Doc("", "mkfs's arguments before the device"),
    "filesystem.mount_options": Doc("", "mount -o, one comma-separated word"),
    "vm.dirty_ratio": Doc("% of memory", "/proc/sys/vm/dirty_ratio; not with dirty_bytes"),
    "vm.dirty_bytes": Doc("bytes", "/proc/sys/vm/dirty_bytes; not with dirty_ratio"),
    "vm.dirty_background_ratio": Doc("% of memory", "/proc/sys/vm/dirty_background_ratio"),
    "vm.dirty_background_bytes": Doc("bytes", "/proc/sys/vm/dirty_background_bytes"),
    "vm.dirty_expire_centisecs": Doc("cs", "/proc/sys/vm/dirty_expire_centisecs"),
    "vm.dirty_writeback_centisecs": Doc("cs", "/proc/sys/vm/dirty_writeback_centisecs"),
    "udev.rules": Doc("path", "a customer's udev rules file (*.rules), applied to the device"),
    "observe.name": Doc("", "names the output, cells/<cell>/observe-<name>.txt"),
    "observe.command": Doc("", "a shell script run beside the workload in the applications' "
                           "root"),
    "observe.ready": Doc("", "start the workload once the output holds this text"),
    "observe.ready_after_ms": Doc("ms", "or: start the workload this much later"),
}
# [short]'s keys take their meaning from the validator's own table,
# scenario.SHORT_KEYS.
