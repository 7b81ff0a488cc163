"""The planner's own tree walks give what networkx's searches give on the same trees (same numbers, same
order): they replace networkx there for speed only, so a plan must not change."""

from pathlib import Path

import networkx as nx
import pytest

from controller.generators import fat_tree, leaf_spine
from controller.multihop import path_tree
from controller.multitree import _rerooted
from controller.options import POLICIES
from controller.topology_yaml import load_topology
from controller.tree_plan import prune, tree_height

TOPOLOGIES = sorted((Path(__file__).resolve().parents[2] / "topologies").glob("*.yaml"))


def graphs():
    for path in TOPOLOGIES:
        yield path.stem, load_topology(path).to_graph()
    yield "leaf_spine", leaf_spine().to_graph()
    yield "fat_tree_k4", fat_tree(4, delay=0.013).to_graph()


def networkx_height(graph, parent):
    tree = nx.Graph()
    tree.add_weighted_edges_from(((c, p, graph.edges[c, p]["delay"]) for c, p in parent.items()), weight="delay")
    dist = nx.single_source_dijkstra_path_length(tree, next(iter(tree)), weight="delay")
    end = max(dist, key=dist.__getitem__)
    dist = nx.single_source_dijkstra_path_length(tree, end, weight="delay")
    return max(dist.values()) / 2.0


def trees():
    for name, graph in graphs():
        hosts = [n for n, kind in graph.nodes(data="kind") if kind == "host"]
        for root in hosts[-2:]:
            for policy in POLICIES:
                parent = path_tree(graph, root, policy)
                yield name, graph, root, parent, prune(parent, [h for h in hosts if h != root][::-1])


@pytest.mark.parametrize("name, graph, root, full, pruned", list(trees()))
def test_tree_height_is_networkx_two_searches_to_the_last_bit(name, graph, root, full, pruned):
    assert tree_height(graph, pruned) == networkx_height(graph, pruned)
    assert tree_height(graph, full) == networkx_height(graph, full)


@pytest.mark.parametrize("name, graph, root, full, pruned", list(trees()))
def test_rerooting_a_grown_tree_is_networkx_breadth_first_predecessors(name, graph, root, full, pruned):
    other = next(n for n in reversed(list(pruned)) if n != root)  # grow "from" another node of the tree
    up = {c: (p, 0.0, 0) for c, p in _rerooted({c: (p, 0.0, 0) for c, p in pruned.items()}, root, other).items()}
    assert _rerooted(up, other, root) == dict(nx.bfs_predecessors(nx.Graph(list(pruned.items())), root))
