"""The divergence finder on hand-written traces: the first differing vCPU
event, the events from outside the vCPU thread that led to it, mapped DMA
data compared by content, result differences without the host's keys."""

from pathlib import Path

from blklab import diverge
from blklab.vm import VMConfig

COMMON = """\
det_mmio_write cpu0 ic=100 vt=100 src=- region=nvme addr=0x1000 size=4 value=0x1
det_timer cpu0 ic=150 vt=150 src=timer:+0x40 expire=150
det_dma_write cpu0 ic=150 vt=150 src=timer:+0x40 region=pc.ram addr=0x1000 len=16 crc=0x12345678
"""


def trace(text: str) -> list[diverge.Event]:
    return diverge.parse_trace(text.splitlines(keepends=True))


def test_parse_reads_stamp_source_and_detail_and_skips_other_lines():
    (e,) = trace("1234@1700000000.000001:det_irq bql ic=7 vt=9 src=bh:nvme_post_cqes "
                 "handler=+0x10 n=11 level=1\nsome other log line\n")
    assert (e.name, e.thread, e.icount, e.vtime, e.source) == ("det_irq", "bql", 7, 9,
                                                               "bh:nvme_post_cqes")
    assert e.detail == "handler=+0x10 n=11 level=1" and e.line == 1
    assert not e.in_vcpu and e.from_outside


def test_identical_traces():
    cmp = diverge.compare(trace(COMMON), trace(COMMON))
    assert cmp.identical and cmp.vcpu_events == (3, 3) and cmp.outside_events == (0, 0)


def test_first_difference_and_what_came_from_outside():
    a = COMMON + ("det_irq bql ic=150 vt=150 src=bh:nvme_post_cqes handler=+0x10 n=11 level=1\n"
                  "det_intr cpu0 ic=160 vt=160 src=- cpu=0 request=0x2 pc=0xffffffff81000000\n")
    b = COMMON + "det_mmio_read cpu0 ic=170 vt=170 src=- region=serial addr=0x5 size=1 value=0x60\n"
    cmp = diverge.compare(trace(a), trace(b))
    d = cmp.divergence
    assert d is not None and d.index == 3
    assert d.first[0].name == "det_intr" and d.first[1].name == "det_mmio_read"
    assert [e.source for e in d.outside[0]] == ["bh:nvme_post_cqes"] and d.outside[1] == []
    assert cmp.outside_sources[0] == {("det_irq", "bh:nvme_post_cqes"): 1}
    text = diverge.render(cmp, None)
    assert "first difference at vCPU event #3" in text
    assert "bh:nvme_post_cqes" in text


def test_a_trace_that_goes_on_after_the_other_ended_is_not_a_difference():
    longer = COMMON + "det_timer cpu0 ic=900 vt=900 src=timer:+0x80 expire=900\n"
    cmp = diverge.compare(trace(COMMON), trace(longer))
    assert cmp.identical and cmp.vcpu_events == (3, 4)


def test_mapped_dma_compared_by_content_not_by_thread_or_time():
    unmap = "det_dma_unmap {} ic={} vt={} src=bh:cb region=pc.ram addr=0x2000 len=4096 crc=0x{}\n"
    a = COMMON + unmap.format("bql", 120, 120, "aaaaaaaa")
    b = unmap.format("cpu0", 150, 150, "aaaaaaaa") + COMMON
    assert diverge.compare(trace(a), trace(b)).identical
    c = COMMON + unmap.format("bql", 120, 120, "bbbbbbbb")
    cmp = diverge.compare(trace(a), trace(c))
    assert not cmp.identical and cmp.divergence is None
    assert cmp.dma_only[0][0].endswith("crc=0xaaaaaaaa")


def test_startup_events_before_the_guest_ran_are_not_from_outside():
    (e,) = trace("det_irq bql ic=0 vt=0 src=- handler=-0x10 n=4 level=0\n")
    assert not e.from_outside


def test_result_differences_leave_out_the_host():
    a = {"host": {"wall_seconds": 1.0}, "summary": [{"iops": 10}], "guest": {"x": 1}}
    b = {"host": {"wall_seconds": 2.0}, "summary": [{"iops": 11}], "guest": {"x": 1}}
    assert diverge.result_differences(a, b) == ["summary[0].iops"]
    assert diverge.result_differences(a, dict(a, host={})) == []


def test_symbols_resolve_offsets_from_the_anchor(tmp_path, monkeypatch):
    table = "0000000000001000 T det_trace_anchor\n0000000000000f00 t nvme_post_cqes\n"

    class Done:
        stdout = table

    monkeypatch.setattr(diverge.subprocess, "run", lambda *a, **k: Done)
    sym = diverge.Symbols(Path("qemu"))
    assert sym.resolve("src=timer:-0x100 handler=-0xf0") == \
        "src=timer:nvme_post_cqes handler=nvme_post_cqes+0x10"


def test_trace_option_only_when_asked(tmp_path):
    base = dict(qemu=Path("q"), kernel=Path("k"), initrd=Path("i"), workdir=tmp_path,
                mode="deterministic", qmp_path=tmp_path / "qmp.sock")
    assert "-trace" not in VMConfig(**base).cmdline()
    cmd = VMConfig(**base, trace_path=tmp_path / "t.log").cmdline()
    assert cmd[cmd.index("-trace") + 1] == diverge.TRACE_EVENTS
    assert cmd[cmd.index("-D") + 1] == str(tmp_path / "t.log")


WAITS = """\
det_cpu_interrupt cpu1 ic=1000 vt=1000 src=mmio:apic-msi cpu=0 mask=0x2
det_cpu_interrupt cpu1 ic=1500 vt=1500 src=mmio:apic-msi cpu=0 mask=0x2
det_cpu_reset_interrupt cpu0 ic=51000 vt=51000 src=- cpu=0 mask=0x2
det_intr cpu0 ic=51000 vt=51000 src=- cpu=0 request=0x2 pc=0xffffffff81000000
det_cpu_interrupt bql ic=52000 vt=52000 src=bh:nvme_post_cqes cpu=1 mask=0x10
det_cpu_interrupt bql ic=52000 vt=52000 src=bh:nvme_post_cqes cpu=1 mask=0x2
det_intr cpu1 ic=52300 vt=52300 src=- cpu=1 request=0x12 pc=0xffffffff81000010
det_cpu_reset_interrupt cpu1 ic=52900 vt=52900 src=- cpu=1 mask=0x102
det_intr cpu1 ic=52900 vt=52900 src=- cpu=1 request=0x2 pc=0xffffffff81000020
det_cpu_interrupt cpu0 ic=60000 vt=60000 src=- cpu=0 mask=0x2
det_cpu_reset_interrupt cpu0 ic=60100 vt=60100 src=mmio:pit cpu=0 mask=0x2
det_mmio_read cpu0 ic=60200 vt=60200 src=- region=serial addr=0x5 size=1 value=0x60
det_cpu_interrupt cpu0 ic=70000 vt=70000 src=- cpu=1 mask=0x4
det_cpu_interrupt cpu0 ic=80000 vt=80000 src=- cpu=1 mask=0x200
det_intr cpu0 ic=80050 vt=80050 src=- cpu=0 request=0x2 pc=0xffffffff81000030
"""


def test_interrupt_waits_pair_each_raise_with_the_take_that_served_it():
    """A kind raised twice before it is taken waits from its first raise;
    a take clears its bit just before det_intr, at the same instruction
    count; of several pending, the one x86 takes first (poll before hard)
    is the one a det_intr took; one cleared with no det_intr after it is
    withdrawn; EXITTB is no interrupt; a take with nothing raised is no
    wait; an NMI never taken is still pending."""
    w = diverge.interrupt_waits(trace(WAITS))
    assert [(x.kind, x.cpu, x.ns) for x in w.waits] == [
        ("hard", 0, 50000), ("poll", 1, 300), ("hard", 1, 900)]
    assert w.waits[0].raised.source == "mmio:apic-msi" and w.waits[0].raised.vtime == 1000
    assert w.withdrawn == {"hard": 1}
    assert [(kind, cpu) for kind, cpu, _ in w.pending] == [("nmi", 1)]
    text = diverge.render_waits(w, top=2)
    assert "  poll: 1 taken, p50 300, p99 300, max 300" in text
    assert "  hard: 2 taken, p50 900, p99 50000, max 50000; 1 withdrawn untaken" in text
    assert "  nmi: 0 taken; 1 still pending at the end" in text
    assert "the 2 longest:\n  50000 ns: hard for cpu0, raised at vt=1000 by cpu1 " \
           "(src=mmio:apic-msi, line 1), taken at vt=51000 (line 4)" in text


def test_interrupt_waits_of_a_trace_without_any():
    w = diverge.interrupt_waits(trace(COMMON))
    assert w.waits == [] and diverge.render_waits(w) == \
        "no interrupt was raised for a vCPU in this trace"


def test_irq_waits_command_names_a_missing_trace(tmp_path, capsys):
    from blklab import cli

    assert cli.main(["irq-waits", str(tmp_path / "none.log")]) == 1
    assert "none.log: no such trace file" in capsys.readouterr().err
