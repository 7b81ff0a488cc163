"""Runs one of examples/ as a user does (``python examples/NAME.py FLAGS`` from the repository root) for the
example tests of several test folders (tests/torch, tests/embedding)."""

from __future__ import annotations

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
