"""The standard benchmark set (``make bench``): every figure of docs/results.md, one command.

Runs, one after the other, the allreduce on the lab's 100 Mbit/s and 1 Gbit/s topologies
(bench/allreduce_netns.py: INA, the parameter server and gloo), lab training with both backends
(topologies.mininet_lab --train --collective both), softswitch's and the agents' packet rates
(bench/softswitch_pps.py, bench/agent_pps.py), planning time (bench/plan_scale.py), gradient
compression (bench/compression.py) and the fault campaign (bench/faults.py), each in the program's
default configuration. It shows which step runs, its elapsed time and the step's own output, saves
every step's JSON and log under ``--out`` (bench/results/standard/) with a ``manifest.json``
(machine, date, commit, each step's command and outcome), then regenerates docs/results.md, its
plots and the README's results table from those files alone (bench/report.py).

    make bench            # the full set: hours on a 2-core machine
    make bench QUICK=1    # smaller sizes and fewer repeats: about 10 minutes

Steps that need root (the mininet lab) are recorded as skipped, with the reason, when not run as root.
``--tiny`` runs toy sizes to check the plumbing (tests/docs/test_bench_report.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from controller.cli_options import add_deprecated  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "standard"
MODES = ("full", "quick", "tiny")


@dataclass(frozen=True)
class Step:
    """One benchmark: its arguments per mode ({dir} is the step's own directory under the results)."""

    name: str
    title: str
    argv: dict[str, tuple[str, ...]]
    needs_root: bool = False
    # the kept logs of lab training are collected into the step's JSON (rank 0's summary.json per run)
    collect_training: bool = False

    def command(self, mode: str, directory: Path) -> list[str]:
        return [a.replace("{dir}", str(directory)) for a in self.argv[mode]]


def _lab_train(topology: str) -> dict[str, tuple[str, ...]]:
    """The lab's default training run (20 epochs of the digits MLP; an epoch is 10 steps of a few ms, so
    the run is mostly the lab's set-up), and one epoch for a tiny run. A run of one or two epochs is
    mostly the first steps' one-time costs (the first scale agreement, DDP's bucket rebuild), not
    training (docs/design-decisions.md, "Lab training's first steps")."""
    base = ("-m", "topologies.mininet_lab", topology, "--train", "--collective", "both", "--keep-logs", "{dir}/logs")
    return {"full": base, "quick": base, "tiny": (*base, "--epochs", "1")}


def _allreduce(topologies: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    base = ("bench/allreduce_netns.py", "--topology", *topologies, "--out", "{dir}/allreduce_netns")
    return {
        "full": (*base, "--sizes", "4", "64", "--repeats", "3"),
        "quick": (*base, "--sizes", "4", "64", "--repeats", "3"),  # the front page's table: medians of 3
        "tiny": (*base, "--sizes", "0.25"),
    }


STEPS = (
    Step(
        "allreduce_100m",
        "Allreduce on the lab's 100 Mbit/s topologies",
        _allreduce(("topologies/star_100m.yaml", "topologies/leaf_spine_100m.yaml")),
        needs_root=True,
    ),
    Step(
        "allreduce_1g",
        "Allreduce on the lab's 1 Gbit/s topologies",
        _allreduce(("topologies/star.yaml", "topologies/leaf_spine.yaml")),
        needs_root=True,
    ),
    Step(
        "train_star_100m",
        "Lab training, star_100m",
        _lab_train("topologies/star_100m.yaml"),
        needs_root=True,
        collect_training=True,
    ),
    Step(
        "train_leaf_spine_100m",
        "Lab training, leaf_spine_100m",
        _lab_train("topologies/leaf_spine_100m.yaml"),
        needs_root=True,
        collect_training=True,
    ),
    Step(
        "softswitch_pps",
        "softswitch packet rates",
        {
            "full": ("bench/softswitch_pps.py", "--out", "{dir}"),
            "quick": ("bench/softswitch_pps.py", "--quick", "--out", "{dir}"),
            "tiny": ("bench/softswitch_pps.py", "--quick", "--seconds", "0.1", "--no-veth", "--out", "{dir}"),
        },
    ),
    Step(
        "agent_pps",
        "Agent packet rates",
        {
            "full": ("bench/agent_pps.py", "--out", "{dir}"),
            "quick": ("bench/agent_pps.py", "--quick", "--out", "{dir}"),
            "tiny": ("bench/agent_pps.py", "--quick", "--seconds", "0.2", "--io-seconds", "0.2", "--out", "{dir}"),
        },
        needs_root=True,
    ),
    Step(
        "plan_scale",
        "Planning time",
        {
            "full": ("bench/plan_scale.py", "--out", "{dir}"),
            "quick": ("bench/plan_scale.py", "--ks", "4", "8", "16", "--out", "{dir}"),
            "tiny": ("bench/plan_scale.py", "--ks", "4", "--repeats", "1", "--out", "{dir}"),
        },
    ),
    Step(
        "compression",
        "Gradient compression",
        {
            "full": ("bench/compression.py", "--out", "{dir}/compression.json"),
            "quick": (
                "bench/compression.py",
                "--models",
                "digits MLP",
                "--epochs",
                "1",
                "1",
                "--methods",
                "gloo",
                "ina",
                "2:4",
                "1:4",
                "dlgs-0.1",
                "--out",
                "{dir}/compression.json",
            ),
            "tiny": (
                "bench/compression.py",
                "--models",
                "digits MLP",
                "--epochs",
                "1",
                "1",
                "--methods",
                "gloo",
                "ina",
                "2:4",
                "--out",
                "{dir}/compression.json",
            ),
        },
    ),
    Step(
        "scale",
        "Scale: the packet-level simulator",
        {
            "full": (
                "bench/scale.py",
                *("--fat-tree", "4", "6", "8", "12", "--leaf-spine", "4", "8", "16", "--mb", "16"),
                *("--baseline-max-workers", "128", "--jobs", "2", "4", "--fail-spine", "0.5", "--agent"),
                *("--out", "{dir}/scale.json"),
            ),
            "quick": (
                "bench/scale.py",
                *("--fat-tree", "4", "6", "8", "--mb", "1", "--jobs", "2", "4", "--fail-spine", "0.5", "--agent"),
                *("--out", "{dir}/scale.json"),
            ),
            "tiny": ("bench/scale.py", "--fat-tree", "4", "--mb", "0.25", "--jobs", "2", "--out", "{dir}/scale.json"),
        },
    ),
    Step(
        "faults",
        "Fault campaign",
        {
            "full": ("bench/faults.py", "--out", "{dir}"),
            "quick": ("bench/faults.py", "--quick", "--out", "{dir}"),
            "tiny": ("bench/faults.py", "--quick", "--out", "{dir}"),
        },
    ),
)
STEP_NAMES = tuple(s.name for s in STEPS)


def machine() -> dict:
    """What the figures were measured on: CPU model and count, memory, kernel, Python."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem_gb = round(kb / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu": cpu or platform.processor() or "unknown",
        "cpus": os.cpu_count(),
        "memory_gb": mem_gb,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def commit() -> dict:
    """The checkout's commit and whether it had uncommitted changes."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    return {"commit": git("rev-parse", "--short=12", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


def collect_training(directory: Path) -> Path | None:
    """Rank 0's summary of each backend's run in the lab's kept logs, as one JSON (training.json)."""
    runs = []
    for summary in sorted(directory.glob("logs/**/train-*/summary.json")):
        data = json.loads(summary.read_text())
        data["backend"] = summary.parent.name.split("-")[1]
        runs.append(data)
    if not runs:
        return None
    path = directory / "training.json"
    path.write_text(json.dumps({"runs": runs}, indent=1))
    return path


def run_step(step: Step, mode: str, results: Path, index: int, total: int, started: float) -> dict:
    """Run one step with its output streamed under a progress header; return its manifest entry."""
    directory = results / step.name
    argv = step.command(mode, directory)
    shown = "python " + shlex.join(a.replace(str(ROOT) + os.sep, "") for a in argv)  # paths as from the checkout
    entry: dict = {"name": step.name, "title": step.title, "command": shown, "mode": mode}
    elapsed = _clock(time.monotonic() - started)
    print(f"\n[{index}/{total}] {step.title}  (bench elapsed {elapsed})\n      $ {shown}", flush=True)
    if step.needs_root and os.geteuid() != 0:
        entry.update(status="skipped", reason="needs root (the mininet lab)")
        print(f"      skipped: {entry['reason']}", flush=True)
        return entry
    if directory.exists():  # no figure of an earlier run may pass for this one's
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    log_path = results / f"{step.name}.log"
    t0 = time.monotonic()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(log_path, "w") as log:  # a lab waits for the lab lock itself (topologies/lab_lock.py)
        proc = subprocess.Popen(
            [sys.executable, *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            print(f"      {_clock(time.monotonic() - t0)} | {line.rstrip()}", flush=True)
        code = proc.wait()
    entry["seconds"] = round(time.monotonic() - t0, 1)
    if code != 0:
        entry.update(status="failed", reason=f"exit status {code} (log: {log_path.name})")
    else:
        entry["status"] = "ok"
    if step.collect_training:
        collect_training(directory)
    entry["outputs"] = sorted(str(p.relative_to(results)) for p in directory.glob("*.json"))
    print(f"      {entry['status']} in {_clock(entry['seconds'])}", flush=True)
    return entry


def earlier_steps(path: Path, manifest: dict, rerun: set[str]) -> dict[str, dict]:
    """With --only: the other steps of an earlier run of the same mode at the same commit, kept as they
    were (so one failed step can be run again); nothing when there is no such run."""
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    same = all(earlier.get(k) == manifest[k] for k in ("mode", "commit", "dirty"))
    if not same:
        return {}
    manifest["date"] = earlier["date"]  # the run the kept steps belong to
    return {s["name"]: s for s in earlier["steps"] if s["name"] not in rerun}


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats: about 10 minutes")
    group.add_argument("--tiny", action="store_true", help="toy sizes, to check the plumbing only")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=STEP_NAMES,
        help="run these steps only (default: all); the other steps of an earlier run of the same mode at the "
        "same commit stay in the results",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON, logs and manifest")
    add_deprecated(ap, "--results", "--out", "out", type=Path)
    ap.add_argument("--docs", type=Path, default=ROOT / "docs", help="where results.md and its images go")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md", help="README whose results table to update")
    ap.add_argument("--no-report", action="store_true", help="run the steps only")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "tiny" if args.tiny else "full"
    steps = [s for s in STEPS if not args.only or s.name in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "mode": mode,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_at_start": [round(x, 2) for x in os.getloadavg()],
        **commit(),
        "steps": [],
    }
    kept = earlier_steps(args.out / "manifest.json", manifest, {s.name for s in steps}) if args.only else {}
    started = time.monotonic()
    print(f"bench ({mode}): {len(steps)} steps, results in {args.out}", flush=True)
    done: dict[str, dict] = {}
    for i, step in enumerate(steps, 1):
        done[step.name] = run_step(step, mode, args.out, i, len(steps), started)
        order = {**kept, **done}
        manifest["steps"] = [order[s.name] for s in STEPS if s.name in order]
        (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    manifest["seconds"] = round(time.monotonic() - started, 1)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    failed = [s["name"] for s in manifest["steps"] if s["status"] == "failed"]
    print(f"\nbench ({mode}) done in {_clock(manifest['seconds'])}; failed: {', '.join(failed) or 'none'}")
    if not args.no_report:
        from report import main as report_main  # bench/report.py, next to this file

        report_main(["--input", str(args.out), "--docs", str(args.docs), "--readme", str(args.readme)])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
