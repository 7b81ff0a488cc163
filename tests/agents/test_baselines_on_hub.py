"""Host-level baselines (parameter server, ring, host trees) on the switchless hub."""

import numpy as np
import pytest

from agents_hub import direct_plan
from topologies.inprocess.hub import Hub
from worker.agent import AllreduceError
from worker.baselines import HostTreeAllreduce, RingAllreduce
from worker.loop import VirtualLoop


def _run(n, make_worker, make_server=None, size=1000, rounds=2, **hub_args):
    loop = VirtualLoop()
    hub = Hub(loop, seed=1, **hub_args)
    plan = direct_plan(n)
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
    handles = [w.allreduce_async(x) for w, x in zip(workers, xs)]
    return [h.wait() for h in handles]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ring(n):
    _run(n, lambda plan, r, t: RingAllreduce(plan, r, t))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_parameter_server(n):
    _run(n, lambda plan, r, t: HostTreeAllreduce(plan, r, t, star=True),
         lambda plan, t: HostTreeAllreduce(plan, "ps", t, star=True))


@pytest.mark.parametrize("n", [2, 4])
def test_host_tree(n):
    _run(n, lambda plan, r, t: HostTreeAllreduce(plan, r, t),
         lambda plan, t: HostTreeAllreduce(plan, "ps", t))


def test_lost_packet_raises_instead_of_hanging():
    with pytest.raises(AllreduceError, match="did not complete"):
        _run(3, lambda plan, r, t: RingAllreduce(plan, r, t, timeout=1.0), loss=0.3)
