"""The ina backend follows the job's plan: a spine of the in-process leaf-spine (served in a child
process, with the controller's fault monitor) dies while the ranks run all_reduces; the controller
notices, re-plans the job on the other spine and streams the new plan to the ranks (WatchPlan).
Every step's sum stays exact; with both spines dead, every rank gets one clear error."""

import threading
import time
from pathlib import Path

from rank_bodies import steps_through_a_fault
from torch_ranks import run_ranks

LEAF_SPINE = Path(__file__).resolve().parents[2] / "topologies" / "leaf_spine.yaml"
WORKERS = ["h1", "h3", "h5"]  # on three leaves: the tree crosses a spine
STEPS, VALUES = 4, 64 * 400


def _spines(served):
    from controller.jobservice import JobClient

    client = JobClient(served.controller)
    try:
        plan = client.get_plan(served.job_id)
    finally:
        client.close()
    return plan, {c.switch for c in plan.switches if c.switch.startswith("sp")}


def _after(path: Path, action, deadline: float = 90.0) -> threading.Thread:
    """Run ``action`` as soon as ``path`` exists (a rank finished its first step)."""

    def run():
        end = time.monotonic() + deadline
        while not path.exists() and time.monotonic() < end:
            time.sleep(0.005)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_spine_killed_between_steps_keeps_every_sum_exact(tmp_path):
    from topologies.inprocess.serve import ServedNetwork
    from worker.torch_backend.options import attach_env

    started = tmp_path / "started"
    with ServedNetwork(LEAF_SPINE, "--workers", *WORKERS, "--monitor-interval", "0.02") as served:
        plan, (spine,) = _spines(served)
        killer = _after(started, lambda: served.kill_switch(spine))
        env = lambda r: dict(attach_env(served, r), INA_TIMEOUT="30")  # noqa: E731
        out = run_ranks(steps_through_a_fault, len(WORKERS), STEPS, VALUES, str(started), env=env)
        killer.join(5)
        new_plan, (other,) = _spines(served)
    assert out == [["exact"] * STEPS] * len(WORKERS)
    assert new_plan.version == plan.version + 1 and other != spine
    assert served.switch_counters[other]["grad_completed"] > 0  # the other spine summed the later steps


def test_no_spine_left_gives_every_rank_one_clear_error(tmp_path):
    from topologies.inprocess.serve import ServedNetwork
    from worker.torch_backend.options import attach_env

    started = tmp_path / "started"
    with ServedNetwork(LEAF_SPINE, "--workers", *WORKERS, "--monitor-interval", "0.02") as served:

        def kill_both():
            served.kill_switch("sp1")
            served.kill_switch("sp2")

        killer = _after(started, kill_both)
        env = lambda r: dict(attach_env(served, r), INA_TIMEOUT="30")  # noqa: E731
        t0 = time.monotonic()
        out = run_ranks(steps_through_a_fault, len(WORKERS), 6, VALUES, str(started), env=env)
        killer.join(5)
    assert time.monotonic() - t0 < 60  # the controller's error, not the 30 s budget of every step
    for steps in out:
        # the kill lands once a rank has finished its first step; a step already under way may still finish
        failed = [i for i, s in enumerate(steps) if s != "exact"]
        assert failed and failed[0] >= 1 and failed == list(range(failed[0], len(steps))), steps
        assert all(s.startswith("RuntimeError: ina all_reduce failed: ") for s in steps[failed[0] :]), steps
        assert all(f"re-planning job {served.job_id} around the failed switch sp" in s for s in steps[failed[0] :]), (
            steps
        )
