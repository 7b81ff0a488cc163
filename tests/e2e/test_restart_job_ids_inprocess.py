"""Job ids after a controller restart (docs/design-decisions.md, "A controller that restarts"): a new job
manager over switches that still hold an earlier job's id, in its ina_jobs entries or in its slot cells'
owner, gives the next job the id after it, so that job's first chunks on the same cells are not taken for
retransmissions of the old job's; over switches that hold none it starts at 1. On the in-process network
running p4src/ina.p4."""

import numpy as np
from inprocess_jobs import NoRegisterReads, int_inputs, network, workers_and_servers

from controller.installer import T_JOBS

N_WORKERS = 4


def _manager(net):
    from controller.jobservice import JobManager

    return JobManager(net.topo, installer=net.installer)


def _register(manager):
    from controller.options import PlanOptions

    plan, installed = manager.register(*workers_and_servers(manager.topo, N_WORKERS), PlanOptions())
    assert installed
    return plan


def _run(net, plan, seed, server_agents=None):
    """One allreduce on ``plan`` (installed); exact sums. The job's server agents."""
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = [w.name for w in plan.workers], [s.name for s in plan.servers]
    job = InProcessJob(net, workers, servers, plan=plan, install=False, server_agents=server_agents)
    xs = int_inputs(N_WORKERS, 64 * 40, seed=seed)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    return job.server_agents


def test_switches_without_job_state_start_the_ids_at_1():
    net = network("star")
    assert net.installer.job_ids_on_switches() == set()
    plan = _register(_manager(net))
    assert plan.job_id == 1
    assert net.installer.job_ids_on_switches() == {1}  # its set_job entry, before any packet
    _run(net, plan, seed=1)


def test_a_restarted_manager_gives_the_next_job_the_id_after_the_one_the_cells_hold():
    net = network("star")
    manager = _manager(net)
    first = _register(manager)
    agents = _run(net, first, seed=1)
    manager.release(first.job_id)  # its entries are gone; s1's cells still hold its chunks, owner (1, seq)
    for agent in agents.values():
        agent.remove_job(first.job_id)
    assert net.installer.read_table("s1", T_JOBS) == []
    assert net.installer.job_ids_on_switches() == {first.job_id}

    restarted = _manager(net)  # a new controller over the same switches
    second = _register(restarted)
    assert second.job_id == first.job_id + 1
    s1 = [(c.slot_base, c.pool_size) for p in (first, second) for c in p.switches if c.switch == "s1"]
    assert s1[0] == s1[1]  # the same cells: a reused id would make its first chunks look stale
    _run(net, second, seed=2, server_agents=agents)


def test_a_target_without_register_reads_gives_the_entries_ids_and_names_the_switch():
    from controller.installer import Installer

    net = network("star")
    plan = _register(_manager(net))
    installer = Installer(net.topo, net.installer.p4info, connect=lambda s: NoRegisterReads(net.installer.conn(s)))
    assert installer.job_ids_on_switches() == {plan.job_id}  # the running job's set_job entry
    assert installer.cells_unread == {"s1": "Read failed: Register reads are not supported yet"}
    assert net.installer.job_ids_on_switches() == {plan.job_id} and net.installer.cells_unread == {}
