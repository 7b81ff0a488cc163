"""The P4Runtime server runs unchanged over a NativeSwitch: table writes and reads, errors, counters,
registers and multicast groups go through the native state, and the pipeline sees them."""

from __future__ import annotations

import pytest
from native_fixture import LOOKUP, MULTICAST, STATEFUL, fixture_switch, make_frame
from p4.v1 import p4data_pb2, p4runtime_pb2

from controller.p4rt import P4Names, P4RuntimeError, SwitchConnection
from softswitch.p4info import build_p4info
from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService

U = p4runtime_pb2.Update


@pytest.fixture
def running():
    switch = fixture_switch()
    service = P4RuntimeService(switch, device_id=0)
    server = P4RuntimeServer(service, "127.0.0.1:0").start()
    conn = SwitchConnection(server.address, 0).open()
    p4info = build_p4info(switch.info)
    yield switch, service, conn, P4Names(p4info), p4info
    conn.close()
    server.stop()
    switch.close()


def entity(**kw) -> p4runtime_pb2.Entity:
    return p4runtime_pb2.Entity(**kw)


def test_table_entries_through_p4runtime_drive_the_native_pipeline(running):
    switch, service, conn, names, _ = running
    entry = names.table_entry("Fixture.exact16", {"hdr.k16": 0x0A0B}, "Fixture.fwd", {"port": 6})
    conn.write([(U.INSERT, entity(table_entry=entry))])
    frame = make_frame(LOOKUP, body=b"\x0a\x0b", payload=b"x" * 20)
    assert [p for p, _ in service.process(1, frame)] == [6]
    with pytest.raises(P4RuntimeError, match="already exists"):
        conn.write([(U.INSERT, entity(table_entry=entry))])
    (read,) = conn.read([entity(table_entry=p4runtime_pb2.TableEntry(table_id=entry.table_id))])
    assert read.table_entry.match == entry.match
    assert read.table_entry.action.action.params[0].value == b"\x06"
    query = p4runtime_pb2.DirectCounterEntry()
    query.table_entry.table_id = entry.table_id
    (counted,) = conn.read([entity(direct_counter_entry=query)])
    assert (counted.direct_counter_entry.data.packet_count, counted.direct_counter_entry.data.byte_count) == (
        1,
        len(frame),
    )
    modified = names.table_entry("Fixture.exact16", {"hdr.k16": 0x0A0B}, "Fixture.fwd", {"port": 9})
    conn.write([(U.MODIFY, entity(table_entry=modified))])
    assert [p for p, _ in service.process(1, frame)] == [9]
    conn.write([(U.DELETE, entity(table_entry=modified))])
    assert service.process(1, frame) == []
    assert len(switch.table("Fixture.exact16")) == 0


def test_counters_registers_and_multicast_groups_through_p4runtime(running):
    switch, service, conn, names, p4info = running
    frame = make_frame(STATEFUL, 5, 10, 2)
    service.process(1, frame)
    counter_id, _ = names.counter("Fixture.c0")
    assert conn.read_counter(counter_id, [5]) == {5: (1, len(frame))}
    register = next(r for r in p4info.registers if r.preamble.name == "Fixture.r32")
    write = p4runtime_pb2.RegisterEntry(register_id=register.preamble.id)
    write.index.index = 3
    write.data.CopyFrom(p4data_pb2.P4Data(bitstring=(0xDEADBEEF).to_bytes(4, "big")))
    conn.write([(U.MODIFY, entity(register_entry=write))])
    assert switch.register("Fixture.r32").read(3) == 0xDEADBEEF
    query = p4runtime_pb2.RegisterEntry(register_id=register.preamble.id)
    query.index.index = 5
    (read,) = conn.read([entity(register_entry=query)])
    assert int.from_bytes(read.register_entry.data.bitstring, "big") == 10  # written by the pipeline
    group = p4runtime_pb2.PacketReplicationEngineEntry()
    group.multicast_group_entry.multicast_group_id = 3
    for port, rid in ((4, 1), (5, 2)):
        group.multicast_group_entry.replicas.add(egress_port=port, instance=rid)
    conn.write([(U.INSERT, entity(packet_replication_engine_entry=group))])
    assert switch.multicast_groups() == {3: [(4, 1), (5, 2)]}
    out = service.process(1, make_frame(MULTICAST, 0, 3))
    assert [(p, f[14]) for p, f in out] == [(4, 1), (5, 2)]
