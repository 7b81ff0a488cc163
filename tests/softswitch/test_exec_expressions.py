"""Expressions and statements: arithmetic wrap-around, signed values, slices, concatenation, casts,
saturating ops, ?:, if/else, locals, exit/return, @atomic — each observed in the forwarded bytes."""

from softswitch_testlib import eth, v1

# a test header after ethernet: eight 32-bit words the ingress computes into
DECLS = """
header w_t { bit<32> a; bit<32> b; bit<32> c; bit<32> d; bit<32> e; bit<32> f; bit<32> g; bit<32> h; }
"""
PARSER = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.w); transition accept; }"


def run(ingress, words, decls=DECLS, meta_fields=""):
    prog = v1(ingress, decls=decls, hdr_fields="w_t w;", parser=PARSER, meta_fields=meta_fields)
    from softswitch.switch import Switch

    sw = Switch(prog)
    payload = b"".join(w.to_bytes(4, "big") for w in words) + b"tail"
    out = sw.process(0, eth(payload=payload))
    assert len(out) == 1
    port, data = out[0]
    assert data[:14] == eth()[:14] and data.endswith(b"tail")
    body = data[14:-4]
    return port, [int.from_bytes(body[i : i + 4], "big") for i in range(0, 32, 4)]


def test_bit_arithmetic_wraps_modulo_2_to_the_n():
    _, w = run(
        """apply {
        sm.egress_spec = 2;
        hdr.w.a = hdr.w.a + 32w1;
        hdr.w.b = hdr.w.b - 1;
        hdr.w.c = hdr.w.c * 3;
        hdr.w.d = ~hdr.w.d;
        hdr.w.e = -hdr.w.e;
        hdr.w.f = hdr.w.f << 4;
        hdr.w.g = hdr.w.g >> 28;
        hdr.w.h = hdr.w.h / 10 + hdr.w.h % 10;
    }""",
        [0xFFFFFFFF, 0, 0x80000000, 0x0F0F0F0F, 1, 0xF0000001, 0xF0000000, 12345],
    )
    assert w == [0, 0xFFFFFFFF, 0x80000000, 0xF0F0F0F0, 0xFFFFFFFF, 0x10, 0xF, 1234 + 5]


def test_signed_values_saturation_and_comparisons():
    _, w = run(
        """apply {
        sm.egress_spec = 1;
        int<32> x = (int<32>)hdr.w.a;
        int<32> y = (int<32>)hdr.w.b;
        hdr.w.c = (bit<32>)(x |+| y);
        hdr.w.d = (bit<32>)(x |-| 32s1);
        hdr.w.e = (x < 0) ? 32w1 : 32w0;
        hdr.w.f = (bit<32>)(y >> 1);
        hdr.w.g = hdr.w.g |+| 0xFFFFFFF0;
        hdr.w.h = hdr.w.h |-| 5;
        int<8> s = -8s128;
        if (s - 1 == 127) { hdr.w.a = 7; }
    }""",
        [0x7FFFFFFF, 0x00000010, 0, 0, 0, 0, 0x20, 3],
    )
    # x + y saturates at INT32_MAX; x - 1; x >= 0; y >> 1 arithmetic; unsigned saturating add/sub
    assert w[2] == 0x7FFFFFFF and w[3] == 0x7FFFFFFE and w[4] == 0 and w[5] == 8
    assert w[6] == 0xFFFFFFFF and w[7] == 0 and w[0] == 7


def test_negative_signed_values_and_arithmetic_shift():
    _, w = run(
        """apply {
        sm.egress_spec = 1;
        int<32> x = (int<32>)hdr.w.a;
        hdr.w.b = (bit<32>)(x >> 4);
        hdr.w.c = (bit<32>)(x |+| (int<32>)hdr.w.c);
        hdr.w.d = (bit<32>)(int<32>)((int<16>)hdr.w.d[15:0]);
        hdr.w.e = (bit<32>)(int<32>)(int<8>)8w0x80;
    }""",
        [0xFFFFFF00, 0, 0x80000000, 0x0000FFFE, 0, 0, 0, 0],
    )
    assert w[1] == 0xFFFFFFF0  # -256 >> 4 = -16
    assert w[2] == 0x80000000  # -256 + INT_MIN saturates at INT_MIN
    assert w[3] == 0xFFFFFFFE  # sign-extended -2
    assert w[4] == 0xFFFFFF80


def test_slices_concatenation_and_slice_assignment():
    _, w = run(
        """apply {
        sm.egress_spec = 1;
        hdr.w.a = hdr.w.b[15:0] ++ hdr.w.c[31:16];
        hdr.w.d[7:4] = 4w0xA;
        hdr.w.e = (bit<32>)(hdr.w.b[3:0] ++ 4w0x5);
        bit<64> wide = hdr.w.f ++ hdr.w.g;
        hdr.w.h = wide[47:16];
    }""",
        [0, 0x12345678, 0x9ABCDEF0, 0xFFFFFF0F, 0, 0x11223344, 0x55667788, 0],
    )
    assert w[0] == 0x56789ABC and w[3] == 0xFFFFFFAF and w[4] == 0x85 and w[7] == 0x33445566


def test_ternary_operator_bool_casts_and_logic():
    port, w = run(
        """apply {
        bool big = hdr.w.a > 100;
        hdr.w.b = big ? hdr.w.a : 32w100;
        hdr.w.c = (bit<32>)(bit<1>)(hdr.w.a == 150 && !(hdr.w.b != 150) || false);
        hdr.w.d = hdr.w.a & 0xF0 | hdr.w.d ^ 0x0F;
        sm.egress_spec = (hdr.w.a >= 150) ? 9w5 : 9w6;
    }""",
        [150, 0, 0, 0x100, 0, 0, 0, 0],
    )
    assert port == 5
    assert w[1] == 150 and w[2] == 1 and w[3] == (150 & 0xF0) | (0x100 ^ 0x0F)


def test_exit_stops_ingress_and_return_leaves_apply():
    port, w = run(
        """
    action early() { hdr.w.a = 1; exit; }
    apply {
        sm.egress_spec = 4;
        if (hdr.w.h == 1) { early(); }
        if (hdr.w.h == 2) { hdr.w.b = 2; return; }
        hdr.w.c = 3;
    }""",
        [0, 0, 0, 0, 0, 0, 0, 1],
    )
    assert port == 4 and w[:3] == [1, 0, 0]
    _, w = run(
        """
    apply {
        sm.egress_spec = 4;
        if (hdr.w.h == 2) { hdr.w.b = 2; return; }
        hdr.w.c = 3;
    }""",
        [0, 0, 0, 0, 0, 0, 0, 2],
    )
    assert w[:3] == [0, 2, 0]


def test_action_directional_parameters_copy_in_copy_out():
    _, w = run(
        """
    action bump(inout bit<32> x, in bit<32> by, out bit<32> old) { old = x; x = x + by; }
    action set_both(bit<32> v) { hdr.w.g = v; hdr.w.h = v; }
    apply {
        sm.egress_spec = 1;
        bump(hdr.w.a, 10, hdr.w.b);
        bump(hdr.w.a, hdr.w.b, hdr.w.c);
        @atomic { set_both(32w77); }
    }""",
        [5, 0, 0, 0, 0, 0, 0, 0],
    )
    assert w[:3] == [5 + 10 + 5, 5, 15] and w[6:] == [77, 77]


def test_uninitialised_metadata_reads_zero_and_switch_on_values():
    _, w = run(
        """
    apply {
        sm.egress_spec = 1;
        hdr.w.a = meta.m;
        switch (hdr.w.b[7:0]) {
            1: { hdr.w.c = 10; }
            2:
            3: { hdr.w.c = 20; }
            default: { hdr.w.c = 30; }
        }
    }""",
        [9, 3, 0, 0, 0, 0, 0, 0],
        meta_fields="bit<32> m;",
    )
    assert w[0] == 0 and w[2] == 20


def test_enums_errors_and_constants():
    _, w = run(
        """
    apply {
        sm.egress_spec = 1;
        Kind k = (Kind)hdr.w.a[7:0];
        if (k == Kind.B) { hdr.w.b = K; }
        if (sm.parser_error == error.NoError) { hdr.w.c = 1; }
        hdr.w.d = (bit<32>)(bit<8>)k;
    }""",
        [2, 0, 0, 0, 0, 0, 0, 0],
        decls=DECLS + "enum bit<8> Kind { A = 1, B = 2 }  const bit<32> K = 0x10 + 0x20;",
    )
    assert w[1] == 0x30 and w[2] == 1 and w[3] == 2
