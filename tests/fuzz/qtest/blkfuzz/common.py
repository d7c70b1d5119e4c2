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

import pathlib
import tomllib

from .fuzzinput import Args, weighted_table

REPO = pathlib.Path(__file__).resolve().parents[4]
PROFILE_DIR = REPO / "devmodel" / "profiles"

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


class Header:
    """The choices an input's header bytes make; bytes 0-5 are common, the
    rest belong to the family."""

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
        return (f"{'q35' if self.q35 else 'pc'} profile={self.profile} "
                f"seed={self.seed} drive={self.drive_bytes} "
                f"host_latency={self.host_latency_ns}ns")


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

    def __init__(self, header_bytes):
        self.header = Header(header_bytes)
        self.table = weighted_table(self.OPS)
        self.bars = []              # (base, size) of the device's MMIO BARs

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
