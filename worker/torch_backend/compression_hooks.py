"""DDP communication hooks that compress gradients: 2:4 structured sparsity, and DLGS (docs/compression.md).

    ina = dist.new_group(backend="ina")                       # or a gloo group, for comparison
    state = Sparse24State(ina, schedule=GranularitySchedule.warmup_then(steps_per_epoch))
    ddp.register_comm_hook(state, ina_sparse24_hook)

    ddp = DistributedDataParallel(model, bucket_cap_mb=DLGS_BUCKET_CAP_MB)   # one bucket per parameter
    state = DlgsState(ina, ratio=0.01, reuse=10, path="shared")
    ddp.register_comm_hook(state, dlgs_hook)

Both hooks keep a residual per parameter (error feedback: what is not sent is added to the next
gradient) and return the average of what the ranks sent. On an ``ina`` group the exchanges are the
switches' (2:4 and 1:4 as MASKED packets summed in the data plane; DLGS's shared index set summed
densely; DLGS's own index sets through the aggregation server); on any other group (gloo) the same
mathematics runs on torch's collectives: 2:4 as a dense all_reduce of the sparsified gradient (same
result, no fewer bytes), DLGS as broadcast + all_reduce or all_gather of (index, value) pairs.

The states are explicit objects, as torch's ``default_hooks`` and ``powerSGD_hook`` use them: they hold
the process group, the residuals, the iteration count (advanced by the last bucket of each backward),
the schedule (2:4) or the thresholds and the merge plan (DLGS), and counters for reports.
"""

# no ``from __future__ import annotations``: DDP compares the hooks' annotations with the real types
import collections
import time
from collections.abc import Hashable, Sequence

import numpy as np
import torch
import torch.distributed as dist

from worker.compression.dlgs import LayerThresholds, top_k_count
from worker.compression.feedback import ErrorFeedback
from worker.compression.merge import AffineTime, MergeProblem, search
from worker.compression.schedule import GranularitySchedule
from worker.compression.structured import layout_for, sparsify
from worker.torch_backend.work import cpp_readable

# DDP's bucket_cap_mb that gives every parameter a bucket of its own (an explicit cap also sets the first
# bucket's): DLGS decides itself which parameters share a communication.
DLGS_BUCKET_CAP_MB = 1e-6

__all__ = ["DLGS_BUCKET_CAP_MB", "DlgsState", "Sparse24State", "dlgs_hook", "ina_sparse24_hook"]


def _is_ina(group) -> bool:
    from worker.torch_backend.process_group import InaProcessGroup

    return isinstance(group, InaProcessGroup)


def _parameters(bucket: dist.GradBucket) -> tuple[list[Hashable], list[int]]:
    """Keys (the parameters' identities) and sizes of the bucket's gradients, in buffer order."""
    params = bucket.parameters()
    keys = [id(p) for p in params]
    sizes = [p.numel() for p in params]
    if sum(sizes) != bucket.buffer().numel():
        raise RuntimeError(f"bucket {bucket.index()}: its buffer is not its parameters' gradients end to end")
    return keys, sizes


def _corrected(feedback: ErrorFeedback, keys: Sequence[Hashable], sizes: Sequence[int], flat: np.ndarray) -> np.ndarray:
    """The bucket's gradient plus each parameter's residual, end to end."""
    parts, offset = [], 0
    for key, size in zip(keys, sizes, strict=True):
        parts.append(feedback.corrected(key, flat[offset : offset + size]))
        offset += size
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _keep(feedback: ErrorFeedback, keys, sizes, corrected: np.ndarray, sent: np.ndarray) -> None:
    offset = 0
    for key, size in zip(keys, sizes, strict=True):
        feedback.keep(key, corrected[offset : offset + size], sent[offset : offset + size])
        offset += size


def _bucket_flat(bucket: dist.GradBucket) -> np.ndarray:
    return bucket.buffer().detach().to(torch.float32).numpy()


def _as_bucket(bucket: dist.GradBucket, total: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(total, dtype=np.float32)).to(bucket.buffer().dtype)


# ---------------------------------------------------------------- 2:4


class Sparse24State:
    """State of :func:`ina_sparse24_hook`: the group, the granularity schedule, the residuals."""

    def __init__(self, process_group: dist.ProcessGroup, schedule: GranularitySchedule | None = None):
        self.process_group = process_group
        self.schedule = schedule or GranularitySchedule()
        self.feedback = ErrorFeedback()
        self.iteration = 0
        self.allreduces: collections.Counter = collections.Counter()  # granularity -> bucket exchanges

    def __getstate__(self):
        raise TypeError("Sparse24State holds a process group and residuals: it is not picklable")


def ina_sparse24_hook(state: Sparse24State, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average ``bucket`` over the ranks, each rank sending in every group of four consecutive values the
    two (2:4) or one (1:4) of largest magnitude of its gradient plus residual, as the schedule says for
    this iteration (dense in a warm-up); the rest stays in the residual."""
    group = state.process_group
    world = group.size()
    granularity = state.schedule.granularity(state.iteration)
    layout = layout_for(granularity)
    keys, sizes = _parameters(bucket)
    corrected = _corrected(state.feedback, keys, sizes, _bucket_flat(bucket))
    sent = sparsify(corrected, layout.keep) if layout.masked else corrected
    _keep(state.feedback, keys, sizes, corrected, sent)
    state.allreduces[granularity] += 1
    if bucket.is_last():
        state.iteration += 1
    if _is_ina(group):
        sparsity = granularity if layout.masked else None
        work = group.run_exchange(lambda agent: agent.allreduce(sent, sparsity=sparsity), f"{granularity} bucket")
        return work.get_future().then(lambda fut: _as_bucket(bucket, fut.value() / world))
    tensor = torch.from_numpy(sent)
    return dist.all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0] / world)


# ---------------------------------------------------------------- DLGS


class DlgsState:
    """State of :func:`dlgs_hook`.

    ``ratio``: k / size of every communication (0.1, 0.01). ``reuse``: s, the threshold of a group is
    computed exactly every s iterations and reused in between. ``path``: "shared" (all ranks send their
    values at one index set, chosen by a leader that rotates with the iteration, summed densely: through
    the switches on an ina group) or "server" (each rank its own (index, value) pairs, summed by the
    aggregation server on an ina group, by an all_gather on gloo). ``merge``: after ``profile``
    iterations of one communication per bucket, rank 0 fits the measured backward, sparsification and
    communication times, searches the merge plan of least iteration time (merge.search) and broadcasts
    it; ``merge=False`` keeps one communication per bucket, a list of group lengths (in bucket order)
    imposes a plan. ``model`` (the DDP module), if given, marks the end of each forward pass, so the
    first bucket's backward time is measured too."""

    def __init__(
        self,
        process_group: dist.ProcessGroup,
        ratio: float = 0.01,
        reuse: int = 10,
        path: str = "shared",
        merge: bool | Sequence[int] = True,
        profile: int = 5,
        model: torch.nn.Module | None = None,
    ):
        if path not in ("shared", "server"):
            raise ValueError(f"DLGS path must be 'shared' or 'server', not {path!r}")
        self.process_group = process_group
        self.ratio = ratio
        self.path = path
        self.thresholds = LayerThresholds(ratio, reuse)
        self.feedback = ErrorFeedback()
        self.iteration = 0
        self.profile = profile
        self.plan: list[int] | None = list(merge) if not isinstance(merge, bool) else None
        self.merge = merge is not False
        self._pending: list[tuple[dist.GradBucket, torch.futures.Future]] = []
        self._group_index = 0  # the group the next bucket belongs to
        self._in_group = 0  # buckets of that group seen
        # measurements for the merge plan: per bucket position, and (size, seconds) samples
        self._backward: dict[int, list[float]] = collections.defaultdict(list)
        self._sizes: dict[int, int] = {}
        self._sparsify: list[tuple[int, float]] = []
        self._communicate: list[tuple[int, float]] = []
        self._last_mark: float | None = None
        self._position = 0
        self.sent_values = 0  # values this rank sent (both paths), for reports
        self.exchanges = 0
        if model is not None:
            model.register_forward_hook(lambda *_: self._mark())

    def __getstate__(self):
        raise TypeError("DlgsState holds a process group and residuals: it is not picklable")

    def _mark(self) -> None:
        self._last_mark = time.perf_counter()

    def _group_lengths(self, buckets: int) -> list[int]:
        if self.plan is not None and sum(self.plan) == buckets:
            return self.plan
        return [1] * buckets


def dlgs_hook(state: DlgsState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DLGS: each group of consecutive buckets (the merge plan) is sparsified as soon as its last bucket is
    ready (during the backward pass) with its reused threshold, and exchanged; the buckets before it in
    the group wait for it. Returns the bucket's average of what the ranks sent."""
    now = time.perf_counter()
    position = state._position
    if state._last_mark is not None:
        state._backward[position].append(now - state._last_mark)
    state._sizes[position] = bucket.buffer().numel()
    future: torch.futures.Future = torch.futures.Future()
    state._pending.append((bucket, future))
    state._position += 1
    lengths = state.plan if state.plan is not None else None
    ends_group = bucket.is_last() or lengths is None or _group_ends(state, lengths)
    if ends_group:
        _exchange_group(state, state._pending)
        state._pending = []
    state._last_mark = time.perf_counter()
    if bucket.is_last():
        _end_iteration(state)
    return cpp_readable(future)  # a failed exchange's set_exception alone would reach DDP as a value


def _group_ends(state: DlgsState, lengths: Sequence[int]) -> bool:
    """Whether the bucket just added closes its group of the plan."""
    end, position = 0, state._position
    for length in lengths:
        end += length
        if position <= end:
            return position == end
    return True


def _end_iteration(state: DlgsState) -> None:
    buckets = state._position
    state._position = 0
    state._last_mark = None
    state.iteration += 1
    if state.merge and state.plan is None and state.iteration == state.profile:
        state.plan = _agreed_plan(state, buckets)


def _exchange_group(state: DlgsState, pending: list[tuple[dist.GradBucket, torch.futures.Future]]) -> None:  # noqa: C901 (the torch backend is not reviewed for this yet (nor typed: pyproject.toml))
    group = state.process_group
    world, rank = group.size(), group.rank()
    layout = [_parameters(b) for b, _ in pending]
    keys = [k for ks, _ in layout for k in ks]
    sizes = [s for _, ss in layout for s in ss]
    flat = np.concatenate([_bucket_flat(b) for b, _ in pending]) if len(pending) > 1 else _bucket_flat(pending[0][0])
    started = time.perf_counter()
    corrected = _corrected(state.feedback, keys, sizes, flat)
    group_key = tuple(keys)
    iteration = state.iteration
    if state.path == "shared":
        cap = top_k_count(corrected.size, state.ratio)
        leader = iteration % world
        chosen = np.full(cap, -1, dtype=np.int32)
        if rank == leader:
            picked = state.thresholds.select(group_key, corrected, iteration, cap)
            chosen[: picked.size] = picked
        else:
            chosen[:] = 0  # the leader's indices are the sum
        state.sent_values += 2 * cap
    else:
        picked = state.thresholds.select(group_key, corrected, iteration)
        state.sent_values += 2 * picked.size
    state._sparsify.append((corrected.size, time.perf_counter() - started))
    state.exchanges += 1

    def finish(indices: np.ndarray, sums: np.ndarray) -> None:
        """Every rank's indices of this exchange and the sums at them: results, residuals, futures."""
        total = np.zeros(corrected.size, dtype=np.float32)
        np.add.at(total, indices, sums.astype(np.float32) / world)
        _keep_unsent(state.feedback, keys, sizes, corrected, sent_indices(indices))
        offset = 0
        for b, fut in pending:
            size = b.buffer().numel()
            fut.set_result(_as_bucket(b, total[offset : offset + size]))
            offset += size

    def sent_indices(indices: np.ndarray) -> np.ndarray:
        return indices if state.path == "shared" else picked

    if _is_ina(group):
        what = f"DLGS {state.path} exchange of {corrected.size} values"
        if state.path == "shared":

            def job(agent):
                t0 = time.perf_counter()
                index = agent.allreduce(chosen)
                index = index[index >= 0]
                sums = agent.allreduce(corrected[index])
                state._communicate.append((corrected.size, time.perf_counter() - t0))
                return index, sums
        else:

            def job(agent):
                t0 = time.perf_counter()
                out = agent.allreduce_sparse(picked.astype(np.int32), corrected[picked])
                state._communicate.append((corrected.size, time.perf_counter() - t0))
                return out

        work = group.run_exchange(job, what)
        work.get_future().then(lambda fut: _complete(pending, fut, finish))
        return
    t0 = time.perf_counter()
    try:
        if state.path == "shared":
            index = torch.from_numpy(chosen.astype(np.int64))
            dist.broadcast(index, src=(iteration % world), group=group)
            index = index.numpy()
            index = index[index >= 0]
            values = torch.from_numpy(np.ascontiguousarray(corrected[index]))
            dist.all_reduce(values, group=group)
            indices, sums = index, values.numpy()
        else:
            indices, sums = _all_gather_pairs(group, picked, corrected[picked])
    except Exception as exc:
        for _, fut in pending:
            fut.set_exception(exc)
        return
    state._communicate.append((corrected.size, time.perf_counter() - t0))
    finish(indices, sums)


def _complete(pending, fut, finish) -> None:
    try:
        indices, sums = fut.value()
    except Exception as exc:
        for _, waiting in pending:
            waiting.set_exception(exc)
        return
    finish(np.asarray(indices, dtype=np.int64), np.asarray(sums))


def _keep_unsent(feedback: ErrorFeedback, keys, sizes, corrected: np.ndarray, sent: np.ndarray) -> None:
    offset = 0
    for key, size in zip(keys, sizes, strict=True):
        mine = sent[(sent >= offset) & (sent < offset + size)] - offset
        feedback.keep_unsent(key, corrected[offset : offset + size], mine)
        offset += size


def _all_gather_pairs(group, indices: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every rank's (index, value) pairs over torch collectives: the counts, then the pairs padded to the
    largest count."""
    world = group.size()
    count = torch.tensor([indices.size], dtype=torch.int64)
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, count, group=group)
    most = int(max(c.item() for c in counts))
    index = torch.full((most,), -1, dtype=torch.int64)
    value = torch.zeros(most, dtype=torch.float32)
    index[: indices.size] = torch.from_numpy(indices.astype(np.int64))
    value[: indices.size] = torch.from_numpy(values.astype(np.float32))
    indexes = [torch.empty_like(index) for _ in range(world)]
    values_all = [torch.empty_like(value) for _ in range(world)]
    dist.all_gather(indexes, index, group=group)
    dist.all_gather(values_all, value, group=group)
    all_index = torch.cat(indexes).numpy()
    all_value = torch.cat(values_all).numpy()
    keep = all_index >= 0
    return all_index[keep], all_value[keep]


def _agreed_plan(state: DlgsState, buckets: int) -> list[int]:
    """Rank 0 searches the merge plan from its measurements; every rank gets it by broadcast."""
    group = state.process_group
    lengths = torch.zeros(buckets, dtype=torch.int64)
    if group.rank() == 0:
        plan = measured_plan(state, buckets)
        lengths[: len(plan)] = torch.tensor(plan, dtype=torch.int64)
    dist.broadcast(lengths, src=0, group=group)
    plan = [int(x) for x in lengths.tolist() if x > 0]
    return plan if sum(plan) == buckets else [1] * buckets


def measured_plan(state: DlgsState, buckets: int) -> list[int]:
    """The merge search over this rank's measured times (affine fits of sparsification and
    communication time by size; the mean backward time per bucket, 0 where not measured)."""
    sizes = [state._sizes.get(i, 1) for i in range(buckets)]
    backward = [float(np.mean(state._backward[i])) if state._backward.get(i) else 0.0 for i in range(buckets)]
    sparsify_time = AffineTime.fit(*zip(*state._sparsify, strict=True)) if state._sparsify else AffineTime(0, 0)
    comm_time = AffineTime.fit(*zip(*state._communicate, strict=True)) if state._communicate else AffineTime(0, 0)
    state.problem = MergeProblem(backward, sizes, sparsify_time, comm_time)
    groups, _ = search(state.problem)
    return groups
