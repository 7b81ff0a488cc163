"""Every single-switch branch of p4src/ina.p4, as STF files run through softswitch's STF runner.

The .stf files are plain STF (BMv2 runs them too); the counter and register expectations written in
their comments are checked here on the Switch after the run.
"""

from pathlib import Path

import pytest
import stf_scenarios

from softswitch.stf import run_stf
from softswitch.switch import Switch

HERE = Path(__file__).resolve().parent

INA_P4 = HERE.parents[1] / "p4src" / "ina.p4"
INA_K256_P4 = HERE.parents[1] / "p4src" / "ina_k256.p4"
INA_K344_P4 = HERE.parents[1] / "p4src" / "ina_k344.p4"
INA_K1024_P4 = HERE.parents[1] / "p4src" / "ina_k1024.p4"
STF_FILES = sorted((HERE / "stf").glob("*.stf"))
K256_STF_FILES = sorted((HERE / "stf" / "k256").glob("*.stf"))
K344_STF_FILES = sorted((HERE / "stf" / "k344").glob("*.stf"))
K1024_STF_FILES = sorted((HERE / "stf" / "k1024").glob("*.stf"))


def _checks(text: str):
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["#", "check_counter"]:
            _, _, name, index, kind, value = words
            yield ("counter", name, int(index), int(value))
        elif words[:2] == ["#", "check_register"]:
            _, _, name, index, value = words
            yield ("register", name, int(index), int(value))


def test_generator_reproduces_committed_files():
    rendered = stf_scenarios.render_all()
    assert sorted(rendered) == [p.name for p in STF_FILES]
    for path in STF_FILES:
        assert path.read_text() == rendered[path.name], f"{path.name} is stale: run {stf_scenarios.__file__}"
    for variant, rendered, files in (
        ("k256", stf_scenarios.render_k256(), K256_STF_FILES),
        ("k344", stf_scenarios.render_k344(), K344_STF_FILES),
        ("k1024", stf_scenarios.render_k1024(), K1024_STF_FILES),
    ):
        assert sorted(rendered) == [p.name for p in files]
        for path in files:
            assert path.read_text() == rendered[path.name], f"{variant}/{path.name} is stale: run the generator"


@pytest.mark.parametrize("path", STF_FILES, ids=lambda p: p.stem)
def test_stf_scenario(path, ina_program):
    """Every scenario, masked ones included: no result outgrows BMv2's packet buffer (softswitch holds the
    program to it, docs/softswitch-internals.md, "BMv2's limits"), so none is dropped for it."""
    sw = Switch(ina_program, name=path.stem)
    _run_and_check(INA_P4, sw, path)
    assert sw.stats["buffer_limit_drops"] == 0


@pytest.mark.parametrize("path", K256_STF_FILES, ids=lambda p: p.stem)
def test_k256_stf_scenario(path, ina_program_k256):
    """The scenarios of p4src/ina_k256.p4 (256 values per packet) on that program."""
    _run_and_check(INA_K256_P4, Switch(ina_program_k256, name=path.stem), path)


@pytest.mark.parametrize("path", K344_STF_FILES, ids=lambda p: p.stem)
def test_k344_stf_scenario(path, ina_program_k344):
    """The scenarios of p4src/ina_k344.p4 (344 values per packet, the default at a 1500-byte MTU; value_count
    in groups of 4) on it: no result outgrows BMv2's packet buffer."""
    sw = Switch(ina_program_k344, name=path.stem)
    _run_and_check(INA_K344_P4, sw, path)
    assert sw.stats["buffer_limit_drops"] == 0


@pytest.mark.parametrize("path", K1024_STF_FILES, ids=lambda p: p.stem)
def test_k1024_stf_scenario(path, ina_program_k1024):
    """The scenarios of p4src/ina_k1024.p4 (1024 values per packet, value_count in groups of 4) on it."""
    _run_and_check(INA_K1024_P4, Switch(ina_program_k1024, name=path.stem), path)


def _run_and_check(program: Path, sw: Switch, path: Path) -> None:
    result = run_stf(program, path, switch=sw)
    assert result.ok, str(result)
    assert result.packets_checked > 0 or "expect " not in path.read_text()
    problems = []
    for kind, name, index, want in _checks(path.read_text()):
        got = sw.counter(name).read(index)[0] if kind == "counter" else sw.register(name).read(index)
        if got != want:
            problems.append(f"{kind} {name}[{index}] = {got}, expected {want}")
    assert not problems, "\n".join(problems)
    assert any(True for _ in _checks(path.read_text())), "every scenario checks some state"
