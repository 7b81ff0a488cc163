"""examples/train_digits.py end to end: on the in-process switch network, and one process per rank (short runs)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from example_runs import run_example

REPO = Path(__file__).resolve().parents[2]


def test_train_digits_on_ina_learns_and_keeps_ranks_in_sync(tmp_path):
    out = tmp_path / "summary.json"
    flags = ["--backend", "ina", "--workers", "2", "--epochs", "3", "--seed", "0", "--json", str(out)]
    proc = run_example("train_digits.py", *flags, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["backend"] == "ina" and summary["ranks_in_sync"]
    assert summary["test_accuracy"] > 0.7  # 10 classes: chance is 0.1
    assert "chunks completed in the data plane" in proc.stdout


def test_bad_flags_are_one_line():
    proc = run_example("train_digits.py", "--rank", "1")
    assert proc.returncode == 2
    assert "--rank needs --world-size" in proc.stderr


def test_one_process_per_rank_exits_cleanly_with_its_summary(tmp_path):
    """The lab's way of running the example: one ``--rank R`` process each (gloo on loopback). Every
    rank exits 0 and rank 0's summary line and JSON are complete: each rank ends without the
    interpreter's finalization (gloo's worker threads outlive the process group under DDP), so
    what it wrote must be flushed first."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "summary.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MASTER_", "GLOO_"))}
    env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(REPO / "examples" / "train_digits.py"),
                "--backend",
                "gloo",
                "--rank",
                str(r),
                "--world-size",
                "2",
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                str(port),
                "--epochs",
                "2",
                "--batch-size",
                "96",
                "--seed",
                "0",
            ]
            + (["--json", str(out)] if r == 0 else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(REPO),
            env=env,
        )
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    summary = json.loads(out.read_text())
    assert summary["ranks_in_sync"] and summary["workers"] == 2
    # batches of 96: 7 iterations an epoch (674 samples a rank), so the 20 iterations listed one by one (where a
    # slow first epoch went) are the whole run, and the means must be theirs (each listed to 0.01 ms)
    steps = 674 // 96
    first = summary["first_iterations_ms"]
    assert summary["iterations"] == len(first) == 2 * steps and all(t > 0 for t in first)
    assert summary["ms_per_iteration"] == pytest.approx(sum(first) / len(first), abs=0.005)
    # the steady state: the second epoch alone, without the first one's one-time costs
    assert summary["ms_per_iteration_after_first_epoch"] == pytest.approx(sum(first[steps:]) / steps, abs=0.005)
    assert outputs[0].rstrip().endswith("parameters identical on all ranks: True")


def test_hidden_and_depth_size_the_model(monkeypatch):
    """--hidden 1000 --depth 2 is the lab's bandwidth-bound model (about 1M parameters); the default
    is the small MLP."""
    import importlib.util

    monkeypatch.syspath_prepend(str(REPO / "examples"))  # the example imports its launch helper as a script does

    spec = importlib.util.spec_from_file_location("train_digits", REPO / "examples" / "train_digits.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def parameters(model):
        return sum(p.numel() for p in model.parameters())

    assert parameters(example.make_model(0, 32)) == 64 * 32 + 32 + 32 * 10 + 10
    assert parameters(example.make_model(0, 1000, 2)) == 64 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10
    proc = run_example("train_digits.py", "--depth", "0")
    assert proc.returncode == 2 and "--hidden and --depth must be at least 1" in proc.stderr
