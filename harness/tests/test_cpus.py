"""The CPU presets of cpus/: every shipped one loads with a source for each
value, and a bad preset file is refused naming the file and the key."""

from pathlib import Path

import pytest

from blklab import cpus
from blklab.errors import BlklabError

GOOD = """[cpu]
name = "A CPU"
clock_ghz = 3.0
cpu_rate = 5
pause_ns = 40
irq_ns = 100
syscall_ns = 50
wake_ns = 0

[sources]
cpu_rate = "a"
pause_ns = "b"
irq_ns = "c"
syscall_ns = "d"
wake_ns = "e"
"""


def test_shipped_presets_name_a_source_for_every_value():
    presets = cpus.presets()
    assert cpus.DEFAULT_CPU in presets
    assert {"xeon-silver-4210r", "icelake-sp-axboe2020"} <= set(presets)
    for cpu in presets.values():
        assert dict(cpu.sources).keys() == set(cpus.VALUE_KEYS)
        assert all(text.strip() for _, text in cpu.sources)


def test_a_good_file_loads(tmp_path):
    path = tmp_path / "a-cpu.toml"
    path.write_text(GOOD)
    cpu = cpus._load(path)
    assert (cpu.name, cpu.cpu_rate, cpu.irq_ns, cpu.syscall_ns) == ("a-cpu", 5.0, 100, 50)


@pytest.mark.parametrize("change, words", [
    (("irq_ns = 100", "irq_ns = 2000000"), "cpu.irq_ns must be between 0 and 1000000"),
    (("cpu_rate = 5", "cpu_rate = 40"), "cpu.cpu_rate must be between 0.25 and 32"),
    (("pause_ns = 40", "pause_ns = \"40\""), "cpu.pause_ns must be a whole number of ns"),
    (("wake_ns = 0\n", ""), "cpu.wake_ns is missing"),
    (("syscall_ns = \"d\"\n", ""), "sources.syscall_ns is missing"),
    (("clock_ghz = 3.0", "clock_ghz = 0"), "cpu.clock_ghz must be a number of GHz"),
    (("clock_ghz = 3.0", "clock_ghz = 3.0\nturbo = true"), "unknown key 'cpu.turbo'"),
    (("[sources]", "[source]"), "needs a [cpu] table and a [sources] table"),
    (("[cpu]", "[cpu"), "not a readable TOML file"),
])
def test_bad_preset_files_are_refused(tmp_path, change, words):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(BlklabError) as err:
        cpus._load(path)
    assert str(path) in str(err.value) and words in str(err.value)
