"""Wrong programs and programs outside the subset: a P4Error 'file:line:col: error: ...', never a traceback."""

import pytest
from softswitch_testlib import v1

from softswitch.frontend.errors import P4Error

HDR = "header w_t { bit<8> a; bit<16> b; }"
PARSER = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.w); transition accept; }"


def error_of(ingress, decls=HDR, parser=PARSER, meta_fields="bit<8> m;", **kw):
    with pytest.raises(P4Error) as e:
        v1(ingress, decls=decls, hdr_fields="w_t w;", parser=parser, meta_fields=meta_fields, **kw)
    return str(e.value)


# line 13 of the template is the ingress body; it starts at column 5
CASES = [
    (
        "apply { hdr.w.b = (bit<16>)(int<8>)hdr.w.a; }",
        "t.p4:13:23: error: cannot cast int<8> to bit<16> (cast the width and the sign separately)",
    ),
    (
        "table t() { actions = { NoAction; } } apply { t.apply(); }",
        "t.p4:13:12: error: syntax error: expected '{' after the table name (a table declaration has no parameter "
        "list), got '('",
    ),
    ("apply { hdr.w.a = hdr.w.b[10 +: 8]; }", "t.p4:13:23: error: slice [10 +: 8] is out of range of bit<16>"),
    ("apply { hdr.w.a[hdr.w.a[2:0] +: 4] = 1; }", "t.p4:13:13: error: cannot assign to <expr> (read-only)"),
    ("apply { hdr.w.a = hdr.w.b; }", "t.p4:13:23: error: cannot assign bit<16> to bit<8> without a cast"),
    ("apply { hdr.w.a = nosuch; }", "t.p4:13:23: error: undeclared name 'nosuch'"),
    ("apply { hdr.w.zz = 1; }", "t.p4:13:13: error: header w_t has no field 'zz'"),
    ("apply { meta.q = 1; }", "t.p4:13:13: error: struct meta_t has no field 'q'"),
    (
        "action a(bit<8> x) { } apply { a(1, 2); }",
        "t.p4:13:36: error: wrong number of arguments to 'a': expected 1, got 2",
    ),
    ("apply { if (hdr.w.a) { } }", "t.p4:13:17: error: the condition of 'if' must be bool, got bit<8>"),
    (
        "apply { hdr.w.b = hdr.w.a + hdr.w.b; }",
        "t.p4:13:31: error: operands of '+' have different types: bit<8> and bit<16>",
    ),
    ("apply { hdr.w.a = hdr.w.a[8:1]; }", "t.p4:13:23: error: slice [8:1] is out of range of bit<8>"),
    ("apply { mark_to_drop(); }", "t.p4:13:13: error: wrong number of arguments to 'mark_to_drop': expected 1, got 0"),
    (
        "table t { key = { hdr.w.a: fuzzy; } actions = { NoAction; } } apply { t.apply(); }",
        "t.p4:13:32: error: undeclared match kind 'fuzzy'",
    ),
    (
        "action a() { } table t { key = { hdr.w.a: exact; } actions = { a; } default_action = NoAction(); } "
        "apply { t.apply(); }",
        "t.p4:13:90: error: default action NoAction is not in the actions of table t",
    ),
    (
        "action_profile(0) ap; apply { }",
        "t.p4:13:20: error: action_profile size must be positive",
    ),
    ("apply { hdr.w.a = 1 }", "t.p4:13:25: error: syntax error: expected ';', got '}'"),
    ("apply { sm.ingress_port = 9w1 ++ 1; }", "t.p4:13:35: error: '++' needs operands with a width, got int"),
    ("apply { bit<8> x = true; }", "t.p4:13:24: error: cannot initialize bit<8> 'x' with bool"),
    ("apply { hdr.w.a = (bit<8>)hdr.w; }", "t.p4:13:23: error: cannot cast header w_t to bit<8>"),
    ("apply { hdr.w.a = 1; } apply { }", "t.p4:13:28: error: control I has two apply blocks"),
    # {#} is an invalid header or header union (P4_16, "Header unions"), nothing else
    ("apply { meta = {#}; }", "t.p4:13:20: error: {#} is an invalid header or header union; struct meta_t is neither"),
    (
        "apply { if (meta == {#}) { } }",
        "t.p4:13:22: error: {#} is an invalid header or header union; struct meta_t is neither",
    ),
    (
        "apply { hash(hdr.w.a, HashAlgorithm.crc32_custom, 8w0, {hdr.w.b}, 16w10); }",
        "t.p4:13:27: error: hash algorithm crc32_custom is not supported by softswitch (supported:"
        " crc16, crc32, csum16, xor16, identity)",
    ),
    # minSizeInBits() and the like: p4c's TypeMap::widthBits has no width for error, int, string, enum
    (
        "apply { hdr.w.a = (bit<8>)sm.parser_error.minSizeInBits(); }",
        "t.p4:13:31: error: width not well-defined for values of type error",
    ),
    (
        "apply { hdr.w.a = (bit<8>)hdr.w.maxSizeInBytes(1); }",
        "t.p4:13:31: error: wrong number of arguments to 'maxSizeInBytes': expected 0, got 1",
    ),
    (
        "apply { hdr.w.a = (bit<8>)hdr.w.minSizeInBits<bit<8>>(); }",
        "t.p4:13:31: error: minSizeInBits takes no type arguments",
    ),
    # a list as a header stack: one value per element (p4c: "destination type expects 2 elements")
    (
        "apply { w_t[2] x = { { 1, 2 } }; }",
        "t.p4:13:24: error: a list of 1 values cannot be a value of w_t[2] (2 elements)",
    ),
    (
        "apply { w_t[2] x; x = { {1, 2}, {3, 4}, {5, 6} }; }",
        "t.p4:13:27: error: a list of 3 values cannot be a value of w_t[2] (2 elements)",
    ),
    # each element as in an assignment to the element type, at that element
    (
        "apply { w_t[2] x = { { 1, 2 }, { 3 } }; }",
        "t.p4:13:36: error: a list of 1 values cannot be a header w_t value (2 fields)",
    ),
]


@pytest.mark.parametrize("ingress,message", CASES)
def test_wrong_ingress_bodies(ingress, message):
    assert error_of(ingress) == message


def test_extracting_a_non_header():
    msg = error_of("apply { }", parser="state start { pkt.extract(meta); transition accept; }")
    assert msg == "t.p4:9:31: error: extract expects a header, got struct meta_t"


def test_unknown_parser_state_and_missing_start():
    msg = error_of("apply { }", parser="state start { transition nowhere; }")
    assert msg == "t.p4:9:30: error: undeclared parser state 'nowhere'"
    msg = error_of("apply { }", parser="state begin { transition accept; }")
    assert msg == "t.p4:8:8: error: parser P has no 'start' state"


def test_header_width_must_be_whole_bytes():
    msg = error_of("apply { }", decls=HDR + " header odd_t { bit<7> x; }")
    assert msg == "t.p4:5:44: error: header odd_t is 7 bits wide; softswitch (like BMv2) needs a multiple of 8"


def test_outside_the_subset():
    msg = error_of("apply { }", decls=HDR + " header_union u_t { bit<8> w; }")
    assert msg == "t.p4:5:63: error: field 'w' of header_union u_t must be a header, not bit<8>"
    msg = error_of("apply { }", decls=HDR + " function bit<8> f() { return 1; }")
    assert msg == "t.p4:5:37: error: syntax error: unexpected 'function' at top level"
    msg = error_of("apply { }", decls=HDR + " bit<8> f(in bit<8> x) { if (x == 0) { return 1; } }")
    assert msg == "t.p4:5:44: error: function f can end without returning a bit<8> value"
    msg = error_of("apply { }", decls=HDR + " void f() { exit; }")
    assert msg == "t.p4:5:48: error: exit is not allowed in a function"


def test_lexer_errors():
    msg = error_of("apply { hdr.w.a = 1 $ 2; }")
    assert msg == "t.p4:13:25: error: unexpected character '$'"
    msg = error_of("apply { hdr.w.a = 8x5; }")
    assert msg == "t.p4:13:24: error: malformed number '8x'"


GARBAGE = [
    "",
    "}",
    "control",
    "header h { bit<0> x; }",
    "#if\n#endif",
    "struct s { s x; }",
    "const bit<8> X = 1 / 0;",
    "V1Switch(1, 2, 3, 4, 5, 6) main;",
    "typedef bit<8> t; t x;",
    "parser p(packet_in b) { state start { b.extract(); transition accept; } }",
    "action a() { a(); }",
    "const bit<8> X = Y;",
    "header h { bit<8> x; bit<8> x; }",
    "@",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_gives_p4error_with_position(text):
    from softswitch.compiler import compile_source

    with pytest.raises(P4Error) as e:
        compile_source("#include <v1model.p4>\n" + text, "g.p4")
    assert "error: " in str(e.value)


def test_language_leftovers_are_refused_naming_the_place():
    """What softswitch does not run (listed in docs/softswitch-internals.md) is refused at its file:line."""
    generic = HDR + " T id<T>(in T x) { return x; }"
    msg = error_of("apply { hdr.w.a = id(3); }", decls=generic)
    assert msg == "t.p4:13:26: error: cannot infer T of id from an integer literal: give it, id<bit<N>>(...)"
    msg = error_of("apply { hdr.w.a = id<bit<8>, bit<8>>(hdr.w.a); }", decls=generic)
    assert msg == "t.p4:13:23: error: id has 1 type parameter(s), got 2"
    msg = error_of("apply { hdr.w.a = id<bit<16>>(hdr.w.b); }", decls=generic)
    assert msg == "t.p4:13:23: error: cannot assign bit<16> to bit<8> without a cast"
    msg = error_of("apply { }", parser="state start { hdr.w.b = (bit<16>)pkt.length(); transition accept; }")
    assert msg == (
        "t.p4:9:38: error: packet_in.length() is not supported by softswitch "
        "(the packet's length in bytes is standard_metadata.packet_length)"
    )
    extern = HDR + " extern X { X(); abstract bit<8> f(); }"
    msg = error_of("X() x = { bit<8> f() { return 1; } }; apply { }", decls=extern)
    assert msg == (
        "t.p4:13:9: error: instantiating extern X with an initializer (`= { ... }`: abstract methods implemented "
        "with `this`) is not supported by softswitch: only TNA's RegisterAction has one (v1model declares no "
        "extern with abstract methods)"
    )


def test_default_parameter_values_are_for_functions_and_actions():
    msg = error_of("apply { }", decls=HDR + " extern void e(in bit<8> x = 1);")
    assert msg == (
        "t.p4:5:63: error: default parameter values are supported by softswitch for functions and actions only "
        "(not for parsers, controls, externs and packages)"
    )
    msg = error_of("action a(out bit<8> v = 1) { v = 2; } apply { }")
    assert msg == "t.p4:13:25: error: out parameter 'v' cannot have a default value"
    msg = error_of("action a(bit<8> v = hdr.w.a) { } apply { }")
    assert msg == "t.p4:13:25: error: default value of parameter 'v' must be a compile-time constant"
    msg = error_of("action a(bit<8> v = true) { } apply { a(); }")
    assert msg == "t.p4:13:25: error: default value of parameter 'v' must be bit<8>, got bool"
    msg = error_of("action a(bit<8> u, bit<8> v = 1) { } apply { a(); }")
    assert msg == "t.p4:13:50: error: wrong number of arguments to 'a': expected 2, got 0"


def test_actions_are_not_called_from_parser_states_or_functions():
    """P4_16's table of calls ("Restrictions on compile time and run time calls") has no action call in a
    parser state or a function; p4c refuses both ("Action calls are not allowed within parsers",
    "Functions cannot call actions"). softswitch ran them."""
    decls = HDR + " action bump() { }"
    msg = error_of("apply { }", decls=decls, parser="state start { bump(); transition accept; }")
    # the parser's text starts at column 5 of line 9, the call after "state start { "
    assert msg == "t.p4:9:19: error: an action cannot be called from a parser"
    # line 5 holds the declarations: HDR (35 characters), then " action bump() { } void f() { "
    msg = error_of("apply { f(); }", decls=decls + " void f() { bump(); }")
    assert msg == "t.p4:5:66: error: an action cannot be called from a function"
