"""The in-process network's switch state is the controller installer's: the same entries through the
P4RuntimeClient protocol, modified when present, removed by the installer's remove_job."""

from inprocess_jobs import network

from controller.installer import T_ADMISSION, T_JOBS, T_ROUTES
from controller.p4rt import decode
from controller.planner import PlanOptions, plan_job
from protocol import constants as C


def test_installing_twice_modifies_and_remove_job_leaves_nothing(program):
    net = network("leaf_spine", program=program)
    assert net.installer.program() == program  # learnt from the switches' P4Info
    workers = [h.name for h in net.topo.role_hosts("worker")]
    # results from the tree's root where the program can send them (ina.p4; not the TNA program)
    root = net.installer.root_multicast()
    assert root == (program == "v1model")
    plan = plan_job(net.topo, workers, ["h9"], PlanOptions(result_mode="multicast", pool_size=64, root_results=root))
    inst = net.installer
    routes = {s.name: len(inst.read_table(s.name, T_ROUTES)) for s in net.topo.switches}
    assert routes == {s.name: len(net.topo.hosts) for s in net.topo.switches}

    net.install_job(plan)
    net.install_job(plan)  # entries present: modified, not inserted twice (a second insert is refused)
    net.install_routes()
    for cfg in plan.switches:
        (entry,) = [e for e in inst.read_table(cfg.switch, T_JOBS) if decode(e.match[1].exact.value) == cfg.tree_id]
        params = [decode(p.value) for p in sorted(entry.action.action.params, key=lambda p: p.param_id)]
        aggregates = C.AGGREGATES_ROOT if cfg.root else int(cfg.aggregates)
        wanted = [cfg.job_index, cfg.slot_base, cfg.pool_size, cfg.max_fan_in, aggregates, cfg.result_group]
        assert params == wanted  # set_job's parameters in declaration order
        if cfg.result_group:
            members = sorted((m.port, m.replica_id) for m in cfg.members)
            assert inst.read_groups(cfg.switch)[cfg.result_group] == members
    assert {s.name: len(inst.read_table(s.name, T_ROUTES)) for s in net.topo.switches} == routes

    admission = {s.name: len(inst.read_table(s.name, T_ADMISSION)) for s in net.topo.switches}
    # per switch: its children's ports (l3: h5, h6, sp1), the parent-side port, the two catch-alls
    assert admission == {"l1": 5, "l2": 5, "l4": 5, "l3": 6, "sp1": 6, "sp2": 0}

    removed = inst.remove_job(plan)
    assert removed == len(plan.switches) + sum(1 for c in plan.switches if c.result_group) + sum(admission.values())
    assert all(inst.read_table(s.name, T_JOBS) == [] for s in net.topo.switches)
    assert all(inst.read_table(s.name, T_ADMISSION) == [] for s in net.topo.switches)
    assert all(inst.read_groups(s.name) == {} for s in net.topo.switches)


def test_a_job_after_a_removed_one_on_the_same_slots_gets_exact_sums():
    """The slot cells remember their owner as (job id, sequence) and every job's agents start at sequence 1:
    the controller hands the next job a different id (ids rotate), so its chunks start the cells afresh
    instead of being dropped as stale retransmissions of the job before."""
    import numpy as np
    from inprocess_jobs import int_inputs, workers_and_servers

    from controller.resources import Resources
    from topologies.inprocess.jobs import InProcessJob

    net = network("star")
    workers, servers = workers_and_servers(net.topo)
    resources = Resources.for_topology(net.topo)
    seen = []
    for round_ in range(2):
        job = InProcessJob(net, workers, servers, resources=resources, give_up_after=5.0)
        seen.append((job.plan.job_id, [c.slot_base for c in job.plan.switches]))
        xs = int_inputs(len(workers), 256 * 300, seed=round_)  # 300 chunks: more than the pool, every cell used
        for out in job.allreduce(xs):
            np.testing.assert_array_equal(out, sum(xs))
        net.installer.remove_job(job.plan)
        resources.release(job.plan)
    assert seen[0][1] == seen[1][1] and seen[0][0] != seen[1][0]  # the same cells, another id
