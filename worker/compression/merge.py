"""DLGS layer merging (seed 004, section 3): which consecutive layers share one communication.

The paper's model of one iteration (its equations 2-8). Layers are taken in the order their gradients
become ready in the backward pass (index 0 = the last layer of the forward pass). One compute stream runs
each layer's backward and, when a group of layers is complete, that group's sparsification; one
communication stream sends the groups in order, each as soon as it is sparsified and the previous group
has been sent:

    compute_end(g) = compute_end(g-1) + sum of t_b over g's layers + t_s(d_g)
    comm_end(g)    = max(compute_end(g), comm_end(g-1)) + t_c(d_g)
    t_iter         = comm_end(last group)        (+ the forward time, a constant)

with d_g the group's gradient size, t_s and t_c the measured sparsification and communication times of
that size. Merging layers saves the per-call overhead of t_s and t_c (latency, packet headers, launch
costs) but delays the group's communication until its last layer is ready.

``search`` finds the partition of least t_iter exactly: a dynamic program over group boundaries that
keeps, at each boundary, the pairs (compute_end, comm_end) no other partition of the layers so far
beats in both (what follows depends on nothing else). ``greedy`` is the paper's Algorithm 2: scan the
layers once and merge a layer into the next group when that lowers t_iter (O(L^2), not always optimal).
``brute_force`` tries all 2^(L-1) partitions (tests). ``AffineTime`` is what measured times are fitted
to (a per-call cost plus a cost per value).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["AffineTime", "MergeProblem", "brute_force", "greedy", "iteration_time", "search"]


@dataclass(frozen=True)
class AffineTime:
    """``fixed + per_value * d`` seconds for d values (a call's overhead plus its work)."""

    fixed: float
    per_value: float

    def __call__(self, values: float) -> float:
        return self.fixed + self.per_value * values

    @classmethod
    def fit(cls, sizes: Sequence[float], seconds: Sequence[float]) -> AffineTime:
        """Least squares over measured (size, time) samples; a single size gives a proportional fit.
        Both coefficients are kept non-negative (a measured cost never shrinks with size)."""
        x, y = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
        if len(x) == 0:
            raise ValueError("no samples to fit")
        if np.ptp(x) == 0:
            return cls(0.0, float(y.mean() / max(x[0], 1.0)))
        slope, intercept = np.polyfit(x, y, 1)
        if slope < 0:
            return cls(float(y.mean()), 0.0)
        if intercept < 0:
            return cls(0.0, float((y * x).sum() / (x * x).sum()))
        return cls(float(intercept), float(slope))


@dataclass
class MergeProblem:
    """The measured times of one iteration's layers, in backward order."""

    backward: Sequence[float]  # t_b per layer, seconds
    sizes: Sequence[int]  # d per layer, values
    sparsify: Callable[[float], float]  # t_s(d)
    communicate: Callable[[float], float]  # t_c(d)

    def __post_init__(self) -> None:
        if len(self.backward) != len(self.sizes) or not len(self.sizes):
            raise ValueError("one backward time and one size per layer, at least one layer")

    @property
    def layers(self) -> int:
        return len(self.sizes)

    def group_cost(self, start: int, stop: int) -> tuple[float, float, float]:
        """(backward, sparsify, communicate) times of one group of layers start..stop-1."""
        size = float(sum(self.sizes[start:stop]))
        return float(sum(self.backward[start:stop])), self.sparsify(size), self.communicate(size)


def iteration_time(problem: MergeProblem, groups: Sequence[int]) -> float:
    """t_iter (without the forward pass) of a partition given as group lengths in backward order."""
    if sum(groups) != problem.layers or min(groups) < 1:
        raise ValueError(f"groups {list(groups)} do not partition {problem.layers} layers")
    compute = comm = 0.0
    start = 0
    for length in groups:
        backward, sparsify, communicate = problem.group_cost(start, start + length)
        compute += backward + sparsify
        comm = max(compute, comm) + communicate
        start += length
    return comm


def search(problem: MergeProblem) -> tuple[list[int], float]:
    """The partition (group lengths, backward order) of least t_iter, and that time: exact."""
    n = problem.layers
    # fronts[j]: Pareto-optimal (compute_end, comm_end, groups) over partitions of layers 0..j-1
    fronts: list[list[tuple[float, float, tuple[int, ...]]]] = [[] for _ in range(n + 1)]
    fronts[0] = [(0.0, 0.0, ())]
    for start in range(n):
        if not fronts[start]:
            continue
        for stop in range(start + 1, n + 1):
            backward, sparsify, communicate = problem.group_cost(start, stop)
            for compute, comm, groups in fronts[start]:
                done = compute + backward + sparsify
                fronts[stop].append((done, max(done, comm) + communicate, groups + (stop - start,)))
        for stop in range(start + 1, n + 1):
            fronts[stop] = _pareto(fronts[stop])
    compute, comm, groups = min(fronts[n], key=lambda state: (state[1], len(state[2])))
    return list(groups), comm


def _pareto(states: list[tuple[float, float, tuple[int, ...]]]) -> list[tuple[float, float, tuple[int, ...]]]:
    """The states no other one beats (<=) in both compute_end and comm_end (fewest groups on ties)."""
    states.sort(key=lambda s: (s[0], s[1], len(s[2])))
    kept: list[tuple[float, float, tuple[int, ...]]] = []
    best_comm = float("inf")
    for state in states:
        if state[1] < best_comm:
            kept.append(state)
            best_comm = state[1]
    return kept


def greedy(problem: MergeProblem) -> tuple[list[int], float]:
    """The paper's Algorithm 2: from the first layer ready, merge each layer into the group of the next
    one when that lowers t_iter given the merges decided so far."""
    groups = [1] * problem.layers
    best = iteration_time(problem, groups)
    position = 0  # the group whose merge with the next one is tried
    while position < len(groups) - 1:
        trial = groups[:position] + [groups[position] + groups[position + 1]] + groups[position + 2 :]
        time = iteration_time(problem, trial)
        if time < best:
            groups, best = trial, time  # the merged group may take the next layer too
        else:
            position += 1
    return groups, best


def brute_force(problem: MergeProblem) -> tuple[list[int], float]:
    """Every partition (2^(L-1) of them): the reference for tests of small L."""
    n = problem.layers
    best: tuple[float, int, list[int]] | None = None
    for cuts in itertools.product((False, True), repeat=n - 1):
        groups, length = [], 1
        for cut in cuts:
            if cut:
                groups.append(length)
                length = 1
            else:
                length += 1
        groups.append(length)
        candidate = (iteration_time(problem, groups), len(groups), groups)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    assert best is not None
    return best[2], best[0]
