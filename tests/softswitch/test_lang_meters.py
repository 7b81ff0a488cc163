"""Meters as BMv2 runs them: RFC 2698 two-rate three-color marking per cell, configured through the
Switch API (STF has no command for it), GREEN while unconfigured; direct meters per table entry."""

import os

from softswitch_testlib import PROGRAMS

from softswitch import p4info
from softswitch.compiler import compile_program
from softswitch.switch import Exact, Switch, TableEntry

PROGRAM = os.path.join(PROGRAMS, "lang", "meters.p4")


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def colors(sw, index, count, direct=False):
    out = []
    for _ in range(count):
        ((_, frame),) = sw.process(0, bytes([index, 0xFF, 0xFF]))
        out.append(frame[2] if direct else frame[1])
    return out


def test_a_packet_meter_marks_green_yellow_red_by_its_two_rates():
    sw = Switch(compile_program(PROGRAM))
    clock = Clock()
    sw.runtime.meters["I.rate"].clock = clock
    # committed: 1 packet/s, burst 2; peak: 2 packets/s, burst 3 (buckets start full)
    sw.meter("I.rate").set_config(1, 1.0, 2, 2.0, 3)
    assert colors(sw, 1, 4) == [0, 0, 1, 2]  # 2 in the committed burst, 1 more in the peak burst, then red
    clock.now += 1.0  # one second: +1 committed token, +2 peak tokens
    assert colors(sw, 1, 3) == [0, 1, 2]
    assert colors(sw, 0, 3) == [0, 0, 0]  # an unconfigured cell stays green
    sw.meter("rate").clear_config(1)
    assert colors(sw, 1, 2) == [0, 0]


def test_a_direct_byte_meter_meters_the_entry_that_hit():
    sw = Switch(compile_program(PROGRAM))
    clock = Clock()
    sw.runtime.meters["I.per_entry"].clock = clock
    entry = TableEntry(matches={"hdr.m.index": Exact(2)}, action="I.mark", args={})
    sw.table("I.classify").insert(entry)
    # bytes: each frame is 3 bytes; committed burst 6 bytes, peak burst 9 bytes, no refill
    sw.direct_meter_config("I.classify", entry, 0.0, 6, 0.0, 9)
    assert colors(sw, 2, 4, direct=True) == [0, 0, 1, 2]


def test_meters_are_in_the_p4info():
    info = p4info.build_p4info(compile_program(PROGRAM).info)
    (meter,) = info.meters
    (direct,) = info.direct_meters
    (table,) = info.tables
    assert (meter.preamble.name, meter.preamble.id >> 24, meter.size) == ("I.rate", 0x14, 4)
    assert (direct.preamble.id >> 24, direct.direct_table_id) == (0x15, table.preamble.id)
    assert direct.preamble.id in table.direct_resource_ids


def test_a_deleted_entry_takes_its_direct_meter_config_with_it():
    # cells are keyed by the stored entry's id, which a later entry may get: deletion must drop the cell
    sw = Switch(compile_program(PROGRAM))
    entries = [TableEntry(matches={"hdr.m.index": Exact(i)}, action="I.mark", args={}) for i in (2, 3)]
    for entry in entries:
        sw.table("I.classify").insert(entry)
        sw.direct_meter_config("I.classify", entry, 0.0, 0, 0.0, 0)
    cells = sw.runtime.meters["I.per_entry"].cells
    assert len(cells) == 2
    sw.table("I.classify").delete(entries[0])
    assert len(cells) == 1
    sw.table("I.classify").clear()
    assert cells == {}
