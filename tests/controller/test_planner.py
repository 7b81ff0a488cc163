"""Planners: hand-computed plans on the small topologies, invariants on generated fat-trees."""

from pathlib import Path

import networkx as nx
import pytest

from controller.errors import PlanError, PlanFormatError
from controller.generators import fat_tree, leaf_spine
from controller.multihop import fewest_hops_tree, path_tree
from controller.options import POLICIES
from controller.plan import Hop, JobPlan
from controller.planner import PlanOptions, check_request, plan_job
from controller.resources import Resources
from controller.topology_yaml import load_topology
from controller.tree_plan import JobContext, hop_lists, place_aggregation, tree_shape
from protocol import constants as C

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
H = 0x8000


def topo(name):
    return load_topology(TOPOLOGIES / f"{name}.yaml")


def short(hops):
    return [(h.name, h.aggregate, h.fan_in, h.child, h.egress_port) for h in hops]


def test_star_plan_by_hand():
    plan = plan_job(topo("star"), ["h1", "h2", "h3", "h4"], ["h5"], PlanOptions(pool_size=64))
    (tree,) = plan.trees
    for rank in range(4):
        assert tree.grad_hops[f"h{rank + 1}"] == [Hop(1, True, 4, rank, 5, "s1"), Hop(H + 4, True, 1, 0, 0, "h5")]
        assert tree.result_hops[f"h{rank + 1}"] == [Hop(1, True, 0, 0, rank + 1, "s1")]
    assert tree.server.fan_in == 1 and tree.server.children[0].ranks == [0, 1, 2, 3]
    assert (tree.server.first_switch, tree.server.first_port) == ("s1", 5)
    (cfg,) = plan.switches
    assert (cfg.switch, cfg.device_id, cfg.aggregates, cfg.slot_base, cfg.pool_size, cfg.max_fan_in) == (
        "s1",
        1,
        True,
        0,
        64,
        4,
    )
    assert tree.weight == 1.0 and tree.rate == 1000.0


def test_leaf_spine_fewest_hops_by_hand():
    plan = plan_job(topo("leaf_spine"), [f"h{i}" for i in range(1, 9)], ["h9"])
    (t,) = plan.trees
    assert t.aggregation_points == ["l3", "sp1", "l1", "l2", "l4"]
    assert short(t.grad_hops["h1"]) == [
        ("l1", True, 2, 0, 11),
        ("sp1", True, 3, 0, 3),
        ("l3", True, 3, 0, 3),
        ("h9", True, 1, 0, 0),
    ]
    assert short(t.grad_hops["h8"]) == [
        ("l4", True, 2, 1, 11),
        ("sp1", True, 3, 2, 3),
        ("l3", True, 3, 0, 3),
        ("h9", True, 1, 0, 0),
    ]
    assert short(t.grad_hops["h6"]) == [("l3", True, 3, 2, 3), ("h9", True, 1, 0, 0)]
    assert t.grad_hops["h1"][-1].switch_id == H + 8
    assert short(t.result_hops["h7"]) == [("l3", True, 0, 0, 11), ("sp1", True, 0, 0, 4), ("l4", True, 0, 0, 1)]
    assert [c.node for c in t.server.children] == ["l3"]
    # host-level tree: every switch is represented by its lowest-ranked worker
    assert t.host_parent["h1"] == "h9" and t.host_parent["h3"] == "h1" and t.host_parent["h5"] == "h1"
    assert t.host_parent["h2"] == "h1" and t.host_parent["h4"] == "h3"
    assert sorted(t.host_children["h1"]) == ["h2", "h3", "h5", "h6", "h7"]


def test_two_servers_give_two_equal_trees():
    plan = plan_job(topo("leaf_spine"), [f"h{i}" for i in range(1, 9)], ["h9", "h10"])
    assert [t.root for t in plan.trees] == ["h9", "h10"] and plan.weights() == [0.5, 0.5]
    assert plan.trees[1].grad_hops["h7"][-1] == Hop(H + 9, True, 1, 0, 0, "h10")
    assert {(c.switch, c.tree_id) for c in plan.switches} >= {("l3", 0), ("l4", 1)}


def test_policies_pick_different_paths_on_hetero_mesh():
    t = topo("hetero_mesh")
    w = ["h1", "h2", "h3", "h4", "h5"]
    paths = {}
    for policy in ("fewest_hops", "lowest_delay", "widest"):
        tree = plan_job(t, w, ["h6"], PlanOptions(policy=policy)).trees[0]
        paths[policy] = [h.name for h in tree.grad_hops["h1"]]
    assert paths["fewest_hops"] == ["s1", "s5", "h6"]  # direct 400 Mbit/s 5 ms link
    assert paths["lowest_delay"] == ["s1", "s2", "s4", "s5", "h6"]  # 0.1 + 0.2 + 0.4 ms
    assert paths["widest"] == ["s1", "s2", "s3", "s4", "s5", "h6"]  # bottleneck 4000 Mbit/s


def test_aggregate_at_every_switch_option():
    t = topo("hetero_mesh")
    # pool 64: s5 (256 slot entries) can hold the job
    merge = plan_job(t, ["h1", "h2"], ["h6"], PlanOptions(policy="lowest_delay", pool_size=64)).trees[0]
    every = plan_job(
        t, ["h1", "h2"], ["h6"], PlanOptions(policy="lowest_delay", aggregation="all", pool_size=64)
    ).trees[0]
    assert short(merge.grad_hops["h1"]) == [
        ("s1", False, 0, 0, 2),
        ("s2", True, 2, 0, 4),
        ("s4", False, 0, 0, 5),
        ("s5", False, 0, 0, 10),
        ("h6", True, 1, 0, 0),
    ]
    assert short(every.grad_hops["h1"]) == [
        ("s1", True, 1, 0, 2),
        ("s2", True, 2, 0, 4),
        ("s4", True, 1, 0, 5),
        ("s5", True, 1, 0, 10),
        ("h6", True, 1, 0, 0),
    ]


def test_no_aggregation_option_is_the_parameter_server():
    """aggregation="none": every switch forwards, the server sums one packet per worker, no slots."""
    t = topo("leaf_spine")
    res = Resources.for_topology(t)
    workers = [f"h{i}" for i in range(1, 9)]
    plan = plan_job(t, workers, ["h9"], PlanOptions(aggregation="none"), res)
    tree = plan.trees[0]
    assert tree.aggregation_points == [] and not plan.warnings
    assert tree.server.fan_in == 8
    assert [(c.index, c.node, c.kind, c.ranks) for c in tree.server.children] == [
        (r, f"h{r + 1}", "worker", [r]) for r in range(8)
    ]
    for w in workers:
        hops = tree.grad_hops[w]
        assert all(not h.aggregate and h.fan_in == 0 for h in hops[:-1])
        assert hops[-1] == Hop(H + 8, True, 8, workers.index(w), 0, "h9")
        assert all(not h.aggregate for h in tree.result_hops[w])
    assert plan.switches and all(not c.aggregates and c.max_fan_in == 0 for c in plan.switches)
    assert all(res.slots.used(s.name) == 0 for s in t.switches)
    merged = plan_job(t, workers, ["h9"], PlanOptions(), res)  # a normal job still gets its slots
    assert merged.job_id == plan.job_id + 1 and merged.trees[0].aggregation_points


def test_full_switch_is_skipped_and_freed_on_release():
    t = topo("hetero_mesh")  # s5 has 256 slot entries: two jobs of pool 64 (128 entries each)
    res = Resources.for_topology(t)
    opts = dict(policy="fewest_hops", pool_size=64)
    w = ["h1", "h2", "h3", "h4", "h5"]
    p1 = plan_job(t, w, ["h6"], PlanOptions(**opts), res)
    p2 = plan_job(t, w, ["h6"], PlanOptions(**opts), res)
    p3 = plan_job(t, w, ["h6"], PlanOptions(**opts), res)
    assert (p1.job_id, p2.job_id, p3.job_id) == (1, 2, 3)
    assert [c.slot_base for c in p1.switches if c.switch == "s5"] == [0]
    assert [c.slot_base for c in p2.switches if c.switch == "s5"] == [128]
    assert "s5" in p1.trees[0].aggregation_points and "s5" not in p3.trees[0].aggregation_points
    assert any(w.startswith("s5 has no free slots") for w in p3.warnings)
    # s5 forwards: the server now hears s1's worker, s3's and s4's aggregates itself
    assert p3.trees[0].server.fan_in == 3 and p1.trees[0].server.fan_in == 1
    assert short(p3.trees[0].grad_hops["h1"]) == [
        ("s1", False, 0, 0, 5),
        ("s5", False, 0, 0, 10),
        ("h6", True, 3, 0, 0),
    ]
    res.release(p1)
    p4 = plan_job(t, w, ["h6"], PlanOptions(**opts), res)
    # job ids rotate (the slot cells remember the last owner's id): the next id, on s5's freed slots
    assert p4.job_id == 4 and "s5" in p4.trees[0].aggregation_points and not p4.warnings


def test_multicast_groups_and_members():
    plan = plan_job(topo("leaf_spine"), [f"h{i}" for i in range(1, 9)], ["h9"], PlanOptions(result_mode="multicast"))
    cfg = {c.switch: c for c in plan.switches}
    assert len({c.result_group for c in plan.switches}) == 1 and cfg["l1"].result_group >= 1
    assert [(m.port, m.replica_id, m.toward) for m in cfg["l1"].members] == [(1, 0, "h1"), (2, 1, "h2")]
    assert [(m.port, m.toward) for m in cfg["sp1"].members] == [(1, "l1"), (2, "l2"), (4, "l4")]
    # l3 aggregates every worker (sp1's sum and h5, h6): the tree's root sends the results down itself, and
    # its group has no member toward the server h9: no copy of the sums goes there (docs/protocol.md, "Root
    # multicast")
    assert [c.switch for c in plan.switches if c.root] == ["l3"]
    assert [(m.port, m.toward) for m in cfg["l3"].members] == [(11, "sp1"), (1, "h5"), (2, "h6")]
    assert C.ROOT_UP_REPLICA not in {m.replica_id for c in plan.switches for m in c.members}
    no_root = plan_job(
        topo("leaf_spine"),
        [f"h{i}" for i in range(1, 9)],
        ["h9"],
        PlanOptions(result_mode="multicast", root_results=False),
    )
    assert not any(c.root for c in no_root.switches)
    assert [(m.port, m.toward) for m in no_root.switches[0].members if m.toward == "h9"] == []
    unicast = plan_job(topo("leaf_spine"), [f"h{i}" for i in range(1, 9)], ["h9"], PlanOptions(result_mode="unicast"))
    assert not any(c.root for c in unicast.switches)  # the switch sends results by multicast only
    data = plan.to_dict()
    (root,) = [c for c in data["switches"] if c["root"]]
    root["result_group"] = 0
    with pytest.raises(PlanFormatError, match="l3 is tree 0's root without aggregating or a result group"):
        JobPlan.from_dict(data)


@pytest.mark.parametrize(
    "workers,servers,message",
    [
        ([], ["h5"], "at least one worker"),
        (["h1", "h1"], ["h5"], "worker h1 listed twice"),
        (["h1", "x"], ["h5"], "unknown worker 'x'"),
        (["h1", "s1"], ["h5"], "worker s1 is a switch"),
        (["h1", "h5"], ["h5"], "h5 is both a worker and a server"),
    ],
)
def test_bad_requests(workers, servers, message):
    with pytest.raises(PlanError, match=message):
        plan_job(topo("star"), workers, servers)


def test_bad_options():
    with pytest.raises(PlanError, match="unknown policy 'shortest'"):
        plan_job(topo("star"), ["h1"], ["h5"], PlanOptions(policy="shortest"))
    with pytest.raises(PlanError, match="no tree spans all 3 hosts"):
        plan_job(topo("star"), ["h1", "h2"], ["h5"], PlanOptions(planner="multitree", min_bw=5000))


def check_plan(topo_, plan: JobPlan):
    """Invariants every plan must satisfy, checked by following the hop lists on the topology."""
    g = topo_.to_graph()
    ranks = {w.name: w.rank for w in plan.workers}
    for t in plan.trees:
        root = topo_.host(t.root)
        heard: dict = {}  # aggregation point -> child index -> ranks
        for w, hops in t.grad_hops.items():
            assert hops[-1].switch_id == root.node_id and hops[-1].aggregate and hops[-1].egress_port == 0
            node = w
            for h in hops[:-1]:
                nxt = next(n for n in g.adj[h.name] if g.edges[h.name, n]["ports"][h.name] == h.egress_port)
                assert g.has_edge(node, h.name)  # the hop list follows links
                if h.aggregate:
                    heard.setdefault(h.name, {}).setdefault(h.child, set()).add(ranks[w])
                    assert 0 <= h.child < h.fan_in <= 32
                node = h.name
                last_next = nxt
            assert last_next == t.root if len(hops) > 1 else True
            heard.setdefault(t.root, {}).setdefault(hops[-1].child, set()).add(ranks[w])
        for point, children in heard.items():
            fan = next(h.fan_in for hops in t.grad_hops.values() for h in hops if h.name == point)
            assert sorted(children) == list(range(fan)), point
            flat = [r for c in children.values() for r in c]
            assert len(flat) == len(set(flat))  # no worker counted twice
        assert sorted(r for c in heard[t.root].values() for r in c) == sorted(ranks.values())
        assert t.server.fan_in == len(heard[t.root])


def test_invariants_on_fat_tree_multihop():
    ft = fat_tree(8)
    hosts = [h.name for h in ft.hosts]
    for policy in ("fewest_hops", "lowest_delay", "widest"):
        plan = plan_job(ft, hosts[1::2], [hosts[0], hosts[64]], PlanOptions(policy=policy))
        check_plan(ft, plan)
        assert JobPlan.from_json(plan.to_json()) == plan


def test_invariants_on_fat_tree_multitree():
    ft = fat_tree(4, bandwidth=1000.0, host_bandwidth=4000.0, delay=0.1)
    hosts = [h.name for h in ft.hosts]
    opts = PlanOptions(planner="multitree", trees=3, height=0.6, min_bw=10.0, seed=7, tree_rate=400.0)
    res = Resources.for_topology(ft)
    plan = plan_job(ft, hosts[:12], hosts[12:14], opts, res)
    check_plan(ft, plan)
    assert 1 <= len(plan.trees) <= 3
    assert abs(sum(plan.weights()) - 1) < 1e-9
    for t in plan.trees:
        assert t.height <= 0.6 + 1e-9 and 10.0 <= t.rate <= 400.0
        assert set(t.grad_hops) == set(hosts[:12])
    load: dict = {}
    for t in plan.trees:
        for c, p in t.edges:
            eid = ft.to_graph().edges[c, p]["eid"]
            load[eid] = load.get(eid, 0.0) + t.rate
    for link in ft.links:
        assert load.get(link.id, 0.0) <= link.bandwidth + 1e-6
    # a second job only gets what the first left
    plan2 = plan_job(ft, hosts[:12], hosts[12:14], opts, res)
    assert plan2.trees
    for t in plan2.trees:
        for c, p in t.edges:
            eid = ft.to_graph().edges[c, p]["eid"]
            load[eid] = load.get(eid, 0.0) + t.rate
    for link in ft.links:
        assert load.get(link.id, 0.0) <= link.bandwidth + 1e-6


def test_multitree_hetero_mesh_is_deterministic_and_has_host_tree():
    t = topo("hetero_mesh")
    opts = PlanOptions(planner="multitree", trees=2, height=3.0, seed=1)
    a = plan_job(t, ["h1", "h2", "h3", "h4", "h5"], ["h6"], opts)
    b = plan_job(t, ["h1", "h2", "h3", "h4", "h5"], ["h6"], opts)
    assert a.to_json() == b.to_json()
    assert len(a.trees) == 2 and a.trees[0].rate == 4000.0
    for tree in a.trees:
        hp = tree.host_parent
        assert hp["h6"] is None and set(hp) == {"h1", "h2", "h3", "h4", "h5", "h6"}
        for h in hp:  # every host reaches the root
            seen = 0
            while hp[h] is not None and seen < 10:
                h, seen = hp[h], seen + 1
            assert h == "h6"


def test_a_plan_that_fails_late_gives_back_everything_it_took():
    """The first tree takes slots and a multicast group, then the second tree fails (its server is
    cut off): the job id, counter row, group and slots all go back (Resources.roll_back)."""
    t = topo("leaf_spine")
    res = Resources.for_topology(t)
    workers = [f"h{i}" for i in range(1, 8)]
    opts = PlanOptions(result_mode="multicast", pool_size=64)
    cut = t.to_graph()
    cut.remove_edges_from(list(cut.edges("h8")))
    with pytest.raises(PlanError, match="not connected to server h8"):
        plan_job(t, workers, ["h9", "h8"], opts, res, graph=cut)
    assert all(res.slots.used(s.name) == 0 for s in t.switches)
    assert res.reservations == {}
    plan = plan_job(t, workers, ["h9"], opts, res)
    assert (plan.job_id, plan.job_index) == (2, 0)  # job ids rotate; 1 was given back:
    assert res.open_job(job_id=1).job_id == 1
    assert {c.result_group for c in plan.switches} == {1}


@pytest.mark.parametrize("policy", POLICIES)
def test_an_unknown_root_is_networkx_node_not_found_naming_it(policy):
    with pytest.raises(nx.NodeNotFound, match="nope"):
        path_tree(topo("star").to_graph(), "nope", policy)


def test_planning_leaves_the_graph_as_it_was():
    """The searches keep nothing on the graph, so a copy that drops nodes needs no clean-up (re-planning)."""
    mesh = topo("hetero_mesh")
    graph = mesh.to_graph()
    before = (dict(graph.graph), nx.to_dict_of_dicts(graph))
    for options in [PlanOptions(policy=p) for p in POLICIES] + [PlanOptions(planner="multitree")]:
        plan_job(mesh, ["h1", "h2", "h3", "h4", "h5"], ["h6"], options, graph=graph)
    assert (graph.graph, nx.to_dict_of_dicts(graph)) == before
    without_s2 = graph.copy()
    without_s2.remove_node("s2")
    assert "s2" not in path_tree(without_s2, "h6", "fewest_hops").values()


def test_build_tree_phases_on_leaf_spine_by_hand():
    """The phases of build_tree one by one: h4 (rank 0) hangs alone under l2, h1 and h2 share l1, and the
    fewest-hops tree toward h9 meets at sp1 (the lower link id of l1/l2's two spines) above l3."""
    spine_leaf = leaf_spine()
    graph = spine_leaf.to_graph()
    workers, servers = check_request(spine_leaf, ["h4", "h1", "h2"], ["h9"], PlanOptions())
    resources = Resources.for_topology(spine_leaf)
    ctx = JobContext(spine_leaf, graph, workers, servers, resources, resources.open_job(None), pool_size=4)

    shape = tree_shape(ctx, 0, "h9", fewest_hops_tree(graph, "h9"))
    assert shape.order == ["h9", "l3", "sp1", "l2", "l1", "h4", "h1", "h2"]
    assert shape.kids["sp1"] == ["l2", "l1"]  # the subtree holding rank 0 first

    agg = place_aggregation(ctx, 0, shape)  # merge: where two or more flows meet
    assert agg.aggregates == {"l1": True, "l2": False, "sp1": True, "l3": False}
    assert agg.flows_in["sp1"] == ["h4", "l1"] and agg.flows_in["h9"] == ["sp1"]

    grad_hops, _ = hop_lists(ctx, 0, shape, agg)
    assert [(h.name, h.aggregate, h.fan_in, h.child) for h in grad_hops["h2"]] == [
        ("l1", True, 2, 1),
        ("sp1", True, 2, 1),
        ("l3", False, 0, 0),
        ("h9", True, 1, 0),
    ]
