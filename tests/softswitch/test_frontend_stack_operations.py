"""Header-stack operations p4c refuses are refused at their file:line:col, the same on both back ends.

P4_16, "Operations on header stacks": `.next`, `.last` and `.lastIndex` name the element the parser
extracts next or extracted last, and can only be used in a parser; p4c refuses them in a control, an
action or a function (wherever it is called from). Inside a parser they stay, also as arguments of a
sub-parser or a function called there (tests/softswitch/programs/lang/next_last_arguments.p4). `.last`
is refused as an l-value: the spec's "L-values" section allows it, but p4c's type checker marks only
`.next` as a left-value, and a program must compile with p4c. It cannot be assigned, extracted into,
made valid or invalid, nor passed out or inout.

The same section's push_front and pop_front shift the stack. p4c's type checker
(frontends/p4/typeChecking/typeCheckExpr.cpp, the Member of a Type_Stack) refuses them wherever it finds
a P4Parser around them ("'push_front' and 'pop_front' for stacks cannot be used in a parser"), and
frontends/p4/functionsInlining.h's InlineFunctions runs TypeChecking again after it has inlined the
functions: a function that shifts a stack passes the first check and is refused once a parser state's
call has brought its body into the parser, at the shift's place in the function. The count: the spec
wants "a compile-time known value that is a positive integer"; p4c's type checker gives the method one
directionless parameter of type int (typeUnification.cpp refuses a run-time argument for a directionless
parameter, a bit<W> or bool does not convert to int) and frontends/p4/checkConstants.cpp refuses an
argument that does not fold to a constant; p4c does not check the sign, the spec does, and so does
softswitch. push_front/pop_front must be applied to a left-value (typeCheckExpr.cpp). nextIndex is the
counter of the spec's pseudocode, not a member a program can read (p4c: no such field); softswitch read
it anywhere.

Each expected position below is the start of the construct in the program text (where its stack's
expression starts, `hdr.s.last`; a count argument where it starts: 1-based)."""

import pytest
from softswitch_testlib import each_backend, source  # noqa: F401 (a fixture)

from softswitch.frontend.errors import P4Error
from softswitch.switch import Switch

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


# line 10 holds the functions: `s.` after "void shift(inout elem_t[3] s) { " at column 33
SHIFT_FUNCTION = "void shift(inout elem_t[3] s) {{ s.{method}(1); }}"
CALLS_SHIFT = "state start { pkt.extract(hdr.s.next); shift(hdr.s); transition accept; }"
# the state the function's body was inlined into, as the program names it: `start` after "state " (95 + 6)
INLINED = "cannot be used in a parser, nor in a function a parser calls (parser P, state start, at s.p4:6:101)"


@pytest.mark.parametrize("method", ["push_front", "pop_front"])
def test_push_and_pop_front_in_a_function_a_parser_calls_are_refused(method):
    message = error_of(program(functions=SHIFT_FUNCTION.format(method=method), states=CALLS_SHIFT))
    assert message == f"s.p4:10:33: error: '.{method}' of a header stack {INLINED}"


def test_a_shift_two_functions_down_from_a_parser_is_refused_where_it_stands():
    functions = "void inner(inout elem_t[3] s) { s.pop_front(1); } void shift(inout elem_t[3] s) { inner(s); }"
    assert (
        error_of(program(functions=functions, states=CALLS_SHIFT))
        == f"s.p4:10:33: error: '.pop_front' of a header stack {INLINED}"
    )


def test_push_and_pop_front_still_compile_in_a_control_and_in_a_function_a_control_calls():
    ingress = "apply { hdr.s.push_front(2); hdr.s.pop_front(1); shift(hdr.s); }"
    functions = SHIFT_FUNCTION.format(method="push_front") + " const int N = 2;"
    assert source(program(ingress, functions), "s.p4").fallback_reason is None
    ingress = "apply { hdr.s.push_front(N); hdr.s.pop_front(N - 1); hdr.s.push_front(7); }"
    assert source(program(ingress, functions), "s.p4").fallback_reason is None


def test_a_shift_a_sub_parser_brings_in_is_refused_under_the_sub_parsers_own_names():
    """A sub-parser's states are inlined into the caller under new names (P_sub_1_start): the message
    names the sub-parser and its state as the program does, and where that state is declared."""
    functions = SHIFT_FUNCTION.format(method="pop_front") + (
        " parser Sub(packet_in pkt, inout elem_t[3] s) { state start { pkt.extract(s.next); shift(s); "
        "transition accept; } }"
    )
    states = "Sub() sub; state start { sub.apply(pkt, hdr.s); transition accept; }"
    # Sub's `start` on line 10, after "void shift(...) { s.pop_front(1); } parser Sub(...) { state ": column 104
    where = "(parser Sub, state start, at s.p4:10:104)"
    assert (
        error_of(program(functions=functions, states=states))
        == f"s.p4:10:33: error: '.pop_front' of a header stack cannot be used in a parser, nor in a function "
        f"a parser calls {where}"
    )


# the count of `hdr.s.push_front(` starts at column 26 of line 13, pop_front's at 25
COUNTS = [
    ("push_front(0)", "s.p4:13:26: error: the count of push_front must be a positive integer, not 0"),
    ("pop_front(-1)", "s.p4:13:25: error: the count of pop_front must be a positive integer, not -1"),
    # a folded expression, placed (as every binary expression) at its operator: 25 + 2
    ("pop_front(1 - 1)", "s.p4:13:27: error: the count of pop_front must be a positive integer, not 0"),
    (
        "push_front(8w1)",
        "s.p4:13:26: error: the count of push_front must be an int (a number without a width), not bit<8>",
    ),
    (
        "pop_front(true)",
        "s.p4:13:25: error: the count of pop_front must be an int (a number without a width), not bool",
    ),
    ("push_front(meta.depth)", "s.p4:13:26: error: the count of push_front must be a compile-time constant"),
]


@pytest.mark.parametrize("call,message", COUNTS)
def test_a_count_that_is_not_a_positive_int_constant_is_refused(call, message):
    assert error_of(program(f"apply {{ hdr.s.{call}; }}")) == message


def test_shifting_a_read_only_stack_is_refused():
    functions = "void shift(in elem_t[3] s) { s.push_front(1); }"
    message = error_of(program("apply { shift(hdr.s); }", functions))
    # `s.` after "void shift(in elem_t[3] s) { " at column 30 of line 10
    assert message == "s.p4:10:30: error: cannot call push_front() on a read-only header stack"


LAST = "('.last' of a header stack is not an l-value for p4c)"
# the write comes after "state start { pkt.extract(hdr.s.next); " (column 95 + 39 = 134 of line 6)
LAST_WRITES = [
    ("hdr.s.last.f = 1;", "", f"s.p4:6:134: error: cannot assign to hdr.s.last.f {LAST}"),
    ("hdr.s.last.f[3:0] = 1;", "", f"s.p4:6:134: error: cannot assign to hdr.s.last.f[3:0] {LAST}"),
    ("hdr.s.last.setInvalid();", "", f"s.p4:6:134: error: cannot call setInvalid() on a read-only header {LAST}"),
    # the argument after "pkt.extract(" (134 + 12) and after "keep(" (134 + 5)
    ("pkt.extract(hdr.s.last);", "", f"s.p4:6:146: error: extract needs an assignable header {LAST}"),
    (
        "keep(hdr.s.last);",
        "void keep(inout elem_t e) { }",
        f"s.p4:6:139: error: argument 'e' of 'keep' is inout: it must be assignable {LAST}",
    ),
]


@pytest.mark.parametrize("write,functions,message", LAST_WRITES)
def test_writing_through_last_is_refused(write, functions, message):
    states = f"state start {{ pkt.extract(hdr.s.next); {write} transition accept; }}"
    assert error_of(program(functions=functions, states=states)) == message


def test_last_read_and_next_written_still_compile():
    functions = "void read(in elem_t e, out bit<32> v) { v = (bit<32>)e.f; }"
    states = (
        "state start { pkt.extract(hdr.s.next); read(hdr.s.last, meta.depth); hdr.s.next.setValid(); "
        "hdr.s.next.f = hdr.s.last.f; transition accept; }"
    )
    assert source(program(functions=functions, states=states), "s.p4").fallback_reason is None


NEXT_INDEX = "'.nextIndex' of a header stack is not a P4_16 expression (use .lastIndex)"


def test_next_index_is_refused_in_a_control():
    message = error_of(program("apply { meta.depth = hdr.s.nextIndex; }"))
    assert message == f"s.p4:13:22: error: {NEXT_INDEX}"


def test_next_index_is_refused_in_a_parser():
    states = "state start { pkt.extract(hdr.s.next); meta.depth = hdr.s.nextIndex; transition accept; }"
    # `hdr.s.nextIndex` 52 characters into the state: 95 + 52
    assert error_of(program(states=states)) == f"s.p4:6:147: error: {NEXT_INDEX}"


# `.next` is an l-value for p4c's type checker (typeCheckExpr.cpp: a `.next` Member of a left-value is
# one): `s.next = h` writes s[nextIndex], StackOutOfBounds when the stack is full (P4_16, "Header stacks":
# evaluating `.next` then fails), and only an extract moves nextIndex. p4c's BMv2 back end has no
# translation for a `.next` outside extract (it reads `hs.next` as a stack field named "next"), so these
# programs stay here rather than under programs/. Ingress sends to port 2 on StackOutOfBounds, else 1;
# the deparser emits the valid elements of s, then the bytes the parser left.
NEXT_WRITES = [
    # s[0] = 5a extracted; s.next = {77} writes s[1]; 5b 5c are payload
    ("pkt.extract(hdr.s.next); hdr.s.next = {0x77};", "5a5b5c", (1, "5a775b5c")),
    # the extract after the assignment fills s[1] again: nextIndex was still 1
    ("pkt.extract(hdr.s.next); elem_t h = {0x77}; hdr.s.next = h; pkt.extract(hdr.s.next);", "5a5b5c", (1, "5a5b5c")),
    # the stack is full after three extracts: the assignment is StackOutOfBounds, s stays as extracted
    (
        "pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); hdr.s.next = {0x77};",
        "5a5b5c5d",
        (2, "5a5b5c5d"),
    ),
]
ROUTE_ON_ERROR = "apply { sm.egress_spec = sm.parser_error == error.StackOutOfBounds ? 9w2 : 9w1; }"


@pytest.mark.parametrize("statements,frame,expected", NEXT_WRITES)
def test_assigning_to_next_writes_the_element_without_moving_next_index(statements, frame, expected):
    prog = source(program(ROUTE_ON_ERROR, states=f"state start {{ {statements} transition accept; }}"), "s.p4")
    out = Switch(prog).process(0, bytes.fromhex(frame))
    assert [(port, data.hex()) for port, data in out] == [expected]
