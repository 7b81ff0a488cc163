"""Meters (MeterEntry, DirectMeterEntry) and parser value sets (ValueSetEntry) over P4Runtime, through a
real gRPC client: configs written, read back, and the colors / parses the packets then get (RFC 2698
marking with the test's own clock; a value set member's value under its mask selects the state)."""

import os

import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_testlib import running_device
from softswitch_testlib import PROGRAMS, each_backend  # noqa: F401 (a fixture)

U = p4runtime_pb2.Update
METERS = os.path.join(PROGRAMS, "lang", "meters.p4")
VALUE_SET = os.path.join(PROGRAMS, "lang", "value_set.p4")
pytestmark = pytest.mark.usefixtures("each_backend")


class Clock:
    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now


def meter_config(msg, cir, cburst, pir, pburst):
    msg.config.cir, msg.config.cburst, msg.config.pir, msg.config.pburst = cir, cburst, pir, pburst
    return msg


def colors(device, index, count, direct=False):
    """The color byte of `count` frames (meters.p4 writes the meter's color, and the direct meter's)."""
    out = []
    for _ in range(count):
        ((_, frame),) = device.service.process(0, bytes([index, 0xFF, 0xFF]))
        out.append(frame[2] if direct else frame[1])
    return out


@pytest.fixture
def meters():
    with running_device(METERS) as device:
        clock = Clock()
        device.service.switch.set_meter_clock(clock)
        yield device, clock


def test_a_meter_entry_configures_one_cell_and_reads_back(meters):
    device, clock = meters
    meter_id = device.id_of("meters", "I.rate")
    entry = p4runtime_pb2.MeterEntry(meter_id=meter_id, index=p4runtime_pb2.Index(index=1))
    assert device.write((U.MODIFY, "meter_entry", meter_config(entry, 1, 2, 2, 3))) is None
    # committed: 1 packet/s, burst 2; peak: 2 packets/s, burst 3
    assert colors(device, 1, 4) == [0, 0, 1, 2]
    assert colors(device, 2, 2) == [0, 0]  # another cell: unconfigured, green
    cells = device.read("meter_entry", p4runtime_pb2.MeterEntry(meter_id=meter_id))
    assert [(c.index.index, c.HasField("config")) for c in cells] == [(0, False), (1, True), (2, False), (3, False)]
    assert cells[1] == meter_config(
        p4runtime_pb2.MeterEntry(meter_id=meter_id, index=p4runtime_pb2.Index(index=1)), 1, 2, 2, 3
    )
    # no config: back to unconfigured (green); no index: every cell
    assert (
        device.write((U.MODIFY, "meter_entry", p4runtime_pb2.MeterEntry(meter_id=meter_id, index=entry.index))) is None
    )
    assert colors(device, 1, 4) == [0, 0, 0, 0]
    everything = meter_config(p4runtime_pb2.MeterEntry(meter_id=meter_id), 0, 1, 0, 1)
    assert device.write((U.MODIFY, "meter_entry", everything)) is None
    assert colors(device, 3, 2) == [0, 2]  # one token in each bucket, no refill


def test_a_direct_meter_entry_configures_the_cell_of_a_table_entry(meters):
    device, clock = meters
    table_id = device.id_of("tables", "I.classify")
    entry = p4runtime_pb2.TableEntry(table_id=table_id)
    entry.match.add(field_id=1).exact.value = bytes([2])
    entry.action.action.action_id = device.id_of("actions", "I.mark")
    assert device.write((U.INSERT, "table_entry", entry)) is None
    key = p4runtime_pb2.TableEntry(table_id=table_id, match=entry.match)
    direct = meter_config(p4runtime_pb2.DirectMeterEntry(table_entry=key), 0, 6, 0, 9)  # 3-byte frames
    assert device.write((U.MODIFY, "direct_meter_entry", direct)) is None
    assert colors(device, 2, 4, direct=True) == [0, 0, 1, 2]
    assert device.read("direct_meter_entry", p4runtime_pb2.DirectMeterEntry()) == [direct]
    missing = p4runtime_pb2.TableEntry(table_id=table_id)
    missing.match.add(field_id=1).exact.value = bytes([9])
    errors = device.write(
        (U.MODIFY, "direct_meter_entry", meter_config(p4runtime_pb2.DirectMeterEntry(table_entry=missing), 0, 1, 0, 1)),
        (U.INSERT, "direct_meter_entry", direct),
        (
            U.MODIFY,
            "meter_entry",
            meter_config(
                p4runtime_pb2.MeterEntry(meter_id=device.id_of("meters", "I.rate"), index=p4runtime_pb2.Index(index=4)),
                1,
                1,
                1,
                1,
            ),
        ),
        (
            U.MODIFY,
            "meter_entry",
            meter_config(
                p4runtime_pb2.MeterEntry(meter_id=device.id_of("meters", "I.rate"), index=p4runtime_pb2.Index(index=0)),
                5,
                1,
                2,
                1,
            ),
        ),
    )
    assert errors == [
        ("NOT_FOUND", "table I.classify: no entry with this key"),
        ("INVALID_ARGUMENT", "direct meter entries can only be modified"),
        ("INVALID_ARGUMENT", "index 4 is out of range for meter I.rate of size 4"),
        ("INVALID_ARGUMENT", "meter peak rate 2 is below its committed rate 5"),
    ]


def tagged(etype: int, tag: int) -> bytes:
    return bytes.fromhex("000000000002000000000001") + etype.to_bytes(2, "big") + bytes([tag])


def test_a_value_set_entry_replaces_the_members_of_a_parser_value_set():
    with running_device(VALUE_SET) as device:
        value_set_id = device.id_of("value_sets", "P.tagged_types")
        entry = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
        entry.members.add().match.add(field_id=1).exact.value = bytes([0x88, 0xB5])
        ternary = entry.members.add().match.add(field_id=1).ternary
        ternary.value, ternary.mask = bytes([0x91, 0x00]), bytes([0xFF, 0x00])
        assert device.write((U.MODIFY, "value_set_entry", entry)) is None
        # a member: the tag is extracted and incremented; anything else is not parsed further
        assert device.service.process(0, tagged(0x88B5, 7)) == [(1, tagged(0x88B5, 8))]
        assert device.service.process(0, tagged(0x91AB, 7)) == [(1, tagged(0x91AB, 8))]
        assert device.service.process(0, tagged(0x92AB, 7)) == [(1, tagged(0x92AB, 7))]
        assert device.read("value_set_entry", p4runtime_pb2.ValueSetEntry()) == [entry]
        # MODIFY replaces every member
        only = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
        only.members.add().match.add(field_id=1).exact.value = bytes([0x92, 0xAB])
        assert device.write((U.MODIFY, "value_set_entry", only)) is None
        assert device.service.process(0, tagged(0x88B5, 7)) == [(1, tagged(0x88B5, 7))]
        assert device.service.process(0, tagged(0x92AB, 7)) == [(1, tagged(0x92AB, 8))]
        too_many = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
        for etype in range(5):
            too_many.members.add().match.add(field_id=1).exact.value = bytes([1, etype])
        wide = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
        wide.members.add().match.add(field_id=1).exact.value = bytes([1, 0, 0])
        errors = device.write(
            (U.INSERT, "value_set_entry", only),
            (U.MODIFY, "value_set_entry", too_many),
            (U.MODIFY, "value_set_entry", wide),
        )
        assert errors == [
            ("INVALID_ARGUMENT", "value set P.tagged_types: only MODIFY is allowed"),
            ("RESOURCE_EXHAUSTED", "value set P.tagged_types: 5 members, its size is 4"),
            ("INVALID_ARGUMENT", "value set P.tagged_types match field 1: 3 bytes is too long for a 16-bit value"),
        ]
        assert device.read("value_set_entry", p4runtime_pb2.ValueSetEntry()) == [only]  # the failures changed nothing
