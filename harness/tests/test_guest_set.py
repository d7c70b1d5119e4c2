"""`blklab run --guest KEY=VALUE`: [guest] keys set for one run in place of
the file's, validated as the file's would be, kept in the manifest, in the
run's id and in the command `blklab report --markdown` prints."""

from pathlib import Path

import pytest

from blklab import cli, markdown, scenario
from blklab.errors import ScenarioError
from blklab.runner import run_id_of

TEXT = """
[scenario]
schedulers = ["none"]
[guest]
vcpus = 2
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "j"
rw = "randread"
"""


def write(tmp_path: Path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(TEXT)
    return p


def test_values_are_toml_or_else_text():
    assert scenario.parse_guest_set(["cpu_rate=4", "vcpus = 4", "vcpu_clocks=parallel",
                                     "kernel=6.12", "kernel=6.12-cloud-amd64",
                                     'vcpu_clocks="shared"']) == (
        ("cpu_rate", "4"), ("vcpus", "4"), ("vcpu_clocks", '"shared"'),
        ("kernel", '"6.12-cloud-amd64"'))


@pytest.mark.parametrize("item, what", [("cpu_rate", "is not KEY=VALUE"),
                                        ("cpu_rate=", "is not KEY=VALUE"),
                                        ("vcpu=4", "'vcpu' is not a [guest] key")])
def test_bad_arguments_name_themselves_and_the_keys(item, what):
    with pytest.raises(ScenarioError) as e:
        scenario.parse_guest_set([item])
    assert str(e.value).startswith("--guest: ") and what in str(e.value)
    assert "cpu_rate, vcpu_clocks" in str(e.value)


def test_set_keys_replace_the_files(tmp_path):
    path = write(tmp_path)
    base = scenario.load(path)
    s = scenario.load(path, guest_set=scenario.parse_guest_set(
        ["cpu_rate=2.5", "vcpus=4", "vcpu_clocks=shared"]))
    assert (base.guest.vcpus, base.guest.cpu_rate, base.guest.vcpu_clocks) == (2, scenario.DEFAULT_CPU_RATE, "parallel")
    assert (s.guest.vcpus, s.guest.cpu_rate, s.guest.vcpu_clocks) == (4, 2.5, "shared")
    assert base.guest.vcpu_quantum_ns == scenario.DEFAULT_VCPU_QUANTUM_NS
    assert s.guest.vcpu_quantum_ns is None  # shared clocks: unbounded turns unless set
    assert s.guest_set == (("cpu_rate", "2.5"), ("vcpus", "4"), ("vcpu_clocks", '"shared"'))
    assert s.sha256 == base.sha256  # the file's bytes; the run id carries the rest
    ids = {run_id_of(x, "deterministic", "tcg", {}, {}) for x in (base, s)}
    assert len(ids) == 2


def test_an_invalid_value_is_named_as_set_by_the_flag(tmp_path):
    with pytest.raises(ScenarioError) as e:
        scenario.load(write(tmp_path), guest_set=(("cpu_rate", "100"),))
    assert "guest.cpu_rate: must be between 0.25 and 32" in str(e.value)
    assert str(e.value).endswith("(set by --guest cpu_rate=100)")


def test_validate_lists_cells_with_the_keys_set(tmp_path, capsys):
    path = write(tmp_path)
    assert cli.main(["validate", "--kernel", "--guest", "kernel=6.12-amd64", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "6.12-amd64"
    assert cli.main(["validate", "--guest", "vcpus=300", str(path)]) == 2
    assert "(set by --guest vcpus=300)" in capsys.readouterr().err


def test_markdown_names_the_flags_in_the_run_command():
    manifest = {"scenario": {"path": "/x/scenarios/default.toml"},
                "guest_set": ["cpu_rate=4", 'vcpu_clocks="parallel"', 'kernel="a b"']}
    assert markdown.run_command(manifest) == (
        "blklab run --guest cpu_rate=4 --guest vcpu_clocks=parallel "
        "--guest 'kernel=\"a b\"' scenarios/default.toml")
