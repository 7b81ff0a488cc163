"""Parsers: select on tuples/masks/ranges/default, header stacks (next, last, pop_front, push_front,
indexing, size, lastIndex), lookahead, advance, verify, and v1model parser errors."""

import pytest
from softswitch_testlib import each_backend, eth, v1  # noqa: F401 (a fixture)

from softswitch.switch import Switch

HOP = "header hop_t { bit<8> id; bit<7> pad; bit<1> bos; }  header tag_t { bit<8> v; }"


def sw_for(parser, ingress, hdr_fields, decls=HOP, meta_fields="", deparser="pkt.emit(hdr);"):
    return Switch(
        v1(ingress, decls=decls, hdr_fields=hdr_fields, parser=parser, meta_fields=meta_fields, deparser=deparser)
    )


STACK_PARSER = """
    state start { pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88B5: hops; default: accept; } }
    state hops { pkt.extract(hdr.hops.next);
        transition select(hdr.hops.last.bos) { 1: accept; 0: hops; } }
"""


def hops(*ids):
    return b"".join(bytes([i, 1 if n == len(ids) - 1 else 0]) for n, i in enumerate(ids))


def test_header_stack_extract_and_pop_front_then_emit():
    sw = sw_for(
        STACK_PARSER,
        """apply {
        sm.egress_spec = (bit<9>)hdr.hops[0].id;
        hdr.hops.pop_front(1);
    }""",
        "hop_t[4] hops;",
    )
    out = sw.process(0, eth(payload=hops(7, 8, 9) + b"PAY"))
    assert out == [(7, eth(payload=hops(8, 9) + b"PAY"))]


def test_header_stack_push_front_size_and_last_index():
    """lastIndex is read in the parser (it is for parsers only), size and push_front in ingress."""
    parser = STACK_PARSER.replace(
        "pkt.extract(hdr.hops.next);", "pkt.extract(hdr.hops.next); meta.last = hdr.hops.lastIndex;"
    )
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = 1;
        hdr.hops.push_front(1);
        hdr.hops[0].setValid();
        hdr.hops[0].id = (bit<8>)hdr.hops.size;
        hdr.hops[0].pad = (bit<7>)meta.last;
    }""",
        "hop_t[4] hops;",
        meta_fields="bit<32> last;",
    )
    out = sw.process(0, eth(payload=hops(5, 6) + b"Z"))
    # two hops parsed: lastIndex 1; after push_front size is still 4; element 0 is the new one
    assert out == [(1, eth(payload=bytes([4, 1 << 1]) + hops(5, 6) + b"Z"))]


def test_stack_overflow_is_StackOutOfBounds_and_packet_still_reaches_ingress():
    sw = sw_for(
        STACK_PARSER,
        """apply {
        sm.egress_spec = 3;
        if (sm.parser_error == error.StackOutOfBounds) { sm.egress_spec = 4; }
    }""",
        "hop_t[2] hops;",
    )
    out = sw.process(0, eth(payload=bytes([1, 0, 2, 0, 3, 1])))
    # two hops extracted, the third did not fit; the rest stays payload
    assert out == [(4, eth(payload=bytes([1, 0, 2, 0, 3, 1])))]


def test_select_tuple_mask_range_and_default():
    parser = """
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.t);
        transition select(hdr.eth.etype, hdr.t.v) {
            (0x0800, 1): one;
            (0x0800 &&& 0xFF00, 2 .. 9): two;
            (_, 0xF0 &&& 0xF0): three;
            default: accept;
        } }
    state one { meta.path = 1; transition accept; }
    state two { meta.path = 2; transition accept; }
    state three { meta.path = 3; transition accept; }
    """
    sw = sw_for(parser, "apply { sm.egress_spec = (bit<9>)meta.path; }", "tag_t t;", meta_fields="bit<8> path;")
    cases = [(0x0800, 1, 1), (0x0855, 5, 2), (0x0800, 10, 0), (0x1234, 0xF3, 3), (0x1234, 1, 0)]
    for etype, v, port in cases:
        frame = eth(etype=etype, payload=bytes([v]))
        out = sw.process(0, frame)
        assert out == [(port, frame)], (etype, v)


def test_no_match_in_select_sets_NoMatch():
    parser = """
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.etype) { 0x0800: accept; } }
    """
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = (sm.parser_error == error.NoMatch) ? 9w2 : 9w1;
    }""",
        "",
    )
    assert sw.process(0, eth(etype=0x0800))[0][0] == 1
    assert sw.process(0, eth(etype=0x0801))[0][0] == 2


def test_truncated_frame_is_PacketTooShort_and_failed_header_is_invalid():
    parser = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.t); transition accept; }"
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 2; }
        if (!hdr.t.isValid()) { hdr.eth.etype = 0xDEAD; }
    }""",
        "tag_t t;",
    )
    assert sw.process(0, eth()) == [(2, eth(etype=0xDEAD))]
    assert sw.process(0, b"\x01\x02\x03") == [(2, b"\x01\x02\x03")]  # eth invalid: only payload goes out


def test_lookahead_advance_and_verify():
    parser = """
    state start { pkt.extract(hdr.eth);
        transition select(pkt.lookahead<bit<8>>()) { 0xAA: skip; default: tag; } }
    state skip { pkt.advance(16); transition tag; }
    state tag { pkt.extract(hdr.t); verify(hdr.t.v != 0, error.HeaderTooShort); transition accept; }
    """
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.HeaderTooShort) { sm.egress_spec = 3; }
    }""",
        "tag_t t;",
    )
    # advance skips 2 bytes; they are dropped from the output (not re-emitted), the tag is emitted
    assert sw.process(0, eth(payload=b"\xaa\x00\x07rest")) == [(1, eth(payload=b"\x07rest"))]
    assert sw.process(0, eth(payload=b"\x05rest")) == [(1, eth(payload=b"\x05rest"))]
    assert sw.process(0, eth(payload=b"\x00rest")) == [(3, eth(payload=b"\x00rest"))]


def test_user_errors_and_reject_still_reach_ingress():
    parser = """
    state start { pkt.extract(hdr.eth);
        verify(hdr.eth.etype != 0xBAD0, error.Bad);
        transition select(hdr.eth.etype) { 0xBAD1: reject; default: accept; } }
    """
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.Bad) { sm.egress_spec = 2; }
    }""",
        "",
        decls=HOP + " error { Bad }",
    )
    assert sw.process(0, eth(etype=0xBAD0))[0][0] == 2
    assert sw.process(0, eth(etype=0xBAD1))[0][0] == 1


def test_header_fields_at_bit_offsets_extract_and_emit_the_same_and_advance_takes_whole_bytes():
    # f_t's fields fill whole bytes in groups (4+4, 8, 3+13, int<16>, int<4>+12, 32) with signed ones;
    # advance(4) is not whole bytes: BMv2 ends the parser there with error.ParserInvalidArgument
    decls = """header f_t { bit<4> a; bit<4> b; bit<8> c; bit<3> d; bit<13> e; int<16> s; int<4> t; bit<12> u; bit<32> w; }"""
    parser = """
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.etype) { 0x88B6: shifted; default: f; } }
    state shifted { pkt.advance(4); transition f; }
    state f { pkt.extract(hdr.f); transition accept; }
    """
    sw = sw_for(
        parser,
        """apply {
        sm.egress_spec = 1;
        if (hdr.f.s < 0 && hdr.f.t == -2) { hdr.f.e = hdr.f.e + 1; hdr.f.s = hdr.f.s - 1; hdr.f.t = 7; }
        hdr.f.w = hdr.f.w + (bit<32>)hdr.f.a + (bit<32>)hdr.f.d;
    }""",
        "f_t f;",
        decls=decls,
        deparser="pkt.emit(hdr.eth); pkt.emit(hdr.f);",
    )
    f = bytes([0x5A, 0xC3, 0xB0, 0x07, 0xFF, 0xFE, 0xE1, 0x23, 0x00, 0x00, 0x01, 0x00])
    # a=5 b=0xA c=0xC3 d=5 e=0x1007 s=-2 t=-2 u=0x123 w=0x100 -> e+1, s=-3, t=7, w=0x100+5+5
    g = bytes([0x5A, 0xC3, 0xB0, 0x08, 0xFF, 0xFD, 0x71, 0x23, 0x00, 0x00, 0x01, 0x0A])
    assert sw.process(0, eth(payload=f + b"tail")) == [(1, eth(payload=g + b"tail"))]
    # 4 bits (9), f, 4 more bits: the parser stops at advance(4), f stays invalid (not emitted) and
    # everything after the Ethernet header is payload, unchanged
    shifted = (9 << 100 | int.from_bytes(f, "big") << 4 | 0xD).to_bytes(13, "big")
    assert sw.process(0, eth(etype=0x88B6, payload=shifted + b"tail")) == [
        (1, eth(etype=0x88B6, payload=shifted + b"tail"))
    ]
    # one byte short: PacketTooShort, f stays invalid (only eth and the unparsed bytes go out)
    short = eth(payload=f[:-1])
    assert sw.process(0, short) == [(1, short)]


# extract(hdr.s[i]) with i out of range and too few bytes left: the argument is evaluated before the
# extract (P4_16 calling convention), and a computed index out of range in a parser is StackOutOfBounds
# (as BMv2 runs p4c's dereference_header_stack), so that error comes first, not PacketTooShort
OUT_OF_RANGE_EXTRACTS = [
    "pkt.extract(hdr.es[hdr.ctl.i]);",
    "pkt.extract(hdr.vs[hdr.ctl.i], 16);",  # a header with a varbit field: its size given
]


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("extract", OUT_OF_RANGE_EXTRACTS)
def test_an_out_of_range_index_is_found_before_the_packet_runs_short(extract):
    sw = sw_for(
        f"state start {{ pkt.extract(hdr.eth); pkt.extract(hdr.ctl); {extract} transition accept; }}",
        "apply { sm.egress_spec = sm.parser_error == error.StackOutOfBounds ? 9w2 : 9w1; }",
        "ctl_t ctl; e_t[2] es; v_t[2] vs;",
        decls="header ctl_t { bit<8> i; } header e_t { bit<16> f; } header v_t { varbit<16> d; }",
    )
    frame = eth(payload=bytes([5, 0xAA]))  # i = 5; one byte where the element needs two
    assert sw.process(0, frame) == [(2, frame)]
