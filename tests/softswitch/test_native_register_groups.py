"""Registers declared one after another with the same size and element size share one interleaved
allocation in the native runtime (element i of the group's k-th register next to element i of the
others). Each register must still behave as its own array: the packet path, the control API (read,
write, values, reset) and indices out of bounds see only that register's elements."""

import pytest
from softswitch_testlib import eth, skip_without_c_compiler, source, v1_text

from softswitch.backend_c.descriptor import register_groups
from softswitch.program import RegisterInfo
from softswitch.switch import Switch

# Ingress: the frame's source MAC low byte is an index; lane_a += 1, lane_b += 2, lane_c += 3 at it
# (three bit<32> registers: one group), flag (bit<8>, same size: a group of its own) = 7, wide (bit<32>,
# other size) = 9; the sums go out in the destination MAC.
INGRESS = """
    register<bit<32>>(8) lane_a;
    register<bit<32>>(8) lane_b;
    register<bit<32>>(8) lane_c;
    register<bit<8>>(8) flag;
    register<bit<32>>(16) wide;
    apply {
        bit<32> i = (bit<32>)hdr.eth.src[7:0];
        bit<32> a; bit<32> b; bit<32> c;
        lane_a.read(a, i); lane_b.read(b, i); lane_c.read(c, i);
        lane_a.write(i, a + 1); lane_b.write(i, b + 2); lane_c.write(i, c + 3);
        flag.write(i, 7);
        wide.write(i, 9);
        hdr.eth.dst = (bit<48>)(a + b + c);
        sm.egress_spec = 1;
    }
"""


def test_consecutive_registers_of_one_shape_form_groups():
    regs = [RegisterInfo("a", 32, 8), RegisterInfo("b", 32, 8), RegisterInfo("c", 17, 8),
            RegisterInfo("d", 8, 8), RegisterInfo("e", 32, 16), RegisterInfo("f", 64, 16)]  # fmt: skip
    # c is 17 bits: 4-byte elements like a and b, so one group of three
    assert register_groups(regs) == [(0, 3), (1, 3), (2, 3), (0, 1), (0, 1), (0, 1)]


@pytest.fixture
def sw():
    skip_without_c_compiler("interleaved registers")
    prog = source(v1_text(INGRESS), backend="native")
    assert prog.backend == "native"
    s = Switch(prog)
    yield s
    s.close()


def test_each_register_of_a_group_is_its_own_array(sw):
    frame = eth(src=0x020000000003)
    for _ in range(2):
        (out,) = sw.process(0, frame)
    assert int.from_bytes(out[1][:6], "big") == 1 + 2 + 3  # the second packet sees the first's writes
    assert sw.register("I.lane_a").values == [0, 0, 0, 2, 0, 0, 0, 0]
    assert sw.register("I.lane_b").values == [0, 0, 0, 4, 0, 0, 0, 0]
    assert sw.register("I.lane_c").values == [0, 0, 0, 6, 0, 0, 0, 0]
    assert sw.register("I.flag").values == [0, 0, 0, 7, 0, 0, 0, 0]
    assert sw.register("I.wide").values == [0] * 3 + [9] + [0] * 12


def test_control_writes_and_resets_touch_one_register(sw):
    sw.register("I.lane_b").write(7, 0xFFFFFFFF)
    sw.register("I.lane_a").write(0, 5)
    assert [sw.register(f"I.lane_{x}").read(7) for x in "abc"] == [0, 0xFFFFFFFF, 0]
    assert [sw.register(f"I.lane_{x}").read(0) for x in "abc"] == [5, 0, 0]
    sw.process(0, eth(src=0x020000000007))
    assert [sw.register(f"I.lane_{x}").read(7) for x in "abc"] == [1, 1, 3]  # lane_b wrapped: 2^32 - 1 + 2
    sw.register("I.lane_b").reset()
    assert sw.register("I.lane_b").values == [0] * 8
    assert sw.register("I.lane_a").values == [5, 0, 0, 0, 0, 0, 0, 1]
    assert sw.register("I.lane_c").values == [0] * 7 + [3]


def test_an_index_out_of_bounds_reads_zero_and_writes_nothing(sw):
    # index 8 is one past each lane register: in an interleaved block it would be the next element row
    (out,) = sw.process(0, eth(src=0x020000000008))
    assert int.from_bytes(out[1][:6], "big") == 0
    (out,) = sw.process(0, eth(src=0x020000000008))
    assert int.from_bytes(out[1][:6], "big") == 0
    for name in ("I.lane_a", "I.lane_b", "I.lane_c", "I.flag"):
        assert sw.register(name).values == [0] * 8
    assert sw.register("I.wide").values == [0] * 8 + [9] + [0] * 7
