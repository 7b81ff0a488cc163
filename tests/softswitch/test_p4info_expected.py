"""softswitch's P4Info of the repository's programs against the checked-in P4Info p4c's BMv2 back end
generates for them (tests/softswitch/p4info/*.p4info.txtpb, read with the p4info_pb2 definitions).

The expected files are p4c-bm2-ss's output, unedited; after a change to a program, from the repository root:

    p4c-bm2-ss --arch v1model -I p4src -o /tmp/ina.json --p4runtime-files tests/softswitch/p4info/ina.p4info.txtpb \
        p4src/ina.p4
    p4c-bm2-ss --arch v1model -o /tmp/ipv4_router.json \
        --p4runtime-files tests/softswitch/p4info/ipv4_router.p4info.txtpb tests/softswitch/programs/ipv4_router.p4
"""

import os

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from softswitch import p4info
from softswitch.compiler import compile_program

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = {
    "ipv4_router": os.path.join(HERE, "programs", "ipv4_router.p4"),
    "ina": os.path.join(REPO, "p4src", "ina.p4"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_p4info_is_the_expected_one(name):
    expected = p4info_pb2.P4Info()
    with open(os.path.join(HERE, "p4info", name + ".p4info.txtpb")) as f:
        text_format.Merge(f.read(), expected)
    got = p4info.build_p4info(compile_program(PROGRAMS[name]).info)
    assert text_format.MessageToString(got) == text_format.MessageToString(expected)


def test_ids_and_aliases_follow_p4c():
    # @id is kept (its type prefix added), the others hash; aliases are unique over all objects
    source = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @id(7) action set(@id(9) bit<8> v, bit<8> w) { hdr.h.a = v + w; }
    @id(0x02000005) table t { key = { hdr.h.a : exact @id(3); } actions = { set; } }
    @hidden table helper { actions = { NoAction; } }
    apply { t.apply(); helper.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) set;
    apply { set.count(0); }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    from softswitch.compiler import compile_source

    info = p4info.build_p4info(compile_source(source, "ids.p4").info)
    (table,) = info.tables  # the @hidden table is left out
    assert (table.preamble.id, table.match_fields[0].id) == (0x02000005, 3)
    action = next(a for a in info.actions if a.preamble.name == "I.set")
    assert action.preamble.id == 0x01000007
    assert [(p.id, p.name) for p in action.params] == [(9, "v"), (2, "w")]
    # "set" names both an action and a counter: each alias needs its control's name
    assert action.preamble.alias == "I.set" and info.counters[0].preamble.alias == "E.set"
