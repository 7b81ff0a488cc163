"""Draw docs/images/embedding_stages.png: the sharded embedding's stages on the seed article's example.

Two workers; worker 0 looks up keys [0, 1, 3, 5], worker 1 keys [4, 5, 6, 7]; worker r holds the
rows key mod 2 == r. The groups, sizes, received keys and local rows come from the input
dispatcher's own code (worker/embedding/dispatch.py), with the exchange done by hand in one process.

    .venv/bin/python scripts/embedding_figure.py [--out docs/images/embedding_stages.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from worker.embedding import EmbeddingTable  # noqa: E402
from worker.embedding.dispatch import group_by_owner, prepare_inputs  # noqa: E402

WORLD = 2
INPUTS = ([0, 1, 3, 5], [4, 5, 6, 7])
OWNER_COLOURS = ("#9ecae1", "#fdae6b")  # rows held by worker 0 / worker 1
CELL_W, CELL_H, GAP = 0.46, 0.42, 0.12


def dispatch_by_hand() -> dict:
    """Steps 1-4 for both workers, the exchange replaced by reading the other worker's groups."""
    table = [EmbeddingTable("t", 8, 2, "none")]
    groups, counts = [], []
    for keys in INPUTS:
        batches, _ = prepare_inputs(table, {"t": torch.tensor(keys)})
        send, count, _ = group_by_owner(batches, WORLD)
        splits = count[:, 0].tolist()
        groups.append([send[sum(splits[:d]) : sum(splits[: d + 1])].tolist() for d in range(WORLD)])
        counts.append(splits)
    received = [[groups[s][r] for s in range(WORLD)] for r in range(WORLD)]
    return {
        "groups": groups,
        "sizes": counts,
        "received": received,
        "local": [[[k // WORLD for k in part] for part in parts] for parts in received],
    }


def draw_cells(ax, x: float, y: float, parts: list[list], label, owner) -> float:
    """Cells left to right, a gap between parts; returns the x after the last cell."""
    for p, part in enumerate(parts):
        for value in part:
            ax.add_patch(Rectangle((x, y), CELL_W, CELL_H, facecolor=OWNER_COLOURS[owner(value, p)], edgecolor="#333"))
            ax.text(x + CELL_W / 2, y + CELL_H / 2, label(value), ha="center", va="center", fontsize=8.5)
            x += CELL_W
        x += GAP
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs/images/embedding_stages.png"
    )
    args = ap.parse_args(argv)
    d = dispatch_by_hand()
    by_key = lambda value, part: value % WORLD  # noqa: E731  (colour: the row's owner)
    by_part = lambda value, part: part  # noqa: E731

    columns = [
        ("input keys\n(data-parallel)", lambda r: [INPUTS[r]], str, by_key),
        ("input 1: group by\nkey mod 2 (to w0 | to w1)", lambda r: d["groups"][r], str, by_key),
        ("input 2: sizes\nexchanged", lambda r: [[n] for n in d["sizes"][r]], str, by_part),
        ("input 3: keys all-to-all\n(from w0 | from w1)", lambda r: d["received"][r], str, by_key),
        ("input 4: local row\n= key div 2", lambda r: d["local"][r], str, lambda v, p: None),
        ("lookup in the shard\n(vector of key k: v_k)", lambda r: d["received"][r], lambda k: f"v{k}", by_key),
        (
            "output 1-2: vectors\nall-to-all back",
            lambda r: [d["groups"][r][0], d["groups"][r][1]],
            lambda k: f"v{k}",
            by_key,
        ),
        ("output 3: input order\n(data-parallel again)", lambda r: [INPUTS[r]], lambda k: f"v{k}", by_key),
        ("backward: gradients\nreverse path to the shard", lambda r: d["received"][r], lambda k: f"g{k}", by_key),
    ]
    widths = [
        max(sum(len(part) for part in parts_of(r)) * CELL_W + (len(parts_of(r)) - 1) * GAP for r in range(WORLD))
        for _, parts_of, _, _ in columns
    ]
    starts = [0.0]
    for w in widths[:-1]:
        starts.append(starts[-1] + w + 0.75)
    fig, ax = plt.subplots(figsize=(18, 4.2))
    ax.set_xlim(-1.7, starts[-1] + widths[-1] + 0.1)
    ax.set_ylim(-0.55, 2.75)
    ax.axis("off")
    rows_y = (1.55, 0.35)
    for r, y in enumerate(rows_y):
        ax.text(-1.65, y + CELL_H / 2, f"worker {r}", ha="left", va="center", fontsize=10, weight="bold")
    ends = {}
    for c, (title, parts_of, label, owner) in enumerate(columns):
        x0 = starts[c]
        ax.text(x0 + widths[c] / 2, 2.45, title, ha="center", va="center", fontsize=8.5)
        for r, y in enumerate(rows_y):
            colour = (lambda v, p, r=r: r) if owner(0, 0) is None else owner
            ends[c, r] = (x0, draw_cells(ax, x0, y, parts_of(r), label, colour))
    # the exchanges cross between the workers
    for c in (3, 6, 8):
        for r in range(WORLD):
            other = 1 - r
            start = (ends[c - 1, other][1] - GAP, rows_y[other] + CELL_H / 2)
            end = (ends[c, r][0], rows_y[r] + CELL_H / 2)
            ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color="#555", lw=0.8))
    ax.text(
        0.0,
        -0.35,
        "colour: the worker that holds the row (key mod 2). Each distinct key travels once per destination; "
        "key 5 is asked for by both workers, so worker 1 receives it twice and sums its two gradients g5.",
        fontsize=8.5,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110, bbox_inches="tight")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
