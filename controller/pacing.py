"""Send rates from the plan: each worker's share of its path's bottleneck (docs/design-decisions.md,
"Congestion control").

Every worker of a job sends the same amount of data and waits for the same sums, so the job moves at one
rate R per worker, split over the trees by their weights (tree t: R * weight_t). A directed link carries,
per tree, one stream for every distinct flow crossing it: a worker's own GRADs up to its first aggregating
switch, one sum above each aggregating switch (so with aggregation every link of a tree carries one
stream, the server's link one per tree); RESULTs down the tree, one stream per link when they are
multicast, one per worker below the link when each worker gets its own. A tree whose root switch sends the
RESULTs itself (``SwitchJobConfig.root``; docs/protocol.md, "Root multicast") has them start there: the
links between that root and the server carry nothing of the tree (the root sends the server no copy). R is the
largest rate no direction of any link exceeds: min over directed links of bandwidth / sum over trees of
weight * streams.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

    from controller.plan import SwitchJobConfig, TreePlan


def result_roots(switches: list[SwitchJobConfig]) -> dict[int, str]:
    """The switch that sends each tree's RESULTs itself, by tree id; trees whose server sends them are absent."""
    return {c.tree_id: c.switch for c in switches if c.root}


def stream_counts(
    tree: TreePlan, result_mode: str, root_switch: str | None = None
) -> collections.Counter[tuple[str, str]]:
    """Streams of ``tree`` on each directed link (a, b) it uses, GRADs and RESULTs together.

    Parameters
    ----------
    tree : TreePlan
    result_mode : str
        "multicast" (one RESULT stream per link) or "unicast" (one per worker).
    root_switch : str or None
        The switch that sends the tree's RESULTs itself (``result_roots``): nothing between it and the
        server. None: the server sends them.

    Returns
    -------
    collections.Counter
        (from node, to node) -> streams.
    """
    flows: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    results: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for worker, hops in tree.grad_hops.items():
        flow, here = worker, worker
        for hop in hops:
            nxt = hop.name
            if not nxt or here == root_switch:  # no names (a hand-built plan), or the root: nothing goes on up
                break
            flows[(here, nxt)].add(flow)
            results[(nxt, here)].add("all" if result_mode == "multicast" else worker)
            if hop.aggregate:
                flow = nxt
            here = nxt
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for link, names in flows.items():
        counts[link] += len(names)
    for link, names in results.items():
        counts[link] += len(names)
    return counts


def job_send_rate(
    trees: list[TreePlan], graph: nx.Graph, result_mode: str, roots: dict[int, str] | None = None
) -> float:
    """Each worker's total send rate (Mbit/s) that fills the job's bottleneck without exceeding any link.

    Parameters
    ----------
    trees : list of TreePlan
        The job's trees (their weights sum to 1).
    graph : networkx.Graph
        The topology's graph (edges carry ``bandwidth`` in Mbit/s).
    result_mode : str
    roots : dict or None
        Tree id -> the switch that sends that tree's RESULTs itself (``result_roots``); None: none does.

    Returns
    -------
    float
        Mbit/s; 0.0 when no link of the trees is known (nothing to pace to).

    Examples
    --------
    >>> from controller.generators import star
    >>> from controller.planner import plan_job
    >>> plan = plan_job(star(2), ["h1", "h2"], ["h3"])
    >>> job_send_rate(plan.trees, star(2).to_graph(), "multicast") == star(2).links[0].bandwidth
    True
    """
    load: dict[tuple[str, str], float] = collections.defaultdict(float)
    for tree in trees:
        for link, streams in stream_counts(tree, result_mode, (roots or {}).get(tree.tree_id)).items():
            load[link] += tree.weight * streams
    rate = float("inf")
    for (a, b), share in load.items():
        if share <= 0 or not graph.has_edge(a, b):
            continue
        rate = min(rate, float(graph.edges[a, b]["bandwidth"]) / share)
    return 0.0 if rate == float("inf") else rate


def set_send_rates(
    trees: list[TreePlan], graph: nx.Graph, result_mode: str, roots: dict[int, str] | None = None
) -> None:
    """Write each tree's per-worker send rate (``TreePlan.send_rate``, Mbit/s): the job's rate times the
    tree's weight. ``roots`` as in ``job_send_rate``."""
    rate = job_send_rate(trees, graph, result_mode, roots)
    for tree in trees:
        tree.send_rate = rate * tree.weight
