"""clone3(type, session, data) and resubmit(data) / recirculate(data): the user metadata fields named in
`data` (nested fields, a whole sub-struct or the whole struct) keep their values in the new packet."""

from softswitch_testlib import eth, program

from softswitch.switch import Switch


def frame(pass_no, etype=0x88B5):
    return eth(etype=etype, payload=bytes([pass_no, 0, 0, 0]))


def out(instance_type, pass_no, kept, inner, dropped):
    return eth(etype=instance_type, payload=bytes([pass_no, kept, inner, dropped]))


def test_clone3_keeps_listed_fields_only():
    sw = Switch(program("compat_preserve_data.p4"))
    sw.set_clone_session(9, [(5, 0)])
    got = sorted(sw.process(0, frame(1)))
    # original: all metadata as ingress left it; clone (instance 1): kept and nested.x preserved, dropped 0
    assert got == [(1, out(0, 1, 0x11, 0x22, 0x33)), (5, out(1, 1, 0x11, 0x22, 0x00))]


def test_resubmit_with_a_sub_struct_keeps_all_its_fields():
    sw = Switch(program("compat_preserve_data.p4"))
    assert sw.process(0, frame(2)) == [(1, out(6, 2, 0x00, 0x55, 0x00))]
    assert sw.stats["resubmitted"] == 1


def test_recirculate_with_the_whole_struct_keeps_everything():
    sw = Switch(program("compat_preserve_data.p4"))
    assert sw.process(0, frame(3)) == [(1, out(4, 3, 0x77, 0x88, 0x99))]
    assert sw.stats["recirculated"] == 1
