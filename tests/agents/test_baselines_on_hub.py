"""Host-level baselines (ring, host trees) on the switchless hub. (The parameter-server baseline is
an INA job without aggregating switches: tests/e2e/test_parameter_server_baseline.py.)"""

import numpy as np
import pytest
from agents_hub import direct_plan

from topologies.inprocess.hub import Hub
from worker.agent import AllreduceError
from worker.baselines import HostTreeAllreduce, RingAllreduce
from worker.loop import VirtualLoop


def _run(n, make_worker, make_server=None, size=1000, rounds=2, k=None, **hub_args):
    loop = VirtualLoop()
    hub = Hub(loop, seed=1, **hub_args)
    plan = direct_plan(n, value_count=k)
    # a chain-shaped host tree: ps <- w0 <- w1 ..., plus a second star-shaped tree, half the weight each
    t0 = plan.trees[0]
    t0.host_parent = {"ps": None} | {w.name: ("ps" if w.rank == 0 else f"w{w.rank - 1}") for w in plan.workers}
    t0.host_children = {"ps": ["w0"]} | {f"w{r}": ([f"w{r + 1}"] if r + 1 < n else []) for r in range(n)}
    if make_server:
        make_server(plan, hub.transport("10.0.1.1"))
    workers = [make_worker(plan, w.rank, hub.transport(w.ip)) for w in plan.workers]
    rng = np.random.default_rng(3)
    for _ in range(rounds):
        xs = [rng.integers(-1000, 1000, size).astype(np.int64) for _ in range(n)]
        outs = _all(workers, xs)
        for out in outs:
            assert out.dtype == np.int64
            np.testing.assert_array_equal(out, sum(xs))


def _all(workers, xs):
    handles = [w.allreduce_async(x) for w, x in zip(workers, xs, strict=True)]
    return [h.wait() for h in handles]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ring(n):
    _run(n, lambda plan, r, t: RingAllreduce(plan, r, t))


@pytest.mark.parametrize("n", [2, 4])
def test_host_tree(n):
    _run(n, lambda plan, r, t: HostTreeAllreduce(plan, r, t), lambda plan, t: HostTreeAllreduce(plan, "ps", t))


@pytest.mark.parametrize("size", [2500, 2050, 2049])
def test_both_baselines_at_k1024_where_value_count_counts_groups_of_four(size):
    """Above K = 256 a dense chunk's value_count counts groups of four lanes (docs/protocol.md): the
    baselines' full chunks say 256 groups and a last chunk of 452, 2 or 1 values still sums exactly."""
    _run(3, lambda plan, r, t: RingAllreduce(plan, r, t), size=size, k=1024)
    _run(
        3,
        lambda plan, r, t: HostTreeAllreduce(plan, r, t),
        lambda plan, t: HostTreeAllreduce(plan, "ps", t),
        size=size,
        k=1024,
    )


@pytest.mark.parametrize("kind", ["ring", "host-tree"])
def test_lost_packet_raises_instead_of_hanging(kind):
    """They do not retransmit: a lost packet ends the collective with a clear error at the timeout."""
    if kind == "ring":
        worker, server = (lambda plan, r, t: RingAllreduce(plan, r, t, timeout=1.0)), None
    else:
        worker = lambda plan, r, t: HostTreeAllreduce(plan, r, t, timeout=1.0)  # noqa: E731
        server = lambda plan, t: HostTreeAllreduce(plan, "ps", t, timeout=1.0)  # noqa: E731
    with pytest.raises(AllreduceError, match=f"{kind} allreduce did not complete within 1.0 s .*do not retransmit"):
        _run(3, worker, server, loss=0.3)


def test_dead_peer_on_a_wall_clock_raises_after_the_timeout():
    """On a real-time loop too (timers and sockets keep the loop alive): the error comes at the
    timeout, not never."""
    import time

    from worker.loop import RealTimeLoop

    loop = RealTimeLoop()
    hub = Hub(loop, seed=1)
    plan = direct_plan(2)
    ring = RingAllreduce(plan, 0, hub.transport(plan.workers[0].ip), timeout=0.3)
    hub.transport(plan.workers[1].ip).alive = False  # rank 1 never answers
    t0 = time.monotonic()
    with pytest.raises(AllreduceError, match="ring allreduce did not complete within 0.3 s"):
        ring.allreduce(np.arange(200, dtype=np.int32))
    assert time.monotonic() - t0 < 5
    loop.close()
