"""Meters as BMv2 runs them: RFC 2698 two-rate three-color marking per cell, configured through the
Switch API (STF has no command for it), GREEN while unconfigured; direct meters per table entry."""

import os

import pytest
from softswitch_testlib import PROGRAMS, assert_runs_on_asked_backend, each_backend  # noqa: F401 (a fixture)

from softswitch import p4info
from softswitch.compiler import compile_program
from softswitch.switch import Exact, Switch, TableEntry

PROGRAM = os.path.join(PROGRAMS, "lang", "meters.p4")
pytestmark = pytest.mark.usefixtures("each_backend")


def test_the_program_runs_on_the_back_end_asked_for():
    """The native back end compiles meters and direct meters (it used to fall back to Python)."""
    assert_runs_on_asked_backend(PROGRAM, "meters and direct meters")


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
    sw.set_meter_clock(clock)
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
    sw.set_meter_clock(clock)
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
    sw = Switch(compile_program(PROGRAM))
    sw.set_meter_clock(Clock())
    entries = [TableEntry(matches={"hdr.m.index": Exact(i)}, action="I.mark", args={}) for i in (2, 3)]
    for entry in entries:
        sw.table("I.classify").insert(entry)
        sw.direct_meter_config("I.classify", entry, 0.0, 0, 0.0, 0)  # no tokens: every packet RED
    assert colors(sw, 2, 1, direct=True) == [2]
    sw.table("I.classify").delete(entries[0])
    sw.table("I.classify").insert(entries[0])  # the same key again: a new entry, its cell unconfigured
    assert sw.direct_meter_config_of("I.classify", entries[0]) is None
    assert colors(sw, 2, 2, direct=True) == [0, 0]
    assert sw.direct_meter_config_of("I.classify", entries[1]) == (0.0, 0, 0.0, 0)
    sw.table("I.classify").clear()
    sw.table("I.classify").insert(entries[1])
    assert sw.direct_meter_config_of("I.classify", entries[1]) is None
    assert colors(sw, 3, 1, direct=True) == [0]


def test_a_modified_entry_keeps_its_direct_meter_cell():
    sw = Switch(compile_program(PROGRAM))
    sw.set_meter_clock(Clock())
    entry = TableEntry(matches={"hdr.m.index": Exact(2)}, action="I.mark", args={})
    sw.table("I.classify").insert(entry)
    sw.direct_meter_config("I.classify", entry, 0.0, 3, 0.0, 6)  # one 3-byte packet GREEN, one YELLOW
    assert colors(sw, 2, 1, direct=True) == [0]
    sw.table("I.classify").modify(entry)
    assert colors(sw, 2, 2, direct=True) == [1, 2]
    assert sw.direct_meter_config_of("I.classify", entry) == (0.0, 3, 0.0, 6)


def test_a_peak_rate_below_the_committed_one_is_refused():
    sw = Switch(compile_program(PROGRAM))
    with pytest.raises(ValueError, match="meter peak rate 1.0 is below its committed rate 2.0"):
        sw.meter("I.rate").set_config(0, 2.0, 1, 1.0, 1)
