"""PIIX IDE (piix3-ide on pc, ide-hd devmodel-profile) under fuzz.

The fuzzer drives the legacy ports: task file writes (LBA28 and LBA48),
commands (DMA with the bus master, PIO with partial data transfers through
16- and 32-bit data port accesses, flush, TRIM, identify, power, reset,
diagnostic, unknown opcodes), bus master PRD tables pointing anywhere (no
end-of-table mark, zero lengths, past RAM), bus master start and stop in
either direction and at odd moments, device selection, software reset
(SRST) with a command held by the model, bus master disable, machine reset,
and steps the virtual clock so held completions fire at the model's
deadlines.

Channels: ide.0 master has the drive under test; ide.0 slave and ide.1
master a second and third drive (other profiles, or none); ide.1 slave an
ide-cd without medium (or nothing).
"""

import random

from .common import (GUEST_RAM, PROFILE_DIR, PROFILES, Family, PciDev,
                     profile_capacity)

DEVFN = 1 << 3 | 1                  # piix3-ide at 00:01.1 on pc
BMDMA = 0xC000
CHANNEL = [(0x1F0, 0x3F6), (0x170, 0x376)]
PRDT_AREA = 0x100000                # channel c: PRD table at +c*0x10000

REG_DATA, REG_FEATURE, REG_NSECTOR, REG_LBA_LOW, REG_LBA_MID = 0, 1, 2, 3, 4
REG_LBA_HIGH, REG_DEVICE, REG_COMMAND = 5, 6, 7
BM_CMD, BM_STATUS, BM_PRDT = 0, 2, 4

# command, weight, kind: dma_in, dma_out, pio_in, pio_out, none
ATA_COMMANDS = [
    (0xC8, 8, "dma_in"), (0xCA, 6, "dma_out"), (0x25, 4, "dma_in"),
    (0x35, 3, "dma_out"), (0x06, 3, "dma_out"), (0x20, 3, "pio_in"),
    (0x24, 2, "pio_in"), (0x30, 3, "pio_out"), (0x34, 2, "pio_out"),
    (0xC4, 1, "pio_in"), (0xC5, 1, "pio_out"), (0x29, 1, "pio_in"),
    (0x39, 1, "pio_out"), (0xC6, 1, "none"), (0xE7, 3, "none"),
    (0xEA, 2, "none"), (0xEC, 2, "pio_in"), (0xEF, 1, "none"),
    (0x40, 1, "none"), (0x42, 1, "none"), (0x70, 1, "none"), (0x08, 1, "none"),
    (0x90, 1, "none"), (0xE0, 1, "none"), (0xE1, 1, "none"),
    (0xE5, 1, "none"), (0xE6, 1, "none"), (0xA0, 1, "pio_out"),
    (0xA1, 1, "pio_in"), (0xC7, 1, "dma_in"), (0xB0, 1, "pio_in"),
    (0xF8, 1, "none"), (0x27, 1, "none"), (0x00, 1, "none"), (None, 2, "none"),
]
ATA_TABLE = [c for c in ATA_COMMANDS for _ in range(c[1])]
LBA48 = {0x24, 0x25, 0x29, 0x34, 0x35, 0x39, 0x42, 0xEA, 0x27}


class Ide(Family):
    NAME = "ide"
    TRACE_EVENTS = ["ide_*", "bmdma_*"] + Family.FAULT_EVENTS
    DEVICE_KIND = "ide-hd"
    OPS = {
        "dma": 26, "pio": 10, "nondata": 8, "data": 6, "step": 16, "reap": 6,
        "bm_stop": 4, "bm_write": 3, "srst": 3, "taskfile": 4, "port_read": 2,
        "select": 3, "pci": 2, "system_reset": 1,
    }

    def __init__(self, header_bytes):
        super().__init__(header_bytes)
        h = self.header.raw
        self.header.q35 = False             # PIIX IDE lives on pc
        extra = [PROFILES[b % len(PROFILES)] if b % 16 < 8 else None
                 for b in (h[6], h[7])]
        self.drives = {(0, 0): (self.header.profile,
                                self.header.drive_bytes // 512)}
        if extra[0]:
            self.drives[(0, 1)] = (extra[0], profile_capacity(extra[0]) // 512)
        if extra[1]:
            self.drives[(1, 0)] = (extra[1], profile_capacity(extra[1]) // 512)
        self.cdrom = h[8] % 4 == 0
        self.unit = [0, 0]
        self.pci = None

    def qemu_args(self):
        h = self.header
        args = [*h.machine(), *h.blockdev("d0"),
                "-device", f"ide-hd,bus=ide.0,unit=0,drive=d0,id=disk0,"
                f"devmodel-profile={h.profile_path()},"
                f"devmodel-seed={h.seed}"]
        for i, ((bus, unit), (profile, sectors)) in enumerate(
                sorted(self.drives.items())[1:], start=1):
            args += ["-blockdev", f"driver=null-co,node-name=d{i},"
                     f"size={sectors * 512},read-zeroes=on",
                     "-device", f"ide-hd,bus=ide.{bus},unit={unit},drive=d{i},"
                     f"devmodel-profile={PROFILE_DIR / profile}.toml"]
        if self.cdrom:
            args += ["-device", "ide-cd,bus=ide.1,unit=1,id=cd0"]
        return args

    def describe(self):
        return (f"{self.header.describe()} drives="
                f"{sorted((k, v[0]) for k, v in self.drives.items())} "
                f"cdrom={self.cdrom}")

    def control_addr(self, raw):
        return PRDT_AREA + raw % 2 * 0x10000 + (raw >> 1) % 64 * 8

    # -- plumbing --

    def port(self, ch, reg):
        return CHANNEL[ch][0] + reg

    def bm(self, ch, reg):
        return BMDMA + 8 * ch + reg

    def select(self, vm, ch, unit, lba_top=0):
        self.unit[ch] = unit
        vm.outb(self.port(ch, REG_DEVICE), 0xE0 | unit << 4 | lba_top & 0xF)

    def taskfile(self, vm, ch, command, lba, count, features):
        if command in LBA48:
            vm.outb(self.port(ch, REG_FEATURE), features >> 8)
            vm.outb(self.port(ch, REG_NSECTOR), count >> 8)
            vm.outb(self.port(ch, REG_LBA_LOW), lba >> 24)
            vm.outb(self.port(ch, REG_LBA_MID), lba >> 32)
            vm.outb(self.port(ch, REG_LBA_HIGH), lba >> 40)
        vm.outb(self.port(ch, REG_FEATURE), features)
        vm.outb(self.port(ch, REG_NSECTOR), count)
        vm.outb(self.port(ch, REG_LBA_LOW), lba)
        vm.outb(self.port(ch, REG_LBA_MID), lba >> 8)
        vm.outb(self.port(ch, REG_LBA_HIGH), lba >> 16)
        top = 0 if command in LBA48 else lba >> 24
        vm.outb(self.port(ch, REG_DEVICE), 0xE0 | self.unit[ch] << 4 | top & 0xF)

    def setup(self, vm):
        self.pci = PciDev(vm, DEVFN)
        self.pci.write(0x20, BMDMA | 1)
        self.pci.write(0x04, 0x0005, 2)                 # I/O, bus master
        for ch in (0, 1):
            vm.outb(CHANNEL[ch][1], 0)                  # nIEN off
            self.select(vm, ch, 0)
        vm.clock_step(0)

    def alive_read(self, vm):
        vm.inb(self.port(0, REG_COMMAND))

    # -- arguments --

    def sectors_of(self, ch):
        d = self.drives.get((ch, self.unit[ch]))
        return max(d[1], 1) if d else 1 << 20

    def lba(self, ch, cls, raw):
        n = self.sectors_of(ch)
        return [raw % n, raw % n, raw % n, raw % n & ~7, n - 1 - raw % 8, n,
                n + raw % 64, 0, raw % (1 << 28), (1 << 28) - 1 - raw % 8,
                raw % (1 << 48), (1 << 48) - 1, raw % 4096, n - 256,
                raw % n & ~255, raw % n][cls % 16] & ((1 << 48) - 1)

    def count(self, cls, raw):
        return [raw % 8 + 1, raw % 8 + 1, 8, 8, raw % 256, 1, 0, raw & 0xFFFF,
                256, 128, 2, 16][cls % 12]

    def prd_table(self, vm, ch, cls, raw, nbytes):
        """Writes a PRD table for `nbytes` at the channel's PRDT_AREA page,
        with odd entries now and then; returns its address."""
        rng = random.Random(raw ^ cls << 32 ^ nbytes)
        n = 1 + cls % 4 if cls < 192 else [0, 8, 64, 512][cls % 4]
        table = PRDT_AREA + ch * 0x10000
        entries = []
        left = nbytes
        for i in range(n):
            size = left // (n - i) if n - i > 1 else left
            if cls & 0x40 and rng.randrange(4) == 0:
                size = rng.choice([0, 1, 2, 510, 65536, rng.getrandbits(16)])
            c = rng.randrange(9) if rng.randrange(8) else rng.randrange(256)
            addr = self.addr(c, rng.getrandbits(32), size, align=2) & 0xFFFFFFFF
            last = i == n - 1 and not (cls & 0x20 and rng.randrange(2))
            entries.append(addr.to_bytes(4, "little") +
                           (size & 0xFFFF).to_bytes(2, "little") +
                           (0x8000 if last else 0).to_bytes(2, "little"))
            left = max(left - size, 0)
        if entries:
            vm.memwrite(table, b"".join(entries)[:0x10000])
        return table

    # -- operations --

    def op_dma(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        sel = a.u8()
        command, _, kind = ATA_TABLE[sel % len(ATA_TABLE)]
        if kind not in ("dma_in", "dma_out") and sel & 1:
            command, kind = (0xC8, "dma_in") if sel & 2 else (0xCA, "dma_out")
        lba_cls, lba_raw = a.u8(), a.u64()
        count_cls, count_raw = a.u8(), a.u16()
        prd_cls, raw = a.u8(), a.u32()
        flags = a.u8()
        features = a.u8()
        if command is None:
            command = features
        lba = self.lba(ch, lba_cls, lba_raw)
        count = self.count(count_cls, count_raw)
        sectors = count or (65536 if command in LBA48 else 256)
        nbytes = min(sectors * 512, 1 << 20) if not flags & 0x80 else sectors * 512
        if command == 0x06:
            features |= 1
        table = self.prd_table(vm, ch, prd_cls, raw, nbytes)
        if command == 0x06:
            self.trim_payload(vm, ch, table, lba, raw)
        to_memory = (kind == "dma_in") != bool(flags & 0x40)
        vm.outb(self.bm(ch, BM_CMD), 0)
        vm.outb(self.bm(ch, BM_STATUS), 0x06)
        vm.outl(self.bm(ch, BM_PRDT), table if not flags & 0x10 else raw)
        early = flags & 0x08
        if early:
            vm.outb(self.bm(ch, BM_CMD), 1 | (8 if to_memory else 0))
        self.taskfile(vm, ch, command, lba, count, features)
        vm.outb(self.port(ch, REG_COMMAND), command)
        if not early and not flags & 0x04:
            vm.outb(self.bm(ch, BM_CMD), 1 | (8 if to_memory else 0))
        return (f"ch{ch}.{self.unit[ch]} cmd=0x{command:02x} lba={lba:#x} "
                f"count={count} bytes={nbytes} {'in' if to_memory else 'out'}"
                f"{' early' if early else ''}{' nostart' if flags & 4 else ''}")

    def trim_payload(self, vm, ch, table, lba, raw):
        first = int.from_bytes(vm.memread(table, 4), "little")
        if not 0 <= first < GUEST_RAM - 512:
            return
        rng = random.Random(raw)
        n = self.sectors_of(ch)
        ranges = b"".join(
            ((rng.choice([lba, rng.randrange(n), n - 1, (1 << 48) - 1]) |
              rng.choice([0, 1, 8, 0xFFFF, rng.getrandbits(16)]) << 48)
             & (1 << 64) - 1).to_bytes(8, "little")
            for _ in range(rng.randint(1, 8)))
        vm.memwrite(first, ranges)

    def op_pio(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        sel = a.u8()
        pio = [c for c in ATA_COMMANDS if c[2] in ("pio_in", "pio_out")]
        command, _, kind = pio[sel % len(pio)]
        lba = self.lba(ch, a.u8(), a.u64())
        count = self.count(a.u8(), a.u16())
        features = a.u8()
        if command == 0xC6 or (command in (0xC4, 0xC5, 0x29, 0x39) and
                               features & 1):
            vm.outb(self.port(ch, REG_NSECTOR), 1 << (features >> 1) % 8)
            vm.outb(self.port(ch, REG_COMMAND), 0xC6)   # SET MULTIPLE first
        self.taskfile(vm, ch, command, lba, count, features)
        vm.outb(self.port(ch, REG_COMMAND), command)
        words = self.transfer(vm, ch, kind == "pio_out", a.u8(), a.u16())
        return (f"ch{ch}.{self.unit[ch]} cmd=0x{command:02x} lba={lba:#x} "
                f"count={count} {words} data accesses")

    def transfer(self, vm, ch, out, mode, raw):
        """Up to 300 data port accesses (each a qtest command), 16- or
        32-bit, reading or writing, with clock steps between some of them;
        returns how many."""
        n = [256, 32, 8, raw % 300, 1, 0, 64, 257][mode % 8]
        wide = mode & 0x10
        port = self.port(ch, REG_DATA)
        for i in range(n):
            if out:
                (vm.outl if wide else vm.outw)(port, (raw * (i + 1)) & 0xFFFFFFFF)
            else:
                (vm.inl if wide else vm.inw)(port)
            if mode & 0x20 and i % 64 == 63:
                vm.clock_step()
        return n

    def op_data(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        out = a.u8() & 1
        n = self.transfer(vm, ch, out, a.u8(), a.u16())
        return f"ch{ch} {'out' if out else 'in'} {n}"

    def op_nondata(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        sel = a.u8()
        nd = [c for c in ATA_COMMANDS if c[2] == "none"]
        command = nd[sel % len(nd)][0]
        lba = self.lba(ch, a.u8(), a.u64())
        count = self.count(a.u8(), a.u16())
        features = a.u8()
        if command is None:
            command = features
        self.taskfile(vm, ch, command, lba, count, features)
        vm.outb(self.port(ch, REG_COMMAND), command)
        return f"ch{ch}.{self.unit[ch]} cmd=0x{command:02x} lba={lba:#x}"

    def op_reap(self, vm, a):
        vm.clock_step(0)         # one more main loop iteration first
        out = []
        for ch in (0, 1):
            st = vm.inb(self.port(ch, REG_COMMAND))     # clears the irq
            bms = vm.inb(self.bm(ch, BM_STATUS))
            vm.outb(self.bm(ch, BM_STATUS), bms & 0x06)
            err = ""
            if st & 0x01:                                # ERR: what error
                e = vm.inb(self.port(ch, REG_FEATURE))
                self.observed.add(f"ide error {e:#x} status {st:#x}")
                err = f" error={e:#x}"
            out.append(f"ch{ch} status={st:#x}{err} bm={bms:#x}")
        return " ".join(out)

    def op_bm_stop(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        v = [0, 0, 8, 1, 9][a.u8() % 5]
        vm.outb(self.bm(ch, BM_CMD), v)
        return f"ch{ch} cmd={v:#x}"

    def op_bm_write(self, vm, a):
        ch = a.u8() % 2
        reg = a.u8() % 8
        v = a.u32()
        size = [1, 1, 2, 4][a.u8() % 4]
        port = BMDMA + 8 * ch + reg
        {1: vm.outb, 2: vm.outw, 4: vm.outl}[size](port, v)
        return f"{port:#x} size={size} value={v:#x}"

    def op_srst(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        flags = a.u8()
        vm.outb(CHANNEL[ch][1], 0x04 | (flags & 2))
        if flags & 1:
            vm.clock_step(a.u16() * 100)
        if flags < 240:
            vm.outb(CHANNEL[ch][1], flags & 2)
        self.unit[ch] = 0
        return f"ch{ch} flags={flags:#x}"

    def op_taskfile(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        reg = a.u8() % 9
        v = a.u8()
        if reg == 8:
            vm.outb(CHANNEL[ch][1], v)
        elif reg == 0:
            vm.outw(self.port(ch, 0), a.u16())
        else:
            vm.outb(self.port(ch, reg), v)
        if reg == REG_DEVICE:
            self.unit[ch] = v >> 4 & 1
        return f"ch{ch} reg={reg} value={v:#x}"

    def op_port_read(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        reg = a.u8() % 9
        v = vm.inb(CHANNEL[ch][1] if reg == 8 else self.port(ch, reg))
        return f"ch{ch} reg={reg} -> {v:#x}"

    def op_select(self, vm, a):
        ch = 0 if a.u8() % 4 else 1
        unit = a.u8() & 1
        self.select(vm, ch, unit)
        return f"ch{ch}.{unit}"

    def op_pci(self, vm, a):
        what, raw = a.u8() % 5, a.u32()
        done = self.pci.command(what, 1)
        if done:
            return done
        if what == 3:
            reg = raw % 256 & ~3
            if reg != 0x20:
                self.pci.write(reg, raw >> 8)
            return f"cfg[{reg:#x}]={raw >> 8:#x}"
        self.pci.write(0x20, BMDMA | 1)
        self.pci.write(0x04, 0x0005, 2)
        return "remap"

    def op_system_reset(self, vm, a):
        vm.outb(0xCF9, 0x06)
        vm.clock_step(0)
        if a.u8() < 200:
            self.setup(vm)
        return ""
