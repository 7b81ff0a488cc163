"""softswitch holds programs to BMv2's limits: a packet BMv2 could not process is dropped and counted,
with a log line naming the limit, on both back ends (the figures: docs/softswitch-internals.md)."""

import os
from pathlib import Path

import pytest
from softswitch_testlib import PROGRAMS, skip_without_c_compiler

from softswitch.compiler import compile_program, compile_source
from softswitch.frontend.preprocess import Preprocessor
from softswitch.limits import BMV2_PACKET_HEADROOM, UnknownLimits
from softswitch.runtime.passes import MAX_PASSES
from softswitch.switch import Switch

LIMIT_PROGRAM = os.path.join(PROGRAMS, "lang", "bmv2_buffer_limit.p4")
INA_CONSTANTS = Path(__file__).resolve().parents[2] / "p4src" / "include" / "ina_constants.p4"
PAD = bytes(64)


def switch_on(backend):
    if backend == "native":
        skip_without_c_compiler("the packet-buffer limit on the native back end")
    prog = compile_program(LIMIT_PROGRAM, backend=backend)
    assert (prog.backend, prog.fallback_reason) == (backend, None)
    lines = []
    return Switch(prog, log=lines.append), lines


@pytest.mark.parametrize("backend", ["python", "native"])
def test_a_frame_grown_past_bmv2s_packet_buffer_is_dropped_counted_and_logged(backend):
    sw, lines = switch_on(backend)
    payload = b"\xa1\xa2\xa3\xa4"
    # 8 pads: the frame grows by exactly the headroom (6 -> 518 bytes): forwarded
    assert sw.process(0, bytes([8, 0]) + payload) == [(1, bytes([8, 0]) + PAD * 8 + payload)]
    assert BMV2_PACKET_HEADROOM == 8 * len(PAD)
    # 9 pads: 582 bytes > 6 + 512: dropped, counted, logged
    assert sw.process(0, bytes([9, 0]) + payload) == []
    assert sw.stats["buffer_limit_drops"] == 1
    assert any("582-byte frame, past BMv2's packet buffer (the received 6 bytes + 512)" in line for line in lines)
    # recirculated once: the second pass keeps the first frame's buffer (518 bytes) and makes 1030
    assert sw.process(0, bytes([8, 1]) + payload) == []
    assert sw.stats["buffer_limit_drops"] == 2
    assert sw.stats["recirculated"] == 1
    assert any("1030-byte frame" in line for line in lines)


@pytest.mark.parametrize("backend", ["python", "native"])
def test_a_recirculation_loop_is_cut_counted_and_logged(backend):
    """BMv2 sets no limit (the loop never ends there); softswitch cuts it after MAX_PASSES passes."""
    if backend == "native":
        skip_without_c_compiler("the pass limit on the native back end")
    with open(LIMIT_PROGRAM) as f:
        looping = f.read().replace("hdr.ctl.recirc == 1 && sm.instance_type == 0", "hdr.ctl.recirc == 1")
    lines = []
    sw = Switch(compile_source(looping, "loop.p4", backend=backend), log=lines.append)
    assert sw.process(0, bytes([0, 1])) == []
    assert (sw.stats["loop_limit_drops"], sw.stats["recirculated"]) == (1, MAX_PASSES)
    assert f"packet dropped: more than {MAX_PASSES} passes through ingress (a resubmit/recirculate loop)" in lines


@pytest.mark.parametrize("backend", ["python", "native"])
def test_limits_none_lifts_the_packet_buffer_limit(backend, monkeypatch):
    """For a program known not to fit BMv2: Switch(limits="none") or SOFTSWITCH_LIMITS=none."""
    if backend == "native":
        skip_without_c_compiler("limits on the native back end")
    prog = compile_program(LIMIT_PROGRAM, backend=backend)
    frame = bytes([9, 0]) + b"\xa1"
    assert Switch(prog, limits="none").process(0, frame) == [(1, bytes([9, 0]) + PAD * 9 + b"\xa1")]
    monkeypatch.setenv("SOFTSWITCH_LIMITS", "none")
    assert Switch(prog).process(0, frame) == [(1, bytes([9, 0]) + PAD * 9 + b"\xa1")]
    monkeypatch.setenv("SOFTSWITCH_LIMITS", "bmv2")
    assert Switch(prog).process(0, frame) == []


def test_unknown_limits_are_refused():
    with pytest.raises(UnknownLimits, match="unknown softswitch limits 'tofino' \\(known: bmv2, none\\)"):
        Switch(compile_program(LIMIT_PROGRAM, backend="python"), limits="tofino")


STACK_INDEX = """#include <core.p4>
#include <v1model.p4>
header ctl_t { bit<8> i; bit<8> r; }
header e_t { bit<8> f; }
struct headers_t { ctl_t ctl; e_t[2] s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ctl); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.ctl.r = hdr.s[hdr.ctl.i].f; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.s[hdr.ctl.r].f = 0xee; }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("backend", ["python", "native"])
def test_a_stack_index_out_of_range_outside_a_parser_drops_the_packet(backend):
    """BMv2 aborts on it (std::vector::at throws): softswitch drops the packet, counts and logs it, and goes on."""
    if backend == "native":
        skip_without_c_compiler("stack indices on the native back end")
    lines = []
    sw = Switch(compile_source(STACK_INDEX, "stack_index.p4", backend=backend), log=lines.append)
    # i = 1: r = s[1].f = 01; egress writes s[1].f = ee
    assert sw.process(0, bytes([1, 0, 0x0A, 0x01])) == [(1, bytes([1, 1, 0x0A, 0xEE]))]
    assert sw.process(0, bytes([2, 0, 0x0A, 0x0B])) == []  # ingress reads s[2]
    assert sw.process(0, bytes([0, 0, 0x07, 0x0B])) == []  # r = 07: egress writes s[7]
    assert (sw.stats["stack_index_drops"], sw.stats["dropped"], sw.stats["errors"]) == (2, 2, 0)
    assert lines == [
        "packet dropped: header stack index 2 out of range 0..1 outside a parser (BMv2 aborts)",
        "packet dropped: header stack index 7 out of range 0..1 outside a parser (BMv2 aborts)",
    ]
    assert sw.process(0, bytes([0, 0, 0x00, 0x0B])) == [(1, bytes([0, 0, 0xEE, 0x0B]))]


def test_the_aggregation_programs_growth_limit_is_bmv2s_headroom():
    """p4src sizes its MASKED layouts by PACKET_GROWTH_LIMIT_BYTES (as the P4 compiler reads the include);
    softswitch enforces BMV2_PACKET_HEADROOM (both back ends, the test above): one figure, BMv2's."""
    pp = Preprocessor()
    pp.run_file(str(INA_CONSTANTS))
    (token,) = pp.macros["PACKET_GROWTH_LIMIT_BYTES"].body
    assert int(token.text, 0) == BMV2_PACKET_HEADROOM == 512
