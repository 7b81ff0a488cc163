"""Table forms found in third-party v1model programs: bound action arguments in the actions
list and default_action, STF stack keys (`stack$0.f`) and STF priority order (higher number wins)."""

import os

import pytest
from softswitch_testlib import PROGRAMS, eth, program, v1

from softswitch.frontend.errors import P4Error
from softswitch.stf import run_stf
from softswitch.switch import Switch, TableEntry, Ternary


def test_bound_actions_program_passes_its_stf():
    r = run_stf(os.path.join(PROGRAMS, "compat_bound_actions.p4"), os.path.join(PROGRAMS, "compat_bound_actions.stf"))
    assert r.ok, str(r)
    assert (r.packets_sent, r.packets_checked) == (3, 3)


def test_bound_out_parameter_is_written_back_and_only_action_data_is_in_p4info():
    sw = Switch(program("compat_bound_actions.p4"))
    put = sw.info.action("I.put")
    assert [p.name for p in put.params] == ["v"]  # the bound 'dst' is not control-plane data
    sw.table("I.classify").insert(
        TableEntry(matches={"hdr.tags[0].kind": Ternary(0x30, 0xF0)}, action="I.put", args={"v": 0x5C}, priority=1)
    )
    frame = eth(etype=0x88B5, payload=bytes([0x31, 0x01, 0x00]))
    assert sw.process(2, frame) == [(7, eth(etype=0x88B5, payload=bytes([0x31, 0x5C, 0x00])))]


def test_binding_wrong_number_of_arguments_is_a_clean_error():
    with pytest.raises(P4Error) as ei:
        v1("""
        action put(out bit<8> dst, bit<8> v) { dst = v; }
        table t { key = { hdr.eth.etype: exact; } actions = { put; } }
        apply { t.apply(); }""")
    assert str(ei.value).startswith(
        "t.p4:15:63: error: "
    ) and "must bind its 1 directional parameter(s) (dst), got 0" in str(ei.value)


def test_binding_arguments_of_an_action_without_directional_parameters_is_rejected():
    with pytest.raises(P4Error) as ei:
        v1("""
        action a(bit<8> v) { }
        table t { key = { hdr.eth.etype: exact; } actions = { a(1); } }
        apply { t.apply(); }""")
    assert "action a has no directional parameters to bind" in str(ei.value)
