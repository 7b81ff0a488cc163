"""The parameter-server baseline: the INA protocol on a plan with no aggregating switch, on the
in-process network (softswitch running p4src/ina.p4). Same agents and packets as an INA job, so the
bytes into the server compare exactly, and losses are retransmitted instead of hanging a round."""

import numpy as np
from inprocess_jobs import int_inputs, network, star_topology, workers_and_servers


def _jobs(net, n_workers):
    """An INA job and a parameter-server job on the same hosts, sharing the server agent."""
    from controller.planner import PlanOptions
    from controller.resources import Resources
    from topologies.inprocess.jobs import InProcessJob
    from worker.baselines import parameter_server_options

    workers, servers = workers_and_servers(net.topo, n_workers)
    resources, agents = Resources.for_topology(net.topo), {}
    ina = InProcessJob(net, workers, servers, resources=resources, server_agents=agents, timeout=0.05)
    ps = InProcessJob(
        net,
        workers,
        servers,
        resources=resources,
        server_agents=agents,
        timeout=0.05,
        options=parameter_server_options(PlanOptions()),
    )
    return ina, ps


def _ina_stats(net, plan, stat):
    """Per switch, one of the job's P4 statistics (packets), whichever program the switches run."""
    from protocol import constants as C
    from topologies.inprocess.serve import job_stat

    return {name: job_stat(sw, plan.job_index * C.NUM_STATS + stat) for name, sw in net.switches.items()}


def test_server_bytes_are_n_times_those_of_ina_on_a_star(program):
    n = 4
    net = network(star_topology(n), program=program)
    ina, ps = _jobs(net, n)
    server = ps.plan.servers[0].name
    xs = int_inputs(n, 64 * 10, seed=1)
    into_server = {}
    for name, job in (("ina", ina), ("ps", ps)):
        net.reset_stats()
        for out in job.allreduce(xs):
            np.testing.assert_array_equal(out, sum(xs))
        assert sum(a.stats["retransmissions"] for a in job.agents) == 0
        into_server[name] = net.direction("s1", server)
    from protocol import constants as C

    # the server hears 10 chunks x 4 workers; with INA nothing where the switch completes the sums and
    # multicasts the results (ina.p4: docs/protocol.md, "Root multicast"), else the 10 sums, the same
    # packets (one terminal hop entry each) as one worker's
    if any(c.root for c in ina.plan.switches):
        assert into_server["ina"].packets == into_server["ina"].bytes == 0 and into_server["ps"].packets == 40
    else:
        assert into_server["ina"].packets == 10 and into_server["ps"].packets == 40
        assert into_server["ps"].bytes == n * into_server["ina"].bytes

    assert _ina_stats(net, ps.plan, C.STAT_GRAD_AGGREGATED) == {"s1": 0}
    assert _ina_stats(net, ps.plan, C.STAT_GRAD_PASSED)["s1"] == 40
    # the controller reads the same over P4Runtime, knowing the program from the P4Info
    completed = ina.plan.job_index * C.NUM_STATS + C.STAT_GRAD_COMPLETED
    assert net.installer.read_stats("s1", [completed])[completed][0] == 10
    # the PS job's chunks, and the INA job's where the server completes them
    assert ps.server_agents[server].stats["completed"] == 10 + into_server["ina"].packets


def test_multi_hop_no_switch_aggregates_and_loss_is_retransmitted(program):
    net = network("leaf_spine", seed=4, program=program)
    ina, ps = _jobs(net, 8)
    assert ps.plan.trees[0].aggregation_points == [] and ps.plan.trees[0].server.fan_in == 8
    net.set_impairments(loss=0.03)
    xs = int_inputs(8, 64 * 12, seed=2)
    for _ in range(2):
        for out in ps.allreduce(xs):
            np.testing.assert_array_equal(out, sum(xs))
    assert sum(a.stats["retransmissions"] for a in ps.agents) > 0
    from protocol import constants as C

    assert set(_ina_stats(net, ps.plan, C.STAT_GRAD_AGGREGATED).values()) == {0}
    # the INA job on the same network still aggregates in the switches
    for out in ina.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert sum(_ina_stats(net, ina.plan, C.STAT_GRAD_COMPLETED).values()) > 0
