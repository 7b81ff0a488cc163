"""Worker and server agents without switches (the server completes every sum): exactness,
impairments, dead peers, concurrent jobs, bad input."""

import numpy as np
import pytest
from agents_hub import HubJob

from topologies.inprocess.hub import Hub
from worker.agent import AllreduceError, AllreduceTimeout, InputRangeError, NonFiniteInputError
from worker.loop import VirtualLoop


def _ints(n_workers, size, seed=0, dtype=np.int32):
    rng = np.random.default_rng(seed)
    return [rng.integers(-(10**6), 10**6, size).astype(dtype) for _ in range(n_workers)]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_sum_is_exact_and_keeps_dtype_and_shape(dtype):
    job = HubJob(3)
    xs = [x.reshape(10, 30) for x in _ints(3, 300, dtype=dtype)]
    for out in job.allreduce(xs):
        assert out.dtype == dtype and out.shape == (10, 30)
        np.testing.assert_array_equal(out, sum(xs))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sum_within_1e6_of_largest_magnitude(dtype):
    job = HubJob(5)
    rng = np.random.default_rng(1)
    xs = [(rng.normal(size=1000) * 10.0 ** rng.integers(-3, 4, 1000)).astype(dtype) for _ in range(5)]
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    for out in job.allreduce(xs):
        assert out.dtype == dtype
        assert np.abs(out - exact).max() <= 1e-6 * np.abs(exact).max()


def test_max_of_ints_and_floats():
    job = HubJob(4)
    xs = _ints(4, 200, seed=2)
    for out in job.allreduce(xs, op="max"):
        np.testing.assert_array_equal(out, np.maximum.reduce(xs))
    fs = [x.astype(np.float64) / 7.0 for x in xs]
    for out in job.allreduce(fs, op="max"):
        exact = np.maximum.reduce(fs)
        assert np.abs(out - exact).max() <= 1e-6 * np.abs(exact).max()


@pytest.mark.parametrize(
    "impairment",
    [dict(loss=0.05), dict(duplicate=0.1), dict(jitter_s=5e-3), dict(loss=0.05, duplicate=0.05, jitter_s=2e-3)],
)
def test_impairments_never_change_the_result(impairment):
    job = HubJob(4, seed=3, **impairment)
    xs = _ints(4, 2000, seed=4)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))


def test_sequence_numbers_grow_over_the_agents_life():
    job = HubJob(2)
    xs = _ints(2, 640)
    job.allreduce(xs)
    first = job.agents[0]._seq
    job.allreduce(xs)
    assert job.agents[0]._seq == first + 10 == job.agents[1]._seq


def test_dead_worker_gives_a_clear_error_not_a_hang():
    job = HubJob(3, timeout=0.01, retries=3)
    job.hub.hosts[job.plan.workers[2].ip].alive = False
    handles = [a.allreduce_async(x) for a, x in zip(job.agents[:2], _ints(2, 500), strict=True)]
    for h in handles:
        with pytest.raises(AllreduceTimeout, match=r"no result for chunk seq \d+ .*tree 0, path \S+ -> \S+, slot \d+"):
            h.wait()
    assert job.loop.now() < 10.0  # bounded by timeout * backoff * retries (virtual seconds)


def test_dead_server_gives_a_clear_error():
    job = HubJob(2, timeout=0.01, retries=2)
    job.hub.hosts["10.0.1.1"].alive = False
    h = job.agents[0].allreduce_async(np.ones(10, dtype=np.int32))
    with pytest.raises(AllreduceTimeout, match="dead or unreachable"):
        h.wait()
    with pytest.raises(AllreduceError, match="earlier allreduce failed"):
        job.agents[0].allreduce(np.ones(10, dtype=np.int32))


def test_two_concurrent_jobs_never_mix():
    loop = VirtualLoop()
    hub = Hub(loop, seed=5, loss=0.02)
    a = HubJob(3, hub=hub, loop=loop, job_id=11)
    b = HubJob(3, hub=hub, loop=loop, job_id=12)
    xa, xb = _ints(3, 700, seed=6), _ints(3, 700, seed=7)
    ha = [ag.allreduce_async(x) for ag, x in zip(a.agents, xa, strict=True)]
    hb = [ag.allreduce_async(x) for ag, x in zip(b.agents, xb, strict=True)]
    for h in ha:
        np.testing.assert_array_equal(h.wait(), sum(xa))
    for h in hb:
        np.testing.assert_array_equal(h.wait(), sum(xb))


def test_int32_overflow_raises_clearly_and_agent_continues():
    job = HubJob(2)
    big = [np.full(10, 2**31 - 10, dtype=np.int32)] * 2
    handles = [a.allreduce_async(x) for a, x in zip(job.agents, big, strict=True)]
    for h in handles:
        with pytest.raises(OverflowError, match="overflowed in the network"):
            h.wait()
    for out in job.allreduce([np.ones(5, np.int32)] * 2):
        np.testing.assert_array_equal(out, 2)


def test_bad_dtype_or_op_is_rejected_before_sending():
    job = HubJob(2)
    agent = job.agents[0]
    with pytest.raises(TypeError, match="not float16"):
        agent.allreduce_async(np.zeros(3, dtype=np.float16))
    with pytest.raises(ValueError, match="op must be"):
        agent.allreduce_async(np.zeros(3), op="min")
    assert agent.stats["packets_sent"] == 0


@pytest.mark.parametrize("bad_rank", [0, 2])
def test_nan_on_one_rank_fails_every_rank_alike_and_the_job_continues(bad_rank):
    job = HubJob(3, timeout=0.01, retries=6)
    xs = [np.arange(200, dtype=np.float64) for _ in range(3)]
    xs[bad_rank] = xs[bad_rank].copy()
    xs[bad_rank][130] = np.nan
    handles = [a.allreduce_async(x) for a, x in zip(job.agents, xs, strict=True)]
    messages = set()
    for h in handles:
        with pytest.raises(NonFiniteInputError) as info:
            h.wait()
        messages.add(str(info.value))
    assert messages == {
        f"job 7: float sum allreduce refused on every rank: rank {bad_rank} has a NaN or "
        f"inf in elements 128..191 (1 block(s) of 64 affected)"
    }
    assert job.loop.now() < 0.01  # one exponent round trip, no timeout
    assert all(a.stats["retransmissions"] == 0 for a in job.agents)
    for out in job.allreduce([np.ones(70, np.float32)] * 3):
        np.testing.assert_array_equal(out, 3)


def test_int64_out_of_range_on_one_rank_fails_every_rank_alike():
    job = HubJob(2)
    xs = [np.array([1, 2, 3], np.int64), np.array([1, -(2**40), 3], np.int64)]
    handles = [a.allreduce_async(x, "max") for a, x in zip(job.agents, xs, strict=True)]
    for h in handles:
        with pytest.raises(InputRangeError, match="rank 1 has values outside the int32 range"):
            h.wait()
    sent = [a.stats["packets_sent"] for a in job.agents]
    assert sent == [1, 1]  # the one-value range agreement, nothing else
    for out in job.allreduce([np.array([5, -7], np.int64)] * 2):
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, [10, -14])
    # int32 needs no agreement round: one packet per chunk
    job.allreduce([np.arange(10, dtype=np.int32)] * 2)
    assert [a.stats["packets_sent"] for a in job.agents] == [1 + 2 + 1] * 2


def test_server_rejects_unknown_jobs_and_keeps_serving():
    job = HubJob(2)
    stray = HubJob(2, hub=job.hub, loop=job.loop, job_id=99)
    job.server.remove_job(99)
    h = stray.agents[0].allreduce_async(np.ones(4, np.int32))
    out = job.allreduce([np.ones(4, np.int32)] * 2)
    np.testing.assert_array_equal(out[0], 2)
    with pytest.raises(AllreduceTimeout):
        h.wait()
    assert job.server.stats["unknown_job"] > 0


def test_zero_size_and_all_zero_arrays():
    job = HubJob(2)
    out = job.allreduce([np.zeros((0, 3), np.float32)] * 2)
    assert out[0].shape == (0, 3)
    out = job.allreduce([np.zeros(100)] * 2)
    np.testing.assert_array_equal(out[0], 0)
