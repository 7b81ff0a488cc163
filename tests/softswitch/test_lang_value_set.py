"""Parser value sets filled through the Switch API (STF has no command for them) and their P4Info."""

import os

from softswitch_testlib import PROGRAMS

from softswitch import p4info
from softswitch.compiler import compile_program
from softswitch.switch import Switch

PROGRAM = os.path.join(PROGRAMS, "lang", "value_set.p4")


def frame(etype: int, tag: int) -> bytes:
    return bytes.fromhex("000000000002000000000001") + etype.to_bytes(2, "big") + bytes([tag])


def test_a_select_on_a_value_set_matches_its_members():
    sw = Switch(compile_program(PROGRAM))
    assert sw.process(0, frame(0x88B5, 7)) == [(1, frame(0x88B5, 7))]  # empty: no match
    sw.value_set("tagged_types").add(0x88B5)
    sw.value_set("P.tagged_types").add(0x9100, 0xFF00)  # any 0x91xx
    assert sw.process(0, frame(0x88B5, 7)) == [(1, frame(0x88B5, 8))]  # the tag was extracted and bumped
    assert sw.process(0, frame(0x91AB, 7)) == [(1, frame(0x91AB, 8))]
    assert sw.process(0, frame(0x92AB, 7)) == [(1, frame(0x92AB, 7))]
    sw.value_set("tagged_types").clear()
    assert sw.process(0, frame(0x88B5, 7)) == [(1, frame(0x88B5, 7))]


def test_value_sets_are_in_the_p4info():
    info = p4info.build_p4info(compile_program(PROGRAM).info)
    (vs,) = info.value_sets
    assert (vs.preamble.name, vs.preamble.id >> 24, vs.size, vs.match[0].bitwidth) == ("P.tagged_types", 0x03, 4, 16)
