"""The single-switch STF scenarios of p4src/ina.p4 (tests/dataplane/stf) run on the TNA program,
p4src/tna/ina_tna.p4, through softswitch's TNA pipeline: the same packets in, the same packets out.

The expectations are the scenarios' own (written from docs/protocol.md); where the Tofino program
behaves differently by design (docs/tofino.md, "Differences") the scenario is rendered with that
behaviour (stf_scenarios.render_tofino). The state checks in the files' comments name the v1model
program's counters and registers; they are read here through the TNA program's equivalents
(docs/tofino.md, "Controller"): a statistic is the sum of the four per-job counters, `slot_owner` is
`slot_owner_job ++ slot_owner_seq`, `slot_count` the number of bits in `slot_bitmap`, a lane the half
of its lane pair's register word, `slot_overflow` set or not.
"""

from pathlib import Path

import pytest
import stf_scenarios

from protocol import constants as C
from softswitch.stf import run_stf
from softswitch.switch import Switch

HERE = Path(__file__).resolve().parent
TNA_P4 = HERE.parents[1] / "p4src" / "tna" / "ina_tna.p4"
STF_FILES = sorted((HERE / "stf").glob("*.stf"))
STAT_COUNTERS = ("ina_stats", "ina_stats_slot", "ina_stats_evicted", "ina_stats_end")


def read_state(sw: Switch, kind: str, name: str, index: int) -> int:
    """The v1model program's counter (packets) or register `name` at `index`, read off the TNA program."""
    short = name.rsplit(".", 1)[-1]
    if kind == "counter":
        if short == "ina_stats":
            return sum(sw.counter(f"InaIngress.{c}").read(index)[0] for c in STAT_COUNTERS)
        return sw.counter(name).read(index)[0]
    if short == "slot_owner":
        job = sw.register("InaIngress.slot_owner_job").read(index)
        seq = sw.register("InaIngress.slot_owner_seq").read(index)
        return (job << 32) | (seq & 0xFFFFFFFF)
    if short == "slot_count":
        return bin(sw.register("InaIngress.slot_bitmap").read(index)).count("1")
    if short == "slot_overflow":
        return int(sw.register("InaIngress.slot_overflow").read(index) != 0)
    if short.startswith("slot_lane_"):
        lane = int(short.rsplit("_", 1)[1])
        word = sw.register(f"InaIngress.lane_pair_{lane // 2}.lanes").read(index)
        half = (word >> 32) if lane % 2 == 0 else word  # the struct's first field (lo, lane 2i) is high
        half &= 0xFFFFFFFF
        return half - (1 << 32) if half >> 31 else half
    return sw.register(name).read(index)


def checks(text: str):
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["#", "check_counter"]:
            _, _, name, index, _, value = words
            yield "counter", name, int(index), int(value)
        elif words[:2] == ["#", "check_register"]:
            _, _, name, index, value = words
            yield "register", name, int(index), int(value)


@pytest.mark.parametrize("path", STF_FILES, ids=lambda p: p.stem)
def test_stf_scenario_on_tna(path, ina_tna_program, tmp_path):
    if path.name in stf_scenarios.V1MODEL_ONLY:
        pytest.skip(
            "2:4 / 1:4 layouts, SPARSE results or root multicast: v1model's ina.p4 only (stf_scenarios.V1MODEL_ONLY)"
        )
    text = stf_scenarios.render_tofino().get(path.name, path.read_text())
    stf = tmp_path / path.name
    stf.write_text(text)
    sw = Switch(ina_tna_program, name=path.stem)
    result = run_stf(TNA_P4, stf, switch=sw)
    assert result.ok, str(result)
    problems = []
    for kind, name, index, want in checks(text):
        got = read_state(sw, kind, name, index)
        if got != want:
            problems.append(f"{kind} {name}[{index}] = {got}, expected {want}")
    assert not problems, "\n".join(problems)
    assert sw.stats["errors"] == 0


def test_only_overflow_differs_from_v1model():
    """The scenarios rendered for Tofino differ from the committed ones only in the OVERFLOW flag of a
    sum whose lanes overflowed (and the slot's flag register), as docs/tofino.md says."""
    tofino = stf_scenarios.render_tofino()
    assert list(tofino) == ["overflow.stf"]
    v1model = (HERE / "stf" / "overflow.stf").read_text().splitlines()
    different = [(a, b) for a, b in zip(v1model, tofino["overflow.stf"].splitlines(), strict=True) if a != b]
    assert len(different) == 2
    (expect_v1, expect_tna), (register_v1, register_tna) = different
    assert register_v1.endswith(" 1") and register_tna.endswith(" 0")
    frame_v1, frame_tna = (bytes.fromhex(line.split()[2].rstrip("$")) for line in (expect_v1, expect_tna))
    flags = 14 + 20 + 8 + 2  # the INA header's flags byte (docs/protocol.md): after version/type and op
    assert [i for i, (a, b) in enumerate(zip(frame_v1, frame_tna, strict=True)) if a != b] == [flags]
    assert frame_v1[flags] == frame_tna[flags] | C.FLAG_OVERFLOW
