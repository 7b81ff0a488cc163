"""Results from the tree's root switch (docs/protocol.md, "Root multicast"): on the in-process network
running p4src/ina.p4, the switch that aggregates every worker of a tree sends the RESULTs down itself,
keeps each sum to answer a resend, and sends the server nothing; the server is off the common path. Sums stay exact; a lost RESULT comes back to the worker that missed it only. The tests that
drop one chosen RESULT intercept a link direction's frames in Python, so they run on the Python engine
(the sim engine carries frames in native code)."""

import numpy as np
import pytest
from inprocess_jobs import int_inputs, network, star_topology, workers_and_servers

from protocol import codec
from protocol import constants as C


def _job(net, n_workers=None, **kwargs):
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = workers_and_servers(net.topo, n_workers)
    return InProcessJob(net, workers, servers, **kwargs)


def _stat(net, plan, switch, stat):
    index = plan.job_index * C.NUM_STATS + stat
    return net.installer.read_stats(switch, [index])[index][0]


def _watch_results(channel, drop_first_of_seq=None, drop_first=False):
    """Count the RESULTs crossing ``channel`` by seq; drop the first one of seq ``drop_first_of_seq`` (or,
    ``drop_first``, the first RESULT of all; its seq is then ``seen["dropped"]``)."""
    seen: dict = {}
    send = channel.send

    def watched(frame: bytes) -> None:
        _, payload = codec.split_udp_frame(frame)
        pkt = codec.decode(payload, values_per_packet=None)
        if pkt.header.pkt_type == C.PKT_TYPE_RESULT:
            seq = pkt.header.seq
            seen[seq] = seen.get(seq, 0) + 1
            if (seq == drop_first_of_seq and seen[seq] == 1) or (drop_first and "dropped" not in seen):
                seen["dropped"] = seq
                return
        send(frame)

    channel.send = watched
    return seen


@pytest.mark.parametrize("topo,n", [("star", 4), ("leaf_spine", 8)])
def test_exact_sums_with_results_from_the_root_and_no_server_results(topo, n):
    net = network(topo)
    job = _job(net, n)
    assert sum(c.root for c in job.plan.switches) == len(job.plan.trees)  # each tree's switch aggregating all
    xs = int_inputs(n, 64 * 40, seed=n)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    net.loop.run(0.01)  # anything on its way to the server would have arrived by now
    servers = [job.server_agents[s.name].stats for s in job.plan.servers]
    # the server is off the common path: it hears nothing (no copy of the sums) and sends nothing
    assert sum(s["results_sent"] + s["contributions"] + s["root_copies"] for s in servers) == 0
    if topo == "star":  # (a switch's counters are the job's, over all its trees: one tree here)
        assert _stat(net, job.plan, "s1", C.STAT_GRAD_COMPLETED) == 40
        assert _stat(net, job.plan, "s1", C.STAT_RESULT_MULTICAST) == 40


def test_a_lost_result_is_answered_by_the_roots_stored_sum_to_that_worker_only():
    net = network(star_topology(3), engine="python")
    job = _job(net, timeout=0.002)
    to_h1 = _watch_results(net.net.channel("s1", "h1"), drop_first_of_seq=5)
    to_h2 = _watch_results(net.net.channel("s1", "h2"))
    xs = int_inputs(3, 64 * 12, seed=7)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert to_h1[5] == 2  # the multicast RESULT (dropped), then the root's answer to h1's resend
    assert set(to_h2.values()) == {1}  # h2 got each chunk once: no copy of h1's answer
    assert _stat(net, job.plan, "s1", C.STAT_GRAD_STORED_ANSWER) == 1
    assert job.agents[0].stats["retransmissions"] >= 1
    net.loop.run(0.01)
    assert job.server_agents["h4"].stats["results_sent"] == 0  # answered by the switch, not the server


def test_a_result_lost_on_its_way_to_a_lower_switch_is_answered_from_the_root_to_that_switchs_workers():
    """Leaf-spine: the root's RESULT toward the switch below it is lost, so that switch keeps its complete
    cell and its workers resend: the lower switch passes its stored sum up, the root answers it back down
    that way, and the lower switch replicates it to its workers and releases its cell."""
    net = network("leaf_spine", engine="python")
    job = _job(net, 8, timeout=0.002)
    (tree0_root,) = [c.switch for c in job.plan.switches if c.root and c.tree_id == 0]
    # the switch right under the root in tree 0 (a member of the root's group that is a switch)
    (below,) = [
        m.toward
        for c in job.plan.switches
        if c.switch == tree0_root and c.tree_id == 0
        for m in c.members
        if net.topo.is_switch(m.toward)
    ]
    down = _watch_results(net.net.channel(tree0_root, below), drop_first=True)
    xs = int_inputs(8, 64 * 40, seed=11)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    # the RESULT (lost), then the root's answers to the stored sums passed up: at most one per resend (those
    # that reached it before the first answer released the lower switches' cells)
    resends = sum(a.stats["retransmissions"] for a in job.agents)
    assert 2 <= down[down["dropped"]] <= 1 + resends
    assert _stat(net, job.plan, tree0_root, C.STAT_GRAD_STORED_ANSWER) >= 2  # below's stored sum, then root's
    net.loop.run(0.01)
    assert sum(job.server_agents[s.name].stats["results_sent"] for s in job.plan.servers) == 0


def test_with_the_server_completing_sums_a_resend_is_answered_to_its_sender_only():
    from controller.planner import PlanOptions

    net = network(star_topology(3), engine="python")
    job = _job(net, timeout=0.002, options=PlanOptions(result_mode="multicast", root_results=False))
    assert not any(c.root for c in job.plan.switches)
    to_h1 = _watch_results(net.net.channel("s1", "h1"), drop_first_of_seq=5)
    to_h2 = _watch_results(net.net.channel("s1", "h2"))
    xs = int_inputs(3, 64 * 12, seed=8)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert to_h1[5] == 2
    assert set(to_h2.values()) == {1}  # the server's answer went to h1 alone, not multicast to every worker
    server = job.server_agents["h4"].stats
    assert server["answered_retransmissions"] == 1
    assert server["results_sent"] == 12 + 1  # a multicast RESULT per chunk, and the one answer


def test_the_tna_program_keeps_the_server_hop():
    net = network("star", program="tna")
    job = _job(net, 2)
    assert not any(c.root for c in job.plan.switches)  # its set_job cannot say "root" (docs/tofino.md)
    xs = int_inputs(2, 64 * 6, seed=9)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert job.server_agents[job.plan.servers[0].name].stats["results_sent"] == 6


def test_the_installer_refuses_root_results_on_a_program_without_them():
    from controller.errors import InstallError
    from controller.planner import PlanOptions, plan_job

    net = network("star", program="tna")
    workers, servers = workers_and_servers(net.topo, 2)
    plan = plan_job(net.topo, workers, servers, PlanOptions(root_results=True, value_count=64))
    assert [c.root for c in plan.switches] == [True]
    with pytest.raises(InstallError, match=r"cannot send results from the tree's root .*root_results=False"):
        net.install_job(plan)
