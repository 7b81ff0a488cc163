"""The demo's output: the plan as text, per-link traffic tables, timings, and a PNG of the network.

Inputs are plain: a controller ``Topology``, a ``JobPlan`` and per-link byte counts keyed by the
link's id (position in the topology's link list), both directions added up. Nothing here measures
anything; the demo and the launcher pass in what they counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from controller.draw import layered_layout


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} GB"


def table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A plain-text table; ``align`` is one of l/r per column (numbers right-aligned by default)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(values):
        return "  ".join(v.ljust(w) if a == "l" else v.rjust(w) for v, w, a in zip(values, widths, align, strict=True))

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def plan_text(plan) -> str:
    """Which switches aggregate, with which fan-in, and each worker's path."""
    lines = [
        f"job {plan.job_id}: {len(plan.workers)} workers -> "
        f"{', '.join(s.name for s in plan.servers)} ({plan.planner}, {plan.result_mode} results, "
        f"{len(plan.trees)} tree{'s' if len(plan.trees) != 1 else ''}, pool {plan.pool_size} chunks in flight per tree)"
    ]
    for tree in plan.trees:
        lines.append(
            f"tree {tree.tree_id}: root {tree.root}, weight {tree.weight:.2f}, server fan-in {tree.server.fan_in}"
        )
        rows = []
        for cfg in plan.switches:
            if cfg.tree_id != tree.tree_id:
                continue
            rows.append(
                [
                    cfg.switch,
                    cfg.device_id,
                    "yes" if cfg.aggregates else "no",
                    cfg.max_fan_in if cfg.aggregates else "-",
                    f"{cfg.slot_base}..{cfg.slot_base + 2 * cfg.pool_size - 1}",
                ]
            )
        if rows:
            lines.append(
                table(["switch", "device", "aggregates", "fan-in", "slots (pool x 2 shadow sets)"], rows, "lrlrr")
            )
        for w in plan.workers:
            hops = tree.grad_hops[w.name]
            path = " -> ".join(
                f"{h.name or h.switch_id}{'[+' + str(h.fan_in) + ']' if h.aggregate else ''}" for h in hops
            )
            lines.append(f"  {w.name} (rank {w.rank}): {path}")
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def server_link_ids(topo, plan) -> list[int]:
    """Ids of the links attaching the job's servers."""
    ids = []
    for s in plan.servers:
        ids += [link.id for link in topo.links_of(s.name)]
    return ids


def traffic_table(topo, runs: dict[str, dict[int, int]], highlight: Sequence[int] = ()) -> str:
    """Bytes per link (both directions) for each named run; links no run used are left out."""
    names = list(runs)
    rows = []
    for link in topo.links:
        values = [runs[n].get(link.id, 0) for n in names]
        if not any(values):
            continue
        mark = " *" if link.id in highlight else ""
        rows.append([f"{link.a}:{link.a_port} - {link.b}:{link.b_port}{mark}"] + [fmt_bytes(v) for v in values])
    return table(["link"] + [f"{n} bytes" for n in names], rows)


def reduction_factor(baseline: dict[int, int], ina: dict[int, int], links: list[int]) -> float:
    base = sum(baseline.get(i, 0) for i in links)
    ours = sum(ina.get(i, 0) for i in links)
    return base / ours if ours else float("inf")


def draw_network(topo, plan, loads: dict[int, int], path: str | Path, title: str = "") -> Path:
    """PNG: the topology in layers (hosts, leaves, spines), link width by bytes carried, the job's
    aggregation tree in colour, aggregating switches labelled with their fan-in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    g = topo.to_graph()
    pos = layered_layout(g)
    fig, ax = plt.subplots(figsize=(11, 6.5))
    _draw_links(ax, g, pos, loads, {frozenset(edge) for tree in plan.trees for edge in tree.edges})
    nodes = list(g.nodes)
    looks = [_node_look(g, n, plan) for n in nodes]  # (colour, label)
    colours, labels = [c for c, _ in looks], {n: label for n, (_, label) in zip(nodes, looks, strict=True)}
    nx.draw_networkx_nodes(g, pos, nodelist=nodes, node_color=colours, node_size=1900, edgecolors="black", ax=ax)
    nx.draw_networkx_labels(g, pos, labels=labels, font_size=7, ax=ax)
    ax.set_title(
        title
        or f"{topo.name}: aggregation tree (orange), aggregating switches (red; the root sends the results), link width = bytes carried",
        fontsize=10,
    )
    ax.axis("off")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _draw_links(ax, g, pos, loads: dict[int, int], tree_edges: set[frozenset]) -> None:
    """Every link, as wide as the bytes it carried (labelled), the tree's in orange."""
    import networkx as nx

    peak = max(loads.values(), default=0) or 1
    for a, b, data in g.edges(data=True):
        load = loads.get(data["eid"], 0)
        in_tree = frozenset((a, b)) in tree_edges
        width = 0.8 + 7.0 * load / peak
        nx.draw_networkx_edges(
            g,
            pos,
            edgelist=[(a, b)],
            width=width,
            ax=ax,
            edge_color="tab:orange" if in_tree else "lightgray",
            alpha=0.9 if in_tree else 0.7,
        )
        if load:
            xa, ya = pos[a]
            xb, yb = pos[b]
            ax.text(
                (xa + xb) / 2,
                (ya + yb) / 2,
                fmt_bytes(load),
                fontsize=7,
                ha="center",
                va="center",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8),
            )


def _node_look(g, n: str, plan) -> tuple[str, str]:
    """A node's colour and label: aggregating switches with their fan-in (a tree's root: it sends the
    results), the server, the workers."""
    configs = [cfg for cfg in plan.switches if cfg.aggregates and cfg.switch == n]
    if configs:
        role = "root" if any(cfg.root for cfg in configs) else "aggregates"
        return "tab:red", f"{n}\n{role}\nfan-in {max(cfg.max_fan_in for cfg in configs)}"
    if g.nodes[n]["kind"] == "switch":
        return "lightsteelblue", n
    if n in {s.name for s in plan.servers}:
        return "tab:green", f"{n}\nserver"
    if n in {w.name for w in plan.workers}:
        return "gold", n
    return "whitesmoke", n
