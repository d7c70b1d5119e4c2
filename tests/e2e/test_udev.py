"""A customer's udev rules ([udev]) in a real guest.

The rules file (tests/e2e/udev/60-blklab-schedulers.rules) sets bfq on NVMe
namespaces (KERNEL=="nvme[0-9]*n[0-9]*") and kyber on SATA disks
(KERNEL=="sd[a-z]"). On nvme0n1 the first rule matches, on sda the second,
on vda neither: each cell records the scheduler udev left and the rule that
matched, and then runs under the scenario's own scheduler (none). Each
device starts under the kernel's default (elevator_get_default(), block/
elevator.c): none for the multi-queue NVMe and virtio-blk devices of a
two-vCPU guest, mq-deadline for the single-queue AHCI disk.

A rules file with a key udev does not know fails the cell with udev's own
line, naming the file and the line.
"""

from pathlib import Path

from conftest import cells_of, run_blklab

RULES = Path(__file__).parent / "udev"
SCENARIO = """[scenario]
name = "udev"
schedulers = ["none"]
mode = "deterministic"
timeout_s = 600
[guest]
apps = true
[udev]
rules = "{rules}"
{devices}
[[job]]
name = "r"
rw = "randread"
size = "4m"
"""
DEVICE = """
[[device]]
name = "{name}"
kind = "{kind}"
backing = "null"
size_gib = 1
profile = "zero-latency"
"""


def _run(tmp: Path, rules: str, devices: list[tuple[str, str]]):
    s = tmp / "udev.toml"
    s.write_text(SCENARIO.format(rules=RULES / rules, devices="".join(
        DEVICE.format(name=n, kind=k) for n, k in devices)))
    proc = run_blklab("run", str(s), "--jobs", "1", "--no-report", "--out", str(tmp / "o"))
    return proc, {c["request"]["device"]["name"]: c for c in cells_of(tmp / "o").values()}


def test_each_device_gets_the_rule_that_matches_its_name(apps_built, tmp_path):
    proc, cells = _run(tmp_path, "60-blklab-schedulers.rules",
                       [("nvme0", "nvme"), ("sata0", "ahci-hd"), ("vblk0", "virtio-blk")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = {"nvme0": ("nvme0n1", "[none]", "[bfq]", 2),
            "sata0": ("sda", "[mq-deadline]", "[kyber]", 3),
            "vblk0": ("vda", "[none]", "[none]", None)}
    for name, (dev, before, after, line) in want.items():
        cell = cells[name]
        assert cell["status"] == "ok", (name, cell["error"])
        u = cell["guest"]["udev"]
        assert before in u["scheduler_before"].split(), (name, u)
        assert after in u["scheduler_after"].split(), (name, u)
        assert u["problems"] == [], (name, u)
        if line is None:
            assert u["matched"] == [], (name, u)
        else:
            (matched,) = u["matched"]
            assert matched.startswith(f"{dev}: /run/udev/rules.d/60-blklab-schedulers.rules:{line} "
                                      "ATTR "), (name, matched)
            assert matched.endswith(f"writing '{after.strip('[]')}'"), (name, matched)
        # Then blklab sets the scenario's scheduler, which the workload ran under.
        assert cell["in_effect"]["scheduler"] == "none"
        assert cell["request"]["udev"]["rules"] == "60-blklab-schedulers.rules"


def test_a_rule_udev_cannot_parse_fails_the_cell(apps_built, tmp_path):
    proc, cells = _run(tmp_path, "61-blklab-broken.rules", [("nvme0", "nvme")])
    assert proc.returncode != 0
    cell = cells["nvme0"]
    assert cell["status"] == "failed"
    assert "udev rules 61-blklab-broken.rules: /run/udev/rules.d/61-blklab-broken.rules:3 " \
        "Invalid key 'SCHEDULER'" in cell["error"], cell["error"]
