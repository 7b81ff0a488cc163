"""Re-planning in the mininet lab: the job runs on leaf-spine (softswitch running p4src/ina.p4 in
every switch, the lab's agents in the hosts' namespaces); a spine's switch process is killed, or a
link between a leaf and a spine goes down (mininet's ``link a b down``), in the middle of an allreduce.
Nobody tells the controller: its fault monitor notices (P4Runtime probes, the ports' state), re-plans
the job on the rest of the network and pushes the new plan to the server and the workers, which move
their chunks in flight. Sums stay exact; when no tree is left, every rank gets the controller's reason."""

import os
import shutil
import threading
import time

from conftest import needs_mininet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet

VALUES = 512_000  # per worker: a round long enough for a fault to land inside it


def _lab():
    from controller.planner import PlanOptions
    from topologies.mininet_lab import MininetLab

    lines: list[str] = []
    lab = MininetLab(
        os.path.join(REPO, "topologies", "leaf_spine.yaml"),
        4,  # h1, h2 on l1, h3, h4 on l2, the server h9 on l3: the tree crosses a spine
        values=VALUES,
        log=lines.append,
        plan_options=PlanOptions(result_mode="multicast"),
        monitor_interval=0.2,
    )
    return lab, lines


def _spine(plan) -> str:
    (spine,) = {c.switch for c in plan.switches if c.switch.startswith("sp") and c.aggregates}
    return spine


def _during_round(action, clean_s: float) -> threading.Timer:
    """Run ``action`` a quarter into a round (by the time a clean round of the same size took)."""
    timer = threading.Timer(clean_s / 4, action)
    timer.start()
    return timer


def _round_with_fault(lab, fault):
    """One clean round, then one with ``fault(spine)`` a quarter into it, on the aggregating spine.

    Returns the plan before the fault, that spine and the clean round (its time paces later faults).
    """
    old = lab.plan
    spine = _spine(old)
    (clean,) = lab.allreduce(1)
    timer = _during_round(lambda: fault(spine), clean.elapsed)
    (round_,) = lab.allreduce(1)
    timer.join()
    assert round_.verified  # every rank's sum checked against numpy on the hosts' own inputs
    return old, spine, clean


def _moved(lab) -> int:
    """Chunks the workers moved to the recovery tree (cumulative agent counters of the last round)."""
    return sum(int(stats.get("chunks_moved", 0)) for stats in lab.rounds.last_stats.values())


def test_a_spine_killed_mid_allreduce_then_the_other_one():
    from topologies.errors import LabJobError

    lab, lines = _lab()
    try:
        lab.start()
        old, dead, clean = _round_with_fault(lab, lab.kill_switch)
        assert lab.plan.version == old.version + 1 and dead not in {c.switch for c in lab.plan.switches}
        assert lab.faults.monitor.failed.keys() == {dead}
        assert _moved(lab) > 0, "\n".join(lines)  # the kill landed inside the round: chunks were in flight
        other = _spine(lab.plan)
        # the round in progress finished over the recovery tree; the next one aggregates on the other spine
        before = lab.switch_counters()
        (after,) = lab.allreduce(1, 6400)
        assert after.verified and dead not in before
        completed = lab.switch_counters()[other].get("grad_completed", 0) - before[other].get("grad_completed", 0)
        assert completed == -(-6400 // lab.plan.value_count)  # every chunk completed in the data plane

        # no tree left: every rank gets the controller's reason, long before its own time budget
        fault = _during_round(lambda: lab.kill_switch(other), clean.elapsed)
        t0 = time.monotonic()
        try:
            lab.allreduce(1)
            raise AssertionError("the round survived both spines")
        except LabJobError:
            pass
        fault.join()
        assert time.monotonic() - t0 < 20
        assert sorted(lab.rounds.last_errors) == ["h1", "h2", "h3", "h4"]
        for error in lab.rounds.last_errors.values():
            assert f"re-planning job {old.job_id} around the failed switch {other} failed" in error, error
    finally:
        lab.stop()
        if lab.logs_kept is not None:  # the failed round keeps the run's logs: not wanted here
            shutil.rmtree(lab.logs_kept, ignore_errors=True)


def test_a_link_down_mid_allreduce_is_planned_around():
    lab, lines = _lab()
    try:
        lab.start()
        old, spine, _ = _round_with_fault(lab, lambda spine: lab.link_down("l1", spine))
        assert lab.faults.monitor.links_failed == {frozenset(("l1", spine))} and not lab.faults.monitor.failed
        assert lab.plan.version == old.version + 1
        for tree in lab.plan.trees:
            for worker in ("h1", "h2"):
                assert [h.name for h in tree.grad_hops[worker]][:2] != ["l1", spine]
        assert _moved(lab) > 0, "\n".join(lines)
        (after,) = lab.allreduce(1, 640)  # the next round on the new plan
        assert after.verified
    finally:
        lab.stop()
