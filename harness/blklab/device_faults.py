"""Device faults on a schedule: a scenario's [[fault]] tables.

A fault makes one device's model misbehave for a window of virtual time
after the workload starts: "stall" completes nothing in the window (then
drains), "slow" multiplies the service time of requests submitted in it,
"media_error" fails reads (and writes, if asked) of an LBA range with the
protocol's unrecovered-read-error status (NVMe, IDE and virtio-blk; writes
on NVMe and virtio-blk), in the window
or to the end of the run, "timeout" loses reads (and writes, if asked) of
an LBA range or of the whole device submitted in the window: the device
never completes them, so the guest kernel's own timeout, abort and reset
run (NVMe, IDE and AHCI); the command the kernel retries after its reset is
submitted after the window and completes. "reset" fails the whole device
at a time, as a power or link event does: every command it holds then or
gets afterwards is lost until the host resets the device, and the front
end shows the failure where the host looks (NVMe: Controller Fatal
Status, so the kernel resets at its first timeout; NVMe only so far). The library does the timing
(devmodel/include/devmodel/faults.h): the harness validates the tables,
appends them to the profile QEMU reads for that device, and reads back from
the model's counters which faults fired and when.

A fault starts at `at_ms` after the workload's start, or at the request
after the first `after_requests` the device received since then (any op,
in arrival order), or (media_error and timeout only) picks each request it
could fail with `probability`, drawn from the device model's seed and the
request's number, so the same seed picks the same requests. The workload's
start is the guest's own mark (blklab-jobpoint --origin,
qemu-patches/0052), so faults need deterministic mode.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("stall", "slow", "media_error", "timeout", "reset")
# The device kinds whose front end reports each kind that needs one: a
# media error is a status the protocol has to carry (NVMe: qemu-patches/0053;
# IDE and virtio-blk: 0059; AHCI's NCQ commands through the drive's NCQ
# error log, 0066), a lost command one the host's recovery has to
# take back (0055: NVMe at a queue deletion or controller reset; IDE and
# AHCI at the bus master stop, SRST, PxCMD.ST cleared or COMRESET that
# libata's recovery makes, checked by 0062's qtests), a failed device one
# the protocol shows and a reset ends (0056).
FRONT_ENDS = {"media_error": ("nvme", "ide-hd", "ahci-hd", "virtio-blk"),
              "timeout": ("nvme", "ide-hd", "ahci-hd"),
              "reset": ("nvme", "ide-hd", "ahci-hd")}
# Why a front end cannot take a kind at all, from the guest kernel's source
# (6.12); the other combinations missing from FRONT_ENDS are not built yet.
_NO_TIMEOUT_HANDLER = (
    "the guest's virtio_blk driver has no timeout handler (virtio_mq_ops has no .timeout), so "
    "the block layer re-arms a lost request's timer for ever and the workload would hang")
CANNOT = {
    ("timeout", "virtio-blk"): _NO_TIMEOUT_HANDLER,
    ("reset", "virtio-blk"): _NO_TIMEOUT_HANDLER,
}
# media_error with writes = true: the front ends whose write error the
# kernel's handling is derived for (docs/faults.md). An IDE or AHCI drive
# reports a failed write as DF and ABRT (0059; 0066 in its NCQ error log),
# which libata retries as a device error (ata_eh_worth_retry()) rather than
# failing it at once.
WRITE_ERROR_FRONT_ENDS = ("nvme", "virtio-blk")
MAX_MS = 1e9  # the library's bound on at_ms and duration_ms
MAX_RETRY_MS = 1e6
MAX_FACTOR = 1e6
MAX_REQUESTS = 10**12  # the library's bound on after_requests
# When a fault starts: exactly one of these (media_error: none = at_ms 0).
WHEN_KEYS = ("at_ms", "after_requests", "probability")
# The kinds a probability may pick requests for: those that act on one
# request. stall, slow and reset are windows of time; a chance per request
# would start overlapping windows at random, so they start at a time or
# after a number of requests.
PICKED_KINDS = ("media_error", "timeout")
_TIME = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s|m|h)?$")
_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_KEYS = ("device", "kind", "at_ms", "after_requests", "probability", "duration_ms", "factor",
         "lba_start", "lba_count", "retry_ms", "writes")
_MEDIA_KEYS = ("lba_start", "lba_count", "retry_ms", "writes")
_TIMEOUT_KEYS = ("lba_start", "lba_count", "writes")
# Kernel log lines about a failing device: the block layer's and the
# drivers' error, timeout, abort and reset lines (print_req_error(),
# nvme_log_error(), nvme_timeout(), ata_eh_*), as the console shows them.
# libata's "hard/soft resetting link" comes only from error handling (its
# boot probe is quiet: ATA_EHI_QUIET), and "Emask 0x4 (timeout)" ends the
# result taskfile line of a command that timed out.
_KERNEL_ERROR = re.compile(
    r"I/O error|medium error|\(sct 0x[0-9a-f]+ / sc 0x|critical target error|"
    r"Buffer I/O error|timeout, abort|timeout, reset|Abort status|resetting controller|"
    r"controller is down|"
    r"\bfailed command\b|\bUNC\b|exception Emask|resetting link|Emask 0x[0-9a-f]+ \(timeout\)",
    re.IGNORECASE)


@dataclass(frozen=True)
class DeviceFault:
    device: str  # a [[device]] name
    kind: str  # one of KINDS
    # ms of virtual time after the workload starts; None when the fault
    # starts after_requests or picks requests with a probability
    at_ms: float | None
    # > 0; None: to the end of the run (media_error), until the host resets
    # the device (reset: always None)
    duration_ms: float | None
    factor: float | None = None  # slow only: > 1
    # media_error: the logical blocks that fail, the drive's own retry time
    # before it reports the error, and whether writes fail too. timeout: the
    # blocks whose commands are lost (None: every block) and whether writes
    # are lost too.
    lba_start: int | None = None
    lba_count: int | None = None
    retry_ms: float | None = None
    writes: bool | None = None
    # The request count since the workload's start after which it starts
    # (the next request starts it), or None.
    after_requests: int | None = None
    # media_error and timeout: the chance that each request the fault could
    # fail is failed (0 < p <= 1), from the workload's start to the end of
    # the run, or None.
    probability: float | None = None

    @property
    def trigger(self) -> str:
        """How it starts, as the device model's counters name it."""
        if self.after_requests is not None:
            return "after_requests"
        return "probability" if self.probability is not None else "at_ms"

    def to_json(self) -> dict[str, Any]:
        j = asdict(self)
        for key in _MEDIA_KEYS + WHEN_KEYS[1:]:  # a timed fault's record stays as it was
            if j[key] is None:
                del j[key]
        return j

    def profile_table(self) -> str:
        """The [[fault]] table the library reads (devmodel/profiles/README.md)."""
        lines = ["[[fault]]", f'kind = "{self.kind}"']
        if self.at_ms is not None:
            lines.append(f"at_ms = {float(self.at_ms)!r}")
        if self.after_requests is not None:
            lines.append(f"after_requests = {int(self.after_requests)}")
        if self.probability is not None:
            lines.append(f"probability = {float(self.probability)!r}")
        if self.duration_ms is not None:
            lines.append(f"duration_ms = {float(self.duration_ms)!r}")
        if self.factor is not None:
            lines.append(f"factor = {float(self.factor)!r}")
        if self.lba_start is not None:
            lines += [f"lba_start = {int(self.lba_start)}", f"lba_count = {int(self.lba_count)}"]
        if self.retry_ms is not None:
            lines.append(f"retry_ms = {float(self.retry_ms)!r}")
        if self.writes is not None:
            lines.append(f"writes = {'true' if self.writes else 'false'}")
        return "\n".join(lines) + "\n"


def profile_with_faults(text: str, faults: list[DeviceFault] | tuple[DeviceFault, ...]) -> str:
    """The profile's text with a [[fault]] table per fault appended (at the
    end: a top-level array of tables after the profile's own tables)."""
    if not faults:
        return text
    blocks = "\n".join(f.profile_table() for f in faults)
    return (text if text.endswith("\n") else text + "\n") + \
        "\n# blklab: the scenario's [[fault]] tables for this device\n" + blocks


def fio_time_ms(text: str) -> float | None:
    """A fio time value (default unit s) in ms, or None if it is not one."""
    m = _TIME.match(str(text).strip())
    if not m:
        return None
    return float(m.group(1)) * _MS[m.group(2) or "s"]


def run_length_ms(jobs: list) -> tuple[float | None, str | None]:
    """The longest job's startdelay + runtime in ms, or (None, why) when a
    job's length is not known from its options."""
    longest = 0.0
    for i, job in enumerate(jobs):
        if job.fio_file is not None:
            return None, f"job[{i}] ('{job.name}') takes its options from a fio job file"
        opts = {k.replace("-", "_"): v for k, v in job.options}
        if "runtime" not in opts:
            return None, f"job[{i}] ('{job.name}') has no runtime"
        runtime = fio_time_ms(opts["runtime"])
        delay = fio_time_ms(opts.get("startdelay", "0"))
        if runtime is None or delay is None:
            return None, f"job[{i}] ('{job.name}') has a runtime or startdelay that is not a " \
                "single time"
        longest = max(longest, delay + runtime)
    return longest, None


def parse(path: str, data: dict[str, Any], devices: list, jobs: list, mode: str,
          mode_why: str) -> tuple[DeviceFault, ...]:
    """The scenario's [[fault]] tables, each checked: a known kind, a
    [[device]] with a profile, one way to start (at_ms, after_requests or
    probability) that the kind allows, a window inside the run,
    deterministic mode. Raises ScenarioError naming the file and the key."""
    from blklab.errors import ScenarioError
    from blklab.scenario import _Reader

    tables = data.get("fault")
    if tables is None:
        return ()
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ScenarioError(path, "fault", "must be an array of tables ([[fault]])")
    by_name = {d.name: (i, d) for i, d in enumerate(devices)}
    faults = []
    for i, table in enumerate(tables):
        r = _Reader(path, table, f"fault[{i}]")
        r.used.update(_KEYS)
        r.finish()  # unknown keys first: a typo is named before what it left out
        name = r.get("device", str, required=True)
        if name not in by_name:
            raise r.error("device", f"'{name}' is not a [[device]] of this scenario (devices: "
                          f"{', '.join(by_name) or 'none'})")
        if by_name[name][1].profile is None:
            raise r.error("device", f"device '{name}' has no profile: faults are timed by the "
                          "device model")
        kind = r.choice("kind", KINDS, required=True)
        device = by_name[name][1]
        if (kind, device.kind) in CANNOT:
            raise r.error("kind", f"'{kind}' does not fit device '{name}' ({device.kind}): "
                          f"{CANNOT[kind, device.kind]}")
        if kind in FRONT_ENDS and device.kind not in FRONT_ENDS[kind]:
            raise r.error("kind", f"'{kind}' needs the front end to report it in its protocol; "
                          f"only {', '.join(FRONT_ENDS[kind])} does so far, device '{name}' is "
                          f"{device.kind}")
        if (kind == "media_error" and table.get("writes") is True
                and device.kind not in WRITE_ERROR_FRONT_ENDS):
            raise r.error("writes", f"a write error on {device.kind} (device '{name}') is not "
                          f"built yet: {', '.join(WRITE_ERROR_FRONT_ENDS)} only (an IDE or AHCI "
                          "drive reports it as DF and ABRT, which libata retries as a device "
                          "error)")
        allowed = {"media_error": _MEDIA_KEYS, "timeout": _TIMEOUT_KEYS}.get(kind, ())
        for key in _MEDIA_KEYS:
            if key in table and key not in allowed:
                raise r.error(key, 'applies to kind "media_error" only' if key == "retry_ms"
                              else 'applies to kinds "media_error" and "timeout" only')
        at_ms, after_requests, probability = _when(r, table, kind)
        if kind == "reset" and "duration_ms" in table:
            raise r.error("duration_ms", 'does not apply to kind "reset": the device stays '
                          "failed until the guest's kernel resets it")
        if probability is not None and "duration_ms" in table:
            raise r.error("duration_ms", "does not apply with probability: it picks requests "
                          "from the workload's start to the end of the run")
        duration_ms = r.get("duration_ms", (int, float),
                            required=kind not in ("media_error", "reset") and probability is None)
        if duration_ms is not None and not 0 < duration_ms <= MAX_MS:
            raise r.error("duration_ms", f"must be above 0 and at most {MAX_MS:.0f} (ms), "
                          f"got {duration_ms}")
        factor = r.get("factor", (int, float), None)
        if kind == "stall" and factor is not None:
            raise r.error("factor", "applies to kind \"slow\" only (a stall completes nothing "
                          "in its window)")
        if kind == "media_error" and factor is not None:
            raise r.error("factor", "applies to kind \"slow\" only (a media error fails "
                          "requests at the model's time plus retry_ms)")
        if kind == "timeout" and factor is not None:
            raise r.error("factor", "applies to kind \"slow\" only (a timeout loses the "
                          "requests submitted in its window)")
        if kind == "reset" and factor is not None:
            raise r.error("factor", "applies to kind \"slow\" only (a reset loses every "
                          "request until the host resets the device)")
        if kind == "slow":
            if factor is None:
                raise r.error("factor", "is required for kind \"slow\" (service times are "
                              "multiplied by it, e.g. 4)")
            if not 1 < factor <= MAX_FACTOR:
                raise r.error("factor", f"must be above 1 and at most {MAX_FACTOR:.0f}, got "
                              f"{factor}")
        media: dict[str, Any] = {}
        if kind == "media_error" and probability is None:
            media = _media_keys(r, device)
        elif kind in PICKED_KINDS:  # a timeout; a picked media error: the range is optional
            media = _timeout_keys(r, table, device, kind)
        if mode != "deterministic":
            raise r.error(None, f"faults need deterministic mode ({mode_why} is {mode}): their "
                          "windows count from the guest's own instruction at the workload's "
                          'start, which only icount makes the same on every host; set '
                          'scenario.mode = "deterministic"')
        # Only a window that could end past the run needs the run's length: a
        # probability picks to the end of the run whatever its length, and so
        # does a media error from the start without a duration (the jobs'
        # length is then not needed, e.g. application jobs, which run for
        # their benchmark's own time).
        windowed = duration_ms is not None or (at_ms is not None and at_ms > 0)
        length, why = run_length_ms(jobs) if windowed else (float("inf"), None)
        if length is None:
            raise r.error(None, f"the run's length is not known, so the window cannot be "
                          f"checked: {why} (give every [[job]] a runtime)")
        if at_ms is not None and duration_ms is None and at_ms >= length:
            raise r.error("at_ms", f"the fault starts at {at_ms:g} ms, past the run: the "
                          f"longest job's startdelay + runtime is {length:g} ms")
        if at_ms is not None and duration_ms is not None and at_ms + duration_ms > length:
            raise r.error("duration_ms", f"the window [{at_ms:g}, {at_ms + duration_ms:g}) ms "
                          f"ends past the run: the longest job's startdelay + runtime is "
                          f"{length:g} ms")
        if after_requests is not None and duration_ms is not None and duration_ms > length:
            raise r.error("duration_ms", f"the window of {duration_ms:g} ms is longer than the "
                          f"run: the longest job's startdelay + runtime is {length:g} ms")
        faults.append(DeviceFault(name, kind, None if at_ms is None else float(at_ms),
                                  None if duration_ms is None else float(duration_ms),
                                  None if factor is None else float(factor), **media,
                                  after_requests=after_requests,
                                  probability=None if probability is None else float(probability)))
    return tuple(faults)


def _when(r, table, kind: str) -> tuple[float | None, int | None, float | None]:
    """(at_ms, after_requests, probability): exactly one given (a media
    error without any starts at 0 and lasts to the end of the run)."""
    allowed = WHEN_KEYS if kind in PICKED_KINDS else WHEN_KEYS[:2]
    given = [k for k in WHEN_KEYS if k in table]
    r.used.update(WHEN_KEYS)
    if len(given) > 1:
        raise r.error(given[1], f"cannot be given with {given[0]}: a fault starts at one of "
                      f"{', '.join(allowed)}")
    if "probability" in table and kind not in PICKED_KINDS:
        raise r.error("probability", f'applies to kinds "media_error" and "timeout" only (a '
                      f'chance per request picks single requests; "{kind}" is a window: start '
                      "it with at_ms or after_requests)")
    if not given:
        if kind != "media_error":
            raise r.error("at_ms", f"is required, or one of {', '.join(allowed[1:])} (when the "
                          "fault starts)")
        return 0.0, None, None
    if given[0] == "at_ms":
        at_ms = r.get("at_ms", (int, float))
        if not 0 <= at_ms <= MAX_MS:
            raise r.error("at_ms", f"must be between 0 and {MAX_MS:.0f} (ms after the "
                          f"workload starts), got {at_ms}")
        return at_ms, None, None
    if given[0] == "after_requests":
        n = r.get("after_requests", int)
        if not 0 <= n <= MAX_REQUESTS:
            raise r.error("after_requests", f"must be between 0 and {MAX_REQUESTS} (requests "
                          f"the device receives after the workload starts before the fault "
                          f"does), got {n}")
        return None, n, None
    p = r.get("probability", (int, float))
    if not 0 < p <= 1:
        raise r.error("probability", f"must be above 0 and at most 1 (the chance per request), "
                      f"got {p}")
    return None, None, p


def _media_keys(r, device) -> dict[str, Any]:
    """lba_start and lba_count (required; the range inside the device as
    the guest sees it), retry_ms and writes of a media_error fault."""
    lba_start = r.get("lba_start", int, required=True)
    lba_count = r.get("lba_count", int, required=True)
    _check_range(r, device, lba_start, lba_count)
    retry_ms = _retry_ms(r)
    writes = r.get("writes", bool, None)
    return {"lba_start": lba_start, "lba_count": lba_count, "retry_ms": retry_ms,
            "writes": writes}


def _timeout_keys(r, table, device, kind: str = "timeout") -> dict[str, Any]:
    """lba_start and lba_count (both, the range inside the device, or
    neither: every block) and writes of a timeout fault, or of a media
    error with a probability (and its retry_ms)."""
    if ("lba_start" in table) != ("lba_count" in table):
        what = ('a "timeout" fault' if kind == "timeout"
                else 'a "media_error" fault with probability')
        raise r.error("lba_count" if "lba_start" in table else "lba_start",
                      f"{what} takes both lba_start and lba_count (a range) or neither "
                      "(every block)")
    lba_start = r.get("lba_start", int, None)
    lba_count = r.get("lba_count", int, None)
    if lba_start is not None:
        _check_range(r, device, lba_start, lba_count)
    keys = {"lba_start": lba_start, "lba_count": lba_count,
            "writes": r.get("writes", bool, None)}
    if kind == "media_error":
        keys["retry_ms"] = _retry_ms(r)
    return keys


def _retry_ms(r) -> float | None:
    retry_ms = r.get("retry_ms", (int, float), None)
    if retry_ms is not None and not 0 <= retry_ms <= MAX_RETRY_MS:
        raise r.error("retry_ms", f"must be between 0 and {MAX_RETRY_MS:.0f} (ms the drive "
                      f"retries before it reports the error), got {retry_ms}")
    return None if retry_ms is None else float(retry_ms)


def _check_range(r, device, lba_start: int, lba_count: int) -> None:
    """[lba_start, lba_start + lba_count) is a range of the device's blocks."""
    block = device.profile.logical_block_bytes
    blocks = device.size_bytes // block
    if lba_start < 0:
        raise r.error("lba_start", f"must be 0 or more (a logical block), got {lba_start}")
    if lba_count <= 0:
        raise r.error("lba_count", f"must be above 0 (logical blocks), got {lba_count}")
    if lba_start + lba_count > blocks:
        raise r.error("lba_count", f"the range [{lba_start}, {lba_start + lba_count}) ends "
                      f"past device '{device.name}': {blocks} logical blocks of {block} bytes")


def kernel_error_lines(console: str) -> list[str]:
    """The guest kernel's log lines about a failing device (I/O errors,
    medium errors, timeouts, aborts, resets), without their timestamps, in
    order. The kernel rate-limits some (print_req_error(): 10 per 5 s), so
    they are what it said, not a count of the failed requests."""
    return [line.split("] ", 1)[-1].strip() for line in console.splitlines()
            if line.startswith("[") and _KERNEL_ERROR.search(line)]


def fired(asked: list[DeviceFault] | tuple[DeviceFault, ...],
          counters: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per fault asked for the cell's device: the request, its window on
    the virtual clock (from the model's counters: absolute ns), how many
    requests it moved, failed or lost, and which: `first_request` (the
    first, {"request": its number since the workload's start, "ns": its
    submission}), `trigger_request` (after_requests: the request that
    started it) and `picks` (probability: the requests picked, the first
    1000). `origin_ns` None: the guest never marked the workload's start,
    so no fault applied."""
    model = (counters or {}).get("faults") or []
    origin = (counters or {}).get("fault_origin_ns")
    out = []
    for i, f in enumerate(asked):
        m = model[i] if i < len(model) else {}
        one = f.to_json() | {
            "origin_ns": origin,
            "start_ns": m.get("start_ns"),
            "end_ns": m.get("end_ns"),
            "requests": m.get("requests"),
            "fired": bool(m.get("requests")),
            "first_request": m.get("first_request"),
        }
        if f.after_requests is not None:
            one["trigger_request"] = m.get("trigger_request")
        if f.probability is not None:
            one["picks"] = m.get("picks")
        out.append(one)
    return out


def failure(asked: list[DeviceFault] | tuple[DeviceFault, ...],
            counters: dict[str, Any] | None) -> str | None:
    """Why the model's counters show the faults were not applied as asked,
    or None. A fault is never applied silently, nor silently dropped."""
    if not asked or counters is None:
        return None
    model = counters.get("faults")
    if model is None or len(model) != len(asked):
        return (f"the device model reports {0 if model is None else len(model)} faults, the "
                f"scenario asked for {len(asked)} (a QEMU or library without [[fault]] support?)")
    if counters.get("fault_origin_ns") is None:
        return ("the workload's start never reached the device model, so no fault applied "
                "(blklab-jobpoint --origin; a QEMU without qemu-patches/0052?)")
    for i, (f, m) in enumerate(zip(asked, model)):
        if m.get("kind") != f.kind:
            return f"fault[{i}]: the model has kind '{m.get('kind')}', asked '{f.kind}'"
        if m.get("trigger", "at_ms") != f.trigger:
            return (f"fault[{i}]: the model starts it by '{m.get('trigger', 'at_ms')}', asked "
                    f"'{f.trigger}'")
    return None
