"""Every pinned kernel series boots as a guest. The default series' flavours
are booted by every other end-to-end test and test_flavours.py; here each
other series (guest-images/kernel-series) boots its amd64 flavour once, in
deterministic mode, and runs a short job under mq-deadline, kyber and bfq
(kyber and bfq are modules the guest loads) on an NVMe device with a device
model, traced. Each scheduler's queue/iosched/ must list exactly what
kernels.IOSCHED_ATTRIBUTES says of the series, and every queue/ attribute
it reads back must be one kernels.queue_attributes lists: what validation
checks scenarios against (test_scenarios.py checks the default series, on
more device kinds). And blktrace must show who dispatches each request
under mq-deadline as lab 12 says (conftest.check_dispatcher).

The images come from `make images` (make test builds them)."""

import json

import pytest

from conftest import cells_of, check_dispatcher, check_pvh_boot, check_queue_listing, run_blklab
from blklab import kernels, paths, results
from blklab.errors import BuildMissingError

OTHER_SERIES = [k for k in kernels.pinned()
                if k.flavour == "amd64" and k.series != kernels.default_series()]

SCENARIO = """
[scenario]
name = "kernel-{id}"
mode = "deterministic"
timeout_s = 900
schedulers = ["mq-deadline", "kyber", "bfq"]
blktrace = true
[guest]
kernel = "{id}"
vcpus = 1
memory_mib = 512
[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
profile = "samsung-970evoplus-1t"
size_gib = 1
[[job]]
name = "r"
rw = "randread"
bs = "4k"
iodepth = 8
ioengine = "io_uring"
direct = true
runtime = "100ms"
time_based = true
"""


@pytest.mark.parametrize("kernel", OTHER_SERIES, ids=lambda k: k.id)
def test_series_boots_and_runs_a_job(built, tmp_path, kernel):
    try:
        image = json.loads((paths.image_dir(kernel.id) / "image.json").read_text())
    except BuildMissingError as e:
        pytest.fail(f"{e} (make test builds it: 'make images')")
    assert (image["kernel_package"], image["kernel_package_version"]) == \
        (kernel.package, kernel.version)
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(id=kernel.id))
    proc = run_blklab("run", str(path), "--out", str(tmp_path / "run"), "--no-report",
                      "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(tmp_path / "run").values()
    assert all(c["status"] == "ok" for c in cells), [c["error"] for c in cells]
    assert sorted(c["in_effect"]["scheduler"] for c in cells) == ["bfq", "kyber", "mq-deadline"]
    for c in cells:
        results.validate(c)
        assert c["status"] == "ok", c["error"]
        assert c["request"]["kernel"] == kernel.id
        assert c["guest"]["kernel_release"] == image["kernel_release"]
        # /proc/version names the release and the Debian package version.
        version = c["guest"]["kernel_version"]
        assert version.startswith(f"Linux version {image['kernel_release']} "), version
        assert f" Debian {kernel.version} " in version, version
        sched = c["in_effect"]["scheduler"]
        assert sorted(c["in_effect"]["iosched"]) == \
            sorted(kernels.IOSCHED_ATTRIBUTES[kernel.series][sched]), (kernel.id, sched)
        assert c["guest"]["kernel_warnings"] == [], c["guest"]["kernel_warnings"]
        check_queue_listing(c)
        check_pvh_boot(c, tmp_path / "run", paths.image_dir(kernel.id))
        assert all(row["total_ios"] > 0 for row in c["summary"])
        # Who dispatches blkgen's lone submissions under mq-deadline (lab 12;
        # kyber and bfq may also dispatch from their own timers and wake-ups).
        if sched == "mq-deadline":
            check_dispatcher(c, tmp_path / "run" / "cells" / c["cell_id"], kernel.series)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["image"]["kernel"] == kernel.id
