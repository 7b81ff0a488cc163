"""bench/allreduce_netns.py's summary of repeated runs: one entry per method and size with the median
time, its ratio to the ideal and the spread, every run counted (none dropped, none picked)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import allreduce_netns as bench  # noqa: E402

MB4 = 4 * 2**20
IDEAL_4MB = MB4 * 8 / 100e6  # 0.336 s at 100 Mbit/s


def run(method: str, time_s: float, size: int = MB4, k: int = 1024, mtu: int = 9000, retx: int = 0) -> dict:
    return {
        "method": method,
        "values_per_packet": k,
        "mtu": mtu,
        "bytes_per_worker": size,
        "time_s": time_s,
        "ideal_s": size * 8 / 100e6,
        "retransmissions": retx,
    }


def test_median_and_spread_per_method_and_size():
    runs = [
        run("ina", 0.534, retx=3),
        run("ina", 0.470),
        run("ina", 0.490),
        run("gloo", 0.686),
        run("gloo", 0.634),
        run("ina", 1.0, size=2 * MB4),
    ]
    summary = bench.summarize(runs)
    assert [(e["label"], e["bytes_per_worker"], e["runs"]) for e in summary] == [
        ("ina K=1024 MTU 9000", MB4, 3),
        ("gloo MTU 9000", MB4, 2),
        ("ina K=1024 MTU 9000", 2 * MB4, 1),
    ]
    ina, gloo, ina8 = summary
    assert (ina["median_s"], ina["min_s"], ina["max_s"]) == (0.490, 0.470, 0.534)
    assert abs(ina["median_ratio_to_ideal"] - 0.490 / IDEAL_4MB) < 1e-12
    assert ina["retransmissions"] == [3, 0, 0]  # in run order
    assert gloo["median_s"] == (0.686 + 0.634) / 2  # an even count: the mean of the middle two
    assert (ina8["median_s"], ina8["min_s"], ina8["max_s"]) == (1.0, 1.0, 1.0)
    line = bench.describe_summary(ina)
    assert "median    0.490 s" in line and "of 3 runs, 0.470-0.534 s" in line and "1.46 x ideal" in line
