"""p4src/ina.p4 on both back ends: the two-level fabric of tests/dataplane (every transmission of
whole allreduces, clean and with lost and duplicated packets) and a seeded fuzz run of at least
10,000 frames per back end (bench/fuzz_backends.py runs 100,000 and more)."""

import random
from pathlib import Path

import ina_traffic
import numpy as np
from backend_pair import NEEDS_NATIVE, BackendPair, mutations
from ina_fabric import SWITCH_IDS, Fabric, Hosts, configure

from protocol import constants as C
from softswitch.compiler import compile_program

pytestmark = NEEDS_NATIVE

HERE = Path(__file__).resolve().parent

FUZZ_FRAMES = 10_000


class PairedSwitch:
    """A fabric switch that is a BackendPair: every frame runs on both back ends and must agree."""

    def __init__(self, pair: BackendPair):
        self.pair = pair

    def process(self, port, frame):
        return self.pair.process(port, frame)

    def register(self, name):
        return self.pair.python.register(name)

    def counter(self, name):
        return self.pair.python.counter(name)


class PairedFabric(Fabric):
    def __post_init__(self):
        python = compile_program(str(ina_traffic.INA_P4), backend="python")
        native = compile_program(str(ina_traffic.INA_P4), backend="native")
        for name, switch_id in SWITCH_IDS.items():
            pair = BackendPair(python, native)
            pair.call(lambda sw, i=switch_id: configure(sw, i))
            self.switches[name] = PairedSwitch(pair)

    def check_state(self):
        for s in self.switches.values():
            s.pair.check_state()


def chunks(count, seed):
    rng = np.random.default_rng(seed)
    return {
        seq: [rng.integers(-(2**31), 2**31 - 1, size=C.VALUES_PER_PACKET).astype(np.int32) for _ in range(4)]
        for seq in range(count)
    }


def test_fabric_allreduce_clean_on_both_back_ends():
    fabric = PairedFabric(program=None)
    hosts = Hosts(fabric, chunks(9, 1)).run()
    assert not hosts.missing()
    fabric.check_state()


def test_fabric_allreduce_with_losses_and_duplicates_on_both_back_ends():
    rng = random.Random(7)

    def tap(index, src, dst, frame):
        roll = rng.random()
        return [] if roll < 0.1 else [frame, frame] if roll < 0.2 else [frame]

    fabric = PairedFabric(program=None, tap=tap)
    Hosts(fabric, chunks(12, 2)).run(order=(3, 1, 0, 2), max_rounds=6)
    fabric.check_state()


def test_ina_fuzz_on_both_back_ends():
    rng = random.Random(2024)
    pair = BackendPair.from_path(ina_traffic.INA_P4)
    try:
        pair.call(ina_traffic.configure)
        seeds = [ina_traffic.random_frame(rng)[1] for _ in range(200)]
        frames = 0
        while frames < FUZZ_FRAMES:
            if rng.random() < 0.6:
                port, frame = ina_traffic.random_frame(rng)
            else:
                port, frame = rng.choice(ina_traffic.PORTS), next(mutations(rng, seeds, 1))
            pair.process(port, frame)
            frames += 1
            if frames % 2500 == 0:
                pair.check_state()
        pair.check_state()
        stats = pair.python.stats
        assert stats["received"] == FUZZ_FRAMES
        # the run reached the aggregation and its corners, not only the parser
        ina_stats = pair.python.counter("InaIngress.ina_stats")
        job = ina_traffic.S.JOB_UNICAST["job_index"] * C.NUM_STATS
        for stat in (C.STAT_GRAD_AGGREGATED, C.STAT_GRAD_COMPLETED, C.STAT_GRAD_DUPLICATE, C.STAT_RESULT_RELEASED):
            assert ina_stats.read(job + stat)[0] > 0, C.STAT_NAMES[stat]
    finally:
        pair.close()
