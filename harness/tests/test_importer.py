"""blklab import: a capture (tools/blklab-capture.sh) to a scenario skeleton
that validates, with what could not be mapped said."""

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from blklab import importer, scenario
from blklab.errors import BlklabError

REPO = Path(__file__).resolve().parents[2]

CAPTURE = """== meta
format=blklab-capture 1
date=2026-11-30T10:00:00Z
host=db-7
== kernel
release=5.15.0-1051-aws
version=#56~20.04.1-Ubuntu SMP
machine=x86_64
== device nvme0n1
size_sectors=16777216
dev=259:0
device/model=Amazon Elastic Block Store
nr_hw_queues=2
queue/scheduler=none [mq-deadline]
queue/nr_requests=64
queue/read_ahead_kb=128
queue/logical_block_size=512
queue/rotational=0
queue/iosched/read_expire=250
queue/iosched/fifo_batch=16
== device nvme1n1
size_sectors=2097152
device/model=Amazon Elastic Block Store
queue/scheduler=[none] mq-deadline
== cgroup /mysql.slice
io.max: 259:0 riops=3000
== diskstats 0
 259       0 nvme0n1 100 0 800 10 200 0 1600 20 0 30 30 0 0 0 0
 259       1 nvme1n1 100 0 800 10 200 0 1600 20 0 30 30 0 0 0 0
== diskstats 5
 259       0 nvme0n1 900 0 9800 10 700 0 9600 20 0 30 30 0 0 0 0
 259       1 nvme1n1 101 0 808 10 200 0 1600 20 0 30 30 0 0 0 0
== end
"""


def test_busiest_device_with_its_settings_becomes_a_valid_scenario(tmp_path):
    cap = tmp_path / "cap.txt"
    cap.write_text(CAPTURE)
    r = importer.import_capture(cap)
    data = tomllib.loads(r.toml)
    (dev,) = data["device"]
    assert dev["name"] == "nvme0n1" and dev["kind"] == "nvme"
    assert dev["profile"] == "aws-gp3-100g"
    assert dev["size_gib"] == 8.0
    assert data["queue"] == {"nr_requests": 64, "read_ahead_kb": 128}
    assert data["iosched"] == {"mq-deadline": {"read_expire": 250, "fifo_batch": 16}}
    assert data["guest"]["kernel"] == "cloud-amd64"
    text = "\n".join(r.unmapped)
    assert "gp2 from gp3" in text
    assert "closest series blklab knows is 5.10" in text
    assert "cgroup /mysql.slice: io.max: 259:0 riops=3000" in text
    assert "other devices captured but not modelled: nvme1n1" in text
    out = tmp_path / "imported.toml"
    out.write_text(r.toml)
    s = scenario.load(out)
    assert s.devices[0].size_bytes == 8 << 30


def test_device_can_be_chosen_and_must_exist(tmp_path):
    cap = tmp_path / "cap.txt"
    cap.write_text(CAPTURE)
    assert tomllib.loads(importer.import_capture(cap, "nvme1n1").toml)["device"][0][
        "name"] == "nvme1n1"
    with pytest.raises(BlklabError, match="--device sdz: not captured; captured: nvme0n1, "
                       "nvme1n1"):
        importer.import_capture(cap, "sdz")


@pytest.mark.parametrize("text, message", [
    ("hello\n", "line 1: text before the first '== ' section"),
    ("== meta\nformat=other 2\n== device sda\nsize_sectors=8\n", "meta.format: is 'other 2'"),
    ("== meta\nformat=blklab-capture 1\n", "no '== device' section"),
    ("== meta\nformat=blklab-capture 1\n== device sda\nsize_sectors=lots\n",
     "device sda: size_sectors missing or not a number"),
    ("== meta\nformat=blklab-capture 1\n== device sda\nnot a pair\n",
     "line 4: [device] expects key=value"),
    ("== meta\nformat=blklab-capture 1\n== diskstats soon\n",
     "line 3: '== diskstats' needs the sample time"),
])
def test_bad_captures_name_file_line_and_why(tmp_path, text, message):
    cap = tmp_path / "cap.txt"
    cap.write_text(text)
    with pytest.raises(importer.CaptureError) as e:
        importer.import_capture(cap)
    assert str(cap) in str(e.value) and message in str(e.value)


def test_cfq_and_virtio_are_said(tmp_path):
    cap = tmp_path / "cap.txt"
    cap.write_text(CAPTURE.replace("nvme0n1", "vda").replace("none [mq-deadline]",
                                                             "noop deadline [cfq]"))
    r = importer.import_capture(cap)
    text = "\n".join(r.unmapped)
    assert "'cfq' does not exist" in text
    doc = tomllib.loads(r.toml)
    assert "iosched" not in doc
    assert doc["device"][0]["kind"] == "virtio-blk"


def test_capture_script_output_imports(tmp_path):
    """The shipped script, run here under dash (POSIX sh), writes a file the
    importer reads; this machine's devices are whatever it has."""
    out = tmp_path / "cap.txt"
    proc = subprocess.run(["dash", str(REPO / "tools" / "blklab-capture.sh"), str(out)],
                          env=dict(os.environ, SAMPLE="0"), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    cap = importer.parse(out)
    assert cap.meta["format"] == importer.FORMAT
    assert cap.kernel["release"] == os.uname().release
    assert len(cap.diskstats) == 2
