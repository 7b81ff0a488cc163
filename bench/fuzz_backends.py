"""The fuzz run of softswitch's two back ends, at full size: seeded random and mutated frames through
p4src/ina.p4 (configured as the STF scenarios configure it) and through every test program (random
table entries, multicast groups and clone sessions), each frame on the Python and the native back end,
every output, packet-in and digest compared, registers, counters, tables and statistics compared every
--check frames. Any difference stops the run with the frame that caused it (exit status 1).

The engine is tests/softswitch/differential/backend_pair.py (the differential tests run the same code
with 10,000 frames on ina.p4). Prints progress and a table (frames per back end, the time each back
end spent, mismatches) and saves bench/results/fuzz_backends.json and .png.

    .venv/bin/python bench/fuzz_backends.py [--frames 100000] [--program-frames 10000] [--seed 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "softswitch" / "differential"))
sys.path.insert(0, str(ROOT / "tests" / "dataplane"))  # the ina.p4 scenarios ina_traffic builds on

import ina_traffic  # noqa: E402
from backend_pair import EXPECTED_FALLBACKS, BackendMismatch, BackendPair, mutations, populate  # noqa: E402
from test_differential_programs import MAIN, NO_FUZZ  # noqa: E402

from protocol import codec  # noqa: E402

RESULTS = ROOT / "bench" / "results"
PROGRAM_DIRS = (ROOT / "tests" / "softswitch" / "programs", ROOT / "tests" / "softswitch" / "stf")


def test_programs() -> list[Path]:
    return sorted(
        p
        for d in PROGRAM_DIRS
        for p in d.rglob("*.p4")
        if MAIN.search(p.read_text()) and p.name not in EXPECTED_FALLBACKS and p.name not in NO_FUZZ
    )


def fuzz_ina(frames: int, seed: int, check: int, progress) -> dict:
    rng = random.Random(seed)
    pair = BackendPair.from_path(ina_traffic.INA_P4)
    try:
        pair.call(ina_traffic.configure)
        seeds = [ina_traffic.random_frame(rng)[1] for _ in range(500)]
        for n in range(1, frames + 1):
            if rng.random() < 0.6:
                port, frame = ina_traffic.random_frame(rng)
            else:
                port, frame = rng.choice(ina_traffic.PORTS), next(mutations(rng, seeds, 1))
            pair.process(port, frame)
            if n % check == 0 or n == frames:
                pair.check_state()
                progress(f"ina.p4: {n:,}/{frames:,} frames identical on both back ends")
        return _row("p4src/ina.p4", pair)
    finally:
        pair.close()


def fuzz_program(path: Path, frames: int, seed: int, check: int) -> dict:
    rng = random.Random(f"{seed}:{path.name}")
    pair = BackendPair.from_path(path, cpu_port=64)
    try:
        populate(pair, rng)
        seeds = [
            codec.build_udp_frame(rng.randbytes(20), "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.9", dst)
            for dst in ("10.0.0.1", "10.0.1.2", "192.168.0.1")
        ] + [bytes(12) + t.to_bytes(2, "big") + rng.randbytes(40) for t in (0x0806, 0x86DD, 0x8100)]
        for n, frame in enumerate(mutations(rng, seeds, frames), 1):
            pair.process(rng.choice((0, 1, 2, 3, 64)), frame)
            if n % check == 0:
                pair.check_state()
        pair.check_state()
        return _row(str(path.relative_to(ROOT)), pair)
    finally:
        pair.close()


def _row(program: str, pair: BackendPair) -> dict:
    return {
        "program": program,
        "frames_per_backend": pair.frames,
        "mismatches": 0,
        "python_seconds": pair.seconds["python"],
        "native_seconds": pair.seconds["native"],
        "python_fps": pair.frames / pair.seconds["python"] if pair.seconds["python"] else 0.0,
        "native_fps": pair.frames / pair.seconds["native"] if pair.seconds["native"] else 0.0,
        "outputs_and_state_compared": True,
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [Path(r["program"]).stem for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows)), 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["python_fps"] for r in rows], 0.4, label="python back end")
    ax.bar([x + 0.2 for x in xs], [r["native_fps"] for r in rows], 0.4, label="native back end (per process() call)")
    ax.set_xticks(list(xs), names, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("fuzz frames / s (one process() call each)")
    total = sum(r["frames_per_backend"] for r in rows)
    ax.set_title(f"Fuzz run: {total:,} frames per back end, 0 differences")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=100_000, help="frames through ina.p4 per back end (default 100000)")
    p.add_argument("--program-frames", type=int, default=10_000, help="frames through each test program")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", type=int, default=10_000, help="compare all state every N frames")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    started = time.time()

    def progress(text: str) -> None:
        print(f"[{time.time() - started:6.1f}s] {text}", flush=True)

    rows = []
    try:
        rows.append(fuzz_ina(args.frames, args.seed, args.check, progress))
        for path in test_programs():
            rows.append(fuzz_program(path, args.program_frames, args.seed, args.check))
            progress(f"{path.relative_to(ROOT)}: {args.program_frames:,} frames identical")
    except BackendMismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        return 1
    total = sum(r["frames_per_backend"] for r in rows)
    print(f"\n{'program':52} {'frames':>9} {'python f/s':>11} {'native f/s':>11}  differences")
    for r in rows:
        print(f"{r['program']:52} {r['frames_per_backend']:>9,} {r['python_fps']:>11,.0f} {r['native_fps']:>11,.0f}  0")
    print(f"{'total':52} {total:>9,} frames per back end, 0 differences ({time.time() - started:.0f} s)")
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    result = {
        "seed": args.seed,
        "frames_per_backend": total,
        "differences": 0,
        "programs": rows,
        "load_average": load,
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
    }
    (args.out / "fuzz_backends.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(rows, args.out / "fuzz_backends.png")
    print(f"saved {args.out / 'fuzz_backends.json'} and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
