"""same_cells.py, the verdict of make test-host-debian13, on made-up runs:
it passes only when the cells agree apart from the host keys, and fails
on a guest-side difference (an application job's results among them), a
different applications' image, a missing cell, a failed or idle cell, an
application job without transactions, or a console that differs before
the guest finished."""

import copy
import json
import subprocess
import sys
from pathlib import Path

SAME_CELLS = Path(__file__).with_name("same_cells.py")
CONSOLE = "[    0.000000] Linux version 6.1\nblklab: cell done\nhalted\n"


def cell(cid: str = "nvme0.none.r0") -> dict:
    return {"cell_id": cid, "status": "ok", "error": None,
            "summary": [{"direction": "read", "iops": 1234.5}],
            "devmodel": {"service_ns": {"read": {"count": 10}}},
            "files": {"console_log": f"cells/{cid}/console.log"},
            "host": {"wall_s": 12.0, "qemu_cmdline": ["/tmp/a"]}}


def write_run(path: Path, cells: list[dict], console: str = CONSOLE) -> Path:
    for c in cells:
        (path / c["files"]["console_log"]).parent.mkdir(parents=True, exist_ok=True)
        (path / c["files"]["console_log"]).write_text(console)
        (path / f"cell-{c['cell_id']}.json").write_text(json.dumps(c))
    return path


def verdict(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SAME_CELLS), str(a), str(b)],
                          capture_output=True, text=True)


def test_the_same_cells_apart_from_the_host_keys_pass(tmp_path):
    other = copy.deepcopy(cell())
    other["host"] = {"wall_s": 99.0, "qemu_cmdline": ["/tmp/b"]}
    p = verdict(write_run(tmp_path / "a", [cell()]), write_run(tmp_path / "b", [other]))
    assert p.returncode == 0, p.stdout
    assert "1 cells, the same bytes" in p.stdout


def test_a_guest_side_difference_fails_naming_the_key_and_values(tmp_path):
    other = cell()
    other["summary"][0]["iops"] = 1234.6
    p = verdict(write_run(tmp_path / "a", [cell()]), write_run(tmp_path / "b", [other]))
    assert p.returncode == 1
    assert "summary[0].iops: A 1234.5, B 1234.6" in p.stdout


def test_a_missing_failed_or_idle_cell_fails(tmp_path):
    a = write_run(tmp_path / "a", [cell(), cell("nvme0.bfq.r0")])
    assert verdict(a, write_run(tmp_path / "b", [cell()])).returncode == 1
    failed = dict(cell("nvme0.bfq.r0"), status="error", error="guest panic")
    assert "guest panic" in verdict(a, write_run(tmp_path / "c", [cell(), failed])).stdout
    idle = cell()
    idle["devmodel"]["service_ns"]["read"]["count"] = 0
    p = verdict(write_run(tmp_path / "d", [idle]), write_run(tmp_path / "e", [idle]))
    assert p.returncode == 1 and "no read went through the device model" in p.stdout
    assert verdict(tmp_path / "empty", tmp_path / "empty").returncode == 1


def test_consoles_must_agree_until_the_guest_is_done(tmp_path):
    a = write_run(tmp_path / "a", [cell()])
    after_done = write_run(tmp_path / "b", [cell()], CONSOLE.replace("halted", "late timer"))
    assert verdict(a, after_done).returncode == 0
    before = write_run(tmp_path / "c", [cell()], CONSOLE.replace("6.1", "6.12"))
    p = verdict(a, before)
    assert p.returncode == 1 and "console logs differ" in p.stdout


APPS_IMAGE = {"hash": "4b6336070975f028", "squashfs_sha256": "3759" * 16,
              "squashfs_bytes": 134541312, "versions": {"sysbench": "1.0.20+ds-5"}}


def app_cell() -> dict:
    c = cell("gp3.none.seed=1.r0")
    c["image"] = {"kernel": "6.12-amd64", "hash": "63ac66e9af185f52",
                  "initramfs_sha256": "1a7a" * 16}
    c["host"]["apps_image"] = copy.deepcopy(APPS_IMAGE)
    c["workload"] = {"apps": [{"name": "insert", "app": "sysbench", "test": "oltp_insert",
                               "transactions": 1430, "tps": 714.28,
                               "latency_ms": {"percentiles": {"99": 3.364}}}]}
    return c


def test_an_application_cell_passes_naming_its_results_and_both_images(tmp_path):
    other = app_cell()
    other["host"]["wall_s"] = 99.0
    p = verdict(write_run(tmp_path / "a", [app_cell()]), write_run(tmp_path / "b", [other]))
    assert p.returncode == 0, p.stdout
    assert ("application job insert (sysbench oltp_insert) the same in both: "
            "1430 transactions, tps 714.28, p99 3.364 ms") in p.stdout
    assert ("guest image 6.12-amd64 63ac66e9af185f52 (initramfs sha256 " + "1a7a" * 16
            in p.stdout)
    assert ("applications' image 4b6336070975f028 (squashfs sha256 " + "3759" * 16
            + ", 134541312 bytes)") in p.stdout


def test_an_application_s_own_result_that_differs_fails(tmp_path):
    other = app_cell()
    other["workload"]["apps"][0]["latency_ms"]["percentiles"]["99"] = 3.4
    p = verdict(write_run(tmp_path / "a", [app_cell()]), write_run(tmp_path / "b", [other]))
    assert p.returncode == 1
    assert "workload.apps[0].latency_ms.percentiles.99: A 3.364, B 3.4" in p.stdout


def test_another_applications_image_fails_though_it_sits_under_host(tmp_path):
    a = write_run(tmp_path / "a", [app_cell()])
    other = app_cell()
    other["host"]["apps_image"]["squashfs_sha256"] = "0" * 64
    p = verdict(a, write_run(tmp_path / "b", [other]))
    assert p.returncode == 1 and "host.apps_image.squashfs_sha256: A " in p.stdout
    without = app_cell()
    del without["host"]["apps_image"]
    p = verdict(a, write_run(tmp_path / "c", [without]))
    assert p.returncode == 1 and 'host.apps_image: A {"hash"' in p.stdout


def test_an_application_job_without_transactions_fails_on_both_sides(tmp_path):
    idle = app_cell()
    idle["workload"]["apps"][0]["transactions"] = 0
    p = verdict(write_run(tmp_path / "a", [idle]), write_run(tmp_path / "b", [idle]))
    assert p.returncode == 1 and "application job insert ran no transaction" in p.stdout
    broken = app_cell()
    broken["workload"]["apps"][0] = {"name": "insert", "error": "no report"}
    p = verdict(write_run(tmp_path / "c", [broken]), write_run(tmp_path / "d", [broken]))
    assert p.returncode == 1 and "ran no transaction: no report" in p.stdout
