"""What each rank runs in the torch tests (module level, so spawned processes can import it).

A rank initialises the default group with the ina backend, makes a gloo group over the same ranks
and runs every collective on both with the same inputs; the test process compares the results.
Tensors come back as numpy arrays.
"""

from __future__ import annotations

import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch_ranks import init

DTYPES = ["float32", "float16", "bfloat16", "int32", "int64"]
OPS = ["SUM", "AVG", "MAX", "MIN"]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64 if t.is_floating_point() else torch.int64).numpy().copy()


def make_input(rank: int, dtype: str, n: int = 150, seed: int = 0) -> torch.Tensor:
    """Rank-specific values with mixed signs and magnitudes (the same in every process)."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if dtype.startswith("int"):
        return torch.randint(-(10**6), 10**6, (n,), generator=g, dtype=getattr(torch, dtype))
    x = torch.randn(n, generator=g) * 10.0 ** torch.randint(-2, 3, (n,), generator=g)
    return x.to(getattr(torch, dtype))


def all_reduce_seed(dtype: str, op: str) -> int:
    return 10 * DTYPES.index(dtype) + OPS.index(op)


def _reduce_op(name: str):
    return getattr(dist.ReduceOp, name)


def _catch(fn) -> str:
    try:
        fn()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def init_error(rank: int, world: int) -> str:
    """What ``init_process_group("ina")`` raised on this rank ("no error" if it did not), after one float
    SUM when the group was made (its sum, if it was)."""
    error = _catch(lambda: init("ina", rank, world))
    if error != "no error":
        return error
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t)
    return f"no error: {t.tolist()}"


def collectives(rank: int, world: int) -> dict:
    init("ina", rank, world)
    gloo = dist.new_group(backend="gloo")
    out: dict = {"backend": dist.get_backend()}

    # all_reduce, every dtype and op, ina vs gloo (gloo has no AVG: SUM then divide)
    for dtype in DTYPES:
        for op in OPS:
            x = make_input(rank, dtype, seed=all_reduce_seed(dtype, op))
            ina = x.clone()
            dist.all_reduce(ina, op=_reduce_op(op))
            ref = x.clone()
            dist.all_reduce(ref, op=_reduce_op("SUM" if op == "AVG" else op), group=gloo)
            out[("all_reduce", dtype, op)] = (_np(ina), _np(ref), str(ina.dtype))

    # in place, shape kept, non-contiguous view
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (rank + 1)
    view = m.t()  # non-contiguous
    dist.all_reduce(view)
    out["noncontiguous"] = _np(m)

    # several tensors in one exchange (all_reduce_coalesced), shapes kept
    c1, c2 = torch.full((2, 3), float(rank)), torch.full((5,), float(rank + 10))
    dist.all_reduce_coalesced([c1, c2])
    out["coalesced"] = (_np(c1), _np(c2))

    # async: work.wait and get_future complete with the (in-place) tensor
    a = torch.full((300,), float(rank + 1))
    work = dist.all_reduce(a, async_op=True)
    fut_value = work.get_future().wait()
    out["async"] = (work.wait(), work.is_completed(), _np(a), _np(fut_value[0]), fut_value[0] is a)
    chained = dist.all_reduce(torch.ones(5), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    out["async_then"] = _np(chained.wait())

    # several in flight at once, completed in issue order
    ts = [torch.full((70,), float(rank + i)) for i in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in reversed(works):
        w.wait()
    out["in_flight"] = [_np(t) for t in ts]

    # host-to-host collectives (served by the group's gloo backend) vs a separate gloo group
    b = make_input(rank, "float32", n=10)
    b_ref = b.clone()
    dist.broadcast(b, src=1)
    dist.broadcast(b_ref, src=1, group=gloo)
    out["broadcast"] = (_np(b), _np(b_ref))

    x = make_input(rank, "int64", n=6)
    g1 = [torch.empty_like(x) for _ in range(world)]
    g2 = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(g1, x)
    dist.all_gather(g2, x, group=gloo)
    out["all_gather"] = ([_np(t) for t in g1], [_np(t) for t in g2])

    t1, t2 = torch.empty(6 * world, dtype=torch.int64), torch.empty(6 * world, dtype=torch.int64)
    dist.all_gather_into_tensor(t1, x)
    dist.all_gather_into_tensor(t2, x, group=gloo)
    out["all_gather_into_tensor"] = (_np(t1), _np(t2))

    chunks = [make_input(rank, "float32", n=5, seed=10 + i) for i in range(world)]
    r1, r2 = torch.empty(5), torch.empty(5)
    dist.reduce_scatter(r1, [c.clone() for c in chunks])
    dist.reduce_scatter(r2, [c.clone() for c in chunks], group=gloo)
    out["reduce_scatter"] = (_np(r1), _np(r2))

    ins = [torch.full((3,), 10 * rank + i, dtype=torch.int32) for i in range(world)]
    a1 = [torch.empty(3, dtype=torch.int32) for _ in range(world)]
    a2 = [torch.empty(3, dtype=torch.int32) for _ in range(world)]
    dist.all_to_all(a1, ins)
    dist.all_to_all(a2, ins, group=gloo)
    out["all_to_all"] = ([_np(t) for t in a1], [_np(t) for t in a2])

    flat_in = torch.arange(2 * world, dtype=torch.float32) + 100 * rank
    s1, s2 = torch.empty(2 * world), torch.empty(2 * world)
    dist.all_to_all_single(s1, flat_in)
    dist.all_to_all_single(s2, flat_in, group=gloo)
    out["all_to_all_single"] = (_np(s1), _np(s2))

    dist.barrier()
    out["barrier"] = True

    # a second ina group over the same ranks shares this process's agent; both keep working
    second = dist.new_group(backend="ina")
    s1, s2 = torch.full((3,), float(rank)), torch.full((3,), 2.0 * rank)
    w1 = dist.all_reduce(s1, group=second, async_op=True)
    dist.all_reduce(s2)
    w1.wait()
    out["second_group"] = (_np(s1), _np(s2), second.channel is dist.group.WORLD.channel)

    # errors: one clear line, raised on every rank before anything is sent
    out["err_product"] = _catch(lambda: dist.all_reduce(torch.ones(3), op=dist.ReduceOp.PRODUCT))
    out["err_band"] = _catch(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND))
    out["err_float64"] = _catch(lambda: dist.all_reduce(torch.ones(3, dtype=torch.float64)))
    out["err_bool"] = _catch(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)))
    nan = torch.tensor([1.0, float("nan") if rank == world - 1 else 2.0])
    out["err_nan"] = _catch(lambda: dist.all_reduce(nan))
    big = torch.tensor([1, 2**40 if rank == world - 1 else 5], dtype=torch.int64)
    out["err_int64_range"] = _catch(lambda: dist.all_reduce(big))
    # every rank agreed, so the next collective still works
    ok = torch.tensor([rank], dtype=torch.int64)
    dist.all_reduce(ok)
    out["after_range_error"] = int(ok.item())
    near = torch.tensor([2**31 - 10, 7], dtype=torch.int32)
    out["err_int32_overflow"] = _catch(lambda: dist.all_reduce(near))
    ok = torch.tensor([1.5], dtype=torch.float32)
    dist.all_reduce(ok)
    out["after_overflow"] = float(ok.item())
    empty = torch.empty(0)
    dist.all_reduce(empty)
    out["empty"] = tuple(empty.shape)
    return out


# -- DDP -------------------------------------------------------------------------------------------


def _data(n: int = 256, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.randn(8, 3, generator=g)
    y = (x @ w).argmax(1)
    return x, y


def ddp_training(rank: int, world: int, backend: str, steps: int = 25, hook: bool = False) -> dict:
    """A short DDP run: loss per step, parameters after, time per step."""
    init("gloo" if hook else backend, rank, world)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    ddp = nn.parallel.DistributedDataParallel(model)
    if hook:
        import worker.torch_backend as ina

        # job options may also come as pg_options (here: the all_reduce timeout, the agent's time budget)
        group = dist.new_group(backend="ina", pg_options=ina.InaOptions(timeout=45.0))
        assert group.channel.agent.give_up_after == 45.0
        ddp.register_comm_hook(state=group, hook=ina.ina_allreduce_hook)
    return {**train_shard(ddp, rank, world, steps), "backend": dist.get_backend()}


def train_shard(ddp: nn.parallel.DistributedDataParallel, rank: int, world: int, steps: int) -> dict:
    """``steps`` SGD steps (momentum 0.9) on this rank's share of _data(), 16 samples a step, through ``ddp``:
    the loss per step, the loss on all the data after, the parameters after, the time per step."""
    x, y = _data()
    mine = torch.arange(rank, len(y), world)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    losses, t0 = [], time.perf_counter()
    for step in range(steps):
        idx = mine[(step * 16) % len(mine) :][:16]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    elapsed = time.perf_counter() - t0
    with torch.no_grad():
        full_loss = nn.functional.cross_entropy(ddp.module(x), y).item()
    params = torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()]).numpy().copy()
    return {"losses": losses, "full_loss": full_loss, "params": params, "s_per_step": elapsed / steps}


def initial_loss(hidden: int = 16) -> float:
    """The loss on all of _data() of the untrained model the DDP runs start from (``hidden`` units)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 3))
    x, y = _data()
    with torch.no_grad():
        return nn.functional.cross_entropy(model(x), y).item()


def wait_timeout(rank: int, world: int) -> str:
    """Rank 0 issues an all_reduce nobody joins: its work must fail, never hang."""
    init("ina", rank, world, timeout=datetime.timedelta(seconds=30))
    if rank == 0:
        work = dist.all_reduce(torch.ones(4), async_op=True)
        return _catch(lambda: work.wait(datetime.timedelta(seconds=0.5)))
    return "idle"


def stalled_all_reduce(rank: int, world: int) -> tuple[str, float]:
    """One all_reduce on every rank; then rank 0 issues another that the last rank never joins, with its
    round's resend timer switched off (a stall its agent's time budget cannot see): the backstop must
    end it. Rank 0 returns the error and the seconds it took; the others leave at once."""
    init("ina", rank, world, timeout=datetime.timedelta(seconds=60))
    dist.all_reduce(torch.ones(4))
    if rank != 0:
        return "left", 0.0
    from worker.stream import Round

    Round._on_timer = lambda self: None  # type: ignore[method-assign]
    start = time.monotonic()
    error = _catch(lambda: dist.all_reduce(torch.ones(4)))
    return error, time.monotonic() - start


def small_sums(rank: int, world: int) -> tuple:
    init("ina", rank, world)
    f = torch.full((130,), 0.25 * (rank + 1))
    i = torch.arange(10, dtype=torch.int64) * (rank + 1)
    dist.all_reduce(f)
    dist.all_reduce(i, op=dist.ReduceOp.MAX)
    return _np(f), _np(i)


def steps_through_a_fault(rank: int, world: int, steps: int, n: int, started: str) -> list[str]:
    """``steps`` int32 all_reduces of ``n`` values (a training step's gradient each); rank 0 creates the
    file ``started`` once the first is done, so the test kills a switch while the next ones run. Each
    step's outcome: "exact", "wrong" or the error's one line."""
    from pathlib import Path

    init("ina", rank, world, timeout=datetime.timedelta(seconds=60))
    out = []
    for step in range(steps):
        x = make_input(rank, "int32", n=n, seed=step)
        expected = sum(make_input(r, "int32", n=n, seed=step) for r in range(world))
        try:
            dist.all_reduce(x)
            out.append("exact" if torch.equal(x, expected) else "wrong")
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        if step == 0 and rank == 0:
            Path(started).touch()
    return out


# (scale, op[, size]) of each float all_reduce of float_sum_sequence; None: zeros; "nan": the last rank
# has a NaN; "jump": rank 0's value 200 becomes 2^5 times the largest magnitude of its 64-value block on
# any rank (the block's exponent on every rank grows by exactly 5)
FLOAT_SUM_STEPS = [(1.0, "SUM"), (1.0, "SUM"), (2.0, "SUM"), (2.0**-12, "SUM"), (2.0**-7, "SUM"), (2.0**20, "SUM")]
FLOAT_SUM_STEPS += [(None, "SUM"), ("nan", "SUM"), (1.0, "AVG"), (1.0, "SUM", 100), (1.0, "SUM")]
FLOAT_SUM_STEPS += [("jump", "SUM"), (1.0, "SUM")]
FLOAT_SUM_SIZE = 700


def _float_sum_base(rank: int, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(77 + rank)
    return torch.randn(n, generator=g) * 10.0 ** torch.randint(-2, 2, (n,), generator=g)


def float_sum_input(rank: int, step: int, world: int) -> torch.Tensor:
    """Rank ``rank``'s tensor at step ``step`` of FLOAT_SUM_STEPS: one fixed vector times the step's
    scale (a power of two, so block exponents move by exactly its log2)."""
    scale, _, *size = FLOAT_SUM_STEPS[step]
    n = size[0] if size else FLOAT_SUM_SIZE
    x = _float_sum_base(rank, n)
    if scale is None:
        return torch.zeros(n)
    if scale == "nan":
        return x.index_fill(0, torch.tensor([3]), float("nan")) if rank == world - 1 else x
    if scale == "jump":
        peak = max(float(_float_sum_base(r, n)[192:256].abs().max()) for r in range(world))
        return x.index_fill(0, torch.tensor([200]), 32.0 * peak) if rank == 0 else x
    return x * scale


def float_sum_sequence(rank: int, world: int) -> list:
    """FLOAT_SUM_STEPS in order: per step (result or error line, round trips the agent sent as
    (MAX rounds, SUM rounds, chunks), blocks the scales sent again)."""
    init("ina", rank, world)
    group = dist.group.WORLD
    out = []
    for step, (_, op, *_) in enumerate(FLOAT_SUM_STEPS):
        t = float_sum_input(rank, step, world)
        before, resent = group.switch_counts(), group.scales.blocks_resent
        error = _catch(lambda t=t, op=op: dist.all_reduce(t, op=_reduce_op(op)))
        after = group.switch_counts()
        sent = tuple(after[key] - before[key] for key in ("agreements", "value_rounds", "chunks"))
        out.append((_np(t) if error == "no error" else error, sent, group.scales.blocks_resent - resent))
    return out
