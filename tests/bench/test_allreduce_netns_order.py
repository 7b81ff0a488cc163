"""bench/allreduce_netns.py's run order and arguments: repeats take turns between the methods within a
size (a slow spell of the machine does not fall on one method's median), the warm-up runs every method
once at the warm-up size first, --rto and --spurious settings take turns, and a warm-up size that is not
positive is refused with a clear error."""

import sys
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import allreduce_netns as bench  # noqa: E402


class RecordingBench:
    """Stands in for LabBench: records (method, MB) of every run instead of starting a lab."""

    calls: list[tuple[str, float]] = []

    def __init__(self, topology, log, pool_size, program):
        self.lab = SimpleNamespace(
            workers=["h1", "h2"], server="h3", plan=SimpleNamespace(value_count=64), network=SimpleNamespace(notes=[])
        )
        self.bandwidth_mbps = 100.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def values_and_timeout(self, mb):
        return mb, 1.0

    def run(self, method, mb, timeout, settings=None):
        RecordingBench.calls.append((method, mb, *settings.values()) if settings else (method, mb))
        return {"method": method, "mb": mb}


def test_repeats_take_turns_between_methods_within_a_size(monkeypatch):
    RecordingBench.calls = []
    monkeypatch.setattr(bench, "LabBench", RecordingBench)
    monkeypatch.setattr(bench, "lab_lock", lambda path: nullcontext())
    monkeypatch.setattr(bench, "describe", lambda row: f"{row['method']} {row['mb']}")
    report = bench._run_lab("star.yaml", [4, 64], ["ina", "gloo"], 2, None, 2048, "v1model", 1.0)
    warmup, timed = RecordingBench.calls[:2], RecordingBench.calls[2:]
    assert warmup == [("ina", 1.0), ("gloo", 1.0)]
    assert timed == [
        ("ina", 4),
        ("gloo", 4),
        ("ina", 4),
        ("gloo", 4),
        ("ina", 64),
        ("gloo", 64),
        ("ina", 64),
        ("gloo", 64),
    ]
    assert [(r["method"], r["mb"]) for r in report["runs"]] == timed


def test_each_rto_and_spurious_setting_takes_its_turn_for_the_agents_methods_and_gloo_runs_once(monkeypatch):
    RecordingBench.calls = []
    monkeypatch.setattr(bench, "LabBench", RecordingBench)
    monkeypatch.setattr(bench, "lab_lock", lambda path: nullcontext())
    monkeypatch.setattr(bench, "describe", lambda row: f"{row['method']} {row['mb']}")
    settings = bench.agent_settings([0.2, 0.6], ["off", "on"])
    bench._run_lab("star.yaml", [64], ["ina", "gloo"], 2, None, 2048, "v1model", 1.0, settings)
    one_repeat = [
        ("ina", 64, 0.2, False),
        ("ina", 64, 0.2, True),
        ("ina", 64, 0.6, False),
        ("ina", 64, 0.6, True),
        ("gloo", 64),
    ]
    assert RecordingBench.calls[2:] == one_repeat * 2


@pytest.mark.parametrize("warmup", ["0", "-4"])
def test_a_warmup_that_is_not_positive_is_refused(warmup, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--warmup", warmup])
    assert exit_.value.code == 2
    assert f"--warmup must be a positive number of MB per worker, got {float(warmup):g}" in capsys.readouterr().err
