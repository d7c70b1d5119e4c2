"""Faults lose nothing that finished: QEMU killed mid-cell, a guest kernel
panic, a guest hung past its timeout, and a results disk that fills up.
Each affected cell is reported failed with its log (or left without a
result), the other cells complete, and a rerun runs only what is missing."""

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import cells_of, nvme, qemu_pids, randread, run_blklab

NVME = nvme(1)


def job(runtime: str) -> str:
    return randread(runtime, iodepth=4)


def test_qemu_killed_mid_cell(built, tmp_path):
    scenario = tmp_path / "kill.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\nschedulers = ["none", "bfq"]\n'
                        'timeout_s = 300\n' + NVME
                        + job("15s"))
    out = tmp_path / "run"
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("p", run_blklab(
        "run", str(scenario), "--accel", "tcg", "--jobs", "2", "--out", str(out))))
    t.start()
    # Find the bfq cell's QEMU by its console log (named in its command
    # line) and kill it once the guest's workload runs.
    deadline = time.monotonic() + 180
    victim = None
    while time.monotonic() < deadline and victim is None:
        for pid in qemu_pids():
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            logs = [a.split("path=", 1)[1] for a in args if a.startswith("file,id=console,")]
            try:
                console = Path(logs[0]).read_text(errors="replace") if logs else ""
            except OSError:
                continue
            if "blklab: cell nvme0.bfq.r0" in console:
                victim = pid
        time.sleep(0.5)
    assert victim, "the bfq cell's guest never started its workload"
    time.sleep(3)
    os.kill(victim, signal.SIGKILL)
    t.join(timeout=600)
    proc = done["p"]
    assert proc.returncode == 1
    cells = cells_of(out)
    assert cells["nvme0.none.r0"]["status"] == "ok"
    killed = cells["nvme0.bfq.r0"]
    assert killed["status"] == "failed"
    assert "QEMU exited with status -9" in killed["error"]
    assert "blklab: cell nvme0.bfq.r0" in (out / killed["files"]["console_log"]).read_text()
    # A rerun runs only the failed cell.
    scenario.write_text(scenario.read_text().replace('"15s"', '"1s"'))
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert "1 of 2 cells done" in proc.stderr


def test_guest_panic_and_hang(built, tmp_path):
    # A panicking guest ends the cell by itself; a hanging one only by its
    # timeout, which must leave a loaded host time to boot the guest.
    for fault, timeout_s, words in (
            ("guest-panic", 300, "guest kernel panic: Kernel panic - not syncing"),
            ("guest-hang", 60, "did not finish within 60 s")):
        scenario = tmp_path / f"{fault}.toml"
        scenario.write_text(f'[scenario]\nmode = "realtime"\nschedulers = ["none"]\n'
                            f'timeout_s = {timeout_s}\n'
                            f'guest_fault = "{fault}"\n' + NVME + job("5s"))
        out = tmp_path / fault
        proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        (c,) = cells_of(out).values()
        assert c["status"] == "failed"
        assert words in c["error"], c["error"]
        console = (out / c["files"]["console_log"]).read_text()
        assert "blklab: cell nvme0.none.r0" in console
        if fault == "guest-panic":
            assert "sysrq: Trigger a crash" in console
        assert qemu_pids() == []


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_results_disk_full(built, tmp_path, small_tmpfs):
    scenario = tmp_path / "full.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\n'
                        'schedulers = ["none", "mq-deadline", "kyber", "bfq"]\n'
                        'timeout_s = 300\n' + NVME + job("1s"))
    out = small_tmpfs / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 1
    assert "No space left on device" in proc.stderr
    # Every cell is either a complete result or absent: never a partial JSON.
    written = cells_of(out)
    assert len(written) < 4
    for path in out.glob("cell-*.json"):
        assert json.loads(path.read_text())["status"] == "ok"
    assert not list(out.glob(".*.tmp"))
    # With room again, a rerun runs only the cells without results.
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_tmpfs)], check=True)
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if written:
        assert f"{len(written)} of 4 cells done" in proc.stderr
    assert len(cells_of(out)) == 4
