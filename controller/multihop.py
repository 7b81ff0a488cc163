"""Seed 1, multi-hop aggregation paths: one reduction tree per server.

Every worker's path to the server comes from a single search rooted at the server, so the union of
the paths is a tree (flows that meet stay together up to the server) and planning costs one
graph search instead of one per worker. Policies:

- ``fewest_hops``: breadth-first search; ties go to the lower link id.
- ``lowest_delay``: Dijkstra on link delay; ties by fewer hops, then lower link id.
- ``widest``: maximum bottleneck bandwidth (modified Dijkstra); ties by fewer hops, lower delay.

Hosts other than the root are never crossed (they are leaves).
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import networkx as nx

from controller.errors import PlanError
from controller.options import POLICIES

Adjacency = dict[str, list[tuple[str, dict[str, Any]]]]
Label = tuple[float, ...]  # compared as a tuple: smaller is better


ADJACENCY_CACHE = "_adj_by_eid"  # sorted_adjacency's key in graph.graph (a copy that drops nodes must drop it)


def sorted_adjacency(graph: nx.Graph) -> Adjacency:
    """Neighbours of every node ordered by link id (cached on the graph), so searches break ties alike.

    Examples
    --------
    >>> from controller.generators import star
    >>> [v for v, _ in sorted_adjacency(star(2).to_graph())["s1"]]
    ['h1', 'h2', 'h3']
    """
    cached: Adjacency | None = graph.graph.get(ADJACENCY_CACHE)
    if cached is None:
        cached = {u: sorted(nbrs.items(), key=lambda kv: kv[1]["eid"]) for u, nbrs in graph.adj.items()}
        graph.graph[ADJACENCY_CACHE] = cached
    return cached


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

    Examples
    --------
    >>> from controller.generators import star
    >>> path_tree(star(2).to_graph(), "h3")
    {'s1': 'h3', 'h1': 's1', 'h2': 's1'}
    """
    if policy not in POLICIES:
        raise PlanError(f"unknown path policy {policy!r} (choose {', '.join(POLICIES)})")
    adj = sorted_adjacency(graph)
    kinds = graph.nodes
    parent: dict[str, str] = {}
    if policy == "fewest_hops":
        seen = {root}
        queue = deque([root])
        while queue:
            u = queue.popleft()
            if u != root and kinds[u]["kind"] == "host":
                continue
            for v, _ in adj[u]:
                if v not in seen:
                    seen.add(v)
                    parent[v] = u
                    queue.append(v)
        return parent

    # Label-setting search; a label is compared as a tuple, smaller is better.
    if policy == "lowest_delay":

        def extend(label: Label, e: dict[str, Any]) -> Label:
            return (label[0] + e["delay"], label[1] + 1, e["eid"])

        start: Label = (0.0, 0, -1)
    else:

        def extend(label: Label, e: dict[str, Any]) -> Label:
            return (max(label[0], -e["bandwidth"]), label[1] + 1, label[2] + e["delay"], e["eid"])

        start = (float("-inf"), 0, 0.0, -1)
    best = {root: start}
    done: set[str] = set()
    heap = [(start, root)]
    while heap:
        label, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u != root and kinds[u]["kind"] == "host":
            continue
        for v, e in adj[u]:
            if v in done:
                continue
            new = extend(label, e)
            if v not in best or new < best[v]:
                best[v] = new
                parent[v] = u
                heapq.heappush(heap, (new, v))
    return parent
