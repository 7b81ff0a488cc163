"""Results from the tree's root in the simulator (docs/protocol.md, "Root multicast"): the switch that
aggregates every worker multicasts the RESULTs itself, the server hears nothing and sends nothing, a lost
RESULT is answered by the root from its kept sum; with ``root_results=False`` the server
sends the RESULTs and answers a resend to its sender only."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from controller.generators import fat_tree, star
from controller.plan import JobPlan
from controller.topology import Topology
from sim.allreduce import RunResult, WorkerValues, plan_ina, run_ina
from sim.frames import multicast_result_frame
from sim.network import SimNetwork

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)
CHUNKS = 24


def _job(topo: Topology, root_results: bool | None = None) -> tuple[SimNetwork, JobPlan]:
    hosts = [h.name for h in topo.hosts]
    net = SimNetwork(topo)
    net.install_routes(routes=False)
    return net, plan_ina(net, hosts[:-1], hosts[-1], root_results=root_results)


def _run(net: SimNetwork, plan: JobPlan, seed: int) -> RunResult:
    values = WorkerValues.random(len(plan.workers), CHUNKS * K, seed=seed)
    expected = np.asarray(np.sum([values.of(r) for r in range(len(plan.workers))], axis=0, dtype=np.int64), np.int32)
    result = run_ina(net, plan, values, expected=expected)
    assert result.finished == len(plan.workers) and result.mismatches == 0
    return result


def _server_link(plan: JobPlan) -> tuple[str, str]:
    """(the server, the switch its link goes to)."""
    return plan.servers[0].name, plan.trees[0].server.first_switch


@pytest.mark.parametrize("topo", [star(5), fat_tree(4)], ids=["star", "fat-tree"])
def test_the_root_multicasts_exact_sums_and_the_servers_link_stays_idle(topo: Topology) -> None:
    net, plan = _job(topo)
    assert any(c.root for c in plan.switches)  # the controller's default on v1model: results from the root
    result = _run(net, plan, seed=1)
    server, switch = _server_link(plan)
    up, down = net.direction_stats(switch, server), net.direction_stats(server, switch)
    assert up["packets"] == 0 and up["bytes"] == 0  # no copy of the sums goes to the server
    assert down["packets"] == 0 and down["bytes"] == 0  # the server sent no RESULT
    stats = net.core.host_stats(net.node[server])
    assert stats["root_copies"] == stats["results_sent"] == stats["answers"] == 0
    assert result.server == {key: stats[key] for key in ("root_copies", "results_sent", "answers", "duplicates")}
    net.close()


@pytest.mark.parametrize("topo", [star(5), fat_tree(4)], ids=["star", "fat-tree"])
def test_on_the_server_path_the_server_multicasts_every_result(topo: Topology) -> None:
    net, plan = _job(topo, root_results=False)
    assert not any(c.root for c in plan.switches)
    _run(net, plan, seed=2)
    server, switch = _server_link(plan)
    result_bytes = len(multicast_result_frame(plan.job_id, plan.trees[0].tree_id, plan.servers[0], plan.workers[0], K))
    down = net.direction_stats(server, switch)
    assert down["packets"] == CHUNKS and down["bytes"] == CHUNKS * result_bytes
    assert net.direction_stats(switch, server)["packets"] == CHUNKS  # the root switch's sums, one per chunk
    stats = net.core.host_stats(net.node[server])
    assert stats["root_copies"] == 0 and stats["results_sent"] == CHUNKS
    net.close()


@pytest.mark.parametrize("root_results", [None, False], ids=["root", "server-path"])
def test_a_lost_result_is_answered_to_its_worker_only_and_the_sums_stay_exact(root_results: bool | None) -> None:
    net, plan = _job(star(5), root_results=root_results)
    server, switch = _server_link(plan)
    unlucky = plan.workers[0].name
    net.set_loss(switch, unlucky, 30.0)  # only RESULTs go down to a worker: a third of its results are lost
    result = _run(net, plan, seed=3)
    stats = {w.name: net.core.host_stats(net.node[w.name]) for w in plan.workers}
    assert stats[unlucky]["resends"] > 0 and result.resends == stats[unlucky]["resends"]
    # each answer went to the worker that resent, no other worker got a result twice
    assert all(s["duplicates"] == 0 for name, s in stats.items() if name != unlucky)
    at_server = net.core.host_stats(net.node[server])
    if root_results is None:  # the root answered from the sum it kept: nothing crossed the server's link
        assert net.direction_stats(switch, server)["packets"] == 0
        assert net.direction_stats(server, switch)["packets"] == 0 and at_server["results_sent"] == 0
    else:  # the server answered every resend (the switch had released the chunk) to its sender
        assert at_server["answers"] == stats[unlucky]["resends"]
        assert at_server["results_sent"] == CHUNKS + at_server["answers"]
        assert net.direction_stats(server, switch)["packets"] == CHUNKS + at_server["answers"]
    net.close()


def test_the_root_keeps_the_job_going_when_the_servers_link_is_cut() -> None:
    net, plan = _job(star(5))
    server, switch = _server_link(plan)
    net.cut(server, switch)
    _run(net, plan, seed=4)  # every worker finishes with exact sums: the server is off the common path
    assert net.core.host_stats(net.node[server])["root_copies"] == 0
    net.close()
