"""Multi-hop aggregation on a two-level fabric of softswitches running p4src/ina.p4.

Two leaves each aggregate two workers, the spine aggregates the leaves, the server receives one packet per
chunk holding the four-way sum, and the results flowing back release every slot. Then every single
packet of a chunk is lost, or duplicated, in turn, and the worker orders are permuted: the sums stay exact
and the slots end free. The same for MASKED chunks (2:4, 1:4): the leaves expand them, their sums go
up as the chunk's dense sum, and the sum equals the dense sum of the workers' restored vectors.
"""

import itertools

import numpy as np
import pytest
from ina_fabric import POOL, Fabric, Hosts

from protocol import constants as C
from protocol import layouts as L

MASKED = [L.TWO_OF_FOUR, L.ONE_OF_FOUR]


def make_chunks(count: int, seed: int = 0, layout: L.Layout = L.DENSE) -> dict[int, list[np.ndarray]]:
    """Each chunk's four contributions: dense values, or (MASKED) positions of which N per group of four
    are non-zero, so the restored vector is the chunk itself."""
    rng = np.random.default_rng(seed)
    width = layout.positions(C.VALUES_PER_PACKET)

    def one() -> np.ndarray:
        values = rng.integers(-(2**29), 2**29, size=width).astype(np.int32)
        if layout.masked:
            order = rng.permuted(np.tile(np.arange(4), (width // 4, 1)), axis=1)
            values.reshape(-1, 4)[order >= layout.keep] = 0
        return values

    return {seq: [one() for _ in range(4)] for seq in range(count)}


def assert_exact_and_free(hosts: Hosts, fabric: Fabric):
    assert not hosts.missing(), f"results missing for (worker, seq): {hosts.missing()}"
    for seq, parts in hosts.chunks.items():
        total = np.sum(np.stack(parts).astype(np.int64), axis=0)
        assert np.array_equal(hosts.server_sums[seq], total), f"server sum of chunk {seq}"
        for worker in range(4):
            assert np.array_equal(hosts.results[(worker, seq)], total), f"result of worker {worker} chunk {seq}"
    for name in ("L1", "L2", "S"):
        assert fabric.slot_state(name) == [(0, 0)] * (2 * POOL), f"{name} has slots still in use"


@pytest.mark.parametrize("layout", MASKED, ids=lambda x: x.name)
def test_two_level_masked_clean(ina_program, layout):
    fabric = Fabric(ina_program)
    chunks = make_chunks(2 * POOL + 1, layout=layout)  # slots reused across both shadow sets
    hosts = Hosts(fabric, chunks, layout).run()
    assert_exact_and_free(hosts, fabric)
    assert all(n == 1 for n in hosts.server_packets.values()), "one packet per chunk reaches the server"
    for name, expanded in (("L1", 2), ("L2", 2), ("S", 0)):  # the leaves expand their workers' packets
        stats = fabric.switches[name].counter("InaIngress.ina_stats")
        assert stats.read(C.NUM_STATS + C.STAT_GRAD_MASKED)[0] == expanded * len(chunks)
        assert stats.read(C.NUM_STATS + C.STAT_GRAD_COMPLETED)[0] == len(chunks)
    # MASKED on the workers' links, the chunk's dense sum from the leaves up
    worker_links = [h.layout for src, dst, h in fabric.transmissions if src == ("host",) and dst[0] != "S"]
    leaf_links = [h.layout for src, dst, h in fabric.transmissions if src[0] in ("L1", "L2") and dst[0] == "S"]
    assert worker_links == [layout] * 4 * len(chunks)
    assert leaf_links == [layout.sum_layout] * 2 * len(chunks)


def test_two_level_clean(ina_program):
    fabric = Fabric(ina_program)
    hosts = Hosts(fabric, make_chunks(2 * POOL + 1)).run()  # slots reused across both shadow sets
    assert_exact_and_free(hosts, fabric)
    assert all(n == 1 for n in hosts.server_packets.values()), "one packet per chunk reaches the server"
    # 4 worker GRADs + 2 leaf sums + 1 spine sum + 4 x (server->S, S->leaf, leaf->worker) results
    assert len(fabric.transmissions) == (4 + 2 + 1 + 12) * len(hosts.chunks)
    # per-job counters of the spine: two contributions per chunk, one completion
    spine = fabric.switches["S"].counter("InaIngress.ina_stats")
    base = 1 * C.NUM_STATS
    assert spine.read(base + C.STAT_GRAD_AGGREGATED)[0] == 2 * len(hosts.chunks)
    assert spine.read(base + C.STAT_GRAD_COMPLETED)[0] == len(hosts.chunks)
    assert spine.read(base + C.STAT_RESULT_RELEASED)[0] == 4 * len(hosts.chunks)


def _one_chunk_transmissions(ina_program) -> int:
    fabric = Fabric(ina_program)
    Hosts(fabric, make_chunks(1)).run()
    return len(fabric.transmissions)


@pytest.mark.parametrize("layout", [L.DENSE, *MASKED], ids=lambda x: x.name)
@pytest.mark.parametrize("fault", ["loss", "duplicate"])
def test_every_single_fault_in_a_chunk(ina_program, fault, layout):
    count = _one_chunk_transmissions(ina_program)
    assert count == 19
    recoveries = {C.STAT_GRAD_STORED_ANSWER: 0, C.STAT_GRAD_RELEASED_FORWARD: 0, C.STAT_GRAD_DUPLICATE: 0}
    for victim in range(count):

        def tap(index, src, dst, frame, victim=victim):
            if index != victim:
                return [frame]
            return [] if fault == "loss" else [frame, frame]

        fabric = Fabric(ina_program, tap=tap)
        hosts = Hosts(fabric, make_chunks(1, seed=victim, layout=layout), layout).run()
        try:
            assert_exact_and_free(hosts, fabric)
        except AssertionError as e:
            src, dst, header = fabric.transmissions[victim]
            raise AssertionError(
                f"{fault} of transmission {victim} ({src} -> {dst}, flags 0x{header.flags:02x}): {e}"
            ) from None
        for stat in recoveries:
            recoveries[stat] += sum(
                sw.counter("InaIngress.ina_stats").read(C.NUM_STATS + stat)[0] for sw in fabric.switches.values()
            )
    # the faults drove the switches through every recovery path of the slot state machine
    if fault == "loss":
        assert all(recoveries.values()), recoveries
    else:
        assert recoveries[C.STAT_GRAD_DUPLICATE] > 0, recoveries


@pytest.mark.parametrize("layout", [L.DENSE, L.TWO_OF_FOUR], ids=lambda x: x.name)
def test_every_worker_order(ina_program, layout):
    for order in itertools.permutations(range(4)):
        fabric = Fabric(ina_program)
        seed = sum(order[i] * 4**i for i in range(4))
        hosts = Hosts(fabric, make_chunks(2, seed=seed, layout=layout), layout).run(order=order)
        assert_exact_and_free(hosts, fabric)
        assert all(n == 1 for n in hosts.server_packets.values())


@pytest.mark.parametrize("layout", [L.DENSE, *MASKED], ids=lambda x: x.name)
def test_interleaved_chunks_and_worker_reordering(ina_program, layout):
    """Chunks in flight at once: worker 3 sends all its chunks first, then the others, in reverse."""
    fabric = Fabric(ina_program)
    chunks = POOL
    hosts = Hosts(fabric, make_chunks(chunks, layout=layout), layout)
    hosts.send_grads([3])
    for seq in reversed(range(chunks)):
        hosts.send_grads([2, 0, 1], seqs=[seq])
    assert_exact_and_free(hosts, fabric)
