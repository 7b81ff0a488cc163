"""Every STF file in the repository on both back ends: the same outputs on every port (bytes and
order), the same verdict, the same registers, counters and statistics afterwards."""

from pathlib import Path

import pytest
from backend_pair import NEEDS_NATIVE, BackendPair, skip_expected_fallback

from softswitch.stf import StfError, StfRunner, parse_stf

pytestmark = NEEDS_NATIVE

ROOT = Path(__file__).resolve().parents[3]
INA_P4 = ROOT / "p4src" / "ina.p4"


def stf_files() -> list[Path]:
    return sorted(
        p for p in ROOT.rglob("*.stf") if not any(part.startswith(".") or part == "node_modules" for part in p.parts)
    )


def program_of(stf: Path) -> Path:
    """The P4 program an STF file tests: a .p4 of the same name (without a _fail/_N suffix) beside it,
    else the only .p4 beside it, else ina.p4 for the data-plane scenarios."""
    stem = stf.stem
    for candidate in (stem, stem.rsplit("_", 1)[0]):
        path = stf.with_name(candidate + ".p4")
        if path.exists():
            return path
    beside = list(stf.parent.glob("*.p4"))
    if len(beside) == 1:
        return beside[0]
    if stf.parent == ROOT / "tests" / "dataplane" / "stf":
        return INA_P4
    if stf.parent == ROOT / "tests" / "dataplane" / "stf" / "k256":
        return ROOT / "p4src" / "ina_k256.p4"
    if stf.parent == ROOT / "tests" / "dataplane" / "stf" / "k344":
        return ROOT / "p4src" / "ina_k344.p4"
    if stf.parent == ROOT / "tests" / "dataplane" / "stf" / "k1024":
        return ROOT / "p4src" / "ina_k1024.p4"
    raise AssertionError(f"no program found for {stf}")


STF_FILES = stf_files()


def test_every_stf_file_has_a_program():
    assert len(STF_FILES) >= 20
    for stf in STF_FILES:
        assert program_of(stf).exists()


@pytest.mark.parametrize("stf", STF_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_stf_on_both_back_ends(stf):
    skip_expected_fallback(program_of(stf))
    pair = BackendPair.from_path(program_of(stf), cpu_port=None)
    try:
        commands = parse_stf(stf.read_text(), str(stf))
        runners = [StfRunner(sw, str(stf)) for sw in (pair.python, pair.native)]
        results = []
        for runner in runners:
            try:
                results.append(str(runner.run(commands)))
            except StfError as e:
                results.append(f"StfError: {e}")
        assert results[0] == results[1]
        assert runners[0].received == runners[1].received
        assert runners[0].sent > 0
        pair.check_state()
    finally:
        pair.close()
