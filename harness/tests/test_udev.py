"""[udev]: the rules file travels unchanged to the guest, and the guest's
record is read back."""

import subprocess

from blklab import scenario, udev
from blklab.bundle import JobBundle

RULES = b'ACTION=="add", KERNEL=="nvme*n*", ATTR{queue/scheduler}="bfq"\n'
SCENARIO = """
[scenario]
mode = "deterministic"
[guest]
apps = true
[udev]
rules = "rules/60-io.rules"
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "r"
rw = "randread"
"""


def test_the_file_reaches_the_guest_unchanged(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "60-io.rules").write_bytes(RULES)
    (tmp_path / "s.toml").write_text(SCENARIO)
    s = scenario.load(tmp_path / "s.toml")
    assert s.udev_rules == udev.UdevRules("60-io.rules", RULES)
    b = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs, udev_rules=s.udev_rules)
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], input=b.cpio(), cwd=dest, check=True)
    assert (dest / "job/files/udev/60-io.rules").read_bytes() == RULES
    assert "BLKLAB_UDEV_RULES=60-io.rules\n" in (dest / "job/job.env").read_text()


def test_the_guests_record_is_read():
    r = udev.parse_guest_record(
        "scheduler_before=[none] mq-deadline kyber bfq \n"
        "scheduler_after=none mq-deadline kyber [bfq] \n--- udevadm test\n"
        "nvme0n1: /run/udev/rules.d/60-io.rules:1 ATTR '/sys/x/queue/scheduler' writing 'bfq'\n"
        "/run/udev/rules.d/60-io.rules:4 Unknown group 'disk', ignoring\n")
    assert r["scheduler_after"] == "none mq-deadline kyber [bfq]"
    assert r["matched"] == [
        "nvme0n1: /run/udev/rules.d/60-io.rules:1 ATTR '/sys/x/queue/scheduler' writing 'bfq'"]
    assert r["problems"] == ["/run/udev/rules.d/60-io.rules:4 Unknown group 'disk', ignoring"]
