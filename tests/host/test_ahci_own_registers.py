"""An AHCI transfer or interrupt the guest aims at the controller's own
registers is refused from inside the controller's own work, as the device's
re-entrancy guard refuses it from its MMIO handlers and bottom halves.

Both cases point a write at port 0's PxCMD (ABAR + 0x118) while port 0 runs
with FRE and ST set; a refused write leaves PxCMD as it was, a write that
lands clears ST and FRE, so the command and FIS engines stop (CR, FR clear).
QEMU runs under qtest (tests/fuzz/qtest/blkfuzz), from $BLKLAB_QEMU_DIR or
build/qemu; without a build the tests are skipped.

- Completion held by a device model (qemu-patches/0068): the model's timer
  completes a READ DMA and the controller raises its MSI, whose address the
  guest set to PxCMD and whose data is 0. Expected from the code: QEMU 10.0
  writes the MSI from msi_notify() through the bus master address space into
  the ABAR region, which checks the ich9-ahci device's guard; before 0068 the
  timer engaged the ide-hd's guard, so the write landed (PxCMD 0); with it
  the timer engages the controller's and the write is refused.
- No device model (qemu-patches/0069): a READ SECTORS (PIO) of one sector
  whose PRD is 4 bytes at PxCMD. ahci_pio_transfer() copies the sector
  (zeros, null-co read-zeroes) with dma_buf_read() from
  ide_sector_read_cb(), the block layer's completion, which holds no guard:
  before 0069 the zeros land (PxCMD 0); with it they are refused.
- No device model, the completion's MSI (qemu-patches/0070): a READ DMA
  and a READ FPDMA QUEUED into RAM, and a FLUSH CACHE, with the MSI aimed
  at PxCMD as above. Expected from the code: the block layer completes the
  request in its own bottom half (blk_aio_complete_bh(), scheduled with no
  guard), which calls ide_dma_cb() or ncq_cb() through dma_blk_cb() (the
  reads) or ide_flush_cb() (the flush); they end in ahci_cmd_done() or
  ncq_finish(), whose D2H or Set Device Bits FIS raises DHRS or SDBS, and
  pci_ich9_ahci_update_irq() sends the MSI with no guard engaged, so before
  0070 the write lands (PxCMD 0); with it the MSI holds the controller's
  guard and is refused. A fix in the DMA helpers alone would leave the
  flush's MSI landing.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fuzz" / "qtest"))

from blkfuzz.ahci import (ABAR, CLB_AREA, CMD_FRE, CMD_POD, CMD_ST,  # noqa: E402
                          CMD_SUD, GHC, PX_CI, PX_CLB, PX_CLBU, PX_CMD, PX_FB,
                          PX_FBU, PX_IE, PX_IS, PX_SACT, PX_SERR, SLOT,
                          TABLE_AREA)
from blkfuzz.common import GUEST_RAM, PROFILE_DIR, PciDev  # noqa: E402
from blkfuzz.qtest import QTestVM  # noqa: E402

QEMU_DIR = Path(os.environ.get("BLKLAB_QEMU_DIR", REPO / "build" / "qemu"))
QEMU = QEMU_DIR / "bin" / "qemu-system-x86_64"
PXCMD0 = ABAR + 0x100 + PX_CMD
CMD_FR, CMD_CR = 1 << 14, 1 << 15
RUNNING = CMD_SUD | CMD_POD | CMD_FRE | CMD_ST | CMD_FR | CMD_CR
DATA = 0x1000000                    # the READ DMA's buffer, in RAM
BLOCKED = "Blocked re-entrant IO"

pytestmark = pytest.mark.skipif(not QEMU.exists(), reason=f"no QEMU at {QEMU}")


def qemu_args(profile):
    drive = "ide-hd,bus=ahci0.0,drive=d0,id=disk0"
    if profile:
        drive += f",devmodel-profile={PROFILE_DIR / profile}.toml"
    return ["-machine", "q35,accel=qtest", "-m", f"{GUEST_RAM >> 20}M",
            "-blockdev", "driver=null-co,node-name=d0,size=1073741824,"
            "read-zeroes=on",
            "-device", f"ich9-ahci,id=ahci0,addr={SLOT}.0", "-device", drive]


def start_port0(vm, pci):
    """ABAR mapped, port 0 with a command list and FIS area, FRE then ST,
    every port interrupt enabled and its status cleared; GHC.IE set."""
    pci.write(0x24, ABAR)
    pci.write(0x04, 0x0006, 2)                  # memory, bus master
    vm.writel(ABAR + GHC, 0x80000000)
    port = ABAR + 0x100
    vm.memset(CLB_AREA, 0x1000)
    vm.writel(port + PX_CMD, CMD_SUD | CMD_POD)
    vm.writel(port + PX_CLB, CLB_AREA)
    vm.writel(port + PX_CLBU, 0)
    vm.writel(port + PX_FB, CLB_AREA + 0x800)
    vm.writel(port + PX_FBU, 0)
    vm.writel(port + PX_SERR, 0xFFFFFFFF)
    vm.writel(port + PX_CMD, CMD_SUD | CMD_POD | CMD_FRE)
    vm.writel(port + PX_CMD, CMD_SUD | CMD_POD | CMD_FRE | CMD_ST)
    vm.writel(port + PX_IS, 0xFFFFFFFF)
    vm.writel(port + PX_IE, 0xFFFFFFFF)
    vm.writel(ABAR + GHC, 0x80000002)
    vm.clock_step(0)
    assert vm.readl(PXCMD0) == RUNNING


def issue(vm, command, prd_addr, prd_bytes):
    """Slot 0: a one-sector ATA `command` at LBA 0 with one PRD; READ FPDMA
    QUEUED (60h) as tag 0, its count in the features field, PxSACT set."""
    table = TABLE_AREA
    fis = bytearray(0x40)
    fis[0], fis[1], fis[2], fis[7], fis[12] = 0x27, 0x80, command, 0x40, 1
    if command == 0x60:
        fis[3], fis[12] = 1, 0
        vm.writel(ABAR + 0x100 + PX_SACT, 1)
    prd = prd_addr.to_bytes(8, "little") + bytes(4) + (
        prd_bytes - 1).to_bytes(4, "little")
    vm.memwrite(table, bytes(fis) + bytes(0x40) + prd)
    header = (5 | 1 << 16).to_bytes(4, "little") + bytes(4) + \
        table.to_bytes(8, "little") + bytes(16)
    vm.memwrite(CLB_AREA, header)
    vm.writel(ABAR + 0x100 + PX_CI, 1)


def aim_msi_at_pxcmd(pci):
    """MSI on, its address port 0's PxCMD, its data 0."""
    cap = pci.find_cap(0x05)
    assert cap is not None, "ich9-ahci has no MSI capability"
    control = pci.read(cap + 2, 2)
    pci.write(cap + 4, PXCMD0)
    data_reg = cap + 0xC if control & 0x80 else cap + 8
    if control & 0x80:
        pci.write(cap + 8, 0)
    pci.write(data_reg, 0, 2)
    pci.write(cap + 2, control | 1, 2)


def assert_refused(pxcmd, stderr, what):
    """PxCMD as port 0 left it, and QEMU's warning of the refused write."""
    assert pxcmd == RUNNING, (
        f"PxCMD {pxcmd:#x}: {what} was written over the controller's own "
        "registers")
    assert BLOCKED in stderr.read_text(errors="replace")


def test_model_completion_msi_over_own_registers_is_refused(tmp_path):
    err = tmp_path / "stderr"
    with QTestVM(str(QEMU), qemu_args("samsung-970evoplus-1t"), err) as vm:
        pci = PciDev(vm, SLOT << 3)
        start_port0(vm, pci)
        aim_msi_at_pxcmd(pci)
        issue(vm, 0xC8, DATA, 512)              # READ DMA into RAM
        assert vm.readl(ABAR + 0x100 + PX_CI) == 1, "done before the model's deadline"
        vm.clock_step(10_000_000)               # past the model's deadline
        assert vm.readl(ABAR + 0x100 + PX_CI) == 0, "the READ DMA did not complete"
        pxcmd = vm.readl(PXCMD0)
    assert_refused(pxcmd, err, "the completion's MSI")


def test_pio_copy_over_own_registers_is_refused(tmp_path):
    err = tmp_path / "stderr"
    with QTestVM(str(QEMU), qemu_args(None), err) as vm:
        start_port0(vm, PciDev(vm, SLOT << 3))
        issue(vm, 0x20, PXCMD0, 4)              # READ SECTORS, PRD on PxCMD
        for _ in range(10):                     # the block layer's completion
            vm.clock_step(0)
        assert vm.readl(ABAR + 0x100 + PX_CI) == 0, "READ SECTORS did not complete"
        pxcmd = vm.readl(PXCMD0)
    assert_refused(pxcmd, err, "the PIO copy")


@pytest.mark.parametrize("command", [0xC8, 0x60, 0xE7],
                         ids=["read-dma", "read-fpdma-queued", "flush"])
def test_unmodelled_completion_msi_over_own_registers_is_refused(tmp_path,
                                                                 command):
    err = tmp_path / "stderr"
    with QTestVM(str(QEMU), qemu_args(None), err) as vm:
        pci = PciDev(vm, SLOT << 3)
        start_port0(vm, pci)
        aim_msi_at_pxcmd(pci)
        issue(vm, command, DATA, 512)
        for _ in range(10):                     # the block layer's completion
            vm.clock_step(0)
        done = vm.readl(ABAR + 0x100 + PX_CI) | vm.readl(ABAR + 0x100 + PX_SACT)
        assert done == 0, f"command {command:#x} did not complete"
        pxcmd = vm.readl(PXCMD0)
    assert_refused(pxcmd, err, "the completion's MSI")
