"""End to end: 2:4 and 1:4 allreduces (MASKED packets summed by the switches) on the in-process network.

The result of an N:4 allreduce is, at every position, the sum of what each rank kept there (its N
largest magnitudes of every group of four): exactly, for integers, whatever the links lose, duplicate
or reorder, on one switch, on a two-level fabric and through a parameter server (no aggregating switch).
"""

import numpy as np
import pytest
from inprocess_jobs import float_inputs, int_inputs, network, workers_and_servers

from worker.compression.structured import sparsify

KEEP = {"2:4": 2, "1:4": 1}


def _job(net, n_workers=None, **kwargs):
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = workers_and_servers(net.topo, n_workers)
    return InProcessJob(net, workers, servers, **kwargs)


def _allreduce(job, arrays, sparsity):
    handles = [agent.allreduce_async(x, sparsity=sparsity) for agent, x in zip(job.agents, arrays, strict=True)]
    return [h.wait() for h in handles]


def _expected(arrays, sparsity):
    keep = KEEP.get(sparsity, 4)
    return sum(sparsify(x, keep).astype(np.int64) for x in arrays)


@pytest.mark.parametrize("sparsity", ["2:4", "1:4"])
@pytest.mark.parametrize("topo,n", [("star", 4), ("leaf_spine", 8)])
def test_masked_sums_are_exact(topo, n, sparsity):
    net = network(topo)
    job = _job(net, n)
    xs = int_inputs(n, 1000, seed=n)  # 1000 values: a last chunk only partly filled
    expected = _expected(xs, sparsity)
    for out in _allreduce(job, xs, sparsity):
        assert out.dtype == np.int32 and out.shape == (1000,)
        np.testing.assert_array_equal(out, expected)
    server = job.server_agents[job.plan.servers[0].name]
    assert server.stats["contributions"] == server.stats["completed"], "one summed packet per chunk at the server"


@pytest.mark.parametrize("sparsity", ["2:4", "1:4"])
@pytest.mark.parametrize(
    "impairment",
    [dict(loss=0.03), dict(duplicate=0.05), dict(reorder=0.2, reorder_delay_s=0.002)],
    ids=["loss", "dup", "reorder"],
)
def test_impairments_on_a_two_level_fabric_never_change_the_sum(impairment, sparsity):
    net = network("leaf_spine", seed=4)
    net.set_impairments(**impairment)
    job = _job(net, 8)
    xs = int_inputs(8, 1500, seed=11)
    expected = _expected(xs, sparsity)
    for out in _allreduce(job, xs, sparsity):
        np.testing.assert_array_equal(out, expected)


def test_parameter_server_sums_masked_packets_itself():
    from worker.baselines import parameter_server_options

    net = network("leaf_spine")
    job = _job(net, 6, options=parameter_server_options())
    xs = int_inputs(6, 700, seed=2)
    for sparsity in ("2:4", "1:4"):
        for out in _allreduce(job, xs, sparsity):
            np.testing.assert_array_equal(out, _expected(xs, sparsity))
    server = job.server_agents[job.plan.servers[0].name]
    assert server.stats["contributions"] == 6 * server.stats["completed"]


def test_granularities_alternate_on_the_same_agents_with_multicast_and_two_trees():
    from controller.planner import PlanOptions

    net = network("fat_tree_k4")
    job = _job(net, 6, options=PlanOptions(planner="multitree", trees=2, result_mode="multicast"))
    xs = int_inputs(6, 2000, seed=9)
    for sparsity in ("1:4", None, "2:4", "2:4", None, "1:4"):
        for out in _allreduce(job, xs, sparsity):
            np.testing.assert_array_equal(out, _expected(xs, sparsity))


def test_float_sums_of_kept_values():
    net = network("leaf_spine")
    job = _job(net, 8)
    fs = float_inputs(8, 900, seed=3)
    exact = sum(sparsify(x, 2).astype(np.float64) for x in fs)
    for out in _allreduce(job, fs, "2:4"):
        assert out.dtype == np.float32
        assert np.abs(out.astype(np.float64) - exact).max() <= 1e-6 * np.abs(exact).max()


def test_a_worker_sends_about_half_the_bytes_with_2_of_4():
    """Each worker's uplink: 2:4 at most 55 % of dense (docs/compression.md), 1:4 at most 30 %."""
    net = network("leaf_spine")
    job = _job(net, 8)
    xs = int_inputs(8, 64 * 200, seed=1)
    uplink = {}
    for sparsity in (None, "2:4", "1:4"):
        net.reset_stats()
        _allreduce(job, xs, sparsity)
        uplink[sparsity] = sum(net.direction(h.name, "l1").bytes for h in job.plan.workers[:2])
    assert uplink["2:4"] <= 0.55 * uplink[None]
    assert uplink["1:4"] <= 0.30 * uplink[None]


def test_overflow_of_kept_values_is_reported():
    net = network("star")
    job = _job(net, 2)
    big = [np.tile(np.array([2**31 - 5, 0, 0, 0], dtype=np.int32), 8)] * 2
    for h in [a.allreduce_async(x, sparsity="2:4") for a, x in zip(job.agents, big, strict=True)]:
        with pytest.raises(OverflowError, match="overflowed in the network"):
            h.wait()


def test_refused_requests():
    net = network("star")
    job = _job(net, 2)
    agent = job.agents[0]
    with pytest.raises(ValueError, match="unknown granularity '3:4'"):
        agent.allreduce_async(np.zeros(4, dtype=np.int32), sparsity="3:4")
    with pytest.raises(ValueError, match="sums"):
        agent.allreduce_async(np.zeros(4, dtype=np.int32), op="max", sparsity="2:4")
