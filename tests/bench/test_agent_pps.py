"""bench/agent_pps.py's copies of older agents: --compare naming the baseline's commit (in any spelling)
shares the baseline's copy instead of failing on it, and a revision git does not know is refused with a
message naming it."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import agent_pps  # noqa: E402


def test_the_baseline_and_compare_revisions_may_be_the_same_commit(tmp_path):
    full = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", f"{agent_pps.BASELINE_REV}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    baseline = agent_pps.scalar_code(agent_pps.BASELINE_REV, tmp_path)
    assert agent_pps.scalar_code(agent_pps.BASELINE_REV, tmp_path) == baseline  # --compare BASELINE: it crashed here
    assert agent_pps.scalar_code(full, tmp_path) == baseline  # the same commit spelt in full
    assert (baseline / "worker" / "agent.py").is_file()
    head = agent_pps.scalar_code("HEAD", tmp_path)
    committed = subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:worker/agent.py"], capture_output=True, check=True
    )
    assert head != baseline and (head / "worker" / "agent.py").read_bytes() == committed.stdout
    assert len(list(tmp_path.iterdir())) == 2


def test_an_unknown_revision_is_refused_by_name(tmp_path):
    with pytest.raises(agent_pps.BenchError, match="'no-such-rev' is not a git revision"):
        agent_pps.scalar_code("no-such-rev", tmp_path)
    assert list(tmp_path.iterdir()) == []
