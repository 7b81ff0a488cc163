"""Multi-tree INA in the simulator: a worker stripes its chunks over the plan's trees as the agent does
(worker.stream.Striping), every tree's switches aggregate their share through the P4 program, the sums are
exact, and each tree carries its weight's share of the chunks."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from controller.generators import fat_tree
from sim.allreduce import AgentModel, WorkerValues, plan_ina, run_ina
from sim.network import SimNetwork
from worker.stream import Striping

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)


@pytest.mark.parametrize("agent", [None, AgentModel(timeout_s=0.05)], ids=["fixed-window", "agents"])
def test_chunks_striped_over_the_trees_sum_exactly_and_each_tree_carries_its_share(agent):
    topo = fat_tree(4, bandwidth=10000.0, host_bandwidth=40000.0, delay=0.01)  # hosts outrun one core path
    hosts = [h.name for h in topo.hosts]
    net = SimNetwork(topo)
    net.install_routes(routes=False)
    plan = plan_ina(net, hosts[1::2], hosts[0], planner="multitree", trees=4, height=0.1, min_bw=100.0)
    assert len(plan.trees) == 2
    chunks = 64
    values = WorkerValues.random(len(plan.workers), chunks * K, seed=8)
    result = run_ina(net, plan, values, agent=agent)
    assert result.finished == len(plan.workers) and result.mismatches == 0 and result.resends == 0
    # every tree's top switch took its share of the chunks, striped onto it by the workers
    share = np.bincount(Striping([t.weight for t in plan.trees]).place(0, chunks)[0], minlength=2)
    assert share.min() > 0
    # each tree's top switch multicast its chunks' RESULTs itself (docs/protocol.md, "Root multicast"): the
    # server's link carried nothing either way
    assert all(any(c.root and c.tree_id == t.tree_id for c in plan.switches) for t in plan.trees)
    server, edge = plan.servers[0].name, plan.trees[0].server.first_switch
    assert net.direction_stats(edge, server)["packets"] == 0
    assert net.direction_stats(server, edge)["packets"] == 0
    # each tree's own aggregation points (the switches no other tree aggregates at) ran its share through
    # the P4 program: a core switch of a tree aggregates one sum per chunk of that tree from each of the 4 pods
    for t, n in zip(plan.trees, share, strict=True):
        others = {s for u in plan.trees if u is not t for s in u.aggregation_points}
        own = [s for s in t.aggregation_points if s not in others]
        assert own, f"tree {t.tree_id} shares every aggregation point"
        core = [s for s in own if s.startswith("c")]
        assert core and net.switches[core[0]].stats["received"] == n * 4
    net.close()
