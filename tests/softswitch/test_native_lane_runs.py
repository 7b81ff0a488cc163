"""The C back end's lane runs (softswitch/backend_c/lanes.py): per-lane copies of one block of
statements become one loop over the lanes, and near-copies that are not a run stay as they are. What the
programs compute is checked by their STF files on both back ends (tests/softswitch/programs/lang/
lane_runs.stf, the differential suite); here, that the loops are there and only there."""

import re
from pathlib import Path

import pytest

from protocol.constants import MASKED_1OF4_MAX_POSITIONS, MASKED_2OF4_MAX_POSITIONS
from softswitch.backend_c import generate_c
from softswitch.compiler import lower_program

ROOT = Path(__file__).resolve().parents[2]
LANE_RUNS = ROOT / "tests" / "softswitch" / "programs" / "lang" / "lane_runs.p4"
LOOP = re.compile(r"for \(uint64_t (lane_\d+) = 0; \1 < (\d+); \1\+\+\)")


def functions(c_source: str) -> dict[str, str]:
    """Generated C function bodies by their comment (`action I.accumulate` ...)."""
    parts = re.split(r"^/\* ((?:action|table|control|parser) [^*]*) \*/$", c_source, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@pytest.fixture(scope="module")
def lane_runs_c() -> dict[str, str]:
    return functions(generate_c(lower_program(str(LANE_RUNS))))


def test_a_run_of_lanes_over_one_register_group_is_one_loop(lane_runs_c):
    body = lane_runs_c["action I.accumulate"]
    assert [count for _, count in LOOP.findall(body)] == ["6"]
    loop_start = LOOP.search(body).start()
    # lanes 0..5 index the group's registers and the header's fields by the lane ...
    assert re.search(r"register_0\[i_\d+ \* 6 \+ \(0ULL \+ lane_\d+ \* 1ULL\)\]", body)
    assert re.search(r"lanes\.ss_lanes_v0\[\(0ULL \+ lane_\d+ \* 1ULL\)\]", body)
    assert re.search(r"\(1ULL \+ lane_\d+ \* 2ULL\)", body)  # the positions 1, 3, 5, ... 11
    # ... and lane 6, whose register `solo` is outside the group, follows the loop as its own code
    solo = body.index("(*C->v_hdr).lanes.v6")
    assert solo > loop_start and "13ULL" in body[solo - 600 : solo + 600]
    # a function with a lane loop is not inlined (gcc would take the loop for cold code there), and built
    # for AVX2 as well
    assert "SS_LANE_FUNCTION int action_I_accumulate(" in body


def test_a_lane_reading_what_the_lane_before_wrote_is_still_a_run(lane_runs_c):
    body = lane_runs_c["action I.chain"]
    assert [count for _, count in LOOP.findall(body)] == ["5"]
    assert re.search(r"ss_lanes_c0\[\(1ULL \+ lane_\d+ \* 1ULL\)\] = .*ss_lanes_c0\[\(0ULL \+ lane_\d+", body)


def test_fields_or_constants_not_at_a_constant_stride_are_not_a_run(lane_runs_c):
    body = lane_runs_c["action I.scramble"]
    assert not LOOP.search(body)
    for field, constant in (("o0", 17), ("o1", 34), ("o3", 51), ("o4", 68), ("o5", 85), ("p2", 4), ("p3", 8)):
        assert f"(*C->v_hdr).odd.{field} = (((uint64_t)(*C->v_hdr).odd.{field}) ^ {constant}ULL);" in body


def test_a_run_of_sixteen_byte_fields_between_others_is_one_loop_and_is_parsed_by_one(lane_runs_c):
    assert [count for _, count in LOOP.findall(lane_runs_c["action I.count_up"])] == ["16"]
    c_source = generate_c(lower_program(str(LANE_RUNS)))
    assert "SS_LANE_FUNCTION void extract_io_t(" in c_source and "SS_LANE_FUNCTION uint32_t emit_io_t(" in c_source
    assert "h->ss_lanes_b0[i] = ss_load_be(b + 1 + i * 1, 1);" in c_source
    assert "ss_store_be(o + 1 + i * 1, 1, h->ss_lanes_b0[i]);" in c_source
    # eight 32-bit fields are too few for a header I/O loop
    assert "static inline void extract_lanes_t(" in c_source


def test_the_headers_fields_run_is_also_an_array(lane_runs_c):
    c_source = generate_c(lower_program(str(LANE_RUNS)))
    assert re.search(
        r"union \{ struct \{ uint32_t v0; uint32_t v1; .* uint32_t v7; \}; uint32_t ss_lanes_v0\[8\]; \};", c_source
    )


def ina_lane_headers(lanes: int) -> list[tuple[str, int, int]]:
    """ina_lanes.p4's value headers for K lanes as (name, first lane, lane count): cut where a 1:4 and a 2:4
    chunk end (docs/protocol.md, "Layouts"), a header only where K reaches past its first lane."""
    cuts = [0] + [cut for cut in (MASKED_1OF4_MAX_POSITIONS, MASKED_2OF4_MAX_POSITIONS) if cut < lanes] + [lanes]
    spans = zip(cuts, cuts[1:], strict=False)
    return [(f"values_{name}", lo, hi - lo) for name, (lo, hi) in zip("abc", spans, strict=False)]


@pytest.mark.parametrize(
    "program, lanes", [("ina.p4", 64), ("ina_k256.p4", 256), ("ina_k344.p4", 344), ("ina_k1024.p4", 1024)]
)
def test_ina_aggregation_is_one_loop_over_its_lanes(program, lanes):
    """The aggregation's K lane statements are one loop per lane header (its lanes, and the slot's registers
    from its first lane on), none left unrolled; each lane header is parsed and emitted by one loop."""
    c_source = generate_c(lower_program(str(ROOT / "p4src" / program)))
    body = functions(c_source)["action InaIngress.aggregate_into_slot"]
    headers = ina_lane_headers(lanes)
    loops = list(LOOP.finditer(body))
    assert [int(loop.group(2)) for loop in loops] == [count for _, _, count in headers]
    for loop, (header, first, _) in zip(loops, headers, strict=True):
        lane = loop.group(1)
        in_loop = body[loop.start() : body.index("\n        }\n", loop.start())]
        assert f"{header}.ss_lanes_v{first}[(0ULL + {lane} * 1ULL)]" in in_loop
        assert re.search(rf"register_\d+\[i_\d+ \* {lanes} \+ \({first}ULL \+ {lane} \* 1ULL\)\]", in_loop)
    # no lane is left as its own statement: the lane fields are reached only through the headers' arrays
    assert not re.search(r"values_[a-c]\.v\d+", body)
    for header, _, count in headers:
        for io in (f"extract_ina_{header}_t(", f"emit_ina_{header}_t("):
            assert f"for (uint32_t i = 0; i < {count}; i++)" in c_source.split(io)[1].split("\n}\n")[0], io


def test_a_register_read_into_a_slice_inside_a_run_is_one_loop_and_written_back():
    """lane_slices.p4 (its STF checks the packets): each lane reads a register into ctl.word[15:0]; the loop
    keeps ctl.word in a local and must store it after the loop, as a field the loop writes."""
    body = functions(generate_c(lower_program(str(LANE_RUNS.with_name("lane_slices.p4")))))["action I.gather"]
    assert [count for _, count in LOOP.findall(body)] == ["6"]
    local = re.search(r"uint64_t (lane_field_\d+) = \(\(uint64_t\)\(\*C->v_hdr\)\.ctl\.word\);", body)
    assert local, body
    loop_end = body.index("\n        }\n", LOOP.search(body).start())  # the for loop's closing brace
    assert body[loop_end:].startswith(f"\n        }}\n        (*C->v_hdr).ctl.word = {local.group(1)};\n")


def test_a_register_group_is_reached_through_one_pointer_restrict_only_where_nothing_else_reaches_it():
    """lane_group_members.p4 (its STF checks the packets): the action's lane loop over acc0..acc5 and its
    own reads and writes of acc3 go through one pointer to the group; `restrict` there (a function that
    calls no other), but not in the control, which reads acc5 and calls the action (two pointers to one
    group's memory while the control runs: `restrict` on either would be undefined behaviour)."""
    c_source = functions(generate_c(lower_program(str(LANE_RUNS.with_name("lane_group_members.p4")))))
    action, control = c_source["action I.mix"], c_source["control I (I)"]
    for body, qualifier in ((action, "*restrict const"), (control, "*const")):
        assert re.findall(r"^    (.*) register_(\d+) = .*;$", body, flags=re.M) == [(f"uint32_t {qualifier}", "0")]
    assert [count for _, count in LOOP.findall(action)] == ["6"]
    assert re.search(r"register_0\[i_\d+ \* 6 \+ \(0ULL \+ lane_\d+ \* 1ULL\)\]", action)  # lanes 0..5
    assert len(re.findall(r"register_0\[i_\d+ \* 6 \+ 3\]", action)) == 2  # acc3 by itself
    assert re.search(r"register_0\[i_\d+ \* 6 \+ 5\]", control) and "action_I_mix(p, C);" in control


def test_an_inout_header_the_action_also_names_is_copied_and_its_lanes_are_still_one_loop():
    """inout_aliasing.p4 (its STF checks the packets, copy-in/copy-out by hand): add_all(hdr.ctl) and
    overwrite(hdr.ctl) name hdr.ctl themselves, so the header goes in as a copy and comes back after
    the call; their lanes stay one loop each (the fields kept in locals there no longer alias)."""
    c_source = generate_c(lower_program(str(LANE_RUNS.with_name("inout_aliasing.p4"))))
    bodies = functions(c_source)
    for action in ("add_all", "overwrite"):
        assert [count for _, count in LOOP.findall(bodies[f"action I.{action}"])] == ["6"]
        call = re.search(rf"H_ctl_t (arg_\d+) = \(\*C->v_hdr\)\.ctl;\n *action_I_{action}\(p, C, &\1\);\n", c_source)
        assert call, action
        assert f"(*C->v_hdr).ctl = {call.group(1)};" in c_source
