"""Resource limits of p4src/ina.p4 on one switch: the full 32-child bitmap, fan-in above MAX_FAN_IN."""

import numpy as np

from protocol import codec
from protocol import constants as C
from protocol.codec import Hop
from softswitch.switch import Exact, Switch, TableEntry

SERVER = C.HOST_NODE_ID_BASE


def _switch(program):
    sw = Switch(program, name="limits")
    sw.table("InaIngress.switch_identity").set_default("InaIngress.set_switch_id", {"switch_id": 1})
    sw.table("InaIngress.ina_jobs").insert(
        TableEntry(
            matches={"hdr.ina.job_id": Exact(3), "hdr.ina.tree_id": Exact(0)},
            action="InaIngress.set_job",
            args={
                "job_index": 2,
                "slot_base": 0,
                "pool_size": 1,
                "max_fan_in": 255,
                "aggregates": 1,
                "result_group": 0,
            },
        )
    )
    return sw


def _frame(fan_in, child, values):
    pkt = codec.grad(3, 1, [Hop(1, True, fan_in, child, 9), Hop(SERVER, True, 1, 0, 0)], values)
    return codec.build_frame(pkt, "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2")


def test_thirty_two_children_fill_the_bitmap(ina_program):
    sw = _switch(ina_program)
    rng = np.random.default_rng(32)
    parts = rng.integers(-(2**25), 2**25, size=(C.MAX_FAN_IN, C.VALUES_PER_PACKET))
    out = []
    for child in rng.permutation(C.MAX_FAN_IN):
        out += sw.process(1, _frame(C.MAX_FAN_IN, int(child), parts[child]))
    assert len(out) == 1 and out[0][0] == 9
    _, pkt = codec.parse_frame(out[0][1])
    assert np.array_equal(pkt.values, parts.sum(axis=0))
    assert sw.register("InaIngress.slot_bitmap").read(0) == 0xFFFFFFFF
    assert sw.register("InaIngress.slot_count").read(0) == C.MAX_FAN_IN
    assert sw.counter("InaIngress.drop_stats").read(C.DROP_ABSORBED)[0] == C.MAX_FAN_IN - 1


def test_fan_in_above_max_fan_in_is_refused_even_if_the_job_allows_it(ina_program):
    sw = _switch(ina_program)
    assert sw.process(1, _frame(C.MAX_FAN_IN + 1, 0, [1])) == []
    assert sw.counter("InaIngress.drop_stats").read(C.DROP_BAD_FAN_IN)[0] == 1
    assert sw.counter("InaIngress.ina_stats").read(2 * C.NUM_STATS + C.STAT_DROPPED)[0] == 1
    assert sw.register("InaIngress.slot_count").read(0) == 0
