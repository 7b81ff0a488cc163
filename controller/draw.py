"""A picture of a topology, with a job's trees and aggregation points highlighted (matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx

from controller.errors import ControllerError
from controller.plan import JobPlan
from controller.topology import Topology

PICTURE_FORMATS = (".png", ".svg", ".pdf")  # what the picture's file name may end with
TREE_COLOURS = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown")


def layered_layout(g: nx.Graph) -> dict[str, tuple[float, float]]:
    """Node positions for a topology graph: hosts at the bottom, switches in layers above them by hop
    distance from the hosts (a flat mesh falls back to a force layout). Used by every topology picture.

    Examples
    --------
    >>> from controller.generators import leaf_spine
    >>> pos = layered_layout(leaf_spine().to_graph())
    >>> bool(pos["sp1"][1] > pos["l1"][1] > pos["h1"][1])  # spines above leaves above hosts
    True
    """
    hosts = [n for n, k in g.nodes(data="kind") if k == "host"]
    level = {n: lv for lv, layer in enumerate(nx.bfs_layers(g, hosts)) for n in layer} if hosts else {}
    for n in g.nodes:
        level.setdefault(n, 0)
    if len(g) <= 60 and len(set(level.values())) <= 2:
        layout: dict[str, tuple[float, float]] = nx.kamada_kawai_layout(g, weight=None)  # a mesh: no layers
        return layout
    order = {n: i for i, n in enumerate(g.nodes)}
    layers: dict[int, list[str]] = {}
    for n in g.nodes:
        layers.setdefault(level[n], []).append(n)
    pos: dict[str, tuple[float, float]] = {}
    top = max(layers)
    for lv in sorted(layers, reverse=True):
        nodes = layers[lv]
        if lv == 0:  # hosts under the switch they hang from

            def under(h: str) -> tuple[float, int]:
                (sw,) = g.adj[h] or (h,)
                return (pos.get(sw, (0, 0))[0], order[h])

            nodes = sorted(nodes, key=under)
        else:
            nodes = sorted(nodes, key=order.__getitem__)
        for i, n in enumerate(nodes):
            pos[n] = ((i + 0.5) / len(nodes) * 2 - 1, lv / max(top, 1))
    return pos


class DrawError(ControllerError, ValueError):
    """A picture that cannot be made: its file name asks for a format that is not drawn."""


def draw_topology(topo: Topology, plan: JobPlan | None = None, output: str | Path = "topology.png") -> None:
    """Save a picture of ``topo`` to ``output``; with ``plan``, its trees coloured and aggregation points
    marked. The format comes from the suffix (``PICTURE_FORMATS``).

    Raises
    ------
    DrawError
        ``output``'s suffix is not a picture format.
    OSError
        ``output`` cannot be written.
    """
    suffix = Path(output).suffix.lower()
    if suffix not in PICTURE_FORMATS:
        raise DrawError(
            f"cannot draw {output}: unknown picture format {suffix or 'without a suffix'!r} "
            f"(use {', '.join(PICTURE_FORMATS[:-1])} or {PICTURE_FORMATS[-1]})"
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = topo.to_graph()
    pos = layered_layout(g)
    n = len(g)
    size = min(20, 6 + n / 10)
    fig, ax = plt.subplots(figsize=(size, size * 0.6))
    small = n > 80
    nx.draw_networkx_edges(g, pos, ax=ax, edge_color="lightgrey", width=0.8)
    agg_points = _draw_trees(g, pos, ax, plan) if plan is not None else set()
    for nodelist, style in _node_styles(topo, plan, agg_points, node_size=60 if small else 500):
        nx.draw_networkx_nodes(g, pos, nodelist=nodelist, ax=ax, **style)
    if not small:
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=8)
    title = f"{topo.name}"
    if plan is not None:
        title += f": job {plan.job_id} ({plan.planner}, {len(plan.trees)} tree(s))"
    ax.set_title(title)
    ax.axis("off")
    if plan is not None:
        ax.legend(loc="best", fontsize=8, markerscale=0.6)
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)


def _draw_trees(g: nx.Graph, pos: dict[str, tuple[float, float]], ax: Any, plan: JobPlan) -> set[str]:
    """Draw each tree of ``plan`` in its colour; return the aggregation points of all of them."""
    agg_points: set[str] = set()
    for t in plan.trees:
        colour = TREE_COLOURS[t.tree_id % len(TREE_COLOURS)]
        width = 2.5 + 2.5 * (len(plan.trees) - 1 - t.tree_id)  # overlapping trees stay visible
        nx.draw_networkx_edges(
            g,
            pos,
            edgelist=[tuple(e) for e in t.edges],
            ax=ax,
            edge_color=colour,
            width=width,
            alpha=0.6,
            label=f"tree {t.tree_id} -> {t.root} ({t.weight:.0%})",
        )
        agg_points.update(t.aggregation_points)
    return agg_points


def _node_styles(
    topo: Topology, plan: JobPlan | None, agg_points: set[str], node_size: float
) -> list[tuple[list[str], dict[str, Any]]]:
    """The nodes of each kind (switch, aggregation point, worker, server, other host) with how they look."""
    workers = {w.name for w in plan.workers} if plan else set()
    servers = {s.name for s in plan.servers} if plan else set()
    switches = [s.name for s in topo.switches]
    hosts = [h.name for h in topo.hosts]
    return [
        (
            [s for s in switches if s not in agg_points],
            {"node_color": "lightsteelblue", "node_shape": "s", "node_size": node_size},
        ),
        (
            [s for s in switches if s in agg_points],
            {
                "node_color": "gold",
                "edgecolors": "black",
                "node_shape": "s",
                "node_size": node_size * 1.3,
                "label": "aggregation point",
            },
        ),
        (
            [h for h in hosts if h in workers],
            {"node_color": "palegreen", "node_size": node_size * 0.7, "label": "worker"},
        ),
        (
            [h for h in hosts if h in servers],
            {"node_color": "salmon", "node_shape": "D", "node_size": node_size * 0.9, "label": "server"},
        ),
        (
            [h for h in hosts if h not in workers | servers],
            {"node_color": "whitesmoke", "edgecolors": "grey", "node_size": node_size * 0.5},
        ),
    ]
