"""Parser-side compatibility: lookahead<header type>() (select on its fields, too-short packets), p4c's
include guard names, and a clean error for function declarations."""

from softswitch_testlib import eth, program

from softswitch.switch import Switch


def run(payload):
    sw = Switch(program("compat_lookahead_header.p4"))
    return sw.process(1, eth(etype=0x9000, payload=payload))


def test_select_on_lookahead_header_fields_extracts_matching_header():
    probe = bytes([0xA5, 0x12, 0x01, 0x00])
    assert run(probe + b"xy") == [(2, eth(etype=0x9000, payload=bytes([0xA5, 0x12, 0x01, 0x01]) + b"xy"))]


def test_lookahead_does_not_consume_when_not_matched():
    other = bytes([0xA5, 0x22, 0xBE, 0xEF])  # version 2: not extracted, value still peeked
    assert run(other) == [(2, eth(etype=0xBEEF, payload=other))]


def test_lookahead_past_the_end_is_packet_too_short():
    # the parser stops at the first lookahead: nothing peeked (etype gets 0), parser_error set
    assert run(bytes([0xA5, 0x12])) == [(3, eth(etype=0, payload=bytes([0xA5, 0x12])))]


def test_p4c_include_guard_names_are_defined_for_ifdef_tests():
    from softswitch_testlib import v1

    prog = v1(
        "apply { sm.egress_spec = 1; }",
        decls="""
    #if defined(_CORE_P4_) && defined(_V1_MODEL_P4_)
    const bit<8> BOTH = 1;
    #endif
    """,
        meta_fields="bit<8> x;",
        egress="apply { meta.x = BOTH; }",
    )
    assert Switch(prog).process(0, eth()) == [(1, eth())]


def test_functions_are_called_with_copy_in_and_copy_out():
    from softswitch_testlib import v1

    prog = v1(
        "apply { meta.x = 5; reset(meta.x); hdr.eth.etype = (bit<16>)twice(meta.x + 3); sm.egress_spec = 1; }",
        decls="void reset(out bit<8> x) { x = 0; } bit<8> twice(in bit<8> x) { return x + x; }",
        meta_fields="bit<8> x;",
    )
    assert Switch(prog).process(0, eth()) == [(1, eth(etype=6))]
