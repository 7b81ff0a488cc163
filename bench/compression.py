"""Gradient compression side by side: dense ina, 2:4, 1:4, DLGS 0.1 / 0.01, and gloo (docs/compression.md).

Each method trains examples/train_digits.py's MLP under DDP (``--compression``: the communication hooks
of worker/torch_backend/compression_hooks.py) for the same epochs from the same seed, with N ranks on
the in-process network of a star (softswitch running the network's default program, the aggregation server on its own
link, every link at --bandwidth Mbit/s, wall clock), on two models: the digits MLP (64-32-10, 2,410
parameters) and a 64-1000-1000-10 MLP (1,076,010 parameters). It records

* bytes per iteration on a worker's uplink (h1 -> s1) and on the server link (both directions), as the
  in-process network counted them (frames with their Ethernet/IPv4/UDP headers); gloo's are computed
  (a ring allreduce: each rank sends 2 (N-1)/N of the gradient's bytes, plus TCP/IP headers ignored);
* time per iteration (forward, backward with the hook's exchanges, optimizer step; rank 0's mean);
* test accuracy after the epochs,

prints a table as it goes and saves bench/results/compression.json and bench/results/compression.png.

    .venv/bin/python bench/compression.py [--workers 2] [--epochs 10 2] [--bandwidth 100]
        [--methods gloo ina 2:4 1:4 dlgs-0.1 dlgs-0.01 dlgs-0.1-server dlgs-0.01-server]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import train_digits  # noqa: E402

RESULTS = ROOT / "bench" / "results"
METHODS = ("gloo", "ina", "2:4", "1:4", "dlgs-0.1", "dlgs-0.01", "dlgs-0.1-server", "dlgs-0.01-server")
MODELS = {"digits MLP": (32, 1), "1M MLP": (1000, 2)}  # (hidden units, hidden layers)


def star_topology(workers: int, bandwidth: float, path: Path) -> Path:
    """A star of ``workers`` workers and a server, every link at ``bandwidth`` Mbit/s."""
    lines = ["name: star", "hosts:"]
    for i in range(1, workers + 1):
        lines.append(f"  - {{name: h{i}, ip: 10.0.0.{i}, mac: '02:00:00:00:00:{i:02x}', role: worker}}")
    server = workers + 1
    lines.append(f"  - {{name: h{server}, ip: 10.0.0.{server}, mac: '02:00:00:00:00:{server:02x}', role: server}}")
    lines += ["switches:", "  - {name: s1, device_id: 1, grpc: '127.0.0.1:50001'}", "links:"]
    for i in range(1, server + 1):
        lines.append(f"  - {{ends: [h{i}, 's1:{i}'], bandwidth: {bandwidth}, delay: 0.1}}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run_method(method: str, hidden: int, layers: int, epochs: int, workers: int, topology: Path, tmp: Path) -> dict:
    """Train with ``method``; rank 0's summary plus bytes per iteration."""
    summary_path = tmp / "summary.json"
    summary_path.unlink(missing_ok=True)
    argv = ["--workers", str(workers), "--epochs", str(epochs), "--hidden", str(hidden), "--depth", str(layers)]
    argv += ["--json", str(summary_path), "--backend", "gloo" if method == "gloo" else "ina"]
    if method not in ("gloo", "ina"):
        argv += ["--compression", method, "--warmup-epochs", "0"]  # the layout's own bytes from the start
    argv += ["--topology", str(topology)]
    started = time.perf_counter()
    if train_digits.main(argv) != 0:
        raise RuntimeError(f"train_digits {' '.join(argv)} failed (its error line is above)")
    summary = json.loads(summary_path.read_text())
    link_bytes, counters = summary.pop("link_bytes", None), summary.pop("switch_counters", {})
    iterations = summary["iterations"]
    server = f"h{workers + 1}"
    if link_bytes is None:
        gradient_bytes = 4 * summary["parameters"]
        worker_bytes = 2 * (workers - 1) / workers * gradient_bytes
        server_bytes = None  # gloo has no server
        measured = False
    else:
        worker_bytes = link_bytes["h1->s1"] / iterations
        server_bytes = (link_bytes[f"{server}->s1"] + link_bytes[f"s1->{server}"]) / iterations
        measured = True
    return {
        **summary,
        "method": method,
        "wall_s": time.perf_counter() - started,
        "worker_uplink_bytes_per_iteration": worker_bytes,
        "server_link_bytes_per_iteration": server_bytes,
        "bytes_measured": measured,
        "switch_counters": counters,
    }


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in runs))
    panels = [
        ("worker_uplink_bytes_per_iteration", "worker uplink, % of dense ina", True),
        # absolute: dense ina's server link carries nothing where the tree's root switch sends the results
        ("server_link_bytes_per_iteration", "server link, bytes per iteration", False),
        ("ms_per_iteration", "ms per iteration", False),
        ("test_accuracy", "test accuracy (%)", False),
    ]
    fig, axes = plt.subplots(len(models), len(panels), figsize=(4.2 * len(panels), 3.6 * len(models)), squeeze=False)
    for row, model in enumerate(models):
        mine = [r for r in runs if r["model"] == model]
        dense = next((r for r in mine if r["method"] == "ina"), None)
        names = [r["method"] for r in mine]
        for col, (key, label, relative) in enumerate(panels):
            ax = axes[row][col]
            values = []
            for r in mine:
                v = r[key] if r[key] is not None else float("nan")
                if relative:
                    v = 100.0 * v / dense[key] if dense and dense[key] else float("nan")
                elif key == "test_accuracy":
                    v = 100.0 * v
                values.append(v)
            colors = ["0.6" if n == "gloo" else ("C0" if n == "ina" else "C1") for n in names]
            ax.bar(range(len(names)), values, color=colors)
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
            ax.set_title(f"{model}: {label}", fontsize=9)
            if key == "test_accuracy":
                low = min(v for v in values if v == v)
                ax.set_ylim(max(0.0, low - 5), 100)
            for i, v in enumerate(values):
                if v == v:
                    ax.text(i, v, f"{v:.3g}", ha="center", va="bottom", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, nargs=2, default=[10, 2], help="epochs of the digits MLP and of the 1M MLP")
    p.add_argument("--bandwidth", type=float, default=100.0, help="Mbit/s of every link of the in-process star")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--out", type=Path, default=RESULTS / "compression.json")
    args = p.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    runs: list[dict] = []
    print(f"{args.workers} workers, links at {args.bandwidth:g} Mbit/s, load {load[0]:.2f}", flush=True)
    print(
        f"{'model':>10} {'method':>16} {'uplink B/it':>12} {'% dense':>8} {'server B/it':>12} {'ms/it':>8} {'acc %':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-compression-") as tmp_name:
        tmp = Path(tmp_name)
        topology = star_topology(args.workers, args.bandwidth, tmp / "star.yaml")
        for model in args.models:
            hidden, layers = MODELS[model]
            epochs = args.epochs[list(MODELS).index(model)]
            dense = None
            for method in args.methods:
                run = run_method(method, hidden, layers, epochs, args.workers, topology, tmp)
                run["model"] = model
                runs.append(run)
                if method == "ina":
                    dense = run
                share = (
                    f"{100 * run['worker_uplink_bytes_per_iteration'] / dense['worker_uplink_bytes_per_iteration']:7.1f}%"
                    if dense
                    else f"{'-':>8}"
                )
                server_bytes = run["server_link_bytes_per_iteration"]
                server = "-" if server_bytes is None else f"{server_bytes:.0f}"
                print(
                    f"{model:>10} {method:>16} {run['worker_uplink_bytes_per_iteration']:12.0f} {share} "
                    f"{server:>12} {run['ms_per_iteration']:8.1f} "
                    f"{100 * run['test_accuracy']:6.2f}",
                    flush=True,
                )
                result = {
                    "workers": args.workers,
                    "bandwidth_mbit": args.bandwidth,
                    "load_at_start": load,
                    "load_at_end": os.getloadavg(),
                    "runs": runs,
                }
                args.out.write_text(json.dumps(result, indent=2))
    plot(runs, args.out.with_suffix(".png"))
    print(f"saved {args.out} and {args.out.with_suffix('.png')}; load at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
