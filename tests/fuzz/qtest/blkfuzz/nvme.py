"""NVMe (hw/nvme with devmodel-profile) under fuzz.

The fuzzer is the guest's driver, a careless one: it maps BAR0, enables the
controller with an admin queue, creates I/O queue pairs and then, record by
record, submits I/O commands (read, write, flush, write zeroes, DSM, copy,
compare, verify, unknown opcodes) with random namespaces, LBAs, lengths and
PRPs or SGLs pointing anywhere, creates and deletes queues with random ids,
sizes and addresses, sends other admin commands (identify, logs, features,
abort, AER, format, doorbell buffer config), rings doorbells of queues that
may not exist with values that may be out of range, writes registers,
disables, shuts down and resets the controller (CC, NSSR, FLR, PCI command
register, machine reset) while the model still holds completions, and steps
the virtual clock so held completions fire at the model's deadlines.

Its view of the queues (tails, heads, phases) is kept as a driver would,
updated from what it reads back from the completion queues.
"""

import collections
import random
import re

from .common import (GUEST_RAM, PAGE, PCI_MMIO_BASE, Family,
                     PciDev)

SLOT = 4                            # -device nvme,addr=4.0
BAR0 = PCI_MMIO_BASE
ASQ, ACQ = 0x100000, 0x102000
SQ_AREA, CQ_AREA = 0x200000, 0x600000
PRP_LIST_AREA = 0xA00000            # 256 pages of PRP lists and SGL segments
SCRATCH = 0xB00000                  # DSM/copy ranges, identify and log data
DBBUF = 0xC00000                    # shadow doorbells, then event indexes

REG_CAP, REG_INTMS, REG_INTMC, REG_CC = 0x00, 0x0C, 0x10, 0x14
REG_CSTS, REG_NSSR, REG_AQA, REG_ASQ, REG_ACQ = 0x1C, 0x20, 0x24, 0x28, 0x30
CC_EN, CC_IOSQES, CC_IOCQES = 1, 6 << 16, 4 << 20
ADMIN_POLLS = 8                     # CQ reads before giving up on an admin command

MQES_CHOICES = [0x7FF, 0x7FF, 1, 3, 31, 63, 255, 0x7FF]
IOQPAIRS_CHOICES = [64, 64, 1, 2, 4, 8, 64, 16]

IO_OPCODES = {
    "read": 0x02, "write": 0x01, "flush": 0x00, "write_zeroes": 0x08,
    "dsm": 0x09, "compare": 0x05, "verify": 0x0C, "copy": 0x19,
    "write_uncor": 0x04,
}
IO_OPCODE_TABLE = (["read"] * 10 + ["write"] * 8 + ["flush"] * 3 +
                   ["write_zeroes"] * 3 + ["dsm"] * 3 + ["compare", "verify",
                   "copy", "write_uncor", "other"])

ADMIN_OPCODES = [0x06, 0x02, 0x09, 0x0A, 0x08, 0x0C, 0x80, 0x7C, 0x0D, 0x15,
                 0x1C, 0x10, 0x11, 0x14, 0x18, 0x7F, 0xC0, 0xFF]
FEATURE_IDS = [0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
               0x0E, 0x10, 0x16, 0x80, 0x81, 0xFF]


class Queue:
    def __init__(self, addr, size, cqid=0):
        self.addr = addr
        self.size = size
        self.cqid = cqid
        self.tail = 0
        self.head = 0
        self.phase = 1


def sqe(opcode, cid, nsid=0, prp1=0, prp2=0, cdw=(), flags=0, mptr=0):
    """A 64-byte submission queue entry; cdw is CDW10 onwards."""
    cdws = list(cdw) + [0] * (6 - len(cdw))
    b = bytearray(64)
    b[0:4] = (opcode | (flags & 0xFF) << 8 | (cid & 0xFFFF) << 16).to_bytes(4, "little")
    b[4:8] = (nsid & 0xFFFFFFFF).to_bytes(4, "little")
    b[16:24] = (mptr & (1 << 64) - 1).to_bytes(8, "little")
    b[24:32] = (prp1 & (1 << 64) - 1).to_bytes(8, "little")
    b[32:40] = (prp2 & (1 << 64) - 1).to_bytes(8, "little")
    for i, v in enumerate(cdws[:6]):
        b[40 + 4 * i:44 + 4 * i] = (v & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(b)


class Nvme(Family):
    NAME = "nvme"
    TRACE_EVENTS = ["pci_nvme_*"] + Family.FAULT_EVENTS
    DEVICE_KIND = "nvme"
    # A completion the controller posts with a media error's status (DNR,
    # SCT 2h, SC 81h or 80h: qemu-patches/0053), whether or not the fuzzer
    # finds it in a completion queue it reaps.
    MEDIA_ERROR_RE = re.compile(
        r"pci_nvme_enqueue_req_completion [^\n]* status 0x4(28[01])\b")

    # An Abort that named a command the device model lost and still holds
    # (qemu-patches/0065).
    ABORT_LOST_RE = re.compile(r"pci_nvme_abort_match [^\n]* lost 1\b")

    def marks(self, trace_text):
        found = {f"nvme completion status 0x{m}"
                 for m in set(self.MEDIA_ERROR_RE.findall(trace_text))}
        if self.ABORT_LOST_RE.search(trace_text):
            found.add("nvme abort matched a lost command")
        return found
    OPS = {
        "io": 30, "step": 14, "reap": 10, "create_cq": 4, "create_sq": 4,
        "delete_sq": 3, "delete_cq": 2, "admin": 5, "doorbell": 5,
        "reg_write": 4, "reg_read": 1, "reset": 3, "enable": 2, "shutdown": 1,
        "nssr": 1, "pci": 2, "flr": 1, "system_reset": 1,
    }

    def __init__(self, header_bytes):
        super().__init__(header_bytes)
        h = self.header.raw
        self.mqes = MQES_CHOICES[h[6] % 8]
        self.max_ioqpairs = IOQPAIRS_CHOICES[h[7] % 8]
        self.initial_pairs = 1 + h[8] % 4
        self.admin_entries = [2, 4, 16, 64][h[9] % 4]
        self.nlbas = self.header.drive_bytes // 512
        self.cid = 0
        self.bar = BAR0
        self.bar_size = 0
        self.sqs = {}
        self.cqs = {}
        self.strays = {}
        self.admin_sq = Queue(ASQ, self.admin_entries)
        self.admin_cq = Queue(ACQ, self.admin_entries)
        self.pci = None
        # (sqid, cid) of the last I/O commands submitted: what an Abort names
        # (a command the model lost is held until one does).
        self.recent = collections.deque(maxlen=64)

    def qemu_args(self):
        h = self.header
        dev = (f"nvme,id=nvme0,addr={SLOT}.0,drive=d0,serial=fuzz,"
               f"devmodel-profile={self.profile_path()},"
               f"devmodel-seed={h.seed},mqes={self.mqes},"
               f"max_ioqpairs={self.max_ioqpairs}")
        return [*h.machine(), *h.blockdev("d0"), "-device", dev]

    def profile_path(self):
        return self.header.profile_path()

    def describe(self):
        return (f"{self.header.describe()} mqes={self.mqes} "
                f"max_ioqpairs={self.max_ioqpairs} "
                f"admin_entries={self.admin_entries}")

    # -- plumbing --

    def next_cid(self):
        self.cid = (self.cid + 1) & 0xFFFF
        return self.cid

    def reg_write(self, vm, off, v, size=4):
        vm.write_n(self.bar + off, size, v)

    def reg_read(self, vm, off, size=4):
        return vm.read_n(self.bar + off, size)

    def sq_doorbell(self, qid):
        return 0x1000 + 8 * qid

    def control_addr(self, raw):
        return [ASQ, ACQ, SQ_AREA + (raw >> 4) % 32 * 0x20000,
                CQ_AREA + (raw >> 4) % 32 * 0x10000, PRP_LIST_AREA, SCRATCH,
                DBBUF, ASQ + 64][raw % 8]

    def map_bar(self, vm):
        self.pci.write(0x10, self.bar & 0xFFFFFFFF)
        self.pci.write(0x14, self.bar >> 32)
        self.pci.write(0x04, 0x0006, 2)          # memory space, bus master
        self.bars = [(self.bar, self.bar_size)]

    def enable(self, vm, cc=None):
        """Admin queue registers, then CC.EN; the driver's view restarts."""
        n = self.admin_entries
        self.reg_write(vm, REG_AQA, (n - 1) | (n - 1) << 16)
        self.reg_write(vm, REG_ASQ, self.admin_sq.addr, 8)
        self.reg_write(vm, REG_ACQ, self.admin_cq.addr, 8)
        vm.memset(self.admin_cq.addr, n * 16)
        self.admin_sq = Queue(self.admin_sq.addr, n)
        self.admin_cq = Queue(self.admin_cq.addr, n)
        for q in list(self.sqs.values()) + list(self.cqs.values()):
            q.tail = q.head = 0
            q.phase = 1
        self.reg_write(vm, REG_CC, CC_EN | CC_IOSQES | CC_IOCQES if cc is None
                       else cc)

    def admin(self, vm, entry):
        """Submits an admin command and waits a little for its completion,
        as a driver would: the controller runs admin commands in bottom
        halves, which the main loop runs between two qtest commands."""
        q = self.admin_sq
        vm.memwrite(q.addr + 64 * q.tail, entry)
        q.tail = (q.tail + 1) % q.size
        self.reg_write(vm, self.sq_doorbell(0), q.tail)
        if entry[0] == 0x0C:
            return                  # an AER completes only on an event
        for _ in range(ADMIN_POLLS):
            if self.reap_queue(vm, 0, self.admin_cq, limit=1):
                return

    def create_pair(self, vm, qid, entries):
        cq_addr = CQ_AREA + qid % 32 * 0x10000
        sq_addr = SQ_AREA + qid % 32 * 0x20000
        vm.memset(cq_addr, min(entries, 4096) * 16)
        self.cqs[qid] = Queue(cq_addr, entries)
        self.admin(vm, sqe(0x05, self.next_cid(), prp1=cq_addr,
                           cdw=[qid | (entries - 1) << 16, 1]))
        self.sqs[qid] = Queue(sq_addr, entries, qid)
        self.admin(vm, sqe(0x01, self.next_cid(), prp1=sq_addr,
                           cdw=[qid | (entries - 1) << 16, 1 | qid << 16]))

    def reap_queue(self, vm, qid, q, limit=64):
        """Consumes the entries the controller posted, as a driver would,
        and writes the CQ head doorbell. Returns how many it found."""
        if not (0 <= q.addr < GUEST_RAM - 16) or q.size < 1:
            return 0
        count = min(limit, q.size - q.head)
        data = vm.memread(q.addr + 16 * q.head, 16 * count)
        found = 0
        for i in range(count):
            status = int.from_bytes(data[16 * i + 14:16 * i + 16], "little")
            if status & 1 != q.phase:
                break
            if status >> 1 & 0x7FF:
                # SCT and SC: an error status (0x281 an unrecovered read
                # error, 0x280 a write fault), as the driver sees it.
                self.observed.add(f"nvme {'admin' if qid == 0 else 'io'} "
                                  f"status {status >> 1 & 0x7FF:#x}")
            found += 1
            q.head += 1
            if q.head == q.size:
                q.head = 0
                q.phase ^= 1
        if found:
            self.reg_write(vm, self.sq_doorbell(qid) + 4, q.head)
        return found

    # -- setup and end --

    def setup(self, vm):
        self.pci = PciDev(vm, SLOT << 3)
        self.bar_size = self.pci.bar_size(0)
        self.map_bar(vm)
        self.enable(vm)
        entries = min(self.mqes + 1, 64)
        for qid in range(1, self.initial_pairs + 1):
            self.create_pair(vm, qid, entries)
        vm.clock_step(0)

    def read_csts(self, vm):
        csts = self.reg_read(vm, REG_CSTS)
        if csts & 2:
            self.observed.add("nvme csts cfs")      # Controller Fatal Status
        return csts

    def alive_read(self, vm):
        self.read_csts(vm)

    # -- operations --

    def io_command(self, a, opname):
        """One I/O command from the argument bytes: its SQE and a summary."""
        nsid = [1, 1, 1, 1, 1, 0, 2, 0xFFFFFFFF][a.u8() % 8]
        lba_class, lba_raw = a.u8(), a.u64()
        nlb_class, nlb_raw = a.u8(), a.u16()
        prp1_class, prp2_class, addr_raw = a.u8(), a.u8(), a.u32()
        flags = a.u8()
        extra = a.u8()
        n = max(self.nlbas, 1)
        slba = [lba_raw % n, lba_raw % n, lba_raw % n, lba_raw % n,
                max(n - 1 - lba_raw % 8, 0), n, n + lba_raw % 1024, 0,
                lba_raw % 4096, lba_raw, 1 << 63, (1 << 64) - 1,
                lba_raw % n & ~7, lba_raw % n & ~7, lba_raw % n & ~255,
                n - 8][lba_class % 16]
        nlb = [nlb_raw % 8, nlb_raw % 8, nlb_raw % 8, 7, 7, nlb_raw % 256,
               nlb_raw % 1024, 1023, 1024, 0xFFFF, nlb_raw, 0, 0, 255,
               nlb_raw % 64, 0][nlb_class % 16]
        length = (nlb + 1) * 512
        prp1 = self.addr(prp1_class, addr_raw, length,
                         align=PAGE if prp1_class & 0x10 else 4)
        prp2 = self.prp2(prp1, prp2_class, addr_raw, length)
        psdt = 1 if flags % 16 == 15 else 0
        cdw12 = nlb | (flags & 0xE0) << 24            # PRINFO, FUA, LR bits
        opcode = (IO_OPCODES[opname] if opname != "other"
                  else extra if extra not in IO_OPCODES.values() else 0x7E)
        cdw = [slba & 0xFFFFFFFF, slba >> 32 & 0xFFFFFFFF, cdw12, 0, 0, 0]
        if opname == "write_zeroes" and flags & 1:
            cdw[2] |= 1 << 25                           # DEAC
        if opname in ("dsm", "copy"):
            nr = extra % 4 if extra & 0x80 else extra
            cdw = [nr, 4 if flags & 2 else flags & 7, 0, 0, 0, 0]
            if opname == "copy":
                cdw = [slba & 0xFFFFFFFF, slba >> 32, nr & 0xFF, 0, 0, 0]
            prp1 = SCRATCH + (addr_raw % 16) * 512 if prp1_class & 1 else prp1
        if opname == "flush":
            cdw = [0] * 6
        summary = (f"op=0x{opcode:02x} nsid={nsid:#x} slba={slba:#x} "
                   f"nlb={nlb} prp1={prp1:#x} prp2={prp2:#x}"
                   f"{' sgl' if psdt else ''}")
        return opcode, nsid, prp1, prp2, cdw, psdt, summary, (opname, slba, nlb,
                                                              addr_raw)

    def prp2(self, prp1, cls, raw, length):
        """PRP2: the second page, a PRP list in PRP_LIST_AREA, or anything."""
        first = PAGE - prp1 % PAGE
        if length <= first:
            return 0 if cls % 4 else self.addr(cls >> 2, raw >> 3)
        if length <= first + PAGE and cls % 8:
            return self.addr(cls >> 3, raw >> 5)
        return PRP_LIST_AREA + (raw % 255) * PAGE + (8 * (cls >> 6) if cls & 1
                                                       else 0)

    def fill_prp_list(self, vm, prp2, cls, raw, length):
        """Writes the PRP list PRP2 points at: good pages, with an odd entry
        (any address class) or a chain to another list now and then."""
        if not PRP_LIST_AREA <= prp2 < PRP_LIST_AREA + 256 * PAGE:
            return
        pages = min((length + PAGE - 1) // PAGE + 1, 512)
        rng = random.Random(raw ^ cls << 32)
        entries = []
        for i in range(pages):
            if i == 511 or (cls & 2 and rng.randrange(16) == 0):
                nxt = PRP_LIST_AREA + rng.randrange(256) * PAGE
                entries.append(nxt if rng.randrange(4) else nxt + 8)
            elif cls & 4 and rng.randrange(8) == 0:
                entries.append(self.addr(rng.randrange(256), rng.getrandbits(48)))
            else:
                entries.append(self.addr(rng.randrange(8), rng.getrandbits(32)))
        data = b"".join(e.to_bytes(8, "little") for e in entries)
        room = PRP_LIST_AREA + 256 * PAGE - prp2
        vm.memwrite(prp2, data[:room])

    def fill_payload(self, vm, opname, prp1, slba, nlb, raw):
        """DSM and copy take ranges from memory: write some."""
        if not (SCRATCH <= prp1 < SCRATCH + 0x100000):
            return
        rng = random.Random(raw)
        n = max(self.nlbas, 1)
        data = bytearray()
        for _ in range(rng.randint(1, 8)):
            lba = rng.choice([slba, rng.randrange(n), n - 1, n, 1 << 40])
            count = rng.choice([nlb + 1, 1, 8, 0, 0xFFFFFFFF, rng.getrandbits(16)])
            if opname == "dsm":
                data += (0).to_bytes(4, "little") + (count & 0xFFFFFFFF).to_bytes(
                    4, "little") + (lba & (1 << 64) - 1).to_bytes(8, "little")
            else:
                data += bytes(8) + (lba & (1 << 64) - 1).to_bytes(8, "little") + (
                    count & 0xFFFF).to_bytes(2, "little") + bytes(14)
        vm.memwrite(prp1, bytes(data))

    def op_io(self, vm, a):
        sel = a.u8()
        qids = sorted(self.sqs)
        if qids and sel < 224:
            qid = qids[sel % len(qids)]
        else:
            qid = [0, self.max_ioqpairs, self.max_ioqpairs + 1, 0xFFFF,
                   sel % 70][sel % 5]
        count = 1 + (sel >> 5 if sel < 224 else 0) % 4
        q = self.sqs.get(qid) or self.stray_queue(qid)
        opname = IO_OPCODE_TABLE[a.u8() % len(IO_OPCODE_TABLE)]
        opcode, nsid, prp1, prp2, cdw, psdt, summary, detail = self.io_command(
            a, opname)
        self.fill_prp_list(vm, prp2, a.u8(), detail[3], (detail[2] + 1) * 512)
        if opname in ("dsm", "copy"):
            self.fill_payload(vm, opname, prp1, detail[1], detail[2], detail[3])
        entries = [sqe(opcode, self.next_cid(), nsid, prp1, prp2, cdw,
                       flags=psdt << 6)]
        self.recent.append((qid, self.cid))
        # More commands in the same doorbell: variations of the first.
        rng = random.Random(detail[3] ^ detail[1])
        for _ in range(count - 1):
            slba = rng.choice([detail[1], detail[1] + 8, rng.randrange(
                max(self.nlbas, 1))])
            nlb = rng.choice([detail[2], 0, 7, 255])
            c = [slba & 0xFFFFFFFF, slba >> 32 & 0xFFFFFFFF, nlb] + cdw[3:]
            op = rng.choice([opcode, 0x02, 0x01, 0x00])
            entries.append(sqe(op, self.next_cid(), nsid,
                               self.addr(rng.randrange(9), rng.getrandbits(32),
                                         (nlb + 1) * 512), prp2, c))
            self.recent.append((qid, self.cid))
        for e in entries:
            if 0 <= q.addr < GUEST_RAM:
                vm.memwrite(q.addr + 64 * (q.tail % max(q.size, 1)), e)
            q.tail = (q.tail + 1) % max(q.size, 1)
        tail = q.tail
        ring = a.u8()
        if ring >= 250:
            tail = [q.size, q.size + 1, 0xFFFF, 0xFFFFFFFF, 0, q.tail + 1][ring - 250]
        self.reg_write(vm, self.sq_doorbell(qid), tail)
        return f"sq={qid} n={count} {summary} db={tail}"

    def op_reap(self, vm, a):
        # One more main loop iteration for completions posted from bottom
        # halves (those the model does not hold), so what is read here does
        # not depend on how fast this process is.
        vm.clock_step(0)
        total = self.reap_queue(vm, 0, self.admin_cq)
        for qid, q in sorted(self.cqs.items()):
            total += self.reap_queue(vm, qid, q)
        csts = self.read_csts(vm)
        return f"{total} entries csts={csts:#x}"

    def op_create_cq(self, vm, a):
        qid = self.pick_qid(a)
        entries = self.queue_entries(a)
        addr_class, raw = a.u8(), a.u32()
        flags = a.u8()
        addr = self.queue_addr(CQ_AREA + qid % 32 * 0x10000, addr_class, raw,
                               16 * entries)
        vector = 0 if flags < 200 else flags % 70
        if 0 <= addr < GUEST_RAM and addr_class < 192:
            vm.memset(addr, min(entries, 4096) * 16)
        self.cqs[qid] = Queue(addr, entries)
        pc = 0 if flags & 1 and flags > 128 else 1
        self.admin(vm, sqe(0x05, self.next_cid(), prp1=addr,
                           cdw=[qid | (entries - 1) << 16,
                                pc | (flags & 2) | vector << 16]))
        return f"cq={qid} entries={entries} addr={addr:#x} flags={flags:#x}"

    def op_create_sq(self, vm, a):
        qid = self.pick_qid(a)
        entries = self.queue_entries(a)
        addr_class, raw = a.u8(), a.u32()
        cqsel = a.u8()
        cqids = sorted(self.cqs)
        cqid = (cqids[cqsel % len(cqids)] if cqids and cqsel < 230
                else cqsel % 70)
        addr = self.queue_addr(SQ_AREA + qid % 32 * 0x20000, addr_class, raw,
                               64 * entries)
        self.sqs[qid] = Queue(addr, entries, cqid)
        prio = a.u8() % 4
        self.admin(vm, sqe(0x01, self.next_cid(), prp1=addr,
                           cdw=[qid | (entries - 1) << 16,
                                1 | prio << 1 | cqid << 16]))
        return f"sq={qid} entries={entries} cq={cqid} addr={addr:#x}"

    def queue_addr(self, usual, cls, raw, length):
        """Where a new queue goes: its usual place, a page of the
        controller's own BAR0 (registers, doorbells, MSI-X table), or any
        address class."""
        if cls < 192:
            return usual
        if cls < 208:
            return self.bar + (raw % max(self.bar_size // PAGE, 1)) * PAGE
        return self.addr(cls, raw, length)

    def op_delete_sq(self, vm, a):
        qid = self.pick_qid(a)
        self.admin(vm, sqe(0x00, self.next_cid(), cdw=[qid]))
        if a.u8() < 200:
            self.sqs.pop(qid, None)
        return f"sq={qid}"

    def op_delete_cq(self, vm, a):
        qid = self.pick_qid(a)
        self.admin(vm, sqe(0x04, self.next_cid(), cdw=[qid]))
        if a.u8() < 200:
            self.cqs.pop(qid, None)
        return f"cq={qid}"

    def stray_queue(self, qid):
        """The driver's idea of a queue it never created (or the admin
        queue): submissions go to the memory such a queue would use."""
        if qid == 0:
            return self.admin_sq
        if qid not in self.strays:
            self.strays[qid] = Queue(SQ_AREA + qid % 32 * 0x20000, 64, qid)
        return self.strays[qid]

    def pick_qid(self, a):
        sel = a.u8()
        known = sorted(set(self.sqs) | set(self.cqs))
        if known and sel < 128:
            return known[sel % len(known)]
        return [1 + sel % 4, 1 + sel % self.max_ioqpairs, self.max_ioqpairs,
                self.max_ioqpairs + 1, 0, 0xFFFF, sel, 1][sel % 8]

    def queue_entries(self, a):
        sel, raw = a.u8(), a.u16()
        mq = self.mqes + 1
        return max(1, [min(mq, 64), min(mq, 64), 2, 1, mq, mq + 1, raw % mq + 1,
                       raw + 1][sel % 8])

    def op_admin(self, vm, a):
        opcode = ADMIN_OPCODES[a.u8() % len(ADMIN_OPCODES)]
        if opcode == 0x80 and self.header.drive_bytes > 64 << 20:
            # Format NVM writes zeroes over the namespace, and null-co does
            # that with memset: a terabyte keeps QEMU busy for minutes (in a
            # reset's drain, too). Only small drives get formatted.
            opcode = 0x06
        nsid = [0, 1, 1, 2, 0xFFFFFFFF, 0xFFFFFFFE][a.u8() % 6]
        prp_class, raw = a.u8(), a.u32()
        prp1 = SCRATCH if prp_class < 160 else self.addr(prp_class, raw)
        prp2 = 0 if prp_class & 1 else self.addr(prp_class >> 1, raw >> 4)
        c10, c11 = a.u32(), a.u32()
        if opcode in (0x09, 0x0A):
            c10 = FEATURE_IDS[c10 % len(FEATURE_IDS)] | (c10 & 0x80000000)
        elif opcode == 0x06:
            c10 = [0, 1, 2, 3, 5, 6, 8, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
                   0x1C, c10 & 0xFF, 0xFF][c10 % 16]
        elif opcode == 0x02:
            c10 = [1, 2, 3, 5, 0x70, 0x80, 0xC0][c10 % 7] | (c10 & 0xFFFF0000)
        elif opcode == 0x08:
            if c11 & 0x80:
                return self.abort_storm(vm, c10, c11)
            qids = [0] + sorted(self.sqs)
            c10 = qids[c10 % len(qids)] | (self.cid - c10 % 4) << 16
        elif opcode == 0x7C:
            prp1 = DBBUF if prp_class < 200 else prp1
            prp2 = DBBUF + PAGE if prp_class < 200 else prp2
        self.admin(vm, sqe(opcode, self.next_cid(), nsid, prp1, prp2,
                           [c10, c11, a.u32(), 0, 0, 0]))
        return f"op=0x{opcode:02x} nsid={nsid:#x} cdw10={c10:#x} cdw11={c11:#x}"

    def abort_storm(self, vm, raw, c11):
        """Many Aborts at once, as a driver whose commands all time out
        sends them: for the I/O commands it submitted last (those a
        timeout fault loses are held until aborted), the same ones twice,
        and CIDs and SQs that name nothing. Queued as deep as the admin
        queue takes, then reaped, batch after batch."""
        count = 2 + c11 % 32
        rng = random.Random(raw ^ c11 << 32)
        targets = []
        for i in range(count):
            what = rng.randrange(8)
            if self.recent and what < 5:
                sqid, cid = self.recent[-1 - rng.randrange(len(self.recent))]
            elif self.recent and what == 5:
                sqid, cid = targets[-1] if targets else self.recent[-1]
            elif what == 6:
                sqid, cid = rng.choice([0] + sorted(self.sqs)), rng.getrandbits(16)
            else:
                sqid, cid = rng.choice([0, 0xFFFF, self.max_ioqpairs + 1,
                                        rng.getrandbits(16)]), rng.getrandbits(16)
            targets.append((sqid, cid))
        room = max(1, self.admin_sq.size - 1)
        q = self.admin_sq
        for start in range(0, count, room):
            batch = targets[start:start + room]
            for sqid, cid in batch:
                entry = sqe(0x08, self.next_cid(), 0, cdw=[sqid | cid << 16])
                vm.memwrite(q.addr + 64 * q.tail, entry)
                q.tail = (q.tail + 1) % q.size
            self.reg_write(vm, self.sq_doorbell(0), q.tail)
            got = 0
            for _ in range(ADMIN_POLLS):
                got += self.reap_queue(vm, 0, self.admin_cq)
                if got >= len(batch):
                    break
        return f"abort storm of {count}: " + " ".join(
            f"{s}:{c}" for s, c in targets[:8]) + (" ..." if count > 8 else "")

    def op_doorbell(self, vm, a):
        sel = a.u8()
        qids = sorted(set(self.sqs) | set(self.cqs) | {0})
        qid = qids[sel % len(qids)] if sel < 160 else sel % 80
        cq = a.u8() & 1
        raw = a.u32()
        q = (self.cqs if cq else self.sqs).get(qid)
        size = q.size if q else 2
        value = [raw % size, raw % size, size, size - 1, 0, raw,
                 0xFFFF, raw % (size + 4)][a.u8() % 8]
        off = 0x1000 + (2 * qid + cq) * 4
        self.reg_write(vm, off, value)
        if q and value < size:
            if cq:
                q.head = value
            else:
                q.tail = value
        return f"{'cq' if cq else 'sq'}={qid} value={value:#x}"

    def op_reg_write(self, vm, a):
        sel, raw = a.u8(), a.u64()
        size = [4, 4, 4, 8, 1, 2, 4, 4][a.u8() % 8]
        if sel < 128:
            off = [REG_INTMS, REG_INTMC, REG_CC, REG_CSTS, REG_NSSR, REG_AQA,
                   REG_ASQ, REG_ACQ, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x50, 0xE00,
                   0xE08][sel % 16]
        else:
            off = (a.u16() % max(self.bar_size, 16)) & ~(size - 1)
        if off == REG_CC and sel & 1:
            raw = raw & ~CC_EN | (raw & 0xFFFFFF) if raw & 1 else raw
        self.reg_write(vm, off, raw, size)
        return f"off={off:#x} size={size} value={raw & ((1 << 8 * size) - 1):#x}"

    def op_reg_read(self, vm, a):
        size = [4, 8, 1, 2][a.u8() % 4]
        off = (a.u16() % max(self.bar_size, 16)) & ~(size - 1)
        v = self.reg_read(vm, off, size)
        return f"off={off:#x} -> {v:#x}"

    def op_reset(self, vm, a):
        """CC.EN=0 with whatever is pending; usually the driver comes back
        and recreates its queues."""
        flags = a.u8()
        self.reg_write(vm, REG_CC, 0 if flags & 1 else CC_IOSQES | CC_IOCQES)
        if flags & 2:
            vm.clock_step(a.u16() * 1000)
        if flags < 192:
            self.enable(vm)
            self.sqs.clear()
            self.cqs.clear()
            entries = min(self.mqes + 1, [2, 16, 64, 1024][flags >> 2 & 3])
            for qid in range(1, 1 + (flags >> 4) % 4 + 1):
                self.create_pair(vm, qid, entries)
            return "and re-enable"
        return "disabled"

    def op_enable(self, vm, a):
        raw = a.u32()
        cc = None if raw & 3 else (raw & 0xFFFFFF0 | CC_EN)
        self.enable(vm, cc)
        return "" if cc is None else f"cc={cc:#x}"

    def op_shutdown(self, vm, a):
        shn = 1 + a.u8() % 2
        self.reg_write(vm, REG_CC, CC_EN | CC_IOSQES | CC_IOCQES | shn << 14)
        return f"shn={shn}"

    def op_nssr(self, vm, a):
        v = 0x4E564D65 if a.u8() < 200 else a.u32()
        self.reg_write(vm, REG_NSSR, v)
        return f"{v:#x}"

    def op_pci(self, vm, a):
        what = a.u8() % 8
        raw = a.u32()
        if what == 0:
            self.pci.write(0x04, 0x0002, 2)             # bus master off
            return "bus master off"
        if what == 1:
            self.pci.write(0x04, 0x0000, 2)
            return "decode off"
        if what == 2:
            self.pci.write(0x04, 0x0006, 2)
            return "decode and bus master on"
        if what == 3:
            self.bar = PCI_MMIO_BASE + (raw % 64) * 0x100000
            self.map_bar(vm)
            return f"bar0={self.bar:#x}"
        if what == 4:
            cap = self.pci.find_cap(0x11)               # MSI-X
            if cap is not None:
                self.pci.write(cap + 2, 0x8000 if raw & 1 else 0, 2)
            return f"msix {'on' if raw & 1 else 'off'}"
        if what == 5:
            reg = raw % 256
            self.pci.write(reg & ~3, raw >> 8)
            # Where BAR0 is now, as the driver would read it back.
            self.bar = (self.pci.read(0x10) & ~0xF | self.pci.read(0x14) << 32)
            self.bars = [(self.bar, self.bar_size)]
            return f"cfg[{reg & ~3:#x}]={raw >> 8:#x}"
        self.map_bar(vm)
        return "remap"

    def op_flr(self, vm, a):
        cap = self.pci.find_cap(0x10)                   # PCI Express
        if cap is None:
            return "no pcie cap"
        self.pci.write(cap + 8, 0x8000, 2)
        if a.u8() < 192:
            self.map_bar(vm)
            self.enable(vm)
        return f"cap={cap:#x}"

    def op_system_reset(self, vm, a):
        vm.outb(0xCF9, 0x06)
        vm.clock_step(0)
        if a.u8() < 192:
            self.map_bar(vm)
            self.enable(vm)
        return ""
