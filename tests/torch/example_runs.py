"""Runs one of examples/ as a user does (``python examples/NAME.py FLAGS`` from the repository root) for the
example tests of several test folders (tests/torch, tests/embedding)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_example(script: str, *flags: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``examples/<script>`` with ``flags``, its output captured as text; fails the test on a timeout."""
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / script), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(REPO),
    )


def assert_float_sums_took_one_round_per_call(rounds: dict, calls: int, values: int) -> int:
    """The ina group's float SUM figures (examples/launch.py: switch_rounds) for `calls` all_reduces of
    `values` floats each, against the one-round path (worker/torch_backend/scales.py), in chunks of the
    switches' K (``rounds["values_per_packet"]``) and scale blocks of ``rounds["scale_block"]`` values: the
    first call of the size agrees on its blocks' exponents (one MAX round of ceil(blocks / k) chunks), every
    call then sends its values in whole blocks and one lane per block (ceil((blocks * block + blocks) / k)
    chunks); a block whose rank did not fit goes again in a further round of at most that many chunks, and
    at most one call in ten may need one. Returns the chunks, which the switch must have completed."""
    k, block = rounds["values_per_packet"], rounds["scale_block"]
    blocks = math.ceil(values / block)
    per_call, first = math.ceil((blocks * block + blocks) / k), math.ceil(blocks / k)
    extra = rounds["agreements"] + rounds["value_rounds"] - (calls + 1)
    assert rounds["agreements"] >= 1 and 0 <= extra <= calls // 10, rounds
    assert calls * per_call + first <= rounds["chunks"] <= calls * per_call + first + extra * per_call, rounds
    return rounds["chunks"]
