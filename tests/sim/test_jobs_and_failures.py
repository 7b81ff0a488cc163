"""Several jobs on one simulated fabric, and a spine that fails mid-round: exact sums through the P4
program for every job, a lost round that ends when nobody re-plans (workers give up, nothing hangs), and
the controller's re-plan around the dead switch (controller/replan.py) carrying the next round
(tests/sim/test_recovery.py: the re-plan within the round)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from controller.generators import fat_tree
from sim.allreduce import WorkerValues, plan_ina, replan_ina, run_ina, run_ina_jobs
from sim.errors import SimError
from sim.network import SimNetwork

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)


def _net() -> tuple[SimNetwork, list[str]]:
    topo = fat_tree(4)
    net = SimNetwork(topo)
    net.install_routes(routes=False)
    return net, [h.name for h in topo.hosts]


def test_two_jobs_share_the_fabric_with_their_own_ids_slots_and_exact_sums():
    net, hosts = _net()
    a = plan_ina(net, hosts[0:7], hosts[7])
    b = plan_ina(net, hosts[8:15], hosts[15])
    assert a.job_id != b.job_id
    values = [WorkerValues.random(7, 32 * K, seed=1), WorkerValues.random(7, 32 * K, seed=2)]
    assert not np.array_equal(values[0].total(), values[1].total())
    both = run_ina_jobs(net, [(a, values[0]), (b, values[1])])
    for result in both:
        assert result.finished == 7 and result.mismatches == 0
    net.fresh_core()
    alone = run_ina(net, plan_ina(net, hosts[0:7], hosts[7]), values[0])
    assert alone.mismatches == 0
    # sharing links cannot make a job faster than the same job alone on the fabric
    assert both[0].completion_s >= alone.completion_s * 0.999
    net.close()


def test_concurrent_jobs_must_not_share_a_host():
    net, hosts = _net()
    a = plan_ina(net, hosts[0:4], hosts[7])
    b = plan_ina(net, hosts[3:6], hosts[8])
    with pytest.raises(SimError, match="must not share a host"):
        run_ina_jobs(net, [(a, WorkerValues.random(4, K)), (b, WorkerValues.random(3, K))])
    net.close()


def test_a_spine_failing_mid_round_loses_the_round_and_the_replan_carries_the_next():
    net, hosts = _net()
    workers, server = hosts[:-1], hosts[-1]
    plan = plan_ina(net, workers, server)
    tree = plan.trees[0]
    spines = [s for s in tree.aggregation_points if s.startswith("c")] or [
        n for edge in tree.edges for n in edge if n.startswith("c")
    ]
    assert spines, f"the tree crosses no core switch: {tree.edges}"
    values = WorkerValues.random(len(workers), 64 * K, seed=4)
    lost = run_ina(net, plan, values, failures=[(0.0002, spines[0])])
    assert lost.finished < len(workers) and lost.completion_s == -1.0  # ended: workers gave up
    new = replan_ina(net, plan, [spines[0]])
    assert new.job_id == plan.job_id and spines[0] not in {n for t in new.trees for e in t.edges for n in e}
    net.fresh_core()
    again = run_ina(net, new, values)
    assert again.finished == len(workers) and again.mismatches == 0
    net.close()


def test_a_removed_jobs_slots_serve_the_next_job_under_a_new_id():
    net, hosts = _net()
    values = WorkerValues.random(7, 16 * K, seed=6)
    first = plan_ina(net, hosts[0:7], hosts[7])
    assert run_ina(net, first, values).mismatches == 0
    net.remove_job(first)
    net.fresh_core()
    second = plan_ina(net, hosts[0:7], hosts[7])
    assert second.job_id != first.job_id  # the switches' slots still name (first.job_id, seq) as owners
    slots = {(c.switch, c.slot_base) for c in first.switches if c.aggregates}
    assert slots == {(c.switch, c.slot_base) for c in second.switches if c.aggregates}  # the same cells again
    result = run_ina(net, second, values)
    assert result.finished == 7 and result.mismatches == 0
    net.close()


def test_a_plan_that_has_run_is_refused_a_second_round_with_the_reason():
    """The simulated agents start a run at chunk 0 on shadow 0, where the plan's switch slots still hold
    the first round's chunks; a second run of that plan would be taken as stale or added to old sums, so
    it is refused by name instead of giving wrong sums."""
    net, hosts = _net()
    values = WorkerValues.random(7, 16 * K, seed=6)
    plan = plan_ina(net, hosts[0:7], hosts[7])
    assert run_ina(net, plan, values).mismatches == 0
    with pytest.raises(SimError, match=rf"job {plan.job_id} \(plan version 1\) has run a round .* plan a new job"):
        run_ina(net, plan, values)
    net.close()
