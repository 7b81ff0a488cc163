"""`.next`, `.last` and `.lastIndex` of a header stack outside a parser are refused at their file:line:col.

P4_16, "Operations on header stacks": these name the element the parser extracts next or extracted last,
and can only be used in a parser; p4c refuses them in a control, an action or a function (wherever it is
called from). softswitch ran such programs; now its front end refuses them, so the answer is the same on
both back ends. Inside a parser they stay, also as arguments of a sub-parser or a function called there
(tests/softswitch/programs/lang/next_last_arguments.p4). Each expected position below is the start of
the member access in the program text (where its stack's expression starts, `hdr.s.last`: 1-based)."""

import pytest
from softswitch_testlib import each_backend, source  # noqa: F401 (a fixture)

from softswitch.frontend.errors import P4Error

pytestmark = pytest.mark.usefixtures("each_backend")

# Line 10 holds the function declarations (FUNCTIONS), line 13 the ingress locals and apply (INGRESS), line 6
# the parser's states (STATES): each case fills one of them.
TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header elem_t {{ bit<8> f; }}
struct headers_t {{ elem_t[3] s; }}
struct meta_t {{ bit<32> depth; }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ {states} }}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control AddOne(inout elem_t e) {{ apply {{ e.f = e.f + 1; }} }}
{functions}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{ingress}
}}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
STATES = "state start { pkt.extract(hdr.s.next); transition accept; }"


def program(ingress="apply { }", functions="", states=STATES) -> str:
    return TEMPLATE.format(ingress=ingress, functions=functions, states=states)


def error_of(text: str) -> str:
    with pytest.raises(P4Error) as e:
        source(text, "s.p4")
    return str(e.value)


CASES = [
    # in a control's apply: read, written, as a function's, an action's and a control's inout argument
    ("apply { hdr.s.last.f = 1; }", "", "s.p4:13:9: error: '.last' of a header stack can only be used in a parser"),
    (
        "apply { hdr.s.next.setValid(); }",
        "",
        "s.p4:13:9: error: '.next' of a header stack can only be used in a parser",
    ),
    (
        "apply { meta.depth = hdr.s.lastIndex; }",
        "",
        "s.p4:13:22: error: '.lastIndex' of a header stack can only be used in a parser",
    ),
    (
        "apply { add_one(hdr.s.last); }",
        "void add_one(inout elem_t e) { e.f = e.f + 1; }",
        "s.p4:13:17: error: '.last' of a header stack can only be used in a parser",
    ),
    (
        "action add(inout elem_t e) { e.f = e.f + 2; } apply { add(hdr.s.last); }",
        "",
        "s.p4:13:59: error: '.last' of a header stack can only be used in a parser",
    ),
    (
        "AddOne() add_one; apply { add_one.apply(hdr.s.next); }",
        "",
        "s.p4:13:41: error: '.next' of a header stack can only be used in a parser",
    ),
    # in the body of an action, and of a function the control calls
    (
        "action bump() { hdr.s.last.f = hdr.s.last.f + 1; } apply { bump(); }",
        "",
        "s.p4:13:17: error: '.last' of a header stack can only be used in a parser",
    ),
    (
        "apply { meta.depth = depth(hdr.s); }",
        "bit<32> depth(in elem_t[3] s) { return s.lastIndex; }",
        "s.p4:10:40: error: '.lastIndex' of a header stack can only be used in a parser",
    ),
]


@pytest.mark.parametrize("ingress,functions,message", CASES)
def test_outside_a_parser_is_refused(ingress, functions, message):
    assert error_of(program(ingress, functions)) == message


def test_a_function_called_from_a_parser_is_not_in_the_parser():
    """The rule is where the text is, not where it is called from: a function's body is no parser's even
    when a parser state calls it (a generic one is checked at that call, a plain one where declared)."""
    states = "state start { pkt.extract(hdr.s.next); meta.depth = {call}; transition accept; }"
    plain = "bit<32> depth(in elem_t[3] s) { return s.lastIndex; }"
    generic = "bit<32> depth<T>(in elem_t[3] s, in T unused) { return s.lastIndex; }"
    expected = "s.p4:10:{col}: error: '.lastIndex' of a header stack can only be used in a parser"
    msg = error_of(program(functions=plain, states=states.replace("{call}", "depth(hdr.s)")))
    assert msg == expected.format(col=40)
    msg = error_of(program(functions=generic, states=states.replace("{call}", "depth<bit<8>>(hdr.s, 8w0)")))
    assert msg == expected.format(col=56)


def test_in_a_parser_all_three_compile():
    """What the spec allows in a parser still compiles, on the back end asked for."""
    states = (
        "state start { pkt.extract(hdr.s.next); meta.depth = hdr.s.lastIndex; "
        "transition select(hdr.s.last.f) { 0: accept; default: start; } }"
    )
    assert source(program(states=states), "s.p4").fallback_reason is None
