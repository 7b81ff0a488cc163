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


def test_a_role_imports_the_agents_from_the_copy_it_is_given(tmp_path):
    """A role process imports bench/agent_pps, then the agents from the copy of the commit it runs; an
    agents' package the bench's own imports brought in from this checkout would shadow the copy (75de61b:
    bench/cpu_time imported topologies.lab_drops, hence worker and native, and every role refused to
    start: "worker.agent came from ... not from ...")."""
    code = agent_pps.scalar_code("HEAD", tmp_path)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import agent_pps; "
        "agent_pps._use_code(sys.argv[2]); import worker.agent; print(worker.agent.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(ROOT / "bench"), str(code)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve().is_relative_to(code.resolve())
