"""Re-planning a running job (controller/replan.py) on the in-process leaf-spine running ina.p4: a
spine's switch dies or a link goes down in the middle of an allreduce; the controller's monitor notices,
the job manager plans a new version on the surviving network, installs it and removes the old entries,
and pushes it to the agents, which move their chunks in flight. Sums stay exact."""

import numpy as np
import pytest
from inprocess_jobs import int_inputs, network

from controller.installer import T_ADMISSION, T_JOBS
from controller.p4rt import decode
from topologies.inprocess.serve import job_counters

WORKERS = [f"h{i}" for i in range(1, 9)]


def _managed_job(net, **kwargs):
    from controller.jobservice import JobManager
    from controller.options import PlanOptions
    from topologies.inprocess.jobs import InProcessJob

    manager = JobManager(net.topo, installer=net.installer)
    plan, installed = manager.register(WORKERS, ["h9"], PlanOptions(**kwargs))
    assert installed
    job = InProcessJob(net, WORKERS, ["h9"], plan=plan, install=False)
    job.follow(manager)
    return manager, job


def _when(net, condition, action, every=50e-6):
    """Run ``action`` on the network's loop as soon as ``condition()`` holds (checked every ``every`` s)."""

    def check():
        if condition():
            action()
        else:
            net.loop.call_later(every, check)

    net.loop.call_soon(check)


def _a_third_done(job):
    """Rank 0 has a third of the round's results: the rest is in flight or still to be sent."""
    round_ = job.agents[0]._round
    return round_ is not None and round_.results_heard >= round_.chunks // 3


def _spine_of(plan):
    (spine,) = {c.switch for c in plan.switches if c.switch.startswith("sp")}
    return spine


def _tree_ids(net, switch, table):
    return {decode(e.match[1].exact.value) for e in net.installer.read_table(switch, table)}


@pytest.mark.parametrize("result_mode", ["unicast", "multicast"])
def test_a_spine_killed_mid_allreduce_moves_the_job_to_the_other_spine(result_mode):
    from controller.replan import FaultMonitor

    net = network("leaf_spine", seed=5)
    manager, job = _managed_job(net, result_mode=result_mode)
    old = job.plan
    dead = _spine_of(old)
    monitor = FaultMonitor(net.installer, manager.switches_in_use, manager.switch_failed, net.loop, 0.002).start()
    xs = int_inputs(8, 64 * 400, seed=3)
    handles = job.start(xs)
    _when(net, lambda: _a_third_done(job), lambda: net.kill_switch(dead))
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()

    new = manager.plan(old.job_id)
    assert new.version == old.version + 1 and monitor.failed.keys() == {dead}
    assert dead not in {c.switch for c in new.switches}
    old_trees, new_trees = {t.tree_id for t in old.trees}, {t.tree_id for t in new.trees}
    assert not old_trees & new_trees
    assert [t.weight for t in new.trees if t.weight == 0] == [0.0]  # the recovery tree
    for switch in net.switches:  # old entries removed from every surviving switch, new ones in
        if switch != dead:
            assert not _tree_ids(net, switch, T_JOBS) & old_trees
            assert not _tree_ids(net, switch, T_ADMISSION) & old_trees
    assert _tree_ids(net, _spine_of(new), T_JOBS) <= new_trees
    assert all(owner[1] in new_trees for owner in manager.resources.slots.owners())
    moved = sum(a.stats["chunks_moved"] for a in job.agents)
    assert moved > 0  # chunks were in flight on the dead spine and went over the recovery tree

    # the next allreduce runs on the new aggregating tree only
    for a in job.agents:
        a.stats.clear()
    ys = int_inputs(8, 640, seed=4)
    for out in job.allreduce(ys):
        np.testing.assert_array_equal(out, sum(ys))
    assert sum(a.stats["chunks_moved"] for a in job.agents) == 0


def test_a_link_cut_mid_allreduce_is_noticed_and_planned_around():
    from controller.replan import FaultMonitor

    net = network("leaf_spine", seed=6)
    manager, job = _managed_job(net)
    spine = _spine_of(job.plan)
    monitor = FaultMonitor(
        net.installer,
        manager.switches_in_use,
        manager.switch_failed,
        net.loop,
        0.002,
        ports=net,
        on_link_failure=manager.link_failed,
    ).start()
    xs = int_inputs(8, 64 * 300, seed=8)
    handles = job.start(xs)
    _when(net, lambda: _a_third_done(job), lambda: net.cut_link("l1", spine))  # nobody tells the controller
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()
    assert monitor.links_failed == {frozenset(("l1", spine))} and not monitor.failed
    new = manager.plan(job.plan.job_id)
    assert new.version == 2
    l1_paths = [t.grad_hops["h1"] for t in new.trees]
    assert all([h.name for h in hops][:2] != ["l1", spine] for hops in l1_paths)


def test_no_tree_left_fails_every_rank_with_one_clear_error():
    from controller.errors import ReplanError
    from worker.stream import AllreduceError

    net = network("leaf_spine", seed=7)
    manager, job = _managed_job(net)
    xs = int_inputs(8, 64 * 200, seed=9)
    handles = job.start(xs)

    refused = []

    def kill_both():
        for spine in ("sp1", "sp2"):
            net.kill_switch(spine)
            try:
                manager.switch_failed(spine, "test: switch killed")
            except ReplanError as exc:
                refused.append(str(exc))

    _when(net, lambda: _a_third_done(job), kill_both)
    for h in handles:
        with pytest.raises(
            AllreduceError, match=r"re-planning job \d+ around the failed switch sp2 failed: .*not connected"
        ):
            h.wait()
    assert len(refused) == 1 and "sp2" in refused[0]
    assert net.loop.now() < 1.0  # at once, not after the agents' time budget


def test_a_spine_killed_under_loss_duplication_and_reordering():
    """With the server completing every sum: it holds each chunk a worker may still miss, so the recovery
    tree finishes the round whatever was lost. With results from the tree's root switch, a chunk whose
    server copy was lost can be gone with the switches' entries (docs/design-decisions.md, "Results from
    the tree's root"); the first test runs that mode on clean links."""
    from controller.replan import FaultMonitor

    net = network("leaf_spine", seed=2)
    net.set_impairments(loss=0.05, duplicate=0.05, reorder=0.1, reorder_delay_s=0.002)
    manager, job = _managed_job(net, root_results=False)
    dead = _spine_of(job.plan)
    monitor = FaultMonitor(net.installer, manager.switches_in_use, manager.switch_failed, net.loop, 0.002).start()
    xs = int_inputs(8, 64 * 300, seed=2)
    handles = job.start(xs)
    _when(net, lambda: _a_third_done(job), lambda: net.kill_switch(dead))
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()
    assert manager.plan(job.plan.job_id).version == 2


def test_workers_that_took_the_new_plan_at_different_allreduces_agree_on_every_later_slot():
    """The new plan version reaches workers at different times: half take it before the next allreduce
    starts, the others only after they started it on the dead spine's tree (their chunks move to the
    recovery tree, the first half's fall back to it). Every later chunk must still land in the same slot
    on every worker: a chunk's slot depends on the plan and its number, not on the rounds a worker ran
    on which tree (a worker counting its chunks per tree would put the next allreduce's chunks in other
    slots than its peers', and no switch would ever complete them)."""
    from controller.jobservice import JobManager
    from controller.options import PlanOptions
    from topologies.inprocess.jobs import InProcessJob

    net = network("leaf_spine", seed=4)
    manager = JobManager(net.topo, installer=net.installer)
    plan, _ = manager.register(WORKERS, ["h9"], PlanOptions())
    job = InProcessJob(net, WORKERS, ["h9"], plan=plan, install=False)
    early, late = job.agents[:4], job.agents[4:]
    versions = []

    def new_version(new, reason: str) -> None:
        versions.append(new)
        for s in new.servers:
            job.server_agents[s.name].update_job(new)
        for agent in early:
            agent.update_plan(new, reason)

    manager.watch(plan.job_id, new_version)
    xs = int_inputs(8, 64 * 100, seed=1)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))

    dead = _spine_of(plan)
    net.kill_switch(dead)
    manager.switch_failed(dead, "test: switch killed")
    (new,) = versions
    ys = int_inputs(8, 64 * 100, seed=2)
    handles = job.start(ys)  # the late half starts it on the old plan's tree
    for agent in late:
        agent.update_plan(new, "test: late")
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(ys))

    for agent in job.agents:
        agent.stats.clear()
    other = _spine_of(new)
    completed = job_counters(net, new)[other]["grad_completed"]
    t0 = net.loop.now()
    zs = int_inputs(8, 64 * 100, seed=3)
    for out in job.allreduce(zs):
        np.testing.assert_array_equal(out, sum(zs))
    assert net.loop.now() - t0 < 1.0  # not after a time budget
    assert sum(a.stats["retransmissions"] for a in job.agents) == 0
    assert job_counters(net, new)[other]["grad_completed"] > completed  # summed on the new spine


def test_a_dead_tree_whose_root_gave_some_workers_the_last_results_is_finished_from_the_workers_values():
    """The root switch multicasts a RESULT and keeps no copy elsewhere (docs/protocol.md, "Root
    multicast"). Here the RESULTs of the round's last chunk never get past the root toward the spine:
    h5 and h6, under the root, finish the allreduce; the six workers behind the spine resend it until the
    spine dies and the job is re-planned. The root's stored sum goes with the old tree's entries, so only
    the workers' own values can finish the chunk on the recovery tree: those still in the round offer
    them with their chunks in flight (Round.trees_changed), the two that finished it offer the last pool
    they kept (RoundTail)."""
    from controller.replan import FaultMonitor
    from protocol import codec
    from protocol import constants as C

    net = network("leaf_spine", seed=5, engine="python")
    manager, job = _managed_job(net, result_mode="multicast")
    old = job.plan
    (root,) = [c.switch for c in old.switches if c.root]
    dead = _spine_of(old)
    assert root == "l3" and dead == "sp1"  # h5 and h6 hang off the root; the others are behind the spine
    xs = int_inputs(8, 64 * 60, seed=9)
    handles = job.start(xs)
    round_ = job.agents[0]._round
    last_seq = (round_.first_seq + round_.chunks - 1) & 0xFFFFFFFF
    toward_spine = net.net.channel(root, dead)
    send, dropped = toward_spine.send, []

    def without_the_last_result(frame: bytes) -> None:
        pkt = codec.decode(codec.split_udp_frame(frame)[1], values_per_packet=None)
        if pkt.header.pkt_type == C.PKT_TYPE_RESULT and pkt.header.seq == last_seq:
            dropped.append(pkt.header.flags)
            return
        send(frame)

    toward_spine.send = without_the_last_result
    finished_under_root = [job.agents[4], job.agents[5]]  # h5, h6
    monitor = FaultMonitor(net.installer, manager.switches_in_use, manager.switch_failed, net.loop, 0.002)

    def behind_spine_resent() -> bool:
        return all(a._round is None for a in finished_under_root) and len(dropped) >= 2

    _when(net, behind_spine_resent, lambda: (net.kill_switch(dead), monitor.start()))
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()
    assert manager.plan(old.job_id).version == old.version + 1
    assert dropped[0] & C.FLAG_MCAST and any(flags & C.FLAG_STORED for flags in dropped[1:])  # root's answers
    for agent in finished_under_root:  # offered their kept last pool, once, after the round
        assert 0 < agent.stats["finished_chunks_offered"] <= old.pool_size
    for agent in job.agents[:4] + job.agents[6:]:
        assert agent.stats["chunks_moved"] == 1  # the last chunk, resent over the recovery tree
