"""Jobs that bring files into the guest: a customer's fio job file
(fio_file) and the traces read_iolog replays."""

from pathlib import Path

import pytest

from blklab import blkgen_options, scenario
from blklab.bundle import JobBundle
from blklab.errors import ScenarioError

HEAD = """
[scenario]
schedulers = ["none"]
workload = "{workload}"
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
"""

INCIDENT = """; the customer's file, as they sent it
[global]
ioengine=io_uring
direct=1
filename=/data/testfile
directory=/data

[randread]
rw=randread
bs=4k
iodepth=32

[writer]
rw=randwrite
bs=16k
"""


def write_scenario(tmp_path: Path, jobs: str, workload: str = "blkgen") -> Path:
    p = tmp_path / "s.toml"
    p.write_text(HEAD.format(workload=workload) + jobs)
    return p


def test_fio_file_is_used_unchanged_but_for_filename(tmp_path):
    (tmp_path / "incident.fio").write_text(INCIDENT)
    s = scenario.load(write_scenario(tmp_path, '[[job]]\nfio_file = "incident.fio"\n'))
    (job,) = s.jobs
    (att,) = job.files
    assert job.name == "incident" and job.sections == ("randread", "writer")
    text = att.data.decode()
    assert "filename" not in text and "directory" not in text
    kept = [line for line in INCIDENT.splitlines()
            if not line.startswith(("filename", "directory"))]
    assert text.splitlines() == kept
    bundle = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs)
    files = bundle.files()
    assert files[f"job/files/{att.name}"] == att.data
    assert bundle.workload_args[0] == f"--randseed={s.cells()[0].seed}"
    assert bundle.workload_args[-1] == f"/job/files/{att.name}"


def test_fio_file_sections_keep_global_and_those_sections(tmp_path):
    (tmp_path / "incident.fio").write_text(INCIDENT)
    s = scenario.load(write_scenario(
        tmp_path, '[[job]]\nfio_file = "incident.fio"\nsections = ["writer"]\n'))
    text = s.jobs[0].files[0].data.decode()
    assert "[writer]" in text and "[global]" in text and "[randread]" not in text
    assert "iodepth=32" not in text


@pytest.mark.parametrize("body, workload, key, message", [
    ("[j]\nrw=read\nbogus_opt=1\n", "blkgen", "job[0].fio_file",
     "incident.fio:3: option 'bogus_opt' is not a blkgen option"),
    ("[j]\nrw=read\nstonewall\n", "blkgen", "job[0].fio_file",
     "incident.fio:3: option 'stonewall' is not supported by blkgen yet"),
    ("[j]\ncgroup_io_weight=100\n", "fio", "job[0].fio_file",
     "incident.fio:2: option 'cgroup_io_weight' is blkgen's own and fio has none"),
    ("rw=read\n", "blkgen", "job[0].fio_file", "incident.fio:1: option outside a [section]"),
    ("[global]\nrw=read\n", "blkgen", "job[0].fio_file", "defines no job"),
    ("[j]\ninclude other.fio\n", "blkgen", "job[0].fio_file", "'include' is not supported"),
])
def test_bad_fio_files(tmp_path, body, workload, key, message):
    (tmp_path / "incident.fio").write_text(body)
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, '[[job]]\nfio_file = "incident.fio"\n', workload))
    assert e.value.key == key
    assert message in e.value.message


def test_fio_file_section_must_exist(tmp_path):
    (tmp_path / "incident.fio").write_text(INCIDENT)
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(
            tmp_path, '[[job]]\nfio_file = "incident.fio"\nsections = ["nope"]\n'))
    assert e.value.key == "job[0].sections"
    assert "'nope' is not a job section" in e.value.message and "randread, writer" in e.value.message


def test_fio_file_takes_no_options_beside_it(tmp_path):
    (tmp_path / "incident.fio").write_text(INCIDENT)
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, '[[job]]\nfio_file = "incident.fio"\nbs = "8k"\n'))
    assert e.value.key == "job[0].bs"


def test_fio_only_options_are_checked_against_blkgens_table():
    table = blkgen_options.table()
    assert "cgroup_io_max" in table.blkgen_only()
    assert "read_iolog" in table.options and table.options["read_iolog"]["fio"]


def test_read_iolog_trace_goes_into_the_guest(tmp_path):
    (tmp_path / "caps").mkdir()
    for cpu in (0, 1, 2):
        (tmp_path / "caps" / f"vda.blktrace.{cpu}").write_bytes(bytes([cpu]) * 8)
    (tmp_path / "caps" / "vdb.blktrace.0").write_bytes(b"other")
    s = scenario.load(write_scenario(
        tmp_path, '[[job]]\nname = "r"\nread_iolog = "caps/vda.blktrace.1"\niodepth = 8\n'))
    (job,) = s.jobs
    assert [f.name for f in job.files] == ["0-vda.blktrace.0", "0-vda.blktrace.1",
                                            "0-vda.blktrace.2"]
    assert job.options == (("read_iolog", "/job/files/0-vda.blktrace.1"), ("iodepth", "8"))
    bundle = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs)
    assert bundle.replay and "BLKLAB_REPLAY=1" in bundle.files()["job/job.env"].decode()
    assert bundle.files()["job/files/0-vda.blktrace.2"] == b"\x02" * 8


def test_fio_replays_one_blktrace_file(tmp_path):
    for cpu in (0, 1):
        (tmp_path / f"sda.blktrace.{cpu}").write_bytes(b"x")
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(
            tmp_path, '[[job]]\nname = "r"\nread_iolog = "sda.blktrace.0"\n', "fio"))
    assert e.value.key == "job[0].read_iolog"
    assert "one of 2 per-CPU blktrace files; fio replays one file" in e.value.message


def test_missing_trace_and_reserved_redirect(tmp_path):
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, '[[job]]\nname = "r"\nread_iolog = "no.log"\n'))
    assert e.value.key == "job[0].read_iolog" and "no such file" in e.value.message
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(
            tmp_path, '[[job]]\nname = "r"\nreplay_redirect = "/dev/sdb"\n'))
    assert e.value.key == "job[0].replay_redirect"


def test_a_job_without_files_keeps_its_bundle(tmp_path):
    s = scenario.load(write_scenario(tmp_path, '[[job]]\nname = "r"\nrw = "randread"\n'))
    files = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs).files()
    assert sorted(files) == ["job/job.env", "job/tunables", "job/workload.args"]
    assert "BLKLAB_REPLAY" not in files["job/job.env"].decode()


CUSTOMER = ("fio --name=randread --filename=/data/testfile --rw=randread --bs=4k --iodepth=32 "
            "--runtime=60 --time_based --group_reporting --direct=1")


@pytest.mark.parametrize("workload", ["fio", "blkgen"])
def test_fio_command_becomes_the_job_file_fio_would_read(tmp_path, workload):
    s = scenario.load(write_scenario(tmp_path, f'[[job]]\nfio_command = "{CUSTOMER}"\n',
                                     workload))
    (job,) = s.jobs
    (att,) = job.files
    assert job.name == "randread" and job.sections == ("randread",)
    assert att.data.decode().splitlines() == [
        "; " + CUSTOMER, "[randread]", "rw=randread", "bs=4k", "iodepth=32", "runtime=60",
        "time_based", "group_reporting", "direct=1"]
    assert job.args() == [att.guest_path] and att.name == "0-command.fio"
    # Read back from a run's scenario.toml (no files): the same job name.
    back = scenario.load(write_scenario(tmp_path, f'[[job]]\nfio_command = "{CUSTOMER}"\n',
                                        workload), check_profiles=False)
    assert back.jobs[0].name == "randread"


def test_fio_command_options_before_the_first_name_are_global(tmp_path):
    s = scenario.load(write_scenario(
        tmp_path, '[[job]]\nname = "pair"\nfio_command = "/usr/bin/fio --ioengine=libaio '
        '--direct=1 --name=r --rw=randread --name=w --rw=randwrite --bs=16k '
        '--output-format=json --eta=never"\n', "fio"))
    (job,) = s.jobs
    text = job.files[0].data.decode().splitlines()
    assert text[1:] == ["[global]", "ioengine=libaio", "direct=1", "[r]", "rw=randread",
                        "[w]", "rw=randwrite", "bs=16k"]
    assert job.name == "pair" and job.sections == ("r", "w")


@pytest.mark.parametrize("command, message", [
    ("rw=read", "must be a fio command line, starting with 'fio'"),
    ("fio --name=r --rw=read job.fio", "'job.fio' is not a --option"),
    ("fio --name=r --bs 4k", "'4k' follows '--bs': write --bs=4k"),
    ("fio --name=r --rw=read --readonly", "'--readonly' is one of fio's own command-line"),
    ("fio --name= --rw=read", "--name needs a job name"),
    ("fio --rw=read", "defines no job"),
    ("fio --name=r --rw='read", "cannot be split into words like a shell"),
    ("fio --name=r --rw=read --stonewall", "option 'stonewall' is not supported by blkgen yet"),
])
def test_bad_fio_commands(tmp_path, command, message):
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, f'[[job]]\nfio_command = "{command}"\n'))
    assert e.value.key == "job[0].fio_command"
    assert message in e.value.message


def test_fio_command_takes_no_other_options(tmp_path):
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(
            tmp_path, f'[[job]]\nfio_command = "{CUSTOMER}"\nrw = "randread"\n'))
    assert e.value.key == "job[0].rw" and "only name may stand beside it" in e.value.message


def test_short_form_runtime_replaces_the_commands_runtime(tmp_path):
    s = scenario.load(write_scenario(
        tmp_path, f'[[job]]\nfio_command = "{CUSTOMER}"\n[short]\nruntime = "2s"\n', "fio"),
        short=True)
    lines = s.jobs[0].files[0].data.decode().splitlines()
    assert "runtime=2s" in lines and "runtime=60" not in lines
    full = scenario.load(write_scenario(
        tmp_path, f'[[job]]\nfio_command = "{CUSTOMER}"\n[short]\nruntime = "2s"\n', "fio"))
    assert "runtime=60" in full.jobs[0].files[0].data.decode().splitlines()
