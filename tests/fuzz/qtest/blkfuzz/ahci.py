"""AHCI (ich9-ahci with ide-hd devmodel-profile and ncq-depth) under fuzz.

The fuzzer maps ABAR, gives each port a command list and a FIS receive area
and starts it, then, record by record: builds command tables (H2D register
FIS, PRDT with entries pointing anywhere, odd lengths) in random slots and
issues them, NCQ READ/WRITE FPDMA QUEUED with random tags (matching the slot
or not), LBAs and counts, alone or in bursts up to and past ncq-depth, other
ATA commands (DMA, PIO, flush, DSM/TRIM, identify, power, reset, diagnostic,
unknown), software reset FISes, writes and reads port and host registers
(PxCLB/PxFB moved anywhere, PxCI/PxSACT bits, PxCMD start/stop, index/data
pair in BAR4), port reset (PxSCTL.DET), HBA reset (GHC.HR), bus master off,
machine reset, all while the model holds completions, and steps the virtual
clock so they fire at the model's deadlines.

Ports: 0 has the drive under test; 1 a second drive (another profile, or
none), 2 an ide-cd without medium (or nothing); 3-5 are empty.
"""

import random
import re

from .common import (GUEST_RAM, PCI_MMIO_BASE, PROFILE_DIR, PROFILES,
                     Family, PciDev, profile_capacity)

SLOT = 5                            # -device ich9-ahci,addr=5.0
ABAR = PCI_MMIO_BASE
IDP_PORT = 0xC040
PORTS = 6
CLB_AREA = 0x100000                 # port p: CLB at +p*0x1000, FB at +0x800
TABLE_AREA = 0x200000               # port p slot s: +(p*32+s)*0x1000
TABLE_SIZE = 0x1000

GHC, IS = 0x04, 0x08
PX_CLB, PX_CLBU, PX_FB, PX_FBU, PX_IS, PX_IE, PX_CMD = 0, 4, 8, 0xC, 0x10, 0x14, 0x18
PX_TFD, PX_SIG, PX_SSTS, PX_SCTL, PX_SERR, PX_SACT, PX_CI = (
    0x20, 0x24, 0x28, 0x2C, 0x30, 0x34, 0x38)
CMD_ST, CMD_SUD, CMD_POD, CMD_CLO, CMD_FRE = 1, 2, 4, 8, 0x10
IS_TFES = 1 << 30
NCQ_ERROR_LOG = 0x10                # READ LOG EXT's log address (LBA 7:0)
LOG_BUF = 0x300000                  # port p's log page, +p*0x1000 (below BUF_BASE)

NCQ_DEPTHS = [32, 32, 1, 2, 4, 8, 31, 16]

# ATA command byte, weight, kind: ncq, dma, pio_in, pio_out, none
ATA_COMMANDS = [
    (0x60, 10, "ncq"), (0x61, 7, "ncq"), (0x25, 4, "dma"), (0x35, 3, "dma"),
    (0xC8, 2, "dma"), (0xCA, 2, "dma"), (0x20, 2, "pio_in"),
    (0x24, 1, "pio_in"), (0x30, 2, "pio_out"), (0x34, 1, "pio_out"),
    (0xC4, 1, "pio_in"), (0xC5, 1, "pio_out"), (0x29, 1, "pio_in"),
    (0x39, 1, "pio_out"), (0xC6, 1, "none"), (0xE7, 2, "none"),
    (0xEA, 2, "none"), (0x06, 2, "dma"), (0xEC, 1, "pio_in"),
    (0xEF, 1, "none"), (0x40, 1, "none"), (0x42, 1, "none"), (0x63, 1, "ncq"),
    (0x64, 1, "ncq"), (0x65, 1, "ncq"), (0x08, 1, "none"), (0x90, 1, "none"),
    (0xE0, 1, "none"), (0xE1, 1, "none"), (0xE5, 1, "none"), (0xE6, 1, "none"),
    (0xB0, 1, "pio_in"), (0xA0, 1, "none"), (0xA1, 1, "pio_in"),
    (0xC7, 1, "dma"), (0x00, 1, "none"), (None, 2, "none"),
]
ATA_TABLE = [c for c in ATA_COMMANDS for _ in range(c[1])]
LBA48 = {0x24, 0x25, 0x29, 0x34, 0x35, 0x39, 0x42, 0xEA}
# Host time a PIO command on a slow host (null-co latency-ns) may take: one
# host I/O per sector at most.
PIO_HOST_NS = 4_000_000_000


class Ahci(Family):
    NAME = "ahci"
    TRACE_EVENTS = ["ahci_*", "ncq_*", "process_ncq_*", "execute_ncq_*",
                    "handle_*", "ide_*"] + Family.FAULT_EVENTS
    DEVICE_KIND = "ahci-hd"
    OPS = {
        "issue": 30, "ncq_burst": 10, "step": 16, "reap": 8, "port_reset": 3,
        "hba_reset": 2, "port_stop": 3, "port_start": 3, "reg_write": 5,
        "reg_read": 1, "idp": 1, "srst": 2, "pci": 2, "system_reset": 1,
    }

    def __init__(self, header_bytes):
        super().__init__(header_bytes)
        h = self.header.raw
        self.ncq_depth = NCQ_DEPTHS[h[6] % 8]
        second = h[7] % 16
        self.second_profile = PROFILES[second % len(PROFILES)] if second < 10 else None
        self.cdrom = h[8] % 4 == 0
        self.second_depth = NCQ_DEPTHS[h[10] % 8]
        self.drives = {0: self.header.drive_bytes // 512}
        if self.second_profile:
            self.drives[1] = profile_capacity(self.second_profile) // 512
        self.header.q35 = self.header.q35 and h[9] % 2 == 0
        self.busy = [0] * PORTS
        self.abar = ABAR
        self.pci = None
        # The drive under test fails NCQ commands (0066) only with a
        # media_error fault: then a reap recovers as libata does. Other
        # inputs reap as they always did.
        fault = self.header.fault
        self.ncq_errors = bool(fault) and fault.kind == "media_error"

    def qemu_args(self):
        h = self.header
        args = [*h.machine(), *h.blockdev("d0"),
                "-device", f"ich9-ahci,id=ahci0,addr={SLOT}.0",
                "-device", f"ide-hd,bus=ahci0.0,drive=d0,id=disk0,"
                f"devmodel-profile={h.profile_path()},"
                f"devmodel-seed={h.seed},ncq-depth={self.ncq_depth}"]
        if self.second_profile:
            size = profile_capacity(self.second_profile)
            args += ["-blockdev", f"driver=null-co,node-name=d1,size={size},"
                     "read-zeroes=on",
                     "-device", f"ide-hd,bus=ahci0.1,drive=d1,id=disk1,"
                     f"devmodel-profile={PROFILE_DIR / self.second_profile}.toml,"
                     f"ncq-depth={self.second_depth}"]
        if self.cdrom:
            args += ["-device", "ide-cd,bus=ahci0.2,id=cd0"]
        return args

    # An NCQ command the model failed with a media error, which the drive
    # records in its NCQ Command Error log (qemu-patches/0066), and the
    # other NCQ commands it aborts for it then.
    NCQ_MARKS = {"ncq_media_error": "ahci ncq media error",
                 "ncq_abort": "ahci ncq media error aborted a command"}

    # READ LOG EXT of the NCQ Command Error log (0066), with the failed
    # command in it or with the NQ bit (no NCQ error since the last read).
    LOG_READ = re.compile(r"^(?:\d+@[0-9.]+:)?ide_read_log_ext_ncq_error .*"
                          r"error ([01]) ", re.M)

    def marks(self, trace_text):
        found = {mark for event, mark in self.NCQ_MARKS.items()
                 if re.search(rf"^(?:\d+@[0-9.]+:)?{event} ", trace_text, re.M)}
        for error in set(self.LOG_READ.findall(trace_text)):
            found.add("ahci ncq error log read" if error == "1"
                      else "ahci ncq error log read, no error")
        return found

    def describe(self):
        return (f"{self.header.describe()} ncq-depth={self.ncq_depth} "
                f"second={self.second_profile} cdrom={self.cdrom}")

    def control_addr(self, raw):
        return [CLB_AREA + raw % PORTS * 0x1000, CLB_AREA + raw % PORTS * 0x1000
                + 0x800, TABLE_AREA + raw % (PORTS * 32) * TABLE_SIZE,
                TABLE_AREA + raw % (PORTS * 32) * TABLE_SIZE + 0x80][raw >> 8 & 3]

    # -- plumbing --

    def preg(self, port, off):
        return self.abar + 0x100 + 0x80 * port + off

    def pwrite(self, vm, port, off, v):
        vm.writel(self.preg(port, off), v)

    def pread(self, vm, port, off):
        return vm.readl(self.preg(port, off))

    def map_bar(self, vm):
        self.pci.write(0x24, self.abar)
        self.pci.write(0x20, IDP_PORT | 1)
        self.pci.write(0x04, 0x0007, 2)          # I/O, memory, bus master
        self.bars = [(self.abar, 0x1000)]

    def start_port(self, vm, port, flags=0):
        """What a driver does to bring a port up: CLB, FB, clear errors,
        enable FIS receive, then start the command engine."""
        clb = CLB_AREA + port * 0x1000
        vm.memset(clb, 0x1000)
        self.pwrite(vm, port, PX_CMD, CMD_SUD | CMD_POD)
        self.pwrite(vm, port, PX_CLB, clb)
        self.pwrite(vm, port, PX_CLBU, 0)
        self.pwrite(vm, port, PX_FB, clb + 0x800)
        self.pwrite(vm, port, PX_FBU, 0)
        self.pwrite(vm, port, PX_SERR, 0xFFFFFFFF)
        self.pwrite(vm, port, PX_IS, 0xFFFFFFFF)
        self.pwrite(vm, port, PX_IE, 0xFFFFFFFF if flags & 1 else 0x7DC000FF)
        self.pwrite(vm, port, PX_CMD, CMD_SUD | CMD_POD | CMD_FRE)
        self.pwrite(vm, port, PX_CMD, CMD_SUD | CMD_POD | CMD_FRE | CMD_ST)
        self.busy[port] = 0

    def init_hba(self, vm, flags=0):
        vm.writel(self.abar + GHC, 0x80000000)
        for port in range(3):
            self.start_port(vm, port, flags)
        vm.writel(self.abar + GHC, 0x80000002)

    def setup(self, vm):
        self.pci = PciDev(vm, SLOT << 3)
        self.map_bar(vm)
        self.init_hba(vm, self.header.raw[11])
        vm.clock_step(0)

    def alive_read(self, vm):
        vm.readl(self.abar + GHC)

    # -- building commands --

    def pick_port(self, sel):
        return [0, 0, 0, 0, 0, 1, 1, 2, 3, 5][sel % 10] if sel < 250 else sel % PORTS

    def pick_slot(self, port, sel):
        free = [s for s in range(32) if not self.busy[port] >> s & 1]
        if free and sel < 220:
            return free[sel % len(free)]
        return sel % 32

    def lba(self, port, cls, raw):
        n = max(self.drives.get(port, 1 << 20), 1)
        return [raw % n, raw % n, raw % n, raw % n, raw % n & ~7, n - 1 - raw % 8,
                n, n + raw % 64, 0, raw % (1 << 28), (1 << 28) - 1 - raw % 8,
                raw % (1 << 48), (1 << 48) - 1, raw % 4096, n - 256,
                raw % n & ~255][cls % 16] & ((1 << 48) - 1)

    def count(self, cls, raw):
        return [raw % 8 + 1, raw % 8 + 1, 8, 8, raw % 256, raw % 64 + 1, 1, 0,
                raw, 256, 128, raw % 2048, 0xFFFF, 2, 16, raw % 32 + 1][cls % 16]

    def prdt(self, cls, raw, prdtl_sel, nbytes):
        """PRD entries for `nbytes` (and then some, or short of it)."""
        rng = random.Random(raw ^ prdtl_sel << 40 ^ nbytes << 20)
        if prdtl_sel < 200:
            n = 1 + prdtl_sel % 4
        else:
            n = [0, 8, 16, 64, 168, 169, 248, 0xFFFF][prdtl_sel % 8]
        entries = []
        left = nbytes
        for i in range(min(n, 248)):
            size = left // (n - i) if n - i > 1 else left
            if cls & 0x80 and rng.randrange(4) == 0:
                size = rng.choice([0, 1, 2, 511, 4 << 20, rng.getrandbits(22)])
            size = max(size, 2)
            c = cls if i == 0 else (rng.randrange(9) if rng.randrange(8)
                                    else rng.randrange(256))
            addr = self.addr(c, rng.getrandbits(40) if i else raw, size, align=2)
            left = max(left - size, 2)
            dbc = (size - 1) & 0x3FFFFF | (1 << 31 if rng.randrange(2) else 0)
            entries.append(addr.to_bytes(8, "little") + bytes(4) +
                           dbc.to_bytes(4, "little"))
        return n, b"".join(entries)

    def fis(self, command, lba, count, features, flags, tag):
        """A 20-byte H2D register FIS (type 0x27, C bit set)."""
        f = bytearray(20)
        f[0] = 0x27
        f[1] = 0x80 if not flags & 0x40 or flags & 0x80 else flags & 0x7F
        f[2] = command
        f[3] = features & 0xFF
        f[4], f[5], f[6] = lba & 0xFF, lba >> 8 & 0xFF, lba >> 16 & 0xFF
        f[7] = 0x40 | (lba >> 24 & 0xF if command not in LBA48 else 0)
        f[8], f[9], f[10] = lba >> 24 & 0xFF, lba >> 32 & 0xFF, lba >> 40 & 0xFF
        f[11] = features >> 8 & 0xFF
        f[12], f[13] = count & 0xFF, count >> 8 & 0xFF
        if command in (0x60, 0x61, 0x63, 0x64, 0x65):
            f[3], f[11] = count & 0xFF, count >> 8 & 0xFF
            f[12] = (tag & 0x1F) << 3 | (flags & 1)         # tag, RARC
            f[13] = flags >> 1 & 3 << 6                     # PRIO
            f[7] = 0x40 | (0x80 if flags & 8 else 0)        # FUA
        return bytes(f)

    def write_command(self, vm, port, slot, fis, write, prdtl, prdt, flags,
                      table=None, acmd=b""):
        table = table if table is not None else (
            TABLE_AREA + (port * 32 + slot) * TABLE_SIZE)
        if 0 <= table < GUEST_RAM - TABLE_SIZE:
            body = fis.ljust(0x40, b"\0") + acmd.ljust(0x40, b"\0")[:0x40] + prdt
            vm.memwrite(table, body[:TABLE_SIZE])
        cfl = 5 if not flags & 0x20 else flags % 32
        opts = (cfl | (1 << 5 if flags & 0x10 and port == 2 else 0) |
                (1 << 6 if write else 0) | (1 << 10 if flags & 4 else 0))
        header = ((opts | (prdtl & 0xFFFF) << 16).to_bytes(4, "little") +
                  bytes(4) + table.to_bytes(8, "little") + bytes(16))
        clb = CLB_AREA + port * 0x1000
        vm.memwrite(clb + 32 * slot, header)

    def build(self, vm, port, slot, a, ncq_only=False):
        """Writes one command from the record's bytes; returns (desc, ncq)."""
        sel = a.u8()
        command, _, kind = ATA_TABLE[sel % len(ATA_TABLE)]
        if ncq_only:
            command, kind = (0x60 if sel & 1 else 0x61), "ncq"
        lba_cls, lba_raw = a.u8(), a.u64()
        count_raw, count_cls = a.u16(), a.u8()
        prd_cls, addr_raw, prdtl_sel = a.u8(), a.u32(), a.u8()
        flags, features = a.u8(), a.u8()
        if command is None:
            command = features
        lba = self.lba(port, lba_cls, lba_raw)
        count = self.count(count_cls, count_raw)
        tag = slot if not flags & 2 else count_raw >> 11
        sectors = count or (65536 if command in LBA48 or kind == "ncq" else 256)
        if kind in ("pio_in", "pio_out") and self.header.host_latency_ns:
            # AHCI moves PIO data by DMA, so a PIO command's blocks run back
            # to back without the guest, and with a zero-latency model the
            # main loop waits for each slow host block (virtual time stands
            # still meanwhile): keep that well inside the hang timeout.
            most = PIO_HOST_NS // self.header.host_latency_ns
            if sectors > most:
                count = sectors = most
        nbytes = 512 * (sectors if kind in ("ncq", "dma", "pio_in", "pio_out")
                        else 1)
        nbytes = min(nbytes, 8 << 20) if not flags & 0x80 else nbytes
        prdtl, prdt = self.prdt(prd_cls, addr_raw, prdtl_sel, nbytes)
        write = command in (0x61, 0x35, 0xCA, 0x30, 0x34, 0xC5, 0x39, 0x06,
                            0x64) or kind == "pio_out"
        if command == 0x06 and prdt:
            # DSM TRIM: features bit 0, a payload of ranges at the first PRD.
            features |= 1
            rng = random.Random(addr_raw)
            n = max(self.drives.get(port, 1 << 20), 1)
            ranges = b"".join(
                ((rng.choice([lba, rng.randrange(n), n - 1, (1 << 48) - 1])
                  | rng.choice([0, 1, 8, 0xFFFF, rng.getrandbits(16)]) << 48)
                 & (1 << 64) - 1).to_bytes(8, "little")
                for _ in range(rng.randint(1, 8)))
            first = int.from_bytes(prdt[:8], "little")
            if 0 <= first < GUEST_RAM - 64:
                vm.memwrite(first, ranges)
        fis = self.fis(command, lba, count, features | count_raw << 8 & 0xFF00,
                       flags if command not in LBA48 else flags & 0xBF, tag)
        acmd = bytes([0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0]) if port == 2 else b""
        table = None if not flags & 0x08 or kind == "ncq" else self.addr(
            prd_cls >> 4, addr_raw, TABLE_SIZE, align=128)
        self.write_command(vm, port, slot, fis, write, prdtl, prdt, flags,
                           table, acmd)
        return (f"p{port} s{slot} cmd=0x{command:02x} lba={lba:#x} "
                f"count={count} prdtl={prdtl} tag={tag} flags={flags:#x}",
                kind == "ncq", tag)

    # -- operations --

    def op_issue(self, vm, a):
        port = self.pick_port(a.u8())
        slot = self.pick_slot(port, a.u8())
        desc, ncq, tag = self.build(vm, port, slot, a)
        if ncq:
            self.pwrite(vm, port, PX_SACT, 1 << tag)
        self.pwrite(vm, port, PX_CI, 1 << slot)
        self.busy[port] |= 1 << slot
        return desc

    def op_ncq_burst(self, vm, a):
        port = self.pick_port(a.u8() & 0xF0)
        n = 2 + a.u8() % 40
        seed = a.u64()
        rng = random.Random(seed)
        bits = 0
        descs = []
        from .fuzzinput import Args
        for _ in range(n):
            slot = self.pick_slot(port, rng.randrange(256))
            if bits >> slot & 1:
                continue
            args = Args(rng.randbytes(20))
            desc, _, tag = self.build(vm, port, slot, args, ncq_only=True)
            bits |= 1 << slot
            descs.append(f"s{slot}")
        self.pwrite(vm, port, PX_SACT, bits)
        self.pwrite(vm, port, PX_CI, bits)
        self.busy[port] |= bits
        return f"p{port} {len(descs)} NCQ commands {bits:#010x}"

    def op_reap(self, vm, a):
        vm.clock_step(0)         # one more main loop iteration first
        done = []
        recover = a.u8() if a else 255      # the run's last reap (finish) only reaps
        for port in range(3):
            pis = self.pread(vm, port, PX_IS)
            sact = self.pread(vm, port, PX_SACT)
            if pis:
                self.pwrite(vm, port, PX_IS, pis)
            desc = f"p{port} is={pis:#x}"
            if (port == 0 and self.ncq_errors and pis & IS_TFES and sact
                    and recover < 192):
                desc += " " + self.read_ncq_error_log(vm, port)
            self.busy[port] = (self.pread(vm, port, PX_CI) |
                               self.pread(vm, port, PX_SACT))
            done.append(f"{desc} busy={self.busy[port]:#x}")
        vm.writel(self.abar + IS, vm.readl(self.abar + IS))
        return " ".join(done)

    def read_ncq_error_log(self, vm, port):
        """What libata's error handler does for a task file error while NCQ
        commands are outstanding on the drive under test (ahci_error_handler(), then
        ata_eh_read_log_10h()): stop and restart the command engine, then
        READ LOG EXT (2Fh) of the NCQ Command Error log, 10h, page 0, one
        page, PIO data-in to RAM. The drive returns the failed command's tag
        and ends its NCQ error condition (qemu-patches/0066)."""
        self.pwrite(vm, port, PX_CMD, CMD_SUD | CMD_POD | CMD_FRE)
        self.pwrite(vm, port, PX_SERR, 0xFFFFFFFF)
        self.pwrite(vm, port, PX_IS, 0xFFFFFFFF)
        self.pwrite(vm, port, PX_CMD, CMD_SUD | CMD_POD | CMD_FRE | CMD_ST)
        fis = self.fis(0x2F, NCQ_ERROR_LOG, 1, 0, 0, 0)
        buf = LOG_BUF + port * 0x1000
        prd = buf.to_bytes(8, "little") + bytes(4) + (511).to_bytes(4, "little")
        self.write_command(vm, port, 0, fis, False, 1, prd, 0)
        self.pwrite(vm, port, PX_CI, 1)
        vm.clock_step(0)
        return f"read log 10h: {vm.memread(buf, 1)[0]:#x}"

    def op_port_reset(self, vm, a):
        port = self.pick_port(a.u8())
        flags = a.u8()
        self.pwrite(vm, port, PX_SCTL, 1 if flags & 1 else 0x301)
        if flags & 2:
            vm.clock_step(a.u16() * 100)
        self.pwrite(vm, port, PX_SCTL, 0 if flags & 4 else 0x300)
        if flags < 200:
            self.start_port(vm, port, flags)
        return f"p{port} flags={flags:#x}"

    def op_hba_reset(self, vm, a):
        flags = a.u8()
        vm.writel(self.abar + GHC, 1 | (0x80000000 if flags & 1 else 0))
        if flags < 220:
            self.init_hba(vm, flags)
        return f"flags={flags:#x}"

    def op_port_stop(self, vm, a):
        port = self.pick_port(a.u8())
        v = [CMD_SUD | CMD_POD | CMD_FRE, CMD_SUD | CMD_POD, 0,
             CMD_SUD | CMD_POD | CMD_ST][a.u8() % 4]
        self.pwrite(vm, port, PX_CMD, v)
        return f"p{port} cmd={v:#x}"

    def op_port_start(self, vm, a):
        port = self.pick_port(a.u8())
        flags = a.u8()
        if flags & 1:
            self.start_port(vm, port, flags)
            return f"p{port} full"
        v = CMD_SUD | CMD_POD | CMD_FRE | CMD_ST | (CMD_CLO if flags & 2 else 0)
        self.pwrite(vm, port, PX_CMD, v)
        return f"p{port} cmd={v:#x}"

    def op_reg_write(self, vm, a):
        sel, raw = a.u8(), a.u32()
        if sel < 160:
            port = sel % PORTS
            off = [PX_CLB, PX_CLBU, PX_FB, PX_FBU, PX_IS, PX_IE, PX_CMD, PX_SCTL,
                   PX_SERR, PX_SACT, PX_CI, 0x3C, 0x40, 0x44, 0x70, PX_TFD][
                       (sel >> 3) % 16]
            if off in (PX_CLB, PX_FB) and raw & 1:
                raw = self.addr(raw >> 1, raw >> 9, 1024, align=128) & 0xFFFFFFFF
            addr = self.preg(port, off)
        elif sel < 200:
            addr = self.abar + [0, GHC, IS, 0x0C, 0x10, 0x14, 0x18, 0x1C, 0x20,
                                0x24, 0x28, 0x2C][sel % 12]
            if addr == self.abar + GHC:
                raw &= ~1 if sel & 1 else 0xFFFFFFFF
        else:
            addr = self.abar + a.u16() % 0x1000 & ~3
        size = [4, 4, 4, 1, 2, 8][a.u8() % 6]
        vm.write_n(addr, size, raw)
        return f"{addr - self.abar:#x} size={size} value={raw:#x}"

    def op_reg_read(self, vm, a):
        off = a.u16() % 0x1000
        size = [4, 4, 1, 2, 8][a.u8() % 5]
        v = vm.read_n(self.abar + (off & ~(size - 1)), size)
        return f"{off:#x} -> {v:#x}"

    def op_idp(self, vm, a):
        index, value = a.u32(), a.u32()
        if a.u8() & 1:
            index = index % 0x400 & ~3
        vm.outl(IDP_PORT, index)
        if a.u8() & 1:
            vm.outl(IDP_PORT + 4, value)
            return f"index={index:#x} write {value:#x}"
        return f"index={index:#x} read {vm.inl(IDP_PORT + 4):#x}"

    def op_srst(self, vm, a):
        """Software reset by FIS: SRST set (R and C in the header), then
        cleared, as AHCI 1.3.1 section 10.4.1 has it."""
        port = self.pick_port(a.u8())
        flags = a.u8()
        for i, ctl in enumerate((0x04, 0x00)):
            slot = self.pick_slot(port, a.u8())
            f = bytearray(20)
            f[0], f[15] = 0x27, ctl
            self.write_command(vm, port, slot, bytes(f), False, 0, b"",
                               (4 if i == 0 and flags & 1 else 0))
            self.pwrite(vm, port, PX_CI, 1 << slot)
            if flags & 2:
                vm.clock_step(a.u16())
        return f"p{port} flags={flags:#x}"

    def op_pci(self, vm, a):
        what, raw = a.u8() % 6, a.u32()
        if what == 0:
            self.pci.write(0x04, 0x0003, 2)
            return "bus master off"
        if what == 1:
            self.pci.write(0x04, 0x0007, 2)
            return "bus master on"
        if what == 2:
            self.abar = PCI_MMIO_BASE + (raw % 64) * 0x10000
            self.map_bar(vm)
            return f"abar={self.abar:#x}"
        if what == 3:
            reg = raw % 256 & ~3
            self.pci.write(reg, raw >> 8)
            self.abar = self.pci.read(0x24) & ~0xF
            self.bars = [(self.abar, 0x1000)]
            return f"cfg[{reg:#x}]={raw >> 8:#x}"
        if what == 4:
            cap = self.pci.find_cap(0x05)               # MSI
            if cap is not None:
                self.pci.write(cap + 2, raw & 1, 2)
            return f"msi {raw & 1}"
        self.map_bar(vm)
        return "remap"

    def op_system_reset(self, vm, a):
        vm.outb(0xCF9, 0x06)
        vm.clock_step(0)
        if a.u8() < 200:
            self.map_bar(vm)
            self.init_hba(vm)
        return ""
