"""Running jobs after a controller restart (docs/design-decisions.md, "A controller that restarts"): a new
job manager over switches that still run a job reads that job's ina_jobs entries (slot bases and sizes,
counter rows, multicast groups) and adopts it, so a job registered after the restart gets other slot cells,
groups and counter rows, and both jobs' sums stay exact. On the in-process network running p4src/ina.p4."""

import numpy as np
import pytest
from inprocess_jobs import int_inputs, network

from controller.installer import T_ADMISSION, T_JOBS

VALUES = 64 * 40


def _manager(net):
    from controller.jobservice import JobManager

    return JobManager(net.topo, installer=net.installer)


def _register(manager, workers):
    from controller.options import PlanOptions

    plan, installed = manager.register(workers, ["h5"], PlanOptions())
    assert installed
    return plan


def _job(net, plan, server_agents):
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = [w.name for w in plan.workers], [s.name for s in plan.servers]
    return InProcessJob(net, workers, servers, plan=plan, install=False, server_agents=server_agents)


def _cells(plan):
    """(switch, first slot, last slot) of every aggregating switch of ``plan``."""
    return [(c.switch, c.slot_base, c.slot_base + 2 * c.pool_size - 1) for c in plan.switches if c.aggregates]


def _groups(plan):
    return {c.result_group for c in plan.switches if c.result_group}


def test_a_restarted_manager_plans_a_new_job_off_a_running_jobs_cells_and_both_sums_are_exact(program):
    net = network("star", program=program)
    first = _register(_manager(net), ["h1", "h2"])
    agents: dict = {}
    job_a = _job(net, first, agents)
    xs = int_inputs(2, VALUES, seed=1)
    for out in job_a.allreduce(xs):  # the cells now hold A's chunks; A stays installed
        np.testing.assert_array_equal(out, sum(xs))

    restarted = _manager(net)  # a new controller over the same switches
    adopted = restarted.adopted[first.job_id]
    assert [(s, base, base + size - 1) for (s, _), (base, size) in adopted.slots.items()] == _cells(first)
    assert adopted.groups == _groups(first) and adopted.groups  # the results' group (root's or server's)
    assert adopted.job_indices == {first.job_index} and adopted.switches == {"s1"}
    assert restarted.list() == [] and restarted.list_adopted() == [adopted]

    second = _register(restarted, ["h3", "h4"])
    assert second.job_id == first.job_id + 1 and second.job_index != first.job_index
    assert _groups(second) and not _groups(second) & _groups(first)
    (a_switch, a_low, a_high), (b_switch, b_low, b_high) = _cells(first) + _cells(second)
    assert a_switch == b_switch == "s1" and (b_low > a_high or b_high < a_low)

    job_b = _job(net, second, agents)
    xa, xb = int_inputs(2, VALUES, seed=2), int_inputs(2, VALUES, seed=3)
    handles = job_a.start(xa) + job_b.start(xb)  # both jobs at once, A's agents on A's old plan
    outs = [h.wait() for h in handles]
    for out in outs[:2]:
        np.testing.assert_array_equal(out, sum(xa))
    for out in outs[2:]:
        np.testing.assert_array_equal(out, sum(xb))
    # each job's results came by its own multicast group: none went to the other job's workers (ignored
    # there) while its own workers timed out and had the server resend them
    for agent in job_a.agents + job_b.agents:
        assert agent.stats["timeouts"] == agent.stats["retransmissions"] == agent.stats["ignored"] == 0


def test_an_adopted_job_released_frees_its_entries_and_resources():
    from controller.errors import UnknownJobError

    net = network("star")
    first = _register(_manager(net), ["h1", "h2"])
    restarted = _manager(net)
    with pytest.raises(UnknownJobError, match="adopted from the switches"):
        restarted.plan(first.job_id)
    assert restarted.release(first.job_id)  # its switch entries removed
    assert net.installer.read_table("s1", T_JOBS) == [] and net.installer.read_groups("s1") == {}
    assert net.installer.read_table("s1", T_ADMISSION) == []
    assert restarted.list_adopted() == [] and restarted.resources.slots.used("s1") == 0
    second = _register(restarted, ["h1", "h2"])
    assert _cells(second) == _cells(first) and _groups(second) == _groups(first)  # free again


def test_a_job_released_before_the_restart_leaves_its_resources_free():
    net = network("star")
    manager = _manager(net)
    first = _register(manager, ["h1", "h2"])
    manager.release(first.job_id)
    restarted = _manager(net)
    assert restarted.adopted == {} and restarted.resources.slots.used("s1") == 0
    second = _register(restarted, ["h1", "h2"])
    assert _cells(second) == _cells(first) and _groups(second) == _groups(first)
    assert second.job_index == first.job_index


class _Unreachable:
    """A switch's P4Runtime client whose reads all fail (a switch that does not answer)."""

    def __init__(self, client):
        self.client = client

    def read(self, entities):
        from controller.errors import P4RuntimeError

        raise P4RuntimeError("switch s1: Read failed: UNAVAILABLE")

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_switch_whose_job_entries_cannot_be_read_is_named():
    from controller.installer import Installer

    net = network("star")
    _register(_manager(net), ["h1", "h2"])
    installer = Installer(net.topo, net.installer.p4info, connect=lambda s: _Unreachable(net.installer.conn(s)))
    assert installer.jobs_on_switches() == {}
    assert installer.jobs_unread == {"s1": "switch s1: Read failed: UNAVAILABLE"}


def test_inactl_jobs_lists_an_adopted_job_and_releases_it(capsys):
    from controller.cli import main
    from controller.jobservice import JobServer

    net = network("star")
    first = _register(_manager(net), ["h1", "h2"])
    server = JobServer(_manager(net)).start()
    try:
        assert main(["jobs", "--controller", server.address]) == 0
        assert capsys.readouterr().out == (
            f"job {first.job_id} adopted (running on the switches before this controller started, no plan here): "
            "1 tree(s) on s1\n"
        )
        assert main(["jobs", "show", str(first.job_id), "--controller", server.address]) == 1
        assert "adopted from the switches" in capsys.readouterr().err
        assert main(["jobs", "release", str(first.job_id), "--controller", server.address]) == 0
        assert capsys.readouterr().out == f"job {first.job_id} released (switch entries removed)\n"
        assert net.installer.read_table("s1", T_JOBS) == []
    finally:
        server.stop()


def test_jobs_that_share_cells_on_the_switches_are_named_and_stay_taken_until_both_are_released(capsys):
    """Two jobs installed on the same cells (planned apart, each with resources of its own): the manager
    adopts both, says what they share, and a new job gets none of it until both are released."""
    from controller.cli import _say_adopted
    from controller.options import PlanOptions
    from controller.planner import plan_job

    net = network("star")
    options = PlanOptions(value_count=net.installer.values_per_packet(), root_results=True)
    plans = [plan_job(net.topo, ["h1", "h2"], ["h5"], options) for _ in range(2)]
    plans[1].job_id = 2
    for plan in plans:
        net.install_job(plan)
    manager = _manager(net)
    assert list(manager.adopted) == [1, 2]
    (error,) = manager.adoption_errors
    assert error == (
        "job 2 found on s1 shares what another job there holds (job index 0 is already in use; multicast group "
        "id 1 is already in use; s1's slots 0..1023 overlap job 1's): their sums may be wrong, release one"
    )
    _say_adopted(net.installer, manager.list_adopted(), manager.adoption_errors)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        "found job 1 (adopted: running on the switches, not planned here): switches s1, 1 tree(s), "
        "slots s1 0..1023, groups 1"
    )
    assert lines[2] == f"warning: {error}"

    manager.release(1)  # job 2 still runs on the cells, index and group they shared
    assert list(net.installer.read_groups("s1")) == [1]
    third = _register(manager, ["h3", "h4"])
    assert third.job_index != 0 and 1 not in _groups(third) and _cells(third)[0][1] >= 1024
    manager.release(2)
    manager.release(third.job_id)
    fourth = _register(manager, ["h1", "h2"])
    assert fourth.job_index == 0 and _groups(fourth) == {1} and _cells(fourth) == _cells(plans[0])


def test_releasing_an_adopted_job_leaves_a_dead_switch_alone():
    net = network("star")
    first = _register(_manager(net), ["h1", "h2"])
    restarted = _manager(net)
    assert restarted.switch_failed("s1") == []  # no job of its own plan to re-plan
    restarted.release(first.job_id)  # no write to s1, which the manager holds dead
    assert len(net.installer.read_table("s1", T_JOBS)) == 1 and restarted.adopted == {}
