"""Send rates from the plan (controller/pacing.py): the streams each tree puts on each directed link, in the
server's result mode and where the tree's root switch sends the RESULTs itself (docs/protocol.md, "Root
multicast"), and the per-worker rate that follows."""

from __future__ import annotations

import pytest

from controller.generators import star
from controller.options import PlanOptions
from controller.pacing import job_send_rate, result_roots, stream_counts
from controller.planner import check_request, plan_job
from controller.resources import Resources
from controller.topology import Topology
from controller.topology_yaml import load_topology
from controller.tree_plan import JobContext, build_tree

MULTICAST = "multicast"


def _counts(topo: Topology, workers: list[str], servers: list[str], root_results: bool) -> dict:
    plan = plan_job(topo, workers, servers, PlanOptions(result_mode=MULTICAST, root_results=root_results))
    roots = result_roots(plan.switches)
    return {t.tree_id: dict(stream_counts(t, MULTICAST, roots.get(t.tree_id))) for t in plan.trees}


def _both_ways(*links: tuple[str, str]) -> dict[tuple[str, str], int]:
    return {link: 1 for a, b in links for link in ((a, b), (b, a))}


def test_star_streams_per_directed_link_in_both_result_modes():
    topo = star(4)
    hosts = [("h1", "s1"), ("h2", "s1"), ("h3", "s1"), ("h4", "s1")]
    server_mode = _counts(topo, ["h1", "h2", "h3", "h4"], ["h5"], root_results=False)
    # every worker link one GRAD stream up and one RESULT stream down; the server's link the sum up and the
    # RESULTs the server multicasts down
    assert server_mode == {0: _both_ways(*hosts, ("h5", "s1"))}
    root_mode = _counts(topo, ["h1", "h2", "h3", "h4"], ["h5"], root_results=True)
    # s1 multicasts the RESULTs itself and sends the server no copy: the server's link carries nothing
    assert root_mode == {0: _both_ways(*hosts)}


def test_leaf_spine_streams_stop_at_the_root_between_root_and_server():
    topo = load_topology("topologies/leaf_spine_100m.yaml")
    workers = ["h1", "h2", "h3", "h4"]  # on l1 and l2: sp1 aggregates them all, l4 only forwards to h10
    tree = [("h1", "l1"), ("h2", "l1"), ("h3", "l2"), ("h4", "l2"), ("l1", "sp1"), ("l2", "sp1")]
    server_mode = _counts(topo, workers, ["h10"], root_results=False)
    assert server_mode == {0: _both_ways(*tree, ("sp1", "l4"), ("l4", "h10"))}
    root_mode = _counts(topo, workers, ["h10"], root_results=True)
    # sp1 -> l4 -> h10 and back: nothing (no copy of the sums goes to the server)
    assert root_mode == {0: _both_ways(*tree)}


def test_leaf_spine_two_servers_each_tree_from_its_root():
    topo = load_topology("topologies/leaf_spine_100m.yaml")
    workers = [f"h{i}" for i in range(1, 9)]
    server_mode = _counts(topo, workers, ["h9", "h10"], root_results=False)
    root_mode = _counts(topo, workers, ["h9", "h10"], root_results=True)
    # the roots are the servers' leaves (l3 with h5, h6; l4 with h7, h8): only each server's link differs,
    # idle both ways
    for tree_id, server, leaf in ((0, "h9", "l3"), (1, "h10", "l4")):
        assert server_mode[tree_id][(server, leaf)] == 1 and server_mode[tree_id][(leaf, server)] == 1
        assert (server, leaf) not in root_mode[tree_id] and (leaf, server) not in root_mode[tree_id]
        del server_mode[tree_id][(server, leaf)], server_mode[tree_id][(leaf, server)]
    assert root_mode == server_mode


def _crossing_trees(root_results: bool) -> tuple[float, dict[int, str], list]:
    """Two trees of one job whose routes cross (as the multi-tree planner may choose them): tree 0 runs
    w -> sw -> r -> sx -> hA, tree 1 w -> sw -> sx -> r -> hB. sw has the slots for one tree and sx none, so
    tree 1's two workers reach r unaggregated: sx -> r carries tree 0's RESULTs from its server (hA -> sx ->
    r -> sw) and tree 1's two GRAD streams, the busiest link direction while the server sends tree 0's
    RESULTs."""
    pool = 4
    topo = Topology("crossing")
    for i, name in enumerate(("w1", "w2", "hA", "hB")):
        topo.add_host(name, f"10.0.0.{i + 1}", f"02:00:00:00:00:0{i + 1}")
    topo.add_switch("sw", 1, slots=2 * pool)
    topo.add_switch("sx", 2, slots=0)
    topo.add_switch("r", 3)
    for host, port in (("w1", 1), ("w2", 2)):
        topo.add_link(host, 0, "sw", port, bandwidth=1000.0, delay=0.01)
    topo.add_link("hA", 0, "sx", 1, bandwidth=1000.0, delay=0.01)
    topo.add_link("hB", 0, "r", 1, bandwidth=1000.0, delay=0.01)
    topo.add_link("sw", 10, "r", 10, bandwidth=100.0, delay=0.01)
    topo.add_link("sw", 11, "sx", 11, bandwidth=100.0, delay=0.01)
    topo.add_link("sx", 12, "r", 12, bandwidth=100.0, delay=0.01)
    graph = topo.to_graph()
    options = PlanOptions(result_mode=MULTICAST, pool_size=pool, root_results=root_results)
    workers, servers = check_request(topo, ["w1", "w2"], ["hA", "hB"], options)
    resources = Resources.for_topology(topo)
    ctx = JobContext(
        topo,
        graph,
        workers,
        servers,
        resources,
        resources.open_job(None),
        pool,
        result_mode=MULTICAST,
        root_results=root_results,
    )
    to_a = {"w1": "sw", "w2": "sw", "sw": "r", "r": "sx", "sx": "hA"}
    to_b = {"w1": "sw", "w2": "sw", "sw": "sx", "sx": "r", "r": "hB"}
    trees = [build_tree(ctx, 0, "hA", to_a, 100.0, 0.5), build_tree(ctx, 1, "hB", to_b, 100.0, 0.5)]
    roots = result_roots(ctx.switch_configs)
    return job_send_rate(trees, graph, MULTICAST, roots), roots, trees


def test_results_from_the_root_raise_the_rate_where_a_servers_results_shared_the_bottleneck():
    server_rate, server_roots, trees = _crossing_trees(root_results=False)
    assert server_roots == {}
    assert dict(stream_counts(trees[1], MULTICAST))[("sx", "r")] == 2  # tree 1's workers, unaggregated
    # sx -> r: tree 0's RESULTs (weight 0.5 x 1) and tree 1's GRADs (0.5 x 2) on 100 Mbit/s
    assert server_rate == pytest.approx(100.0 / 1.5)
    root_rate, roots, _ = _crossing_trees(root_results=True)
    assert roots == {0: "sw", 1: "r"}  # sw sums tree 0's workers; r tree 1's (sx has no slots)
    # tree 0's RESULTs start at sw: sx -> r keeps tree 1's two GRAD streams (0.5 x 2), as do sw -> sx and the
    # reverse directions their sums and RESULTs
    assert root_rate == pytest.approx(100.0)
