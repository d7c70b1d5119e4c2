"""virtio-blk (virtio-blk-pci with devmodel-profile, ioeventfd=off) under
fuzz.

The fuzzer is a careless virtio driver on the legacy (transitional)
interface of the PCI function's I/O BAR: it negotiates features (any bits),
places the virtqueues anywhere (or nowhere), and then, record by record,
queues requests (read, write, flush, discard, write zeroes, get id, SCSI,
unknown types) whose descriptor chains point anywhere, with any lengths and
flags (a missing status byte, a device-writable header, NEXT loops,
indirect tables), alone or in bursts, notifies queues that may not exist,
resets the device and writes its status with requests held by the model,
writes registers and configuration space, turns bus mastering off, moves
the BAR, resets the machine, and steps the virtual clock so held
completions fire at the model's deadlines.

The header picks, besides the common choices, the number of virtqueues
(num-queues) and their size (queue-size).
"""

import random
import re

from .common import GUEST_RAM, Family, PciDev
from .fuzzinput import Args

SLOT = 4                            # -device virtio-blk-pci,addr=4.0
IO_BASE = 0xD000                    # where the fuzzer maps the I/O BAR
VQ_AREA = 0x100000                  # queue q's vring at +q*0x20000
INDIRECT_AREA = 0x900000            # indirect descriptor tables
HEADER_AREA = 0xA00000              # request headers and discard ranges
VRING_ALIGN = 4096                  # the legacy interface's alignment

# Legacy virtio-pci registers (offsets in the I/O BAR, without MSI-X).
REG_HOST_FEATURES, REG_GUEST_FEATURES, REG_QUEUE_PFN = 0x00, 0x04, 0x08
REG_QUEUE_NUM, REG_QUEUE_SEL, REG_QUEUE_NOTIFY = 0x0C, 0x0E, 0x10
REG_STATUS, REG_ISR, REG_CONFIG = 0x12, 0x13, 0x14
STATUS_ACK, STATUS_DRIVER, STATUS_DRIVER_OK = 1, 2, 4

DESC_NEXT, DESC_WRITE, DESC_INDIRECT = 1, 2, 4
F_INDIRECT_DESC, F_EVENT_IDX = 1 << 28, 1 << 29

T_IN, T_OUT, T_FLUSH, T_GET_ID, T_DISCARD, T_WRITE_ZEROES = 0, 1, 4, 8, 11, 13
T_SCSI = 2
REQUEST_TYPES = ([T_IN] * 10 + [T_OUT] * 8 + [T_FLUSH] * 3 + [T_DISCARD] * 3 +
                 [T_WRITE_ZEROES] * 3 + [T_GET_ID, T_SCSI, 0x80000001, None])

NUM_QUEUES_CHOICES = [1, 1, 2, 4, 1, 2, 3, 1]
QUEUE_SIZE_CHOICES = [256, 256, 4, 8, 64, 128, 1024, 256]


class Vq:
    """The driver's view of one virtqueue."""

    def __init__(self, addr, num):
        self.addr = addr
        self.num = num
        self.avail_idx = 0
        self.used_seen = 0

    @property
    def avail(self):
        return self.addr + 16 * self.num

    @property
    def used(self):
        end = self.avail + 4 + 2 * self.num + 2
        return (end + VRING_ALIGN - 1) // VRING_ALIGN * VRING_ALIGN


class VirtioBlk(Family):
    NAME = "virtio-blk"
    TRACE_EVENTS = ["virtio_blk_*", "virtqueue_*", "virtio_queue_*",
                    "virtio_notify*", "virtio_set_status", "device_model_*"]
    DEVICE_KIND = "virtio-blk"
    # A request the model failed: its host I/O succeeded (ret 0), yet it
    # ends with VIRTIO_BLK_S_IOERR (1), which only a media error does (0059).
    MEDIA_ERROR_RE = re.compile(
        r"virtio_blk_rw_complete [^\n]* ret 0\n(?:\d+@[0-9.]+:)?"
        r"virtio_blk_req_complete [^\n]* status 1\b")

    def marks(self, trace_text):
        return {"virtio-blk media error"} if self.MEDIA_ERROR_RE.search(
            trace_text) else set()
    OPS = {
        "request": 30, "burst": 6, "indirect": 4, "notify": 6, "step": 14,
        "reap": 8, "reset": 4, "status": 3, "queue_setup": 3, "features": 2,
        "config": 3, "reg_write": 3, "pci": 2, "system_reset": 1,
    }

    def __init__(self, header_bytes):
        super().__init__(header_bytes)
        h = self.header.raw
        self.num_queues = NUM_QUEUES_CHOICES[h[6] % 8]
        self.queue_size = QUEUE_SIZE_CHOICES[h[7] % 8]
        self.features = [None, None, 0, F_INDIRECT_DESC, 0xFFFFFFFF][h[8] % 5]
        self.sectors = self.header.drive_bytes // 512
        self.io = IO_BASE
        self.vqs = {}
        self.pci = None

    def qemu_args(self):
        h = self.header
        dev = (f"virtio-blk-pci,id=vblk0,addr={SLOT}.0,drive=d0,serial=fuzz,"
               f"ioeventfd=off,num-queues={self.num_queues},"
               f"queue-size={self.queue_size},"
               f"devmodel-profile={h.profile_path()},"
               f"devmodel-seed={h.seed}")
        return [*h.machine(), *h.blockdev("d0"), "-device", dev]

    def describe(self):
        return (f"{self.header.describe()} num_queues={self.num_queues} "
                f"queue_size={self.queue_size} features={self.features}")

    def control_addr(self, raw):
        return [VQ_AREA + raw % 4 * 0x20000, INDIRECT_AREA, HEADER_AREA,
                VQ_AREA + 16 * (raw % 64)][raw % 4]

    # -- plumbing --

    def map_bar(self):
        self.pci.write(0x10, self.io | 1)
        self.pci.write(0x04, 0x0005, 2)              # I/O space, bus master

    def queue_setup(self, vm, q, addr):
        vm.outw(self.io + REG_QUEUE_SEL, q)
        num = vm.inw(self.io + REG_QUEUE_NUM)
        if 0 < num <= 1024 and 0 <= addr < GUEST_RAM:
            vm.memset(addr, min(0x20000, GUEST_RAM - addr))
            self.vqs[q] = Vq(addr, num)
        else:
            self.vqs.pop(q, None)
        vm.outl(self.io + REG_QUEUE_PFN, addr // VRING_ALIGN)

    def start(self, vm):
        """Reset, acknowledge, features, queues, DRIVER_OK."""
        vm.outb(self.io + REG_STATUS, 0)
        vm.outb(self.io + REG_STATUS, STATUS_ACK | STATUS_DRIVER)
        host = vm.inl(self.io + REG_HOST_FEATURES)
        want = host if self.features is None else self.features
        vm.outl(self.io + REG_GUEST_FEATURES, want)
        self.vqs = {}
        for q in range(self.num_queues):
            self.queue_setup(vm, q, VQ_AREA + q * 0x20000)
        vm.outb(self.io + REG_STATUS, STATUS_ACK | STATUS_DRIVER | STATUS_DRIVER_OK)

    def setup(self, vm):
        self.pci = PciDev(vm, SLOT << 3)
        self.map_bar()
        self.start(vm)
        vm.clock_step(0)

    def alive_read(self, vm):
        vm.inb(self.io + REG_STATUS)

    def queue_of(self, raw):
        """A queue the driver set up, mostly; else any index."""
        if self.vqs and raw % 8:
            keys = sorted(self.vqs)
            return keys[raw % len(keys)]
        return raw % 8

    def write_desc(self, vm, table, i, addr, length, flags, nxt):
        vm.memwrite(table + 16 * i,
                    (addr & (1 << 64) - 1).to_bytes(8, "little") +
                    (length & 0xFFFFFFFF).to_bytes(4, "little") +
                    (flags & 0xFFFF).to_bytes(2, "little") +
                    (nxt & 0xFFFF).to_bytes(2, "little"))

    def publish(self, vm, vq, head):
        """Puts chain `head` in the avail ring and bumps its index."""
        if not 0 <= vq.avail < GUEST_RAM - 8:
            return
        vm.memwrite(vq.avail + 4 + 2 * (vq.avail_idx % vq.num),
                    (head & 0xFFFF).to_bytes(2, "little"))
        vq.avail_idx = (vq.avail_idx + 1) & 0xFFFF
        vm.memwrite(vq.avail + 2, vq.avail_idx.to_bytes(2, "little"))

    def notify(self, vm, q):
        vm.outw(self.io + REG_QUEUE_NOTIFY, q)

    # -- requests --

    def sector(self, cls, raw):
        n = max(self.sectors, 1)
        return [raw % n, raw % n, raw % n, raw % n & ~7, n - 1 - raw % 8, n,
                n + raw % 64, 0, raw, (1 << 64) - 1, raw % 4096,
                raw % n][cls % 12] & ((1 << 64) - 1)

    def data_len(self, cls, raw):
        return [4096, 4096, 4096, 512, 512 * (1 + raw % 256), 512 * (1 + raw % 8),
                65536, 1 << 20, 0, 1, 511, raw % (1 << 20)][cls % 12]

    def request(self, vm, a, vq, table, first):
        """Writes one request's header, payload and descriptor chain into
        descriptor table `table` from index `first`; returns the head index
        and a summary."""
        rtype = REQUEST_TYPES[a.u8() % len(REQUEST_TYPES)]
        if rtype is None:
            rtype = a.u32()
        sector = self.sector(a.u8(), a.u64())
        dlen = self.data_len(a.u8(), a.u32())
        shape = a.u8()                  # chain layout and oddities
        odd = a.u8() < 12               # most requests are well formed (an
                                        # odd one may stop the device until
                                        # the next reset: virtio_error):
        if not odd:                     # only the layout bits stay
            shape &= 0x60
        addr_cls = a.u8()
        rng = random.Random(a.u32() ^ shape << 32)
        n = vq.num if vq else 64        # an indirect table: 64 entries
        hdr = HEADER_AREA + (first % 256) * 64
        vm.memwrite(hdr, (rtype & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4) +
                    sector.to_bytes(8, "little"))
        if rtype in (T_DISCARD, T_WRITE_ZEROES):
            seg = ((self.sector(rng.randrange(12), rng.getrandbits(64))).to_bytes(8, "little")
                   + (rng.choice([1, 8, 2048, 0, 0xFFFFFFFF, rng.getrandbits(32)]))
                   .to_bytes(4, "little")
                   + rng.choice([0, 0, 1, 2, 0xFFFFFFFF]).to_bytes(4, "little"))
            payload = [(hdr + 16, 16 * (1 + (shape >> 6)), 0)]
            vm.memwrite(hdr + 16, seg * (1 + (shape >> 6)))
        elif dlen:
            device_writes = (rtype in (T_IN, T_GET_ID)) != bool(shape & 0x10)
            c = addr_cls % 16
            parts = 1 + (shape >> 5 & 3)
            payload = []
            left = dlen
            for p in range(parts):
                size = left // (parts - p) if parts - p > 1 else left
                payload.append((self.addr(c, rng.getrandbits(32), max(size, 1), align=512),
                                size, DESC_WRITE if device_writes else 0))
                left -= size
        else:
            payload = []
        status = self.addr(addr_cls >> 4, rng.getrandbits(32), 1, align=1)
        if addr_cls >> 4 <= 8:
            status = hdr + 63
        chain = [(hdr, 16 if not shape & 0x80 else rng.choice([0, 8, 15, 17]),
                  DESC_WRITE if shape & 0x08 else 0)]
        chain += payload
        if not shape & 0x04:
            chain.append((status, 1 if not shape & 0x02 else rng.choice([0, 2, 4096]),
                          DESC_WRITE if not shape & 0x01 else 0))
        head = first % n
        for k, (addr, length, flags) in enumerate(chain):
            i = (first + k) % n
            last = k == len(chain) - 1
            nxt = (first + k + 1) % n
            if odd and shape & 0x40 and rng.randrange(4) == 0:
                nxt = rng.choice([head, i, n, 0xFFFF, rng.getrandbits(16)])
            self.write_desc(vm, table, i, addr, length,
                            flags | (0 if last and not shape == 0xFF else DESC_NEXT), nxt)
        return head, len(chain), (f"type={rtype:#x} sector={sector:#x} data={dlen} "
                                  f"descs={len(chain)}/{n} shape={shape:#x}")

    # -- operations --

    def op_request(self, vm, a):
        q = self.queue_of(a.u8())
        vq = self.vqs.get(q)
        if vq is None:
            self.notify(vm, q)
            return f"q{q} not set up: notify only"
        first = vq.avail_idx * 4 % vq.num
        head, _, desc = self.request(vm, a, vq, vq.addr, first)
        self.publish(vm, vq, head)
        if a.u8() < 224:
            self.notify(vm, q)
        return f"q{q} head={head} {desc}"

    def op_burst(self, vm, a):
        q = self.queue_of(a.u8())
        vq = self.vqs.get(q)
        count = 2 + a.u8() % 31
        if vq is None:
            return f"q{q} not set up"
        seed = a.u32()
        for i in range(count):
            sub = random.Random(seed + i).randbytes(20)
            first = vq.avail_idx * 4 % vq.num
            head, _, _ = self.request(vm, Args(sub), vq, vq.addr, first)
            self.publish(vm, vq, head)
        self.notify(vm, q)
        return f"q{q} {count} requests"

    def op_indirect(self, vm, a):
        """A request whose chain is an indirect table (used by the device
        only if VIRTIO_RING_F_INDIRECT_DESC was negotiated, or not)."""
        q = self.queue_of(a.u8())
        vq = self.vqs.get(q)
        if vq is None:
            return f"q{q} not set up"
        table = INDIRECT_AREA + (vq.avail_idx % 64) * 0x400
        _, ndesc, desc = self.request(vm, a, None, table, 0)
        head = vq.avail_idx * 4 % vq.num
        tlen = 16 * ndesc if a.u8() < 224 else a.u16()
        self.write_desc(vm, vq.addr, head, table, tlen, DESC_INDIRECT, 0)
        self.publish(vm, vq, head)
        self.notify(vm, q)
        return f"q{q} head={head} table_len={tlen} {desc}"

    def op_notify(self, vm, a):
        q = [self.queue_of(a.u8()), a.u16()][a.u8() % 2]
        self.notify(vm, q)
        return f"q{q}"

    def op_reap(self, vm, a):
        vm.clock_step(0)
        isr = vm.inb(self.io + REG_ISR)             # reading clears it
        out = [f"isr={isr:#x}"]
        for q, vq in sorted(self.vqs.items()):
            if 0 <= vq.used < GUEST_RAM - 4:
                idx = int.from_bytes(vm.memread(vq.used + 2, 2), "little")
                out.append(f"q{q} used={(idx - vq.used_seen) & 0xFFFF}")
                vq.used_seen = idx
        return " ".join(out)

    def op_reset(self, vm, a):
        """Resets the device (status 0) with whatever the model holds, then
        sets it up again most of the time."""
        vm.outb(self.io + REG_STATUS, 0)
        if a.u8() & 1:
            vm.clock_step(a.u16() * 100)
        if a.u8() < 200:
            self.start(vm)
        return ""

    def op_status(self, vm, a):
        v = [STATUS_ACK | STATUS_DRIVER | STATUS_DRIVER_OK, 0x80, 0x40, 0x0F,
             STATUS_ACK, a.u8()][a.u8() % 6]
        vm.outb(self.io + REG_STATUS, v)
        return f"{v:#x}"

    def op_queue_setup(self, vm, a):
        q = a.u8() % 6
        cls, raw = a.u8(), a.u32()
        addr = [VQ_AREA + q * 0x20000, 0, self.addr(cls, raw),
                GUEST_RAM - VRING_ALIGN, (raw % 4096) << 12][a.u8() % 5]
        addr -= addr % VRING_ALIGN
        self.queue_setup(vm, q, addr)
        return f"q{q} at {addr:#x}"

    def op_features(self, vm, a):
        v = [0, F_INDIRECT_DESC, F_EVENT_IDX, a.u32(), 0xFFFFFFFF][a.u8() % 5]
        vm.outl(self.io + REG_GUEST_FEATURES, v)
        return f"{v:#x}"

    def op_config(self, vm, a):
        off = a.u8() % 64
        size = [1, 2, 4][a.u8() % 3]
        if a.u8() & 1:
            v = a.u32()
            {1: vm.outb, 2: vm.outw, 4: vm.outl}[size](self.io + REG_CONFIG + off, v)
            return f"write {off:#x} size={size} value={v:#x}"
        v = {1: vm.inb, 2: vm.inw, 4: vm.inl}[size](self.io + REG_CONFIG + off)
        return f"read {off:#x} size={size} -> {v:#x}"

    def op_reg_write(self, vm, a):
        reg = a.u8() % 0x20
        size = [1, 2, 4][a.u8() % 3]
        v = a.u32()
        {1: vm.outb, 2: vm.outw, 4: vm.outl}[size](self.io + reg, v)
        return f"{reg:#x} size={size} value={v:#x}"

    def op_pci(self, vm, a):
        what, raw = a.u8() % 6, a.u32()
        done = self.pci.command(what, 1)
        if done:
            return done
        if what == 3:
            self.io = 0xD000 + (raw % 16) * 0x100
            self.map_bar()
            return f"io={self.io:#x}"
        if what == 4:
            cap = self.pci.find_cap(0x11)               # MSI-X
            if cap is not None:
                self.pci.write(cap + 2, 0x8000 if raw & 1 else 0, 2)
            return f"msix {'on' if raw & 1 else 'off'}"
        reg = raw % 256 & ~3
        if reg != 0x10:
            self.pci.write(reg, raw >> 8)
        return f"cfg[{reg:#x}]={raw >> 8:#x}"

    def op_system_reset(self, vm, a):
        vm.outb(0xCF9, 0x06)
        vm.clock_step(0)
        if a.u8() < 192:
            self.map_bar()
            self.start(vm)
        return ""
