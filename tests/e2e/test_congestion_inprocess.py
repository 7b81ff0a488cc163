"""Congestion control on the in-process network (virtual clock; docs/design-decisions.md, "Congestion
control"): workers paced to the plan's share of the bottleneck cross links with short queues without a
drop, and a bottleneck slower than the plan knows is found through the switches' ECN marks, which the
server echoes. Sums stay exact; no assertion is about time."""

import dataclasses

import numpy as np
from inprocess_jobs import int_inputs, network, star_topology, workers_and_servers

QUEUE_BYTES = 160 * 1024  # a short drop-tail queue on every link direction (13 ms at 100 Mbit/s)


def _job(net, plan=None, **kwargs):
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = workers_and_servers(net.topo)
    return InProcessJob(net, workers, servers, plan=plan, **kwargs)


def _short_queues(net) -> None:
    for channel in net.net.channels:
        channel.params = dataclasses.replace(channel.params, queue_bytes=QUEUE_BYTES)


def _queue_drops(net) -> int:
    return sum(channel.stats.queue_drops for channel in net.net.channels)


def test_paced_workers_fill_short_queues_without_a_drop():
    net = network(star_topology(4, bandwidth=100.0))
    _short_queues(net)
    job = _job(net)
    assert [t.send_rate for t in job.plan.trees] == [100.0]  # aggregated, multicast: the whole link each
    xs = int_inputs(4, 64 * 1024, seed=1)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert _queue_drops(net) == 0
    assert sum(a.stats["retransmissions"] for a in job.agents) == 0


def test_without_pacing_the_same_queues_drop():
    """The same job on a plan without send rates (a plan written before them): the window's bursts overflow
    the queues (so the test above can fail), and the sums are still exact."""
    net = network(star_topology(4, bandwidth=100.0))
    _short_queues(net)
    from controller.planner import PlanOptions, plan_job

    workers, servers = workers_and_servers(net.topo)
    plan = plan_job(net.topo, workers, servers, PlanOptions(value_count=net.installer.values_per_packet()))
    for tree in plan.trees:
        tree.send_rate = 0.0
    job = _job(net, plan)
    xs = int_inputs(4, 64 * 1024, seed=1)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert _queue_drops(net) > 0


def test_a_bottleneck_the_plan_does_not_know_is_found_by_ecn_marks(program):
    """The server's link carries half the rate the plan paces to: the switch's queue towards the server
    grows past the marking threshold (packets on v1model, cells on TNA), the sums leave marked, the server
    echoes the marks on the results, and the workers cut their rates, with the sums exact. (With results
    from the switch, the server's link carries only copies of the sums, off the workers' path: this is the
    server-completes mode.)"""
    from controller.planner import PlanOptions

    net = network(star_topology(4, bandwidth=100.0), program=program)
    job = _job(net, options=PlanOptions(root_results=False))
    to_server = net.net.channel("s1", "h5")
    to_server.params = dataclasses.replace(to_server.params, bandwidth_bps=50e6)
    xs = int_inputs(4, 64 * 1024, seed=2)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert job.server_agents["h5"].stats["results_marked"] > 0
    for agent in job.agents:
        assert agent.stats["rate_cuts"] > 0
        assert agent.cursors[0].pacer.rate < agent.cursors[0].pacer.ceiling


def test_with_results_from_the_switch_a_slow_worker_link_is_found_by_ecn_marks():
    """Results from the switch (docs/protocol.md, "Root multicast"): the switch marks the RESULTs it queues
    toward a worker whose link is slower than the plan knows, and that worker cuts its rate."""
    net = network(star_topology(4, bandwidth=100.0))
    job = _job(net)
    assert [c.root for c in job.plan.switches] == [True]
    to_h1 = net.net.channel("s1", "h1")
    to_h1.params = dataclasses.replace(to_h1.params, bandwidth_bps=50e6)
    xs = int_inputs(4, 64 * 1024, seed=2)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert job.agents[0].stats["congested_results"] > 0
    assert job.agents[0].stats["rate_cuts"] > 0


def test_a_paced_worker_lets_results_gather_while_its_window_has_room():
    """A paced worker asks for its results in batches of half (RECEIVE_BATCH_SHARE) of its window's room
    while its sends left take HOLD_LEAD_S or more (its rate, not its window, bounds what is in flight: a
    share of the few chunks in flight fell below the transport's MIN_HOLD_ROWS, and the worker took every
    result as it arrived), and of half the chunks in flight otherwise: the tail of a round, and every
    result of an all_reduce whose sends take less (its latency is not held)."""
    from worker.stream import HOLD_LEAD_S, RECEIVE_BATCH_SHARE
    from worker.transport import MIN_HOLD_ROWS

    net = network(star_topology(4, bandwidth=12.0))  # ~1,400 results a second: fewer than K = 1024 on 100 Mbit/s
    job = _job(net)
    hints: list[tuple[int, int, float]] = []  # (rows asked for, chunks in flight, seconds of sends left)
    agent = job.agents[0]

    def record(port: int, rows: int) -> None:
        round_ = agent._round
        if round_ is None:  # the round just finished
            hints.append((rows, 0, 0.0))
            return
        hints.append((rows, round_.in_flight(), max(round_._sends_left_s(w) for w in round_.windows)))

    agent.transport.expect_batches = record  # type: ignore[method-assign]
    xs = int_inputs(4, 16 * 1024, seed=2)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    sending = [(rows, in_flight) for rows, in_flight, left in hints if left >= HOLD_LEAD_S]
    assert sending and all(rows >= MIN_HOLD_ROWS for rows, _ in sending), sending
    share = RECEIVE_BATCH_SHARE
    assert any(in_flight * share < MIN_HOLD_ROWS for _, in_flight in sending), "few chunks in flight: the case at hand"
    assert all(rows == int(in_flight * share) for rows, in_flight, left in hints if left < HOLD_LEAD_S)
    hints.clear()
    small = int_inputs(4, 2_000, seed=3)  # sends of a few ms: never asked for more than its chunks in flight
    for out in job.allreduce(small):
        np.testing.assert_array_equal(out, sum(small))
    assert hints and all(rows == int(in_flight * share) and left < HOLD_LEAD_S for rows, in_flight, left in hints)
