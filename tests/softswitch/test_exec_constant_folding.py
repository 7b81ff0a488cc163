"""Constant folding computes what the generated code computes: each operation is written twice in one
program, once on packet fields (evaluated per packet) and once on the same values as constants (folded
by the front end), and both results travel back in the packet."""

import itertools

from softswitch_testlib import eth, v1

from softswitch.switch import Switch

PAIRS = [(0, 0), (1, 255), (200, 100), (127, 1), (128, 255), (255, 7), (5, 9), (100, 8), (129, 128)]
UNSIGNED = "(bit<8>)({x} {op} {y})"
SIGNED = "(bit<8>)((int<8>){x} {op} (int<8>){y})"
BOOLEAN = "(bit<8>)(bit<1>)({x} {op} {y})"
SIGNED_BOOLEAN = "(bit<8>)(bit<1>)((int<8>){x} {op} (int<8>){y})"
FORMS = [UNSIGNED.replace("{op}", op) for op in ("+", "-", "*", "&", "|", "^", "|+|", "|-|", "<<", ">>")]
FORMS += [SIGNED.replace("{op}", op) for op in ("+", "-", "*", "&", "|", "^", "|+|", "|-|")]
FORMS += [BOOLEAN.replace("{op}", op) for op in ("<", ">", "<=", ">=", "==", "!=")]
FORMS += [SIGNED_BOOLEAN.replace("{op}", op) for op in ("<", ">=")]
FORMS += [
    "(bit<8>)((int<8>){x} >> {y})",
    "(bit<8>)((int<8>){x} << {y})",
    "({x}[3:0] ++ {y}[7:4])",
    "(bit<8>)(-(int<8>){x})",
    "(~{x} - {y})",
    "(bit<8>)(bit<16>)(({x} ++ {y}) * 16w3)[11:4]",
    "(bit<8>)(int<8>)(int<16>)(int<8>){x}[7:0]",
    "(bit<8>)((bit<4>){x} + (bit<4>){y})",
    "(bit<8>)(((bit<16>){x} + (bit<16>){y}) >> 1)",
    "(bit<8>)((bit<16>)(int<16>)(int<8>){x} >> 8)",
    "(bit<8>)(bit<16>)((int<16>)(bit<16>){x} * 16s-1)",
    "(((int<8>){x} > (int<8>){y}) ? {x} : {y})",
]
DIVIDING = ["({x} / {y})", "({x} % {y})"]


def cases():
    for form in FORMS + DIVIDING:
        for x, y in PAIRS:
            if form in DIVIDING and y == 0:
                continue  # a run-time division by zero drops the packet
            yield form, x, y


def test_folded_constants_equal_the_values_computed_per_packet():
    all_cases = list(cases())
    fields = " ".join(f"bit<8> x{i}; bit<8> y{i}; bit<8> run{i}; bit<8> fold{i};" for i in range(len(all_cases)))
    body = []
    for i, (form, x, y) in enumerate(all_cases):
        body.append(f"hdr.c.run{i} = {form.format(x=f'hdr.c.x{i}', y=f'hdr.c.y{i}')};")
        body.append(f"hdr.c.fold{i} = {form.format(x=f'8w{x}', y=f'8w{y}')};")
    prog = v1(
        "apply { sm.egress_spec = 1; " + " ".join(body) + " }",
        decls=f"header case_t {{ {fields} }}",
        hdr_fields="case_t c;",
        parser="state start { pkt.extract(hdr.eth); pkt.extract(hdr.c); transition accept; }",
    )
    folded = [s for s in prog.ir.pipeline.blocks["ingress"].body.statements if s.target.field_name.startswith("fold")]
    assert all(type(s.value).__name__ == "Constant" for s in folded)  # really folded by the front end
    payload = bytes(itertools.chain.from_iterable((x, y, 0, 0) for _, x, y in all_cases))
    ((port, frame),) = Switch(prog).process(0, eth(payload=payload))
    body_bytes = frame[14:]
    mismatches = []
    for i, (form, x, y) in enumerate(all_cases):
        run, fold = body_bytes[4 * i + 2], body_bytes[4 * i + 3]
        if run != fold:
            mismatches.append(f"{form.format(x=x, y=y)}: per packet {run}, folded {fold}")
    assert "\n".join(mismatches) == "" and port == 1


def test_some_values_against_the_specification():
    """Values the P4_16 specification fixes (wrap-around, saturation, arithmetic shift, two's complement)."""
    expected = {
        "8w200 + 8w100": 44,
        "8w5 - 8w9": 252,
        "(bit<8>)(8s127 |+| 8s1)": 127,
        "(bit<8>)(-8s128 |-| 8s1)": 0x80,
        "8w250 |+| 8w10": 255,
        "8w5 |-| 8w9": 0,
        "(bit<8>)((int<8>)8w128 >> 7)": 0xFF,
        "8w128 >> 7": 1,
        "(bit<8>)(-(int<8>)8w1)": 0xFF,
        "(8w0xAB[3:0] ++ 8w0xCD[7:4])": 0xBC,
    }
    body = " ".join(f"hdr.c.v{i} = {e};" for i, e in enumerate(expected))
    prog = v1(
        "apply { sm.egress_spec = 1; " + body + " }",
        decls="header case_t { " + " ".join(f"bit<8> v{i};" for i in range(len(expected))) + " }",
        hdr_fields="case_t c;",
        parser="state start { pkt.extract(hdr.eth); pkt.extract(hdr.c); transition accept; }",
    )
    ((_, frame),) = Switch(prog).process(0, eth(payload=bytes(len(expected))))
    assert dict(zip(expected, frame[14 : 14 + len(expected)], strict=True)) == expected
