"""A controller that restarts with its state file (docs/design-decisions.md, "A controller that restarts";
controller/job_state.py): a new job manager over the same switches and the same file takes its jobs back with
their plans, so agents get their plan versions again, a switch failure re-plans the job (sums stay exact) and
releasing it removes its entries; a job whose entries a switch lost is re-installed; a job the file does not
know stays adopted; a corrupt or another topology's file is one clear error. On the in-process network
running p4src/ina.p4."""

import json

import numpy as np
import pytest
from inprocess_jobs import NoRegisterReads, int_inputs, network

from controller.installer import T_ADMISSION, T_JOBS

WORKERS = [f"h{i}" for i in range(1, 9)]


def _manager(net, state, installer=None):
    from controller.jobservice import JobManager

    return JobManager(net.topo, installer=installer or net.installer, state=state)


def _register(manager, workers, server, **options):
    from controller.options import PlanOptions

    plan, installed = manager.register(workers, [server], PlanOptions(**options))
    assert installed
    return plan


def _job(net, plan):
    from topologies.inprocess.jobs import InProcessJob

    return InProcessJob(net, [w.name for w in plan.workers], [s.name for s in plan.servers], plan=plan, install=False)


def _spine_of(plan):
    (spine,) = {c.switch for c in plan.switches if c.switch.startswith("sp")}
    return spine


def _when(net, condition, action, every=50e-6):
    def check():
        if condition():
            action()
        else:
            net.loop.call_later(every, check)

    net.loop.call_soon(check)


def test_a_restarted_service_serves_the_same_plans_and_lists_the_job(tmp_path):
    from controller.jobservice import JobClient, JobServer

    net = network("star")
    state = tmp_path / "jobs.json"
    plan = _register(_manager(net, state), ["h1", "h2"], "h5")

    restarted = _manager(net, state)
    assert restarted.adopted == {} and restarted.restore_notes == [] and restarted.adoption_errors == []
    assert restarted.list() == [plan] and restarted.plan(plan.job_id, 1) == plan
    server = JobServer(restarted).start()
    client = JobClient(server.address)
    try:
        assert client.get_plan(plan.job_id) == plan and client.get_plan(plan.job_id, version=1) == plan
        (summary,) = client.list()
        assert (summary.job_id, summary.version, summary.adopted, list(summary.workers)) == (
            plan.job_id,
            1,
            False,
            ["h1", "h2"],
        )
    finally:
        client.close()
        server.stop()
    job = _job(net, plan)  # agents on the plan the restarted service serves: exact sums
    xs = int_inputs(2, 64 * 40, seed=1)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    second = _register(restarted, ["h3", "h4"], "h5")
    assert second.job_id == plan.job_id + 1  # the rotation goes on after the file's jobs
    cells = {(c.switch, c.slot_base) for p in (plan, second) for c in p.switches if c.aggregates}
    assert len(cells) == 2  # the restored job's cells stay its own


def test_a_switch_failure_after_the_restart_replans_the_restored_job_with_exact_sums(tmp_path):
    from controller.replan import FaultMonitor

    net = network("leaf_spine", seed=5)
    state = tmp_path / "jobs.json"
    old = _register(_manager(net, state), WORKERS, "h9")
    restarted = _manager(net, state)
    job = _job(net, restarted.plan(old.job_id))
    job.follow(restarted)  # an agent's WatchPlan, attached to the restored job
    dead = _spine_of(old)
    monitor = FaultMonitor(net.installer, restarted.switches_in_use, restarted.switch_failed, net.loop, 0.002).start()
    xs = int_inputs(8, 64 * 300, seed=3)
    handles = job.start(xs)

    def a_third_done():
        round_ = job.agents[0]._round
        return round_ is not None and round_.results_heard >= round_.chunks // 3

    _when(net, a_third_done, lambda: net.kill_switch(dead))
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()
    new = restarted.plan(old.job_id)
    assert new.version == 2 and monitor.failed.keys() == {dead} and dead not in {c.switch for c in new.switches}
    ys = int_inputs(8, 640, seed=4)  # and the next allreduce, on the new plan
    for out in job.allreduce(ys):
        np.testing.assert_array_equal(out, sum(ys))

    again = _manager(net, state)  # the file has both versions (the dead spine answers no read)
    assert [again.plan(old.job_id, v) for v in (1, 2)] == [old, new]
    assert again.restore_notes == []


def test_releasing_a_restored_job_removes_its_entries_and_frees_its_slots(tmp_path):
    net = network("star")
    state = tmp_path / "jobs.json"
    plan = _register(_manager(net, state), ["h1", "h2"], "h5")
    restarted = _manager(net, state)
    assert restarted.list() == [plan] and restarted.adopted == {}  # restored with its plan, not adopted
    assert restarted.release(plan.job_id)
    assert net.installer.read_table("s1", T_JOBS) == [] and net.installer.read_table("s1", T_ADMISSION) == []
    assert net.installer.read_groups("s1") == {}
    assert restarted.list() == [] and restarted.resources.slots.used("s1") == 0
    saved = json.loads(state.read_text())
    assert saved["jobs"] == {} and saved["released"] == [plan.job_id]
    again = _manager(net, state)
    assert again.list() == [] and again.adopted == {}
    second = _register(again, ["h1", "h2"], "h5")
    assert second.job_id == plan.job_id + 1  # not the released id, whose chunks the cells may hold
    assert [(c.slot_base, c.result_group) for c in second.switches] == [
        (c.slot_base, c.result_group) for c in plan.switches
    ]


def test_a_job_released_before_the_restart_is_known_from_the_file_where_the_cells_cannot_be_read(tmp_path):
    from controller.installer import Installer

    net = network("star")
    state = tmp_path / "jobs.json"
    manager = _manager(net, state)
    first = _register(manager, ["h1", "h2"], "h5")
    xs = int_inputs(2, 64 * 40, seed=2)
    for out in _job(net, first).allreduce(xs):  # s1's cells now hold its chunks
        np.testing.assert_array_equal(out, sum(xs))
    manager.release(first.job_id)
    bmv2_like = Installer(net.topo, net.installer.p4info, connect=lambda s: NoRegisterReads(net.installer.conn(s)))
    without_file = _manager(net, None, bmv2_like)
    reused = _register(without_file, ["h1", "h2"], "h5")
    assert reused.job_id == first.job_id  # the cells' owner cannot be read: the id comes round again
    without_file.release(reused.job_id)
    assert _register(_manager(net, state, bmv2_like), ["h1", "h2"], "h5").job_id == first.job_id + 1


def test_a_job_whose_entries_the_switches_lost_is_reinstalled_and_runs(tmp_path):
    net = network("star")
    state = tmp_path / "jobs.json"
    plan = _register(_manager(net, state), ["h1", "h2"], "h5")
    net.installer.remove_job(plan)  # the switch lost them (restarted, or a pipeline pushed)
    restarted = _manager(net, state)
    assert restarted.restore_notes == [
        f"job {plan.job_id} of {state} has no entries on s1: re-installed (plan version 1)"
    ]
    assert len(net.installer.read_table("s1", T_JOBS)) == 1 and restarted.list() == [plan]
    xs = int_inputs(2, 64 * 40, seed=5)
    for out in _job(net, plan).allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))


def test_a_job_the_file_does_not_know_stays_adopted(tmp_path):
    net = network("star")
    state = tmp_path / "jobs.json"
    known = _register(_manager(net, state), ["h1", "h2"], "h5")
    unknown = _register(_manager(net, None), ["h3", "h4"], "h5")  # a controller without the file
    restarted = _manager(net, state)
    assert restarted.list() == [known] and list(restarted.adopted) == [unknown.job_id]
    assert restarted.adoption_errors == []


def test_a_corrupt_or_foreign_state_file_is_one_clear_error(tmp_path):
    from controller.errors import StateFileError

    net = network("star")
    state = tmp_path / "jobs.json"
    _register(_manager(net, state), ["h1", "h2"], "h5")
    good = state.read_text()
    state.write_text(good[: len(good) // 2])
    with pytest.raises(StateFileError, match=rf"^state file {state}: not JSON \(.*\): corrupt, or not a state file$"):
        _manager(net, state)
    doc = json.loads(good)
    doc["jobs"]["1"]["plans"][0]["trees"] = []
    state.write_text(json.dumps(doc))
    with pytest.raises(StateFileError, match=rf"^state file {state}: job 1: job 1 has no trees$"):
        _manager(net, state)
    other = network("leaf_spine")
    state.write_text(good)
    with pytest.raises(
        StateFileError, match=rf"^state file {state}: written for topology 'star', not this 'leaf_spine' \(give"
    ):
        _manager(other, state)
    with pytest.raises(StateFileError, match=rf"^state file {tmp_path}/no/such/dir/x.json: cannot write it \("):
        _manager(net, tmp_path / "no" / "such" / "dir" / "x.json")


def test_trees_of_a_replan_the_file_missed_are_kept_off_and_removed_with_the_job(tmp_path):
    """The controller died between a re-plan's install and its write of the file: the switches hold both
    versions' trees, the file the first. The restored job keeps the second's slots and groups taken and
    its release removes every entry of the job."""
    net = network("leaf_spine", seed=1)
    state = tmp_path / "jobs.json"
    manager = _manager(net, state)
    first = _register(manager, WORKERS, "h9")
    before = state.read_text()
    (second,) = manager.switch_failed(_spine_of(first))  # installs version 2, removes version 1
    net.installer.install_job(first)  # version 1's entries not removed yet...
    state.write_text(before)  # ...nor the file written, when the controller died

    restarted = _manager(net, state)
    new_trees = {t.tree_id for t in second.trees}
    assert restarted.list() == [first] and restarted.strays[first.job_id].trees == new_trees
    (note,) = restarted.restore_notes
    assert note.startswith(f"job {first.job_id} of {state} has entries of tree(s) ") and "kept until" in note
    owners = restarted.resources.slots.owners()
    assert {t for j, t in owners if j == first.job_id} == {t.tree_id for t in first.trees} | {
        c.tree_id for c in second.switches if c.aggregates
    }
    other = _register(restarted, ["h1", "h2"], "h10")  # planned off both versions' cells and groups
    held = {(c.switch, c.slot_base) for p in (first, second) for c in p.switches if c.aggregates}
    assert not held & {(c.switch, c.slot_base) for c in other.switches if c.aggregates}
    groups = {c.result_group for p in (first, second) for c in p.switches if c.result_group}
    assert not groups & {c.result_group for c in other.switches if c.result_group}
    restarted.release(other.job_id)

    restarted.release(first.job_id)
    for switch in net.switches:
        assert net.installer.read_table(switch, T_JOBS) == [] and net.installer.read_groups(switch) == {}
        assert restarted.resources.slots.used(switch) == 0
