"""`.last` as an inout argument of a function, an action and a control's apply, called in a control.

The argument is the stack's last valid element when the call is made (P4_16, "Calling convention": an
l-value argument is evaluated before the call). On an empty stack there is no such element: reading
`.last` there fails, and outside a parser softswitch drops the packet and counts it in stats["errors"]
on both back ends, as it does for any `.last` read out of range. The expected frames below follow from
that by hand; none is taken from softswitch's output."""

import os

import pytest
from softswitch_testlib import each_backend, source  # noqa: F401 (a fixture)

from softswitch.compiler import BACKEND_ENV
from softswitch.switch import Switch

pytestmark = pytest.mark.usefixtures("each_backend")

# Frame: op | n (0, 1 or 2 elements follow) | the elements' f bytes | payload ff.
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ctl_t { bit<8> op; bit<8> n; }
header elem_t { bit<8> f; }
struct headers_t { ctl_t ctl; elem_t[3] s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ctl); transition select(hdr.ctl.n) { 0: accept; 1: one; default: two; } }
    state one { pkt.extract(hdr.s.next); transition accept; }
    state two { pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}
void add_one(inout elem_t e) { e.f = e.f + 1; }
control AddSixteen(inout elem_t e) { apply { e.f = e.f + 0x10; } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    AddSixteen() add_sixteen;
    action add_thirty_two(inout elem_t e) { e.f = e.f + 0x20; }
    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.op == 1) {
            add_one(hdr.s.last);
        } else if (hdr.ctl.op == 2) {
            add_thirty_two(hdr.s.last);
        } else {
            add_sixteen.apply(hdr.s.last);
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

ADDED = {1: 0x01, 2: 0x20, 3: 0x10}  # by op: the function, the action, the control


def test_the_program_runs_on_the_back_end_asked_for():
    """The function's bounds check in a control is no parser `verify` (the C back end refused one outside
    a parser, so the program fell back to Python)."""
    backend = os.environ[BACKEND_ENV]  # each_backend sets it
    prog = source(PROGRAM)
    assert (prog.backend, prog.fallback_reason) == (backend, None)


@pytest.mark.parametrize("op", [1, 2, 3])
def test_last_names_the_last_valid_element(op):
    sw = Switch(source(PROGRAM))
    assert sw.process(0, bytes([op, 2, 0x10, 0x20, 0xFF])) == [(1, bytes([op, 2, 0x10, 0x20 + ADDED[op], 0xFF]))]
    assert sw.process(0, bytes([op, 1, 0x10, 0xFF])) == [(1, bytes([op, 1, 0x10 + ADDED[op], 0xFF]))]
    assert sw.stats["errors"] == 0


@pytest.mark.parametrize("op", [1, 2, 3])
def test_last_of_an_empty_stack_drops_the_packet(op):
    """The call is not made with a made-up element (the back ends wrote it to a scratch element and
    forwarded the frame, for the action and the control)."""
    sw = Switch(source(PROGRAM))
    assert sw.process(0, bytes([op, 0, 0xFF])) == []
    assert (sw.stats["errors"], sw.stats["dropped"]) == (1, 1)
    assert sw.process(0, bytes([op, 1, 0x10, 0xFF])) == [(1, bytes([op, 1, 0x10 + ADDED[op], 0xFF]))]
