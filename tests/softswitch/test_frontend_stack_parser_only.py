"""`.next`, `.last` and `.lastIndex` of a header stack outside a parser, `push_front`/`pop_front` inside one
and `.nextIndex` anywhere are refused at their file:line:col.

P4_16, "Operations on header stacks": these name the element the parser extracts next or extracted last,
and can only be used in a parser; p4c refuses them in a control, an action or a function (wherever it is
called from). softswitch ran such programs; now its front end refuses them, so the answer is the same on
both back ends. Inside a parser they stay, also as arguments of a sub-parser or a function called there
(tests/softswitch/programs/lang/next_last_arguments.p4). Each expected position below is the start of
the member access in the program text (where its stack's expression starts, `hdr.s.last`: 1-based).

The same section's push_front and pop_front shift the stack; p4c's type checker refuses them in a parser's
text ("'push_front' and 'pop_front' for stacks cannot be used in a parser"), not in a function a parser
calls (next_last_arguments.p4 case 5). nextIndex is the counter of the spec's pseudocode, not a member a
program can read (p4c: no such field); softswitch read it anywhere."""

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


# line 6 holds the parser: its state starts at column 95 (after "... standard_metadata_t sm) { "), the
# `hdr.s.` after "state start { pkt.extract(hdr.s.next); " at 95 + 39 = 134
SHIFT_IN_PARSER = "state start {{ pkt.extract(hdr.s.next); hdr.s.{method}(1); transition accept; }}"


@pytest.mark.parametrize("method", ["push_front", "pop_front"])
def test_push_and_pop_front_in_a_parser_are_refused(method):
    message = error_of(program(states=SHIFT_IN_PARSER.format(method=method)))
    assert message == f"s.p4:6:134: error: '.{method}' of a header stack cannot be used in a parser"


def test_push_and_pop_front_still_compile_in_a_control_and_in_a_function_a_parser_calls():
    ingress = "apply { hdr.s.push_front(2); hdr.s.pop_front(1); }"
    functions = "void shift(inout elem_t[3] s) { s.push_front(1); }"
    states = "state start { pkt.extract(hdr.s.next); shift(hdr.s); transition accept; }"
    assert source(program(ingress, functions, states), "s.p4").fallback_reason is None


NEXT_INDEX = "'.nextIndex' of a header stack is not a P4_16 expression (use .lastIndex)"


def test_next_index_is_refused_in_a_control():
    message = error_of(program("apply { meta.depth = hdr.s.nextIndex; }"))
    assert message == f"s.p4:13:22: error: {NEXT_INDEX}"


def test_next_index_is_refused_in_a_parser():
    states = "state start { pkt.extract(hdr.s.next); meta.depth = hdr.s.nextIndex; transition accept; }"
    # `hdr.s.nextIndex` 52 characters into the state: 95 + 52
    assert error_of(program(states=states)) == f"s.p4:6:147: error: {NEXT_INDEX}"
