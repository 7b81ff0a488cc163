"""Sharded against replicated embedding tables: examples/train_recsys.py side by side in one run.

For each worker count it runs the example three times with the same seed, one after the other on
this machine: sharded tables on gloo, replicated tables on gloo (every table in DDP, its gradients
all-reduced), and sharded tables on ina (the in-process network of softswitches: the dense
gradients summed by the switch, the all-to-alls host to host). It prints accuracy and AUC next to
the teacher's, time per iteration, and the bytes per worker and iteration each way (counted from
the collectives' sizes), and saves bench/results/recsys.json and bench/results/recsys.png.

    .venv/bin/python bench/recsys.py [--workers 2 4 8] [--seed 0] [--skip-ina]

Eight workers use topologies/leaf_spine.yaml for the ina run (the star has four worker hosts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
EXAMPLE = ROOT / "examples" / "train_recsys.py"
RUNS = (("gloo", "sharded"), ("gloo", "replicated"), ("ina", "sharded"))


def run(workers: int, backend: str, embeddings: str, seed: int, extra: list[str]) -> dict:
    topology = ROOT / "topologies" / ("star.yaml" if workers <= 4 else "leaf_spine.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        argv = [sys.executable, str(EXAMPLE), "--backend", backend, "--workers", str(workers), "--seed", str(seed)]
        argv += ["--embeddings", embeddings, "--topology", str(topology), "--json", str(out), *extra]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(ROOT))
        if proc.returncode != 0:
            raise SystemExit(f"bench/recsys.py: {' '.join(argv[1:])} failed: {proc.stderr.strip()[-500:]}")
        return json.loads(out.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-ina", action="store_true", help="no ina runs (gloo only)")
    ap.add_argument("--example-args", default="", help="more flags for the example, e.g. '--train-samples 50000'")
    ap.add_argument("--replot", action="store_true", help="redraw the PNG from the saved JSON, run nothing")
    args = ap.parse_args(argv)
    if args.replot:
        plot(json.loads((RESULTS / "recsys.json").read_text())["runs"], RESULTS / "recsys.png")
        return 0
    extra = args.example_args.split()
    load = os.getloadavg()[0]
    rows = []
    print(
        "workers  backend  tables      accuracy  teacher   AUC     teacher  ms/iter  all-to-all  all_reduce  (KB/worker/iteration)"
    )
    for workers in args.workers:
        for backend, embeddings in RUNS:
            if backend == "ina" and args.skip_ina:
                continue
            s = run(workers, backend, embeddings, args.seed, extra)
            rows.append(s)
            print(
                f"{workers:7d}  {backend:7s}  {embeddings:10s}  {100 * s['test_accuracy']:6.2f} %  "
                f"{100 * s['teacher_accuracy']:6.2f} %  {s['test_auc']:.4f}  {s['teacher_auc']:.4f}  "
                f"{s['ms_per_iteration']:7.1f}  {s['alltoall_bytes_per_iteration'] / 1e3:10.1f}  "
                f"{s['dense_allreduce_bytes_per_iteration'] / 1e3:10.1f}",
                flush=True,
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "recsys.json").write_text(json.dumps({"load_avg_at_start": load, "runs": rows}, indent=2))
    plot(rows, RESULTS / "recsys.png")
    print(f"saved {RESULTS / 'recsys.json'} and {RESULTS / 'recsys.png'} (load average at start {load:.1f})")
    return 0


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['workers']}w {r['backend']}\n{r['embeddings']}" for r in rows]
    x = range(len(rows))
    fig, (bytes_ax, time_ax) = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(rows) + 4), 4))
    alltoall = [r["alltoall_bytes_per_iteration"] / 1e3 for r in rows]
    allreduce = [r["dense_allreduce_bytes_per_iteration"] / 1e3 for r in rows]
    bytes_ax.bar(x, allreduce, label="all_reduce (DDP buckets)", color="#6baed6")
    bytes_ax.bar(x, alltoall, bottom=allreduce, label="all-to-all (embedding)", color="#fd8d3c")
    bytes_ax.set_yscale("log")
    bytes_ax.set_ylim(1, 2 * max(a + b for a, b in zip(alltoall, allreduce, strict=True)))
    bytes_ax.set_ylabel("KB per worker and iteration (log)")
    bytes_ax.set_xticks(list(x), labels, fontsize=8)
    bytes_ax.legend(fontsize=8)
    bytes_ax.set_title("bytes handed to the collectives")
    time_ax.bar(x, [r["ms_per_iteration"] for r in rows], color="#74c476")
    time_ax.set_ylabel("ms per iteration")
    time_ax.set_xticks(list(x), labels, fontsize=8)
    time_ax.set_title("time per iteration (loopback / in-process network)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
