"""softswitch runs TNA programs (softswitch/arch/tna.py, softswitch/runtime/tna.py): the pipeline's
blocks with their intrinsic metadata, the traffic manager (unicast only when ingress chose a port,
multicast replicas with their replication ids, drop_ctl), recirculation through local port 68,
RegisterAction, Counter, Hash, Checksum and max; and the compile-time rule of the hardware that a
register is read-modify-written at most once per packet pass.

Expected values come from the TNA documentation's semantics and from the algorithms' definitions
(CRC-32 as zlib computes it, the Internet checksum of RFC 1071), never from softswitch's output.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from softswitch.compiler import compile_source
from softswitch.frontend.errors import P4Error
from softswitch.p4info import build_p4info
from softswitch.switch import Switch

PROGRAM = (Path(__file__).resolve().parent / "programs" / "tna_probe.p4").read_text()

DST, SRC = bytes.fromhex("0a0b0c0d0e0f"), bytes.fromhex("020000000001")


def frame(op: int, arg: int = 0, passes: int = 0) -> bytes:
    probe = bytes([op, passes]) + bytes(4) + bytes(4) + arg.to_bytes(4, "big") + bytes(4) + bytes(2)
    return DST + SRC + b"\x88\xb5" + probe + b"payload"


def probe_of(data: bytes) -> dict[str, int]:
    p = data[14:36]
    return {
        "op": p[0],
        "passes": p[1],
        "rid": int.from_bytes(p[2:4], "big"),
        "port": int.from_bytes(p[4:6], "big"),
        "hash": int.from_bytes(p[6:10], "big"),
        "arg": int.from_bytes(p[10:14], "big"),
        "rv": int.from_bytes(p[14:18], "big"),
        "csum": int.from_bytes(p[18:20], "big"),
    }


def internet_checksum(data: bytes) -> int:
    """RFC 1071: the ones' complement of the ones' complement sum of the 16-bit words."""
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@pytest.fixture(scope="module", params=["python", "native"])
def program(request):
    """The probe program on each back end (the native one runs TNA programs natively)."""
    return compile_source(PROGRAM, "tna_probe.p4", backend=request.param)


@pytest.fixture
def sw(program):
    return Switch(program)


def test_tna_program_runs_on_the_back_end_asked_for(program, sw):
    assert program.info.arch == "tna"
    assert program.fallback_reason is None
    assert sw.backend == program.backend


def test_unicast_with_hash_checksum_and_egress_metadata(sw):
    out = sw.process(7, frame(1))
    assert [port for port, _ in out] == [3]
    data = out[0][1]
    probe = probe_of(data)
    assert probe["hash"] == zlib.crc32(DST)
    assert probe["csum"] == internet_checksum(DST + SRC)
    assert probe["port"] == 3 and probe["rid"] == 0
    assert data.endswith(b"payload")
    assert sw.counter("Ing.seen").read(1) == (1, len(frame(1)))


def test_no_port_chosen_or_drop_ctl_drops(sw):
    assert sw.process(7, frame(2)) == []
    assert sw.process(7, frame(3)) == []
    assert sw.stats["dropped"] == 2


def test_multicast_replicas_carry_their_replication_id(sw):
    sw.set_multicast_group(5, [(1, 10), (2, 11), (9, 12)])
    out = sw.process(7, frame(4))
    assert [(port, probe_of(data)["rid"], probe_of(data)["port"]) for port, data in out] == [
        (1, 10, 1),
        (2, 11, 2),
        (9, 12, 9),
    ]


def test_recirculation_through_port_68_reenters_ingress(sw):
    out = sw.process(7, frame(5))
    assert [port for port, _ in out] == [1]
    assert probe_of(out[0][1])["passes"] == 3
    assert sw.stats["recirculated"] == 2


def test_register_action_reads_modifies_and_writes_one_entry(sw):
    first = sw.process(7, frame(6, arg=10))
    second = sw.process(7, frame(6, arg=20))
    assert probe_of(first[0][1])["rv"] == 1  # the initial value {1, 2}: lo = 1
    assert probe_of(second[0][1])["rv"] == 11
    word = sw.register("Ing.pairs").read(3)  # lo in the high half, as the struct declares it first
    assert (word >> 32, word & 0xFFFFFFFF) == (31, 20)
    assert sw.register("Ing.pairs").read(4) == (1 << 32) | 2


def test_parser_error_reaches_ingress(sw):
    short = DST + SRC + b"\x88\xb5" + b"\x01\x02\x03"
    out = sw.process(7, short)
    assert [port for port, _ in out] == [2]
    assert out[0][1] == DST + SRC + b"\x00\x02" + b"\x01\x02\x03"  # PARSER_ERROR_PARTIAL_HDR, the rest unparsed


def test_p4info_of_a_tna_program(program):
    p4info = build_p4info(program.info)
    assert p4info.pkg_info.arch == "tna"
    assert {t.preamble.name for t in p4info.registers} == {"Ing.pairs"}
    assert [t.spec.unit for t in p4info.counters] == [3]  # BOTH


# ---------------------------------------------------------------------------------------------- one access
ACCESS_PROGRAM = """
#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_h eth; }
struct meta_t { bit<32> x; }
parser IP(packet_in pkt, out headers_t hdr, out meta_t meta, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start { pkt.extract(ig_intr_md); pkt.advance(PORT_METADATA_SIZE); pkt.extract(hdr.eth); transition accept; }
}
control Sub(inout meta_t meta) {
    Register<bit<32>, bit<8>>(16) r;
    RegisterAction<bit<32>, bit<8>, bit<32>>(r) bump = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + 1; rv = value; }
    };
    apply { meta.x = bump.execute(0); }
}
control Ing(inout headers_t hdr, inout meta_t meta, in ingress_intrinsic_metadata_t ig_intr_md,
            in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
            inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
            inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<8>>(16) r;
    RegisterAction<bit<32>, bit<8>, bit<32>>(r) bump = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + 1; rv = value; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(r) peek = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    Sub() sub;
    action do_bump() { meta.x = bump.execute(0); }
    action do_peek() { meta.x = peek.execute(1); }
    ACTIONS
    table t1 { key = { hdr.eth.type: exact; } actions = { do_bump; do_peek; NoAction; } default_action = NoAction(); }
    table t2 { key = { hdr.eth.dst: exact; } actions = { do_peek; NoAction; } default_action = NoAction(); }
    apply { BODY }
}
control IDep(packet_out pkt, inout headers_t hdr, in meta_t meta) { apply { pkt.emit(hdr); } }
parser EP(packet_in pkt, out headers_t hdr, out meta_t meta, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); pkt.extract(hdr.eth); transition accept; }
}
control Eg(inout headers_t hdr, inout meta_t meta) { apply { } }
control EDep(packet_out pkt, inout headers_t hdr, in meta_t meta) { apply { pkt.emit(hdr); } }
Pipeline(IP(), Ing(), IDep(), EP(), Eg(), EDep()) pipe;
Switch(pipe) main;
"""


def access_program(body: str, actions: str = "") -> str:
    return ACCESS_PROGRAM.replace("BODY", body).replace("ACTIONS", actions)


@pytest.mark.parametrize(
    "body",
    [
        "t1.apply(); t2.apply();",  # two tables in sequence, both reaching r
        "t1.apply(); if (meta.x == 1) { t2.apply(); }",  # a branch that follows the first access
        "do_bump(); meta.x = peek.execute(2);",  # an action call and a direct execute
        "sub.apply(meta); sub.apply(meta);",  # one control instance applied twice
    ],
    ids=["two-tables", "table-then-branch", "action-and-execute", "control-twice"],
)
def test_a_register_accessed_twice_in_a_pass_is_a_compile_error(body):
    with pytest.raises(P4Error, match="may be accessed twice in one pass"):
        compile_source(access_program(body), "twice.p4")


def test_a_register_accessed_twice_in_one_action_is_a_compile_error():
    actions = "action both() { meta.x = bump.execute(0); meta.x = peek.execute(1); }"
    with pytest.raises(P4Error, match="accessed twice in action Ing.both"):
        compile_source(access_program("both();", actions), "twice_action.p4")


@pytest.mark.parametrize(
    "body",
    [
        "t1.apply();",
        "if (hdr.eth.type == 1) { t1.apply(); } else { t2.apply(); }",
        "switch (hdr.eth.type) { 1: { do_bump(); } default: { t2.apply(); } }",
        "sub.apply(meta); t1.apply();",  # Sub's register is another one
    ],
    ids=["one-table", "if-else", "switch", "other-register"],
)
def test_exclusive_accesses_compile(body):
    program = compile_source(access_program(body), "once.p4")
    assert program.info.arch == "tna"


@pytest.mark.parametrize("backend", ["python", "native"])
def test_random_gives_values_of_its_width_that_vary(backend):
    """Random<bit<4>>.get(): each value below 16 (no two back ends share a generator, so the values
    themselves are not compared); 200 packets see more than a few of the 16."""
    random_program = access_program(
        "hdr.eth.type = (bit<16>)rnd.get(); ig_tm_md.ucast_egress_port = 1;", "Random<bit<4>>() rnd;"
    )
    sw = Switch(compile_source(random_program, "random.p4", backend=backend))
    assert sw.backend == backend
    values = []
    for _ in range(200):
        [(port, data)] = sw.process(7, DST + SRC + b"\xff\xff" + b"payload")
        assert port == 1
        values.append(int.from_bytes(data[12:14], "big"))
    assert max(values) < 16
    assert len(set(values)) > 8
