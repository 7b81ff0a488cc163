"""End to end: 2:4 and 1:4 allreduces (MASKED packets summed by the switches) on the in-process network.

The result of an N:4 allreduce is, at every position, the sum of what each rank kept there (its N
largest magnitudes of every group of four): exactly, for integers, whatever the links lose, duplicate
or reorder, on one switch, on a two-level fabric and through a parameter server (no aggregating switch).
"""

import numpy as np
import pytest
from inprocess_jobs import float_inputs, int_inputs, network, workers_and_servers

from protocol import codec
from protocol import constants as C
from protocol import layouts as L
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


@pytest.mark.parametrize("program, k", [("v1model", 64), ("v1model-k256", 256), ("v1model-k344", 344)])
def test_a_workers_uplink_carries_one_packet_of_its_layout_per_chunk(program, k):
    """Each worker's uplink: one packet per chunk of the layout's positions, of the layout's size (no loss:
    no resend). 2:4 and 1:4 chunks are sized by the switches' headroom (docs/protocol.md, "Layouts"), so
    2:4 takes at most 66 % of dense's bytes, 1:4 at most 48 % (docs/compression.md)."""
    net = network("leaf_spine", program=program)
    job = _job(net, 8)
    n = 64 * 200 + 3
    xs = int_inputs(8, n, seed=1)
    worker = job.plan.workers[0].name
    hops = job.agents[0].cursors[0].template.hop_count
    uplink = {}
    for sparsity, layout in ((None, L.DENSE), ("2:4", L.TWO_OF_FOUR), ("1:4", L.ONE_OF_FOUR)):
        net.reset_stats()
        _allreduce(job, xs, sparsity)
        frame = C.ETHERNET_HEADER_BYTES + C.IPV4_HEADER_BYTES + C.UDP_HEADER_BYTES + codec.payload_size(hops, k, layout)
        uplink[sparsity] = net.direction(worker, "l1").bytes
        assert uplink[sparsity] == -(-n // layout.positions(k)) * frame, sparsity
    assert uplink["2:4"] <= 0.66 * uplink[None]
    assert uplink["1:4"] <= 0.48 * uplink[None]


@pytest.mark.parametrize("variant, k", [("v1model-k256", 256), ("v1model-k344", 344), ("v1model-k1024", 1024)])
def test_masked_sums_on_the_larger_k_programs_are_exact(variant, k):
    """ina_k256.p4, ina_k344.p4 and ina_k1024.p4 (jumbo frames) sum 2:4 and 1:4 chunks (at most K positions,
    sized by the switches' headroom) exactly through a two-level fabric that loses packets, for integers (a last chunk
    partly filled) and floats, and through a parameter server (no aggregating switch)."""
    net = network("leaf_spine", seed=4, program=variant)
    net.set_impairments(loss=0.02)
    job = _job(net, 8)
    xs = int_inputs(8, 3 * k + 17, seed=11)
    fs = float_inputs(8, k + 5, seed=12)
    for sparsity in ("2:4", "1:4"):
        expected = _expected(xs, sparsity)
        for out in _allreduce(job, xs, sparsity):
            np.testing.assert_array_equal(out, expected)
        exact = sum(sparsify(x, KEEP[sparsity]).astype(np.float64) for x in fs)
        for out in _allreduce(job, fs, sparsity):
            assert np.abs(out.astype(np.float64) - exact).max() <= 1e-6 * np.abs(exact).max()
    from worker.baselines import parameter_server_options

    ps = _job(network("star", program=variant), 3, options=parameter_server_options())
    ys = int_inputs(3, 2 * k + 1, seed=2)
    for sparsity in ("2:4", "1:4"):
        for out in _allreduce(ps, ys, sparsity):
            np.testing.assert_array_equal(out, _expected(ys, sparsity))


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


def _sparse_inputs(n_ranks: int, size: int, seed: int):
    rng = np.random.default_rng(seed)
    indices = [np.sort(rng.choice(size, size=int(rng.integers(0, size // 5)), replace=False)) for _ in range(n_ranks)]
    values = [rng.integers(-(10**6), 10**6, size=len(i)).astype(np.int32) for i in indices]
    return indices, values


def _dense(size, indices, values):
    out = np.zeros(size, dtype=np.int64)
    for i, v in zip(indices, values, strict=True):
        np.add.at(out, i, v)
    return out


@pytest.mark.parametrize(
    "options,impairment",
    [
        ("merge", {}),
        ("merge", dict(loss=0.03, duplicate=0.03)),
        ("multicast", dict(reorder=0.2, reorder_delay_s=0.002)),
    ],
    ids=["clean", "loss_dup", "multicast_reorder"],
)
def test_sparse_pairs_are_summed_by_the_server(options, impairment):
    """DLGS's server path: each rank's own (index, value) pairs pass the switches (SPARSE) and the server
    sums them by index: exact for integers, whatever the links do."""
    from controller.planner import PlanOptions

    net = network("leaf_spine", seed=6)
    net.set_impairments(**impairment)
    job = _job(net, 8, options=PlanOptions(result_mode="multicast") if options == "multicast" else None)
    indices, values = _sparse_inputs(8, 3000, seed=1)
    expected = _dense(3000, indices, values)
    handles = [a.allreduce_sparse_async(i, v) for a, i, v in zip(job.agents, indices, values, strict=True)]
    for h in handles:
        pairs = h.wait()
        np.testing.assert_array_equal(_dense(3000, [pairs[0].astype(np.int64)], [pairs[1]]), expected)
    server = job.server_agents[job.plan.servers[0].name]
    # the server summed the pairs; the count agreement (one MAX chunk) completed at the tree's root switch
    assert server.stats["sparse_completed"] > 0 and server.stats["completed"] == 0
    # no switch released (or was asked to release) a slot for a SPARSE chunk
    for name, sw in net.switches.items():
        stats = sw.counter("InaIngress.ina_stats")
        base = job.plan.job_index * C.NUM_STATS
        assert stats.read(base + C.STAT_RESULT_NOT_OWNER)[0] == 0, name


def test_sparse_pairs_floats_and_an_empty_rank():
    net = network("star")
    job = _job(net, 3)
    rng = np.random.default_rng(2)
    indices = [np.array([5, 9, 100]), np.array([], dtype=np.int64), np.array([9, 7])]
    values = [rng.normal(size=len(i)).astype(np.float32) for i in indices]
    handles = [a.allreduce_sparse_async(i, v) for a, i, v in zip(job.agents, indices, values, strict=True)]
    expected = np.zeros(101)
    for i, v in zip(indices, values, strict=True):
        np.add.at(expected, i, v)
    for h in handles:
        pairs = h.wait()
        dense = np.zeros(101)
        np.add.at(dense, pairs[0].astype(np.int64), pairs[1])
        np.testing.assert_allclose(dense, expected, atol=1e-6)
    # the blocking form returns (indices, sums)
    handles = [a.allreduce_sparse_async(i, v) for a, i, v in zip(job.agents[1:], indices[1:], values[1:], strict=True)]
    got_indices, sums = job.agents[0].allreduce_sparse(indices[0], values[0])
    assert got_indices.dtype == np.int64 and sorted(set(got_indices.tolist())) == [5, 7, 9, 100]
