"""p4src/tna/ina_tna.p4, the Tofino program, on both back ends: every single-switch STF scenario as rendered
for Tofino (the scenarios of tests/dataplane/test_tna_stf.py) must give the same verdict, outputs,
registers, counters and statistics, and then a seeded fuzz run of mutated scenario packets on the switch
the scenario configured must give identical outputs and state frame by frame."""

import random
from pathlib import Path

import pytest
import stf_scenarios
from backend_pair import NEEDS_NATIVE, BackendPair, mutations

from softswitch.stf import StfError, StfRunner, parse_stf

pytestmark = NEEDS_NATIVE

ROOT = Path(__file__).resolve().parents[3]
INA_TNA_P4 = ROOT / "p4src" / "tna" / "ina_tna.p4"
STF_FILES = sorted((ROOT / "tests" / "dataplane" / "stf").glob("*.stf"))
FUZZ_FRAMES_PER_SCENARIO = 300


@pytest.mark.parametrize("stf", STF_FILES, ids=lambda p: p.stem)
def test_tna_scenario_and_its_mutations_on_both_back_ends(stf):
    if stf.name in stf_scenarios.V1MODEL_ONLY:
        pytest.skip("wide/MASKED layouts or SPARSE results: v1model's ina.p4 only (stf_scenarios.V1MODEL_ONLY)")
    text = stf_scenarios.render_tofino().get(stf.name, stf.read_text())
    commands = parse_stf(text, str(stf))
    pair = BackendPair.from_path(INA_TNA_P4)
    try:
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
        rng = random.Random(f"differential-tna:{stf.name}")
        seeds = [c.args["data"] for c in commands if c.op == "packet"]
        for frame in mutations(rng, seeds, FUZZ_FRAMES_PER_SCENARIO):
            pair.process(rng.choice((1, 2, 3, 4, 68)), frame)
        pair.check_state()
    finally:
        pair.close()
