"""What the device fuzzers share: profiles and drive sizes chosen by the
header, PCI configuration through ports 0xcf8/0xcfc, guest addresses chosen
by class (good buffers, and the places a buggy or hostile guest points a
device at: the end of RAM, past it, the device's own registers, 4 GiB and
beyond), and the base class of a device family.

Guest RAM is GUEST_RAM bytes from 0. Each family lays out its structures
(queues, command lists, PRD tables) below BUF_BASE; data buffers live in
[BUF_BASE, BUF_END). Nothing here reads a clock or a random source: every
choice comes from the input's bytes.
"""

import hashlib
import os
import pathlib
import sys
import tomllib
import types

from .fuzzinput import Args, weighted_table

REPO = pathlib.Path(__file__).resolve().parents[4]
PROFILE_DIR = REPO / "devmodel" / "profiles"
sys.path.insert(0, str(REPO / "harness"))
from blklab import device_faults  # noqa: E402

GUEST_RAM = 128 << 20
BUF_BASE = 16 << 20
BUF_END = 112 << 20
PCI_MMIO_BASE = 0xE0000000      # where the fuzzer maps BARs, as libqos does
PAGE = 4096

# The profiles, those the issue names three times over. tlc-250g-used only
# once: preconditioning its 250 GB takes QEMU seconds to start.
PROFILES = [
    "zero-latency", "samsung-970evoplus-1t", "hdd-7200-desktop-1t",
    "aws-gp3-100g",
] * 3 + [
    "tlc-250g-used", "hdd-5400-laptop-1t", "aws-gp2-100g-exhausted",
    "optane-p5800x-800g",
]

_capacity_cache = {}


def profile_capacity(name):
    """The profile's exported capacity in bytes (its first capacity_bytes)."""
    if name not in _capacity_cache:
        with open(PROFILE_DIR / f"{name}.toml", "rb") as f:
            doc = tomllib.load(f)
        model = doc["device"]["model"]
        _capacity_cache[name] = int(doc[model]["capacity_bytes"])
    return _capacity_cache[name]


HOST_LATENCIES_NS = [0, 0, 0, 0, 0, 200_000, 2_000_000, 0]   # by header byte 3 % 8

# The blklab-jobpoint device (qemu-patches/0047, 0052): writing 1 reaches the
# job point, then 2 sets the origin every fault window counts from.
JOBPOINT_PORT = 0x5F0
JOBPOINT_REACHED, JOBPOINT_ORIGIN = 0x01, 0x02

# Fault schedules, from header bytes 12 to 15 (docs/faults.md). The values
# are spread over the scales a fuzz run's virtual time has: setup at 0,
# records that step the clock by up to 1 s, a finish of 2 s.
FAULT_AT_MS = [0, 0, 0.01, 0.5, 2, 10, 100, 1000]
FAULT_AFTER_REQUESTS = [0, 1, 2, 3, 5, 10, 30, 100]
FAULT_PROBABILITY = [1.0, 1.0, 0.5, 0.25, 0.1, 0.02, 0.9, 0.5]
FAULT_DURATION_MS = [0.05, 1, 10, 100, 1000, 5000, 30000, 200]
FAULT_FACTOR = [1.5, 2, 4, 10, 100, 1000, 1e6, 3]
FAULT_RETRY_MS = [None, 0, 1, 10, 100, 1000, None, 0.01]
# What the fault's run is checked against (device_faults.parse() wants the
# run's length): an hour, longer than any fuzz run's virtual time.
FAULT_RUN = types.SimpleNamespace(name="fuzz", fio_file=None,
                                  options=[("runtime", "3600s")])


# The kind a fault code names, for ever: header byte 12's bits 2-7 are the
# code, and a code never names another kind, whatever KINDS or FRONT_ENDS
# become, so an input means the same fault after a kind is added. The
# eight codes in the first row repeat in the seven after it; a new kind
# takes codes there that no checked-in input uses
# (tests/host/test_qtest_fuzz_faults.py lists those that are free), which
# changes no input in the repository.
FAULT_KIND_CODES = ("stall", "slow", "media_error", "media_error",
                    "timeout", "timeout", "reset", "reset") * 8


def fault_kind_of_code(code, device_kind):
    """The kind fault code `code` gives a drive behind `device_kind`: the
    code's own kind if the front end takes it, else that of the code with
    bit 2 cleared, then bit 1 (a timeout or reset code falls back to stall,
    slow or media_error, a media_error code to stall or slow; stall and slow
    need no front end)."""
    for mask in (0, 4, 6):
        kind = FAULT_KIND_CODES[code & ~mask]
        if kind in fault_kinds(device_kind):
            return kind
    raise AssertionError(f"no kind for code {code} on {device_kind}")


def fault_kinds(device_kind):
    """The kinds a device's front end takes: stall and slow (the model
    alone), and each kind FRONT_ENDS lists the device for."""
    return ["stall", "slow"] + [
        kind for kind in device_faults.KINDS
        if device_kind in device_faults.FRONT_ENDS.get(kind, ())]


def fault_table(raw, device_kind, blocks):
    """The [[fault]] table header bytes 12-15 choose for a drive of
    `blocks` logical blocks behind front end `device_kind`, or None (byte
    12 % 4 == 0: no fault)."""
    b12, b13, b14, b15 = raw[12:16]
    if b12 % 4 == 0:
        return None
    kind = fault_kind_of_code(b12 >> 2, device_kind)
    t = {"device": "fuzz", "kind": kind}
    when = b13 % 4
    if when == 3 and kind not in device_faults.PICKED_KINDS:
        when = 0
    if kind == "reset":
        when = 0 if when == 3 else when
    if when <= 1:
        t["at_ms"] = FAULT_AT_MS[(b13 >> 2) % 8]
    elif when == 2:
        t["after_requests"] = FAULT_AFTER_REQUESTS[(b13 >> 2) % 8]
    else:
        t["probability"] = FAULT_PROBABILITY[(b13 >> 2) % 8]
    if kind in ("stall", "slow", "timeout") and "probability" not in t or (
            kind == "media_error" and "probability" not in t and b14 & 0x80):
        t["duration_ms"] = FAULT_DURATION_MS[b14 % 8]
    if kind == "slow":
        t["factor"] = FAULT_FACTOR[(b14 >> 3) % 8]
    if kind in ("media_error", "timeout"):
        ranges = [(None, None)] * 3 + [
            (0, 8), (blocks - 8, 8), (blocks // 2, 1024), (0, 1),
            (blocks // 3, 64)]
        start, count = ranges[(b15 >> 1) % 8]
        if start is None and kind == "media_error" and "probability" not in t:
            start, count = 0, blocks            # the range is required
        if start is not None:
            start = max(0, min(start, blocks - 1))
            t["lba_start"], t["lba_count"] = start, max(1, min(count, blocks - start))
        writes_ok = (kind == "timeout" or
                     device_kind in device_faults.WRITE_ERROR_FRONT_ENDS)
        if writes_ok and b15 & 1:
            t["writes"] = True
    if kind == "media_error":
        retry = FAULT_RETRY_MS[(b14 >> 3) % 8]
        if retry is not None:
            t["retry_ms"] = retry
    return t


def checked_fault(table, device_kind, drive_bytes, block_bytes):
    """The table as a DeviceFault, checked as a scenario's [[fault]] is
    (device_faults.parse(), which raises ScenarioError naming the key)."""
    device = types.SimpleNamespace(
        name="fuzz", kind=device_kind, size_bytes=drive_bytes,
        profile=types.SimpleNamespace(logical_block_bytes=block_bytes))
    (fault,) = device_faults.parse("<fuzz header>", {"fault": [table]}, [device],
                                   [FAULT_RUN], "deterministic", "the fuzzer")
    return fault


def build_dir():
    return pathlib.Path(os.environ.get("BLKLAB_BUILD", REPO / "build"))


def profile_block_bytes(name):
    with open(PROFILE_DIR / f"{name}.toml", "rb") as f:
        return int(tomllib.load(f)["device"].get("logical_block_bytes", 512))


class Header:
    """The choices an input's header bytes make; bytes 0-5 and 12-15 (the
    fault schedule) are common, 6-11 belong to the family."""

    @staticmethod
    def without_slow_host(data):
        """`data` with byte 3 choosing no host latency, all else kept."""
        out = bytearray(data)
        out[3] -= out[3] % 8    # index 0 of HOST_LATENCIES_NS
        return bytes(out)

    def __init__(self, data):
        self.raw = data
        self.profile = PROFILES[data[0] % len(PROFILES)]
        self.seed = data[1]
        capacity = profile_capacity(self.profile)
        # The namespace (drive) size: the profile's, a small drive, one
        # larger than the model (its end is outside the model), or an odd one.
        self.drive_bytes = [
            capacity, capacity, capacity, 64 << 20,
            capacity + (1 << 20), (1 << 20) + 7 * 512, capacity, capacity,
        ][data[2] % 8]
        # Host I/O slower than the model sometimes (null-co latency, host ns).
        self.host_latency_ns = HOST_LATENCIES_NS[data[3] % 8]
        self.read_zeroes = data[4] % 8 != 7
        self.q35 = data[5] % 4 == 3
        self.fault = None           # set by set_fault(): a DeviceFault

    def set_fault(self, device_kind):
        """Chooses the drive's fault schedule from bytes 12-15 for the front
        end `device_kind` (device_faults.FRONT_ENDS names)."""
        block = profile_block_bytes(self.profile)
        # A fault's range lies in the model (the library refuses one past its
        # capacity) and in the drive the guest sees, which may be either
        # smaller or larger.
        size = min(self.drive_bytes, profile_capacity(self.profile))
        table = fault_table(self.raw, device_kind, size // block)
        if table is not None:
            self.fault = checked_fault(table, device_kind, size, block)

    def profile_path(self):
        """The profile the drive under test reads: the profile itself, or
        with a fault its text and the [[fault]] table, written once under
        build/fuzz/qtest/profiles/ (named by its content)."""
        path = PROFILE_DIR / f"{self.profile}.toml"
        if self.fault is None:
            return path
        text = device_faults.profile_with_faults(path.read_text(), [self.fault])
        name = hashlib.sha1(text.encode()).hexdigest()[:16]
        out = build_dir() / "fuzz" / "qtest" / "profiles" / f"{self.profile}-{name}.toml"
        if not out.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text)
            tmp.replace(out)
        return out

    def fault_args(self):
        """The job point device, with which the fuzzer sets the origin."""
        return ["-device", "blklab-jobpoint"] if self.fault else []

    def start_faults(self, vm):
        """Reaches the job point and sets the origin: the fault's window
        counts from now (the model applies no fault before)."""
        if self.fault:
            vm.outb(JOBPOINT_PORT, JOBPOINT_REACHED)
            vm.outb(JOBPOINT_PORT, JOBPOINT_ORIGIN)

    def blockdev(self, node):
        opts = [f"driver=null-co,node-name={node}", f"size={self.drive_bytes}",
                f"read-zeroes={'on' if self.read_zeroes else 'off'}"]
        if self.host_latency_ns:
            opts.append(f"latency-ns={self.host_latency_ns}")
        return ["-blockdev", ",".join(opts)]

    def machine(self):
        return ["-machine", ("q35" if self.q35 else "pc") + ",accel=qtest",
                "-m", f"{GUEST_RAM >> 20}M"]

    def describe(self):
        fault = "none"
        if self.fault:
            fault = " ".join(f"{k}={v}" for k, v in self.fault.to_json().items()
                             if v is not None and k != "device")
        return (f"{'q35' if self.q35 else 'pc'} profile={self.profile} "
                f"seed={self.seed} drive={self.drive_bytes} "
                f"host_latency={self.host_latency_ns}ns fault=[{fault}]")


class PciDev:
    """Configuration space of one PCI function, through 0xcf8/0xcfc."""

    def __init__(self, vm, devfn, bus=0):
        self.vm = vm
        self.devfn = devfn
        self.bus = bus

    def _select(self, reg):
        self.vm.outl(0xCF8, 0x80000000 | self.bus << 16 | self.devfn << 8
                     | (reg & 0xFC))

    def read(self, reg, size=4):
        self._select(reg)
        port = 0xCFC + (reg & 3)
        return {1: self.vm.inb, 2: self.vm.inw, 4: self.vm.inl}[size](port)

    def write(self, reg, v, size=4):
        self._select(reg)
        port = 0xCFC + (reg & 3)
        {1: self.vm.outb, 2: self.vm.outw, 4: self.vm.outl}[size](port, v)

    def command(self, what, decode):
        """PCI command register changes a driver makes: `what` 0 turns bus
        mastering off, 1 back on, 2 turns decoding off too; `decode` is the
        decode bits the function uses (I/O 1, memory 2). A description, or
        None for another `what`."""
        if what > 2:
            return None
        self.write(0x04, [decode, decode | 4, 0][what], 2)
        return ["bus master off", "bus master on", "decode off"][what]

    def find_cap(self, cap_id):
        """Offset of the first capability `cap_id`, or None."""
        if not self.read(0x06, 2) & 0x10:
            return None
        pos = self.read(0x34, 1) & 0xFC
        for _ in range(48):
            if pos < 0x40:
                return None
            if self.read(pos, 1) == cap_id:
                return pos
            pos = self.read(pos + 1, 1) & 0xFC
        return None

    def bar_size(self, bar):
        """Size of memory BAR `bar` (probed, then restored)."""
        reg = 0x10 + 4 * bar
        old = self.read(reg)
        self.write(reg, 0xFFFFFFFF)
        mask = self.read(reg) & 0xFFFFFFF0
        self.write(reg, old)
        return (~mask & 0xFFFFFFFF) + 1 if mask else 0


class Family:
    """A device family under fuzz. Subclasses set NAME and OPS (op name ->
    weight) and define qemu_args(), setup(vm), one method op_<name>(vm, args)
    per op returning a short description, op_reap(vm, args) among them, and
    alive_read(vm), a register read that finish() ends with."""

    NAME = ""
    OPS = {}
    DEVICE_KIND = ""                # the front end, as device_faults names it
    # Trace events of the device model's fault paths: a lost command, a held
    # one cancelled or released at a reset, a host reset, the origin.
    FAULT_EVENTS = ["device_model_lost", "device_model_cancel",
                    "device_model_release", "device_model_host_reset",
                    "device_model_origin"]

    def __init__(self, header_bytes):
        self.header = Header(header_bytes)
        self.header.set_fault(self.DEVICE_KIND)
        self.table = weighted_table(self.OPS)
        self.bars = []              # (base, size) of the device's MMIO BARs
        # What the fuzzer, as the guest, saw of a fault (an error status, a
        # failed controller): tokens that count as coverage too.
        self.observed = set()

    def marks(self, trace_text):
        """Fault paths the trace log shows (family-specific); tokens."""
        return set()

    def finish(self, vm):
        """Lets everything the model holds complete (the next timers, then
        2 s of virtual time), reaps it, then checks QEMU still answers a
        register read (alive_read)."""
        for _ in range(8):
            vm.clock_step()
        vm.clock_step(2_000_000_000)
        self.op_reap(vm, None)
        self.alive_read(vm)

    def execute(self, vm, record):
        op = self.table[record[0]]
        desc = getattr(self, f"op_{op}")(vm, Args(record[1:]))
        return f"{op} {desc}" if desc else op

    # -- guest addresses by class --

    def addr(self, cls, raw, length=PAGE, align=PAGE):
        """A guest address for `length` bytes: a good buffer 9 times in 16,
        else the end of RAM, past it, the device's own BAR, 4 GiB and up,
        0, anything, or the family's control structures."""
        c = cls % 16
        span = max(PAGE, BUF_END - BUF_BASE - length)
        if c <= 8:
            a = BUF_BASE + raw % span
            return a - a % align if c <= 7 else a & ~3
        if c == 9:
            return GUEST_RAM - (raw % 16 + 1) * (PAGE if raw & 1 else 8)
        if c == 10:
            return (GUEST_RAM + raw % (PCI_MMIO_BASE - GUEST_RAM)) & ~(PAGE - 1)
        if c == 11 and self.bars:
            base, size = self.bars[raw % len(self.bars)]
            return base + (raw >> 8) % max(size, 16) & ~0xF
        if c == 12:
            return [1 << 32, (1 << 40) + PAGE, (1 << 64) - PAGE,
                    (1 << 52)][raw % 4]
        if c == 13:
            return 0
        if c == 14:
            return raw & ~3
        return self.control_addr(raw)

    def control_addr(self, raw):
        """An address inside the family's own control structures."""
        return (1 << 20) + raw % (8 << 20) & ~0x3F

    def step_ns(self, args):
        """A clock step: to the next timer (None) most often, else 0, 1 ns,
        up to 1 us, 100 us, 10 ms or 1 s."""
        c = args.u8() % 16
        raw = args.u32()
        if c < 7:
            return None
        return [0, 1, raw % 1000, raw % 100_000, raw % 10_000_000,
                raw % 1_000_000_000, 1_000_000_000, None, None][c - 7]

    def op_step(self, vm, a):
        """Steps QEMU_CLOCK_VIRTUAL (step_ns), to the next timer up to 4
        times in a row."""
        ns = self.step_ns(a)
        repeat = 1 + a.u8() % 4 if ns is None else 1
        for _ in range(repeat):
            t = vm.clock_step(ns)
        return f"{'next' if ns is None else ns} x{repeat} -> {t}"
