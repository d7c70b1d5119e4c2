"""The generated reference (docs/reference/) against the code it is generated
from: the committed pages are what `blklab reference` writes now, and the
scenario keys it lists are exactly the keys the validator accepts, and each
profile key of libdevmodel's table has one meaning in blklab.profile_keys."""

from __future__ import annotations

import copy
import re
import tomllib
import types
from pathlib import Path

import pytest

from blklab import profile_keys as profile_key_docs
from blklab import reference
from blklab import scenario as scenario_mod
from blklab.errors import BlklabError, ScenarioError
from blklab.scenario_keys import KEYS

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "reference"


@pytest.fixture(scope="module")
def recorded() -> dict[str, reference.Recorded]:
    return reference.record_scenario_keys()


@pytest.fixture(scope="module")
def listed() -> dict[str, dict[str, str]]:
    return reference.scenario_keys()


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_committed_page_is_what_the_code_generates(name):
    make, _ = reference.PAGES[name]
    path = COMMITTED / name
    assert path.exists(), f"{path} is missing: run 'make reference'"
    assert path.read_text() == make(), (f"{path} differs from what the code generates: run "
                                        "'make reference' and commit the result")


def test_every_page_is_in_the_index():
    index = reference.index_page()
    for name in reference.PAGES:
        if name != "README.md":
            assert f"]({name})" in index


def test_reference_lists_every_key_the_validator_reads_and_no_other(listed):
    # scenario_keys() refuses to generate otherwise; this names the keys.
    documented = set(KEYS) | {f"short.{k}" for k in scenario_mod.SHORT_KEYS}
    assert set(listed) == documented


# Reads through the typed reader, written as key literals: .get("x", <type>,
# .integer("x", .choice("x". A key read with a literal name in any module of
# the harness must be in the reference under some table, even when no
# scenario file in the repository reaches the read.
_LITERAL_READ = re.compile(r'\.(?:get\("(\w+)",\s*\(?(?:int|str|bool|float|list|dict)\b'
                           r'|integer\("(\w+)"|choice\("(\w+)")')


def test_every_key_read_by_name_in_the_code_is_listed(listed):
    names = {k.rsplit(".", 1)[-1] for k in listed}
    found = {}
    for path in sorted((REPO / "harness" / "blklab").glob("*.py")):
        for m in _LITERAL_READ.finditer(path.read_text()):
            found.setdefault(next(g for g in m.groups() if g), path.name)
    assert found, "the pattern finds no reads: it no longer matches the code"
    missing = {n: f for n, f in found.items() if n not in names}
    assert not missing, f"keys read in the code but not in the reference: {missing}"


def _load_with(data: dict, witness: tuple[str, bool, str], monkeypatch) -> None:
    """Validate `data` as if it were the witness file's text."""
    path, short, _ = witness
    fake = types.SimpleNamespace(loads=lambda text: copy.deepcopy(data),
                                 TOMLDecodeError=tomllib.TOMLDecodeError)
    monkeypatch.setattr(scenario_mod, "tomllib", fake)
    scenario_mod.load(REPO / path, check_profiles=False, short=short)


def _table_at(data: dict, prefix: str) -> dict:
    table = data
    for part in prefix.split(".") if prefix else ():
        m = re.fullmatch(r"([^\[]+)(?:\[(\d+)\])?", part)
        table = table.setdefault(m.group(1), {})  # a table read while absent is {}
        if m.group(2) is not None:
            table = table[int(m.group(2))]
    return table


def _sections(recorded) -> dict[str, tuple[str, bool, str]]:
    """One witness per table the validator reads: a file that validated."""
    out = {}
    for key in sorted(recorded):
        rec = recorded[key]
        if rec.witness is not None:
            out.setdefault(key.rpartition(".")[0], rec.witness)
    return out


# Tables whose keys are names accepted by pattern: an unknown name there is
# a sysfs attribute (checked by the guest) or a server option, not an error.
_BY_PATTERN = ("queue", "device.queue", "iosched.<scheduler>")


def test_every_table_refuses_an_unknown_key(recorded, listed, monkeypatch):
    checked = set()
    for section, witness in _sections(recorded).items():
        if section in _BY_PATTERN:
            continue
        data = tomllib.loads((REPO / witness[0]).read_text())
        prefix = witness[2]
        if witness[1] and not prefix.startswith("short"):
            continue  # the short form's tables are the full form's: checked there
        _table_at(data, prefix)["zz_not_a_key"] = 1
        with pytest.raises(ScenarioError) as e:
            _load_with(data, witness, monkeypatch)
        assert "unknown key" in e.value.message and (e.value.key or "").endswith(
            "zz_not_a_key"), (section, witness, str(e.value))
        checked.add(section)
    tables = {k.rpartition(".")[0] for k in listed} - set(_BY_PATTERN)
    assert checked == tables, f"tables without a file to check them in: {tables - checked}"


def test_an_unknown_top_level_table_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text((REPO / "scenarios" / "default.toml").read_text() + "\n[zz_not_a_table]\n")
    with pytest.raises(ScenarioError, match="unknown key"):
        scenario_mod.load(path, check_profiles=False)


def _example(rec: reference.Recorded, present: object) -> object:
    if present is not None:
        return present
    if rec.bounds:
        return min(lo for lo, _ in rec.bounds)
    if rec.allowed:
        return sorted(rec.allowed)[0][0]
    kinds = next(iter(sorted(rec.kinds, key=repr)))
    return {int: 1, float: 1.0, str: "x", bool: True, list: [], dict: {}}[kinds[0]]


def test_every_listed_key_is_accepted_where_the_validator_reads_it(recorded, listed,
                                                                   monkeypatch):
    """Set each listed key in a file whose validation read it: the validator
    may refuse the value for a reason of its own (a kind it does not apply
    to), never as an unknown key."""
    checked = 0
    for key in listed:
        rec = recorded.get(key)
        if rec is None or rec.witness is None or "<" in key:
            continue
        path, short, prefix = rec.witness
        if short and not prefix.startswith("short"):
            continue
        data = tomllib.loads((REPO / path).read_text())
        table = _table_at(data, prefix)
        name = key.rpartition(".")[2]
        table[name] = _example(rec, table.get(name))
        try:
            _load_with(data, rec.witness, monkeypatch)
        except ScenarioError as e:
            assert "unknown key" not in e.message, (key, str(e))
        checked += 1
    assert checked >= 90, f"only {checked} keys driven: the corpus lost its witnesses"


def test_every_profile_key_has_a_meaning_and_no_other():
    listed = {f"{section}.{k['name']}" for section, keys in reference.profile_keys().items()
              for k in keys}
    assert listed == set(profile_key_docs.MEANINGS)
    assert all(m.strip() for m in profile_key_docs.MEANINGS.values())


@pytest.mark.parametrize("change, named", [
    ("drop", "keys libdevmodel's table lists have no meaning: ssd.page_read_us"),
    ("add", "meanings for keys libdevmodel's table does not list: ssd.no_such_key"),
])
def test_a_profile_key_without_a_meaning_or_a_meaning_without_a_key_is_refused(
        monkeypatch, change, named):
    meanings = dict(profile_key_docs.MEANINGS)
    if change == "drop":
        del meanings["ssd.page_read_us"]
    else:
        meanings["ssd.no_such_key"] = "nothing"
    monkeypatch.setattr(profile_key_docs, "MEANINGS", meanings)
    with pytest.raises(BlklabError, match=re.escape(named)):
        reference.profile_page()


def test_generation_is_the_same_bytes_twice():
    assert reference.scenario_page() == reference.scenario_page()
    assert reference.cli_page() == reference.cli_page()
