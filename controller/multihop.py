"""Seed 1, multi-hop aggregation paths: one reduction tree per server.

Every worker's path to the server comes from a single search rooted at the server, so the union of
the paths is a tree (flows that meet stay together up to the server) and planning costs one
graph search instead of one per worker. One function per policy:

- ``fewest_hops_tree``: breadth-first search (networkx's); ties go to the lower link id.
- ``lowest_delay_tree``: Dijkstra on link delay (networkx's); ties by fewer hops, then lower link id.
- ``widest_tree``: maximum bottleneck bandwidth; ties by fewer hops, lower delay, then lower link id.

Every tie between equally good neighbours goes to the lower link id (``links_in_order``): that is the
one place to change how the planner breaks ties. Hosts other than the root are never crossed (they
are leaves). Every search takes the graph as it is and keeps nothing on it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

import networkx as nx

from controller.errors import PlanError
from controller.options import POLICIES

Label = tuple[float, ...]  # widest_tree's label, compared as a tuple: smaller is better


def links_in_order(graph: nx.Graph, node: str) -> list[tuple[str, dict[str, Any]]]:
    """``node``'s neighbours with their link's attributes, by link id: every search's tie-breaking order.

    Examples
    --------
    >>> from controller.generators import star
    >>> [v for v, _ in links_in_order(star(2).to_graph(), "s1")]
    ['h1', 'h2', 'h3']
    """
    return sorted(graph.adj[node].items(), key=lambda item: item[1]["eid"])


def _crosses(graph: nx.Graph, root: str) -> Callable[[str], bool]:
    """Whether a search from ``root`` may go on from a node: not from a host other than the root."""
    kinds = graph.nodes
    return lambda node: node == root or kinds[node]["kind"] != "host"


def _check_root(graph: nx.Graph, root: str) -> None:
    if root not in graph:
        raise nx.NodeNotFound(f"Source {root} is not in G")


def fewest_hops_tree(graph: nx.Graph, root: str) -> dict[str, str]:
    """Parent pointers toward ``root`` along fewest-hop paths; ties go to the lower link id.

    Raises
    ------
    networkx.NodeNotFound
        ``root`` is not in ``graph``.

    Examples
    --------
    >>> from controller.topology_yaml import load_topology
    >>> from controller.tree_plan import edges_up
    >>> mesh = load_topology("topologies/hetero_mesh.yaml").to_graph()
    >>> [up for _, up in edges_up(fewest_hops_tree(mesh, "h6"), "h1")]  # h1's path to the server
    ['s1', 's5', 'h6']
    """
    _check_root(graph, root)
    crosses = _crosses(graph, root)

    def neighbours(node: str) -> Iterator[str]:
        return iter([v for v, _ in links_in_order(graph, node)] if crosses(node) else [])

    return {child: par for par, child in nx.generic_bfs_edges(graph, root, neighbors=neighbours)}


def lowest_delay_tree(graph: nx.Graph, root: str) -> dict[str, str]:
    """Parent pointers toward ``root`` along lowest-delay paths; ties by fewer hops, then lower link id.

    networkx's Dijkstra gives every node's delay and all its predecessors on lowest-delay paths; the
    fewest hops among those paths (a breadth-first search over them) and the link id then pick one.

    Raises
    ------
    networkx.NodeNotFound
        ``root`` is not in ``graph``.

    Examples
    --------
    >>> from controller.topology_yaml import load_topology
    >>> from controller.tree_plan import edges_up
    >>> mesh = load_topology("topologies/hetero_mesh.yaml").to_graph()
    >>> [up for _, up in edges_up(lowest_delay_tree(mesh, "h6"), "h1")]  # h1's path to the server
    ['s1', 's2', 's4', 's5', 'h6']
    """
    _check_root(graph, root)
    crosses = _crosses(graph, root)
    pred, _ = nx.dijkstra_predecessor_and_distance(
        graph, root, weight=lambda u, v, e: e["delay"] if crosses(u) else None
    )
    on_shortest = nx.DiGraph([(u, v) for v, preds in pred.items() for u in preds])
    on_shortest.add_node(root)
    hops = nx.single_source_shortest_path_length(on_shortest, root)
    return {v: min(preds, key=lambda u: (hops[u], graph.adj[u][v]["eid"])) for v, preds in pred.items() if v != root}


def widest_tree(graph: nx.Graph, root: str) -> dict[str, str]:
    """Parent pointers toward ``root`` along widest paths (largest bottleneck bandwidth); ties by fewer
    hops, lower delay, then lower link id.

    networkx has no bottleneck search, so this is a label-setting search (Dijkstra's, on the label
    (-bottleneck, hops, delay, link id): extending a path can only make its label larger).

    Raises
    ------
    networkx.NodeNotFound
        ``root`` is not in ``graph``.

    Examples
    --------
    >>> from controller.topology_yaml import load_topology
    >>> from controller.tree_plan import edges_up
    >>> mesh = load_topology("topologies/hetero_mesh.yaml").to_graph()
    >>> [up for _, up in edges_up(widest_tree(mesh, "h6"), "h1")]  # h1's path to the server
    ['s1', 's2', 's3', 's4', 's5', 'h6']
    """
    _check_root(graph, root)
    crosses = _crosses(graph, root)
    start: Label = (float("-inf"), 0, 0.0, -1)
    best = {root: start}
    parent: dict[str, str] = {}
    done: set[str] = set()
    heap = [(start, root)]
    while heap:
        label, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if not crosses(u):
            continue
        for v, e in links_in_order(graph, u):
            if v in done:
                continue
            new = (max(label[0], -e["bandwidth"]), label[1] + 1, label[2] + e["delay"], e["eid"])
            if v not in best or new < best[v]:
                best[v] = new
                parent[v] = u
                heapq.heappush(heap, (new, v))
    return parent


PATH_TREES: dict[str, Callable[[nx.Graph, str], dict[str, str]]] = {
    "fewest_hops": fewest_hops_tree,
    "lowest_delay": lowest_delay_tree,
    "widest": widest_tree,
}
assert tuple(PATH_TREES) == POLICIES, "one search per policy of controller/options.py"


def path_tree(graph: nx.Graph, root: str, policy: str = "fewest_hops") -> dict[str, str]:
    """Parent pointers toward ``root`` for every node reachable from it under ``policy`` (seed 1's paths).

    Parameters
    ----------
    graph : networkx.Graph
        From ``Topology.to_graph``.
    root : str
        The server.
    policy : str
        One of ``POLICIES``: fewest hops, lowest delay, or widest bottleneck.

    Returns
    -------
    dict
        Node -> next node toward ``root``. Hosts other than the root are leaves: never crossed.

    Raises
    ------
    PlanError
        An unknown policy.
    networkx.NodeNotFound
        ``root`` is not in ``graph``.

    Examples
    --------
    >>> from controller.generators import star
    >>> path_tree(star(2).to_graph(), "h3")
    {'s1': 'h3', 'h1': 's1', 'h2': 's1'}
    >>> path_tree(star(2).to_graph(), "nope")
    Traceback (most recent call last):
    ...
    networkx.exception.NodeNotFound: Source nope is not in G
    """
    search = PATH_TREES.get(policy)
    if search is None:
        raise PlanError(f"unknown path policy {policy!r} (choose {', '.join(POLICIES)})")
    return search(graph, root)
