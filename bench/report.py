"""docs/results.md, its plots and the README's results table, from the standard bench's JSON alone.

``bench/standard.py`` (``make bench``) saves each step's JSON and a ``manifest.json`` (machine, date,
commit, every step's command and outcome) under bench/results/standard/; this script reads only those
files and writes:

- ``docs/results.md``: a header (machine, date, commit, mode), then one section per step with its
  table and the command that reproduces it (a step that was skipped or failed says so and why);
- ``docs/images/results/*.png``: the plots the page shows;
- README.md's results table, between the markers ``<!-- results:begin -->`` and ``<!-- results:end -->``
  (the same rows as the page's headline table, so every figure in it comes from docs/results.md).

    .venv/bin/python bench/report.py            # after make bench (which runs it at the end)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from controller.cli_options import add_deprecated  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "standard"
README_BEGIN = "<!-- results:begin -->"
README_END = "<!-- results:end -->"
IMAGES = "images/results"  # under docs/
HEADLINE_PLOT = "allreduce.png"
ALLREDUCE_STEPS = ("allreduce_100m", "allreduce_1g")
METHOD_COLUMNS = ("ina", "ps", "gloo")
METHOD_NAMES = {"ina": "INA", "ps": "parameter server", "gloo": "gloo"}


class ReportError(Exception):
    """The results directory cannot make a report (no manifest, unreadable JSON)."""


# -- reading -----------------------------------------------------------------------------------------


def load(results: Path) -> dict:
    """The manifest, each step's entry carrying its JSON files' contents under ``data`` (by file name)."""
    path = results / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except OSError:
        raise ReportError(f"no {path}: run the bench first (make bench, or bench/standard.py)") from None
    except ValueError as exc:
        raise ReportError(f"{path} is not JSON: {exc}") from None
    for step in manifest["steps"]:
        step["data"] = {}
        for name in step.get("outputs", []):
            try:
                step["data"][Path(name).name] = json.loads((results / name).read_text())
            except (OSError, ValueError) as exc:
                raise ReportError(f"{results / name}: {exc}") from None
    return manifest


# -- formatting --------------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    """A Markdown table; columns in ``right`` are right-aligned."""
    right = right or set()
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if i in right else "---" for i in range(len(header))) + " |")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def seconds(s: float) -> str:
    return f"{s:.3f}" if s < 10 else f"{s:.2f}"


def mb(n_bytes: int) -> str:
    value = n_bytes / 2**20
    return f"{value:g}"


# -- allreduce ---------------------------------------------------------------------------------------


def allreduce_rows(manifest: dict) -> list[dict]:
    """One row per topology and size: each method's median time, its ratio to the ideal, and how many runs."""
    rows = []
    for step in manifest["steps"]:
        if step["name"] not in ALLREDUCE_STEPS:
            continue
        for report in step["data"].get("allreduce_netns.json", {}).get("reports", []):
            by_size: dict[int, dict] = {}
            for entry in report.get("summary", []):
                method = entry["label"].split()[0]
                # the default program only: a K or MTU other than the first lab's is a variant
                cell = by_size.setdefault(entry["bytes_per_worker"], {})
                if method in METHOD_COLUMNS and method not in cell:
                    cell[method] = entry
            for size, cell in sorted(by_size.items()):
                rows.append(
                    {
                        "topology": Path(report["topology"]).stem,
                        "workers": report["workers"],
                        "mbps": report["host_link_mbps"],
                        "bytes_per_worker": size,
                        "methods": cell,
                        "k": _k(cell),
                    }
                )
    return rows


def _k(cell: dict) -> str:
    for method in ("ina", "ps"):
        if method in cell:
            return cell[method]["label"].split("K=")[1].split()[0]
    return "-"


def allreduce_table(rows: list[dict]) -> list[str]:
    """The headline table: the same rows go into README.md."""
    out = []
    for r in rows:
        cells = [
            r["topology"],
            str(r["workers"]),
            f"{r['mbps']:g} Mbit/s",
            mb(r["bytes_per_worker"]),
            r["k"],
        ]
        for method in METHOD_COLUMNS:
            e = r["methods"].get(method)
            cells.append("-" if e is None else f"{seconds(e['median_s'])} ({e['median_ratio_to_ideal']:.2f}x)")
        ina, gloo = r["methods"].get("ina"), r["methods"].get("gloo")
        cells.append("-" if not (ina and gloo) else f"{gloo['median_s'] / ina['median_s']:.2f}")
        out.append(cells)
    header = [
        "topology",
        "workers",
        "host links",
        "MB per worker",
        "K",
        "INA s (x ideal)",
        "parameter server s (x ideal)",
        "gloo s (x ideal)",
        "gloo / INA",
    ]
    return table(header, out, right={1, 3, 4, 5, 6, 7, 8})


def allreduce_cpu_table(rows: list[dict]) -> list[str]:
    """Host CPU per 1,024 values a worker contributes (workers and server, or gloo's ranks; medians of the
    runs) with its kernel part: what a deployment's hosts pay, the switches left out (hardware there)."""
    out = []
    for r in rows:
        ina, gloo = r["methods"].get("ina"), r["methods"].get("gloo")
        if not (ina and gloo and ina.get("host_cpu_us_per_1024_values") and gloo.get("host_cpu_us_per_1024_values")):
            continue
        ina_cpu = statistics.median(ina["host_cpu_us_per_1024_values"])
        gloo_cpu = statistics.median(gloo["host_cpu_us_per_1024_values"])
        kernel = ina.get("host_kernel_cpu_us_per_1024_values") or []
        ina_kernel = statistics.median(kernel) if kernel else None
        out.append(
            [
                r["topology"],
                mb(r["bytes_per_worker"]),
                f"{ina_cpu:.1f}" + ("" if ina_kernel is None else f" ({ina_kernel:.1f})"),
                f"{gloo_cpu:.1f}",
                f"{ina_cpu / gloo_cpu:.2f}",
                "-" if ina_kernel is None else f"{ina_kernel / gloo_cpu:.2f}",
            ]
        )
    header = [
        "topology",
        "MB per worker",
        "INA hosts us (kernel)",
        "gloo hosts us",
        "INA / gloo",
        "INA's kernel alone / gloo",
    ]
    return table(header, out, right={1, 2, 3, 4, 5}) if out else []


def allreduce_plot(rows: list[dict], path: Path) -> None:
    """Completion time over the ideal S/B, per topology and size, one bar per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['topology']}\n{mb(r['bytes_per_worker'])} MB" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(rows) + 2), 4.2))
    width = 0.8 / len(METHOD_COLUMNS)
    for i, method in enumerate(METHOD_COLUMNS):
        xs = [j + (i - 1) * width for j, r in enumerate(rows) if method in r["methods"]]
        ys = [r["methods"][method]["median_ratio_to_ideal"] for r in rows if method in r["methods"]]
        ax.bar(xs, ys, width, label=METHOD_NAMES[method])
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="ideal S/B")
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("completion time / ideal (lower is better)")
    ax.set_title("Allreduce in the mininet lab, median of the runs")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def allreduce_section(manifest: dict, images: Path) -> list[str]:
    rows = allreduce_rows(manifest)
    steps = [s for s in manifest["steps"] if s["name"] in ALLREDUCE_STEPS]
    out = [
        "## Allreduce: INA, the parameter server and gloo",
        "",
        "One lab network per topology (namespaces, veth links shaped by tc to the file's bandwidths, a softswitch "
        "process per switch); every method sums the same int32 gradient of S bytes per worker and every sum is "
        "checked. K: values per packet of the switches' program (INA and the parameter server). Time: the slowest "
        "worker's, median of the runs; x ideal: over S/B, the time a host link of B bit/s needs to carry S each "
        "way. gloo / INA above 1: INA is faster.",
        "",
    ]
    out += _commands(steps)
    if rows:
        out += [""] + allreduce_table(rows)
        allreduce_plot(rows, images / HEADLINE_PLOT)
        out += ["", f"![Allreduce time over the ideal per method]({IMAGES}/{HEADLINE_PLOT})"]
        cpu = allreduce_cpu_table(rows)
        if cpu:
            out += [
                "",
                "Host CPU per 1,024 values each worker contributes, medians of the runs: the workers' and the "
                "server's processes (gloo: its ranks), the switches left out; in brackets the hosts' system time "
                "(their system calls and the softirq work that ran while they were on a CPU).",
                "",
                *cpu,
            ]
    return out


# -- the other steps ---------------------------------------------------------------------------------


def training_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"].startswith("train_")]
    out = [
        "## Training in the lab: gloo against ina",
        "",
        "examples/train_digits.py (MLP 64-32-10) with one process per worker host, gloo then ina with the same "
        "seed; ms per iteration over the whole run, and over the steps after the first epoch (without the "
        "first steps' one-time costs).",
        "",
    ]
    out += _commands(steps)
    rows = []
    for step in steps:
        runs = {r["backend"]: r for r in step["data"].get("training.json", {}).get("runs", [])}
        if not runs:
            continue
        topology = step["name"].removeprefix("train_")
        gloo, ina = runs.get("gloo"), runs.get("ina")
        any_run = gloo or ina
        assert any_run is not None
        rows.append(
            [
                topology,
                str(any_run["workers"]),
                str(any_run["epochs"]),
                *(f"{100 * r['test_accuracy']:.2f} %" if r else "-" for r in (gloo, ina)),
                *(_ms_per_iteration(r) for r in (gloo, ina)),
                _training_ratio(gloo, ina),
                "yes" if all(r["ranks_in_sync"] for r in runs.values()) else "NO",
            ]
        )
    if rows:
        header = [
            "topology",
            "workers",
            "epochs",
            "gloo accuracy",
            "ina accuracy",
            "gloo ms/iteration (after epoch 1)",
            "ina ms/iteration (after epoch 1)",
            "ina / gloo (after epoch 1)",
            "parameters equal on all ranks",
        ]
        out += [""] + table(header, rows, right={1, 2, 3, 4, 5, 6, 7})
    return out


def _ms_per_iteration(run: dict | None) -> str:
    """A run's ms per iteration, whole run (steps after the first epoch), from rank 0's summary."""
    if not run:
        return "-"
    later = run.get("ms_per_iteration_after_first_epoch")
    return f"{run['ms_per_iteration']:.1f}" + (f" ({later:.1f})" if later is not None else "")


def _training_ratio(gloo: dict | None, ina: dict | None) -> str:
    """ina's ms per iteration over gloo's, whole run (steps after the first epoch)."""
    if not (gloo and ina):
        return "-"
    ratio = f"{ina['ms_per_iteration'] / gloo['ms_per_iteration']:.2f}"
    later = ina.get("ms_per_iteration_after_first_epoch"), gloo.get("ms_per_iteration_after_first_epoch")
    if later[0] is not None and later[1]:
        ratio += f" ({later[0] / later[1]:.2f})"
    return ratio


def softswitch_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "softswitch_pps"]
    out = [
        "## softswitch packet rates",
        "",
        "Frames per second of ina.p4 and a plain IPv4 router on both back ends.",
        "",
    ]
    out += _commands(steps)
    data = steps[0]["data"].get("softswitch_pps.json") if steps else None
    if not data:
        return out
    rows = [
        [r["backend"], r["label"], f"{r['pps_median']:,.0f}"]
        for r in sorted(data.get("in_process", []), key=lambda r: (r["kind"], r["backend"]))
    ]
    if rows:
        out += ["", "In process, one core (the pipeline alone):", ""]
        out += table(["back end", "case", "frames/s (median)"], rows, right={2})
    best: dict[tuple[str, str, str, str], float] = {}
    for r in data.get("veth", {}).get("cases", []):
        if r.get("rps", "off") != "off":
            continue
        key = (r["case"], r["backend"], r.get("switch_rx") or "-", r.get("switch_tx") or "-")
        best[key] = max(best.get(key, 0.0), r["processed_pps"])
    if best:
        out += ["", "Through veth (a switch process, senders in other processes; the best of the sender counts):", ""]
        vrows = [[c, b, rx, tx, f"{v:,.0f}"] for (c, b, rx, tx), v in sorted(best.items())]
        out += table(["case", "back end", "receive path", "transmit path", "frames/s processed"], vrows, right={4})
    return out


def agent_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "agent_pps"]
    out = [
        "## Agent packet rates",
        "",
        "The worker and server agents on kernel UDP over veth, no switch between them: the batch path against "
        'the scalar path of an earlier revision (docs/agents.md, "Figures").',
        "",
    ]
    out += _commands(steps)
    data = steps[0]["data"].get("agent_pps.json") if steps else None
    if not data:
        return out
    rows = []
    for name, paths in data.get("readings", {}).items():
        for path, r in paths.items():
            rows.append(
                [
                    name,
                    path,
                    f"{r['grads_per_s']:,.0f}",
                    f"{r['worker_cpu_us_per_packet']:.2f}",
                    f"{r['server_cpu_us_per_packet']:.2f}",
                    str(r["retransmissions"]),
                ]
            )
    if rows:
        header = ["reading", "path", "GRADs/s", "worker CPU us/packet", "server CPU us/packet", "resends"]
        out += [""] + table(header, rows, right={2, 3, 4, 5})
    return out


def plan_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "plan_scale"]
    out = ["## Planning time", "", "The controller's planners on k-ary fat-trees (workers: every second host).", ""]
    out += _commands(steps)
    data = steps[0]["data"].get("plan_scale.json") if steps else None
    if not data:
        return out
    refused = [f"- k = {r['k']} {r['planner']}: refused ({r['refused']})" for r in data if r.get("refused")]
    data = [r for r in data if not r.get("refused")]  # a job the planner refuses has no plan to show
    rows = [
        [
            str(r["k"]),
            r["planner"],
            f"{r['hosts']:,}",
            f"{r['workers']:,}",
            str(r["trees"]),
            f"{r['aggregation_points']:,}",
            f"{1e3 * r['plan_s']:,.1f}",
            f"{r['json_bytes'] / 2**20:.2f}",
        ]
        for r in data
    ]
    header = ["k", "planner", "hosts", "workers", "trees", "aggregation points", "plan ms", "plan JSON MB"]
    if all("columns_bytes" in r for r in data):  # the columnar plan file (controller/plan_columns.py)
        for row, r in zip(rows, data, strict=True):
            row.append(f"{r['columns_bytes'] / 2**20:.2f}")
        header.append("plan .npz MB")
    return out + [""] + table(header, rows, right={0, 2, 3, 4, 5, 6, 7, 8}) + ([""] + refused if refused else [])


def compression_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "compression"]
    out = [
        "## Gradient compression",
        "",
        "Dense ina, 2:4 and 1:4 summed by the switches, DLGS, and gloo on an in-process star (docs/compression.md).",
        "",
    ]
    out += _commands(steps)
    data = steps[0]["data"].get("compression.json") if steps else None
    if not data:
        return out
    rows = []
    for r in data.get("runs", []):
        server = r.get("server_link_bytes_per_iteration")
        rows.append(
            [
                r["model"],
                r["method"],
                f"{r['worker_uplink_bytes_per_iteration']:,.0f}",
                "-" if server is None else f"{server:,.0f}",
                f"{r['ms_per_iteration']:.1f}",
                f"{100 * r['test_accuracy']:.2f} %",
            ]
        )
    header = [
        "model",
        "method",
        "worker uplink bytes/iteration",
        "server link bytes/iteration",
        "ms/iteration",
        "accuracy",
    ]
    return out + [""] + table(header, rows, right={2, 3, 4, 5})


def faults_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "faults"]
    out = [
        "## Faults",
        "",
        "The fault campaign on the in-process leaf-spine (virtual clock): impairments, a dead switch, a cut link, "
        "dead peers, forged packets; each row passes when its sums are exact or its ranks fail as expected.",
        "",
    ]
    out += _commands(steps)
    data = steps[0]["data"].get("faults.json") if steps else None
    if not data:
        return out
    rows = []
    for r in data.get("rows", []):
        if r["kind"] == "impairment":
            outcome = f"exact {r['exact_runs']}/{r['runs']}, resent {100 * r['resent_share']:.0f}%"
        else:
            outcome = f"victim {_ranks(r['victim'])}, bystander {_ranks(r['bystander'])}"
        rows.append([r["row"], outcome, f"{1e3 * r['time_s']:.1f}", "ok" if r["ok"] else "FAILED"])
    return out + [""] + table(["row", "outcome", "time ms (virtual)", "verdict"], rows, right={2})


SCALE_PLOT = "scale.png"
SCALE_JOBS_PLOT = "scale_jobs.png"


def plot_scale_curve(rows: list[dict], path: Path) -> None:
    """x ideal against workers, a line per method and fabric (bench/scale.py's rows of case "curve"), saved
    as ``path``; bench/scale.py draws its own run's with it too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    curve = [r for r in rows if r.get("case", "curve") == "curve" and r["completion_s"] > 0]
    for family in sorted({r["topology"].rsplit("_", 1)[0] for r in curve}):
        for method in ("ina", "ina_multitree", "ring", "ps"):
            pts = sorted(
                (r["workers"], r["x_ideal"])
                for r in curve
                if r["method"] == method and r["topology"].rsplit("_", 1)[0] == family
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{method} ({family})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_ylabel("completion time / ideal (bytes / host link bandwidth)")
    ax.set_title("All-reduce in the packet-level simulator")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def scale_plots(rows: list[dict], images: Path) -> tuple[bool, bool]:
    """x ideal against workers per method and fabric; the slowest job's x ideal against concurrent jobs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = [r for r in rows if r.get("case", "curve") == "curve" and r["completion_s"] > 0]
    jobs = [r for r in rows if r.get("case") == "jobs" and r["completion_s"] > 0]
    images.mkdir(parents=True, exist_ok=True)
    if curve:
        plot_scale_curve(curve, images / SCALE_PLOT)
    if jobs:
        fig, ax = plt.subplots(figsize=(7, 4.0))
        for topology in sorted({r["topology"] for r in jobs}):
            alone = [r for r in curve if r["topology"] == topology and r["method"] == "ina"]
            pts = sorted([(1, alone[0]["x_ideal"])] if alone else [])
            pts += sorted((r["jobs"], r["x_ideal"]) for r in jobs if r["topology"] == topology)
            ax.plot(*zip(*pts, strict=True), marker="o", label=topology)
        ax.set_xlabel("concurrent INA jobs (hosts dealt round-robin)")
        ax.set_ylabel("slowest job's time / ideal")
        ax.set_title("Jobs sharing a fabric in the simulator")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(images / SCALE_JOBS_PLOT, dpi=100)
        plt.close(fig)
    return bool(curve), bool(jobs)


def scale_section(manifest: dict, images: Path) -> list[str]:
    steps = [s for s in manifest["steps"] if s["name"] == "scale"]
    out = [
        "## Scale: the packet-level simulator",
        "",
        "INA through the P4 program on every switch (softswitch's native back end), gloo's ring and a parameter "
        "server over the same modelled links (docs/simulator.md); modelled completion time over the ideal "
        "(bytes over the host link's bandwidth), exact INA sums checked lane by lane; concurrent jobs with their "
        "hosts dealt round-robin over the fabric; the INA tree's top switch failing halfway through a round, "
        "noticed by the controller after a modelled delay and re-planned around (controller/replan.py), the "
        "workers moving their unfinished chunks to the recovery tree within the round.",
        "",
    ]
    out += _commands(steps)
    data = steps[0]["data"].get("scale.json") if steps else None
    if not data:
        return out
    rows = data.get("rows", [])
    curve = [r for r in rows if r.get("case", "curve") == "curve"]
    table_rows = [
        [
            r["topology"],
            f"{r['workers']:,}",
            r["method"],
            f"{1e3 * r['completion_s']:.3f}" if r["completion_s"] > 0 else "not finished",
            f"{r['x_ideal']:.2f}" if r["completion_s"] > 0 else "",
            str(r.get("mismatches", 0)),
            f"{r['events']:,}",
            f"{r['cpu_s']:.1f}",
        ]
        for r in curve
    ]
    header = ["topology", "workers", "method", "ms (modelled)", "x ideal", "mismatches", "events", "CPU s"]
    out += [""] + table(header, table_rows, right={1, 3, 4, 5, 6, 7})
    jobs = [r for r in rows if r.get("case") == "jobs"]
    if jobs:
        job_rows = [
            [
                r["topology"],
                str(r["jobs"]),
                str(r["workers_per_job"]),
                ", ".join(f"{1e3 * t:.3f}" for t in r["job_completion_s"]),
                f"{r['x_ideal']:.2f}",
                str(r["mismatches"]),
            ]
            for r in jobs
        ]
        header = ["topology", "jobs", "workers per job", "each job's ms", "slowest x ideal", "mismatches"]
        out += ["", "Concurrent jobs:", ""] + table(header, job_rows, right={1, 2, 4, 5})
    recovered = [r for r in rows if r.get("case") == "failure" and "chunks_moved" in r]
    if recovered:
        rec_rows = [
            [
                r["topology"],
                r["failed_switch"],
                f"{1e3 * r['failed_at_s']:.3f}",
                f"{1e3 * r['detect_s']:.1f}",
                f"{r['replan_and_install_s']:.2f}",
                f"{1e3 * r['healthy_s']:.3f}",
                f"{1e3 * r['completion_s']:.3f}" if r["completion_s"] > 0 else "not finished",
                f"{r['results_at_replan']:,}/{r['chunks']:,}",
                f"{r['chunks_moved']:,}",
                f"{r['recovery_chunks']:,}",
                f"{r['finished_chunks_offered']:,}" if "finished_chunks_offered" in r else "-",
                str(r["mismatches"]),
            ]
            for r in recovered
        ]
        header = [
            "topology",
            "failed switch",
            "at ms",
            "noticed after ms",
            "re-plan + install s (wall)",
            "healthy round ms",
            "recovered round ms",
            "chunks with result at the re-plan",
            "in flight, moved",
            "sent over the recovery tree",
            "finished chunks offered again",
            "mismatches",
        ]
        out += [
            "",
            "A spine failing mid-round, recovered within the round (a worker also offers the recovery tree its "
            "finished chunks of the last pool: the root may have died multicasting their results):",
            "",
        ]
        out += table(header, rec_rows, right={2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
    # rows of runs before the in-round recovery: the round was lost and the next one ran on the re-plan
    failures = [r for r in rows if r.get("case") == "failure" and "lost_round_finished" in r]
    refused = [r for r in rows if r.get("case") == "failure" and "replan_refused" in r]
    if failures:
        fail_rows = [
            [
                r["topology"],
                r["failed_switch"],
                f"{1e3 * r['failed_at_s']:.3f}",
                f"{r['lost_round_finished']}/{r['workers']}",
                f"{r['replan_and_install_s']:.2f}",
                f"{1e3 * r['healthy_s']:.3f}",
                f"{1e3 * r['next_round_s']:.3f}",
                str(r["next_round_mismatches"]),
            ]
            for r in failures
        ]
        header = [
            "topology",
            "failed switch",
            "at ms",
            "workers that finished the round",
            "re-plan + install s (wall)",
            "healthy round ms",
            "next round ms",
            "mismatches",
        ]
        out += ["", "A spine failing mid-round:", ""] + table(header, fail_rows, right={2, 4, 5, 6, 7})
    for r in refused:
        out += [
            "",
            f"{r['topology']}, {r['failed_switch']} failed mid-round: the re-plan was refused ({r['replan_refused']}).",
        ]
    has_curve, has_jobs = scale_plots(rows, images)
    if has_curve:
        out += ["", f"![x ideal against workers in the simulator]({IMAGES}/{SCALE_PLOT})"]
    if has_jobs:
        out += ["", f"![concurrent jobs in the simulator]({IMAGES}/{SCALE_JOBS_PLOT})"]
    return out


def _ranks(side: dict) -> str:
    if side.get("errors"):
        return f"error on {side['errors']}/{side['ranks']}"
    return f"exact {side['exact']}/{side['ranks']}"


def _commands(steps: list[dict]) -> list[str]:
    """The commands that reproduce a section, and what happened to each."""
    out = []
    for s in steps:
        status = "" if s["status"] == "ok" else f" **{s['status']}: {s.get('reason', '')}**"
        out.append(f"- `{s['command']}`{status}")
    return out or ["- not run"]


SECTIONS: tuple[Callable[[dict, Path], list[str]], ...] = (
    allreduce_section,
    training_section,
    softswitch_section,
    agent_section,
    plan_section,
    compression_section,
    faults_section,
    scale_section,
)


# -- writing -----------------------------------------------------------------------------------------


def header(manifest: dict) -> list[str]:
    m = manifest["machine"]
    dirty = " with uncommitted changes" if manifest.get("dirty") else ""
    mode = {"full": "make bench", "quick": "make bench QUICK=1", "tiny": "bench/standard.py --tiny"}[manifest["mode"]]
    lines = [
        "# Results",
        "",
        "Generated by `bench/report.py` from the JSON of the standard bench (`make bench`, bench/standard.py); "
        "do not edit by hand, run the bench again.",
        "",
        f"- run: `{mode}`, {manifest['date']}, commit {manifest['commit']}{dirty}",
        f"- machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gb']} GB, Linux {m['kernel']}, Python {m['python']}; "
        f"load average at the start {' '.join(str(x) for x in manifest.get('load_at_start', []))}",
    ]
    if manifest["mode"] != "full":
        lines.append("- smaller sizes and fewer runs than `make bench`: figures to check the setup, not to quote")
    return lines + [""]


def render(manifest: dict, docs: Path) -> str:
    images = docs / IMAGES
    lines = header(manifest)
    for section in SECTIONS:
        lines += section(manifest, images) + [""]
    return "\n".join(lines).rstrip() + "\n"


def readme_block(manifest: dict) -> list[str]:
    """The README's results table: the headline rows of docs/results.md, and the plot."""
    rows = allreduce_rows(manifest)
    lines = [README_BEGIN]
    if rows:
        lines += allreduce_table(rows)
        commands = [s["command"] for s in manifest["steps"] if s["name"] in ALLREDUCE_STEPS and s["status"] == "ok"]
        lines += ["", "Measured with " + " and ".join(f"`{c}`" for c in commands) + "."]
        lines += ["", f"![Allreduce time over the ideal per method](docs/{IMAGES}/{HEADLINE_PLOT})"]
    else:
        lines.append("(no allreduce results yet: `make bench` as root)")
    return lines + [README_END]


def update_readme(readme: Path, manifest: dict) -> bool:
    """Replace the block between the markers; False when the README has no markers."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        return False
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(head + "\n".join(readme_block(manifest)) + tail)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=RESULTS, help="the standard bench's results directory (its --out)")
    add_deprecated(ap, "--results", "--input", "input", type=Path)
    ap.add_argument("--docs", type=Path, default=ROOT / "docs", help="where results.md and images/results/ go")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md", help="README whose results table to update")
    args = ap.parse_args(argv)
    try:
        manifest = load(args.input)
    except ReportError as exc:
        print(f"bench/report.py: error: {exc}", file=sys.stderr)
        return 1
    args.docs.mkdir(parents=True, exist_ok=True)
    (args.docs / "results.md").write_text(render(manifest, args.docs))
    print(f"wrote {args.docs / 'results.md'}")
    if args.readme.exists() and update_readme(args.readme, manifest):
        print(f"updated the results table of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
