"""The in-process link model on a virtual clock: serialisation + propagation, FIFO, counters,
seeded impairments (two hosts joined by one link, no switch), on both engines: the Python ``Network`` and
the simulator's native core (``topologies.inprocess.sim_engine``), one specification."""

import shutil

import pytest

from topologies.inprocess.network import LinkParams, Network
from worker.loop import VirtualLoop

HAVE_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None


@pytest.fixture(params=["python", pytest.param("sim", marks=pytest.mark.skipif(not HAVE_CC, reason="no C compiler"))])
def engine(request) -> str:
    return request.param


def _network(engine, loop, seed):
    if engine == "sim":
        from topologies.inprocess.sim_engine import SimEngineNetwork

        return SimEngineNetwork(loop, seed)
    return Network(loop, seed)


def _pair(engine="python", **params):
    loop = VirtualLoop()
    net = _network(engine, loop, params.pop("seed", 0))
    a = net.add_host("a", "10.0.0.1", "02:00:00:00:00:01")
    b = net.add_host("b", "10.0.0.2", "02:00:00:00:00:02")
    net.connect("a", 0, "b", 0, LinkParams(**params))
    got = []
    b.handler = lambda frame: got.append((loop.now(), frame))
    return loop, net, a, got


def test_serialisation_and_delay_follow_the_link_not_the_cpu(engine):
    loop, net, a, got = _pair(engine, bandwidth_bps=8e6, delay_s=0.01)  # 1 byte per microsecond
    for i in range(3):
        a.send(bytes([i]) * 1000)
    loop.run()
    times = [t for t, _ in got]
    assert times == pytest.approx([0.011, 0.012, 0.013])  # FIFO: 1 ms each + 10 ms
    assert [f[0] for _, f in got] == [0, 1, 2]
    stats = net.channel("a", "b").stats
    assert (stats.packets, stats.bytes) == (3, 3000)
    assert net.channel("b", "a").stats.packets == 0


def test_loss_is_seeded_and_counted(engine):
    def run(seed):
        loop, net, a, got = _pair(engine, bandwidth_bps=1e9, delay_s=1e-6, loss=0.3, seed=seed)
        for i in range(200):
            a.send(i.to_bytes(2, "big"))
        loop.run()
        return [f for _, f in got], net.channel("a", "b").stats.lost

    first, lost = run(1)
    assert run(1) == (first, lost) and run(2)[0] != first
    assert len(first) + lost == 200 and 30 < lost < 90


def test_duplication_and_reordering(engine):
    loop, net, a, got = _pair(engine, bandwidth_bps=1e9, delay_s=1e-6, duplicate=0.5, reorder=0.5, reorder_delay_s=1e-3)
    for i in range(100):
        a.send(i.to_bytes(2, "big"))
    loop.run()
    order = [int.from_bytes(f, "big") for _, f in got]
    stats = net.channel("a", "b").stats
    assert len(order) == 100 + stats.duplicated and stats.duplicated > 20
    assert order != sorted(order) and stats.reordered > 20


def test_queue_limit_drops_tail(engine):
    loop, net, a, got = _pair(engine, bandwidth_bps=8e3, delay_s=0.0, queue_bytes=3000)
    for _ in range(10):
        a.send(bytes(1000))
    loop.run()
    assert len(got) == 4 and net.channel("a", "b").stats.queue_drops == 6


def test_a_cut_direction_loses_and_a_dead_host_neither_sends_nor_hears(engine):
    loop, net, a, got = _pair(engine, bandwidth_bps=1e9, delay_s=1e-6)
    net.channel("a", "b").enabled = False
    a.send(bytes(100))
    net.channel("a", "b").enabled = True
    a.send(bytes(100))
    loop.run()
    net.nodes["b"].alive = False
    a.send(bytes(100))  # carried, not heard
    a.alive = False
    a.send(bytes(100))  # never sent
    loop.run()
    stats = net.channel("a", "b").stats
    assert (stats.lost, stats.packets, len(got)) == (1, 2, 1)


def test_reset_stats_keeps_what_the_old_counters_counted(engine):
    loop, net, a, got = _pair(engine, bandwidth_bps=1e9, delay_s=1e-6)
    a.send(bytes(100))
    loop.run()
    before = net.channel("a", "b").stats
    net.reset_stats()
    a.send(bytes(50))
    loop.run()
    assert (before.packets, before.bytes) == (1, 100)
    assert net.link_stats()["a:0->b:0"]["bytes"] == 50
