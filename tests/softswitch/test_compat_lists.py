"""List expressions `{...}` as header/struct values: assignment, nested structs, initializers."""

import pytest
from softswitch_testlib import eth, v1

from softswitch.frontend.errors import P4Error
from softswitch.switch import Switch

DECLS = """struct pair_t { bit<8> hi; bit<8> lo; }
struct outer_t { pair_t p; bit<8> z; }
header x_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }"""


def run(body, payload=b""):
    prog = v1(
        "apply { sm.egress_spec = 1; " + body + " }",
        decls=DECLS,
        hdr_fields="x_t x;",
        meta_fields="pair_t pair; outer_t outer;",
    )
    return Switch(prog).process(0, eth(etype=0x1207, payload=payload))


def test_list_assigned_to_an_invalid_header_makes_it_valid_with_those_fields():
    assert run("hdr.x = { hdr.eth.etype[7:0], 8w2, 3, 4 };") == [(1, eth(etype=0x1207, payload=b"\x07\x02\x03\x04"))]


def test_nested_struct_lists_and_local_initializers():
    got = run("""
        hdr.x = { 1, 2, 0, 0 };
        meta.pair = { hdr.x.b, hdr.x.a };
        meta.outer = { { 5, 6 }, 7 };
        pair_t local = { 9, meta.pair.lo };
        hdr.x.c = local.lo + meta.outer.p.hi;
        hdr.x.d = meta.pair.hi + meta.outer.z;""")
    assert got == [(1, eth(etype=0x1207, payload=bytes([1, 2, 1 + 5, 2 + 7])))]


def test_right_side_is_read_before_the_header_is_written():
    assert run("hdr.x = { 1, 2, 3, 4 }; hdr.x = { hdr.x.d, hdr.x.c, hdr.x.b, hdr.x.a };") == [
        (1, eth(etype=0x1207, payload=bytes([4, 3, 2, 1])))
    ]


def test_wrong_number_of_values_is_a_clean_error():
    with pytest.raises(P4Error) as ei:
        run("hdr.x = { 1, 2, 3 };")
    assert "error: a list of 3 values cannot be a header x_t value (4 fields)" in str(ei.value)
