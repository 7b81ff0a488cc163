"""A server hears more children than a switch aggregates (up to SERVER_MAX_FAN_IN = 255, the hop entry's
8-bit fan-in): the real agents on the in-process network (softswitch running p4src/ina.p4) complete
every sum exactly, each child counted once, duplicates ignored."""

import numpy as np
import pytest
from inprocess_jobs import int_inputs, network, star_topology, workers_and_servers


def _job(n_workers, options=None, seed=0):
    from topologies.inprocess.jobs import InProcessJob

    net = network(star_topology(n_workers), seed=seed)
    workers, servers = workers_and_servers(net.topo)
    return net, InProcessJob(net, workers, servers, timeout=0.05, options=options)


@pytest.mark.parametrize("n_workers", [40, 70])
def test_a_switch_over_its_fan_in_forwards_and_the_server_sums_every_worker(n_workers):
    # 40: the server's bitmap is one 64-bit word; 70: two
    net, job = _job(n_workers)
    assert job.plan.trees[0].aggregation_points == [] and job.plan.trees[0].server.fan_in == n_workers
    xs = int_inputs(n_workers, 64 * 6, seed=n_workers)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, np.sum(xs, axis=0, dtype=np.int32))
    server = job.server_agents[job.plan.servers[0].name]
    assert server.stats["completed"] == 6 and server.stats["contributions"] == 6 * n_workers


def test_a_parameter_server_of_70_workers_ignores_duplicates():
    from worker.baselines import parameter_server_options

    net, job = _job(70, parameter_server_options(), seed=3)
    net.set_impairments(duplicate=0.2)
    xs = int_inputs(70, 64 * 6, seed=7)
    for _ in range(2):  # the second round's chunks reuse the cells of the first
        for out in job.allreduce(xs):
            np.testing.assert_array_equal(out, np.sum(xs, axis=0, dtype=np.int32))
    server = job.server_agents[job.plan.servers[0].name]
    assert server.stats["duplicates"] > 0
    assert server.stats["completed"] == 12 and server.stats["contributions"] == 12 * 70
