"""P4Info generation from hand-made ProgramInfo records (independent of the compiler)."""

from p4.config.v1 import p4info_pb2

from softswitch import p4info as p4i
from softswitch.program import (
    ActionInfo,
    ActionRef,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    DirectCounterInfo,
    FieldInfo,
    KeyInfo,
    ParamInfo,
    ProgramInfo,
    RegisterInfo,
    TableInfo,
)


def sample_info() -> ProgramInfo:
    """A small program's control-plane surface, shaped like p4src/ina.p4's."""
    return ProgramInfo(
        name="sample",
        tables=[
            TableInfo(
                "MyIngress.ipv4_lpm",
                keys=(KeyInfo("hdr.ipv4.dst_addr", "lpm", 32),),
                actions=(
                    ActionRef("MyIngress.ipv4_forward"),
                    ActionRef("MyIngress.drop"),
                    ActionRef("NoAction", "DEFAULT_ONLY"),
                ),
                default_action="MyIngress.drop",
                size=512,
                direct_counter="MyIngress.lpm_hits",
            ),
            TableInfo(
                "MyIngress.acl",
                keys=(
                    KeyInfo("hdr.ipv4.src_addr", "ternary", 32),
                    KeyInfo("hdr.udp.dst_port", "range", 16),
                    KeyInfo("standard_metadata.ingress_port", "exact", 9),
                ),
                actions=(ActionRef("MyIngress.drop", "TABLE_ONLY"), ActionRef("NoAction")),
                default_action="NoAction",
                const_default_action=True,
            ),
            TableInfo(
                "MyEgress.fixed",
                keys=(KeyInfo("standard_metadata.egress_port", "exact", 9),),
                actions=(ActionRef("NoAction"),),
                default_action="NoAction",
                is_const=True,
            ),
        ],
        actions=[
            ActionInfo("NoAction"),
            ActionInfo("MyIngress.drop"),
            ActionInfo("MyIngress.ipv4_forward", (ParamInfo("dst_mac", 48), ParamInfo("port", 9))),
        ],
        registers=[RegisterInfo("MyIngress.slots", 32, 1024, signed=True), RegisterInfo("MyIngress.owner", 48, 16)],
        counters=[
            CounterInfo("MyIngress.stats", 64, "packets_and_bytes"),
            CounterInfo("MyIngress.drops", 8, "packets"),
        ],
        direct_counters=[DirectCounterInfo("MyIngress.lpm_hits", "MyIngress.ipv4_lpm", "packets_and_bytes")],
        digests=[DigestInfo("learn_t", (FieldInfo("src_mac", 48), FieldInfo("port", 9)))],
        controller_headers=[
            ControllerHeaderInfo("packet_in", (FieldInfo("ingress_port", 9), FieldInfo("_pad", 7))),
            ControllerHeaderInfo("packet_out", (FieldInfo("egress_port", 9), FieldInfo("_pad", 7))),
        ],
    )


def test_ids_carry_the_resource_prefix_and_are_stable():
    a = p4i.build_p4info(sample_info())
    b = p4i.build_p4info(sample_info())
    assert a == b
    assert {t.preamble.id >> 24 for t in a.tables} == {0x02}
    assert {x.preamble.id >> 24 for x in a.actions} == {0x01}
    assert {x.preamble.id >> 24 for x in a.counters} == {0x12}
    assert {x.preamble.id >> 24 for x in a.direct_counters} == {0x13}
    assert {x.preamble.id >> 24 for x in a.registers} == {0x16}
    assert {x.preamble.id >> 24 for x in a.digests} == {0x17}
    assert {x.preamble.id >> 24 for x in a.controller_packet_metadata} == {0x04}
    # the ids p4c gives these names (from p4c's P4Info of the P4 tutorials' basic.p4 and of its own test
    # programs): softswitch assigns ids with p4c's algorithm, so both P4Infos agree
    ids = {x.preamble.name: x.preamble.id for x in [*a.tables, *a.actions]}
    assert ids["MyIngress.ipv4_lpm"] == 37375156
    assert ids["NoAction"] == 21257015


def test_ids_do_not_depend_on_declaration_order():
    info = sample_info()
    shuffled = sample_info()
    shuffled.tables.reverse()
    shuffled.actions.reverse()
    ids = {t.preamble.name: t.preamble.id for t in p4i.build_p4info(info).tables}
    ids2 = {t.preamble.name: t.preamble.id for t in p4i.build_p4info(shuffled).tables}
    assert ids == ids2


def test_hash_collisions_are_resolved_deterministically(monkeypatch):
    monkeypatch.setattr(p4i, "name_hash", lambda name: 0x000042)
    ids = p4i.assign_ids(0x02, ["b", "a", "c"])
    assert ids == {"a": 0x02000042, "b": 0x02000043, "c": 0x02000044}


def test_tables_match_fields_action_refs_and_properties():
    p4info = p4i.build_p4info(sample_info())
    idx = p4i.P4InfoIndex(p4info)
    acl = idx.named("tables", "MyIngress.acl")
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in acl.match_fields] == [
        (1, "hdr.ipv4.src_addr", 32, p4info_pb2.MatchField.TERNARY),
        (2, "hdr.udp.dst_port", 16, p4info_pb2.MatchField.RANGE),
        (3, "standard_metadata.ingress_port", 9, p4info_pb2.MatchField.EXACT),
    ]
    drop = idx.named("actions", "MyIngress.drop")
    noaction = idx.named("actions", "NoAction")
    assert [(r.id, r.scope) for r in acl.action_refs] == [
        (drop.preamble.id, p4info_pb2.ActionRef.TABLE_ONLY),
        (noaction.preamble.id, p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
    ]
    assert acl.const_default_action_id == noaction.preamble.id
    assert acl.size == 1024 and not acl.is_const_table
    lpm = idx.named("tables", "ipv4_lpm")
    assert lpm.size == 512 and lpm.const_default_action_id == 0
    assert list(lpm.direct_resource_ids) == [idx.named("direct_counters", "MyIngress.lpm_hits").preamble.id]
    assert lpm.action_refs[2].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert list(lpm.action_refs[2].annotations) == ["@defaultonly"]
    assert idx.named("tables", "MyEgress.fixed").is_const_table


def test_actions_externs_digests_and_controller_headers():
    p4info = p4i.build_p4info(sample_info())
    idx = p4i.P4InfoIndex(p4info)
    assert p4info.pkg_info.arch == "v1model"
    fwd = idx.named("actions", "ipv4_forward")
    assert fwd.preamble.alias == "ipv4_forward"
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dst_mac", 48), (2, "port", 9)]
    slots = idx.named("registers", "MyIngress.slots")
    assert slots.size == 1024 and slots.type_spec.bitstring.int.bitwidth == 32
    assert idx.named("registers", "owner").type_spec.bitstring.bit.bitwidth == 48
    stats = idx.named("counters", "MyIngress.stats")
    assert (stats.size, stats.spec.unit) == (64, p4info_pb2.CounterSpec.BOTH)
    assert idx.named("counters", "drops").spec.unit == p4info_pb2.CounterSpec.PACKETS
    hits = idx.named("direct_counters", "lpm_hits")
    assert hits.direct_table_id == idx.named("tables", "MyIngress.ipv4_lpm").preamble.id
    digest = idx.named("digests", "learn_t")
    assert digest.type_spec.struct.name == "learn_t"
    members = p4info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("src_mac", 48), ("port", 9)]
    pin = idx.controller_header("packet_in")
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]


def test_aliases_are_shortest_unique_suffixes():
    assert p4i.aliases(["A.t", "B.t", "A.u"]) == {"A.t": "A.t", "B.t": "B.t", "A.u": "u"}


def test_text_format_round_trips(tmp_path):
    p4info = p4i.build_p4info(sample_info())
    path = tmp_path / "x.p4info.txtpb"
    p4i.write_text(p4info, path)
    text = path.read_text()
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n")
    assert 'name: "MyIngress.ipv4_lpm"' in text
    assert p4i.parse_text(text) == p4info


def test_check_against_accepts_own_program_and_rejects_other_shapes():
    info = sample_info()
    p4info = p4i.build_p4info(info)
    p4i.P4InfoIndex(p4info).check_against(info)
    p4info.actions[2].params[1].bitwidth = 16
    idx = p4i.P4InfoIndex(p4info)
    try:
        idx.check_against(info)
    except p4i.P4InfoError as e:
        assert str(e) == (
            "P4Info action MyIngress.ipv4_forward: params [('dst_mac', 48), ('port', 16)] "
            "differ from the program's [('dst_mac', 48), ('port', 9)]"
        )
    else:
        raise AssertionError("mismatch not detected")


def test_index_rejects_duplicate_ids():
    p4info = p4i.build_p4info(sample_info())
    p4info.tables[1].preamble.id = p4info.tables[0].preamble.id
    try:
        p4i.P4InfoIndex(p4info)
    except p4i.P4InfoError as e:
        assert "duplicate id" in str(e)
    else:
        raise AssertionError("duplicate not detected")
