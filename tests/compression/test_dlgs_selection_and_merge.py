"""DLGS (seed 004): thresholds computed every s iterations and reused, and the layer-merging search."""

import numpy as np
import pytest

from worker.compression.dlgs import LayerThresholds, kth_largest_magnitude, top_k_count
from worker.compression.merge import AffineTime, MergeProblem, brute_force, greedy, iteration_time, search


def test_exact_threshold_is_the_kth_largest_magnitude():
    x = np.array([0.5, -3.0, 2.0, -1.0, 4.0])
    assert kth_largest_magnitude(x, 1) == 4.0 and kth_largest_magnitude(x, 3) == 2.0
    assert top_k_count(1000, 0.01) == 10 and top_k_count(5, 0.01) == 1 and top_k_count(7, 1.0) == 7


def test_threshold_is_computed_every_s_iterations_and_reused_between():
    rng = np.random.default_rng(0)
    thresholds = LayerThresholds(ratio=0.1, reuse=5)
    counts = []
    for iteration in range(20):
        grad = rng.normal(size=1000) * (1.0 + 0.01 * iteration)
        picked = thresholds.select("layer", grad, iteration)
        counts.append(len(picked))
        assert (np.abs(grad[picked]) >= thresholds.thresholds["layer"]).all()
        assert (np.abs(np.delete(grad, picked)) < thresholds.thresholds["layer"]).all()
        assert np.all(np.diff(picked) > 0)
        if iteration % 5 == 0:  # an exact top-k: exactly k values
            assert len(picked) == 100
    assert thresholds.exact_computations == 4  # iterations 0, 5, 10, 15
    assert max(counts) > 100  # reused thresholds let the count drift as the gradients grow


def test_a_cap_keeps_the_largest():
    thresholds = LayerThresholds(ratio=0.5, reuse=100)
    thresholds.select("l", np.array([1.0, 2.0, 3.0, 4.0]), 0)  # threshold 3
    picked = thresholds.select("l", np.array([9.0, 5.0, 4.0, 6.0]), 1, cap=2)
    assert picked.tolist() == [0, 3]
    with pytest.raises(ValueError, match="ratio"):
        LayerThresholds(ratio=0.0)


def _random_problem(rng, layers):
    return MergeProblem(
        rng.uniform(0, 1e-3, layers).tolist(),
        rng.integers(10, 100_000, layers).tolist(),
        AffineTime(rng.uniform(0, 2e-4), rng.uniform(0, 1e-8)),
        AffineTime(rng.uniform(0, 2e-3), rng.uniform(0, 5e-8)),
    )


def test_iteration_time_follows_the_papers_equations():
    """Two layers: backward 1 and 2 s, sparsification 0.5 s each, communication 3 s each (fixed costs)."""
    problem = MergeProblem([1.0, 2.0], [10, 10], AffineTime(0.5, 0.0), AffineTime(3.0, 0.0))
    # separate: layer 0 sparsified at 1.5, sent 1.5-4.5; layer 1 computed 1.5-3.5, sparsified by 4.0,
    # waits for the link until 4.5, sent by 7.5
    assert iteration_time(problem, [1, 1]) == pytest.approx(7.5)
    # merged: both backward by 3.0, one sparsification 3.5, one communication 6.5
    assert iteration_time(problem, [2]) == pytest.approx(6.5)
    assert search(problem) == ([2], pytest.approx(6.5))


@pytest.mark.parametrize("layers", [1, 2, 3, 5, 8, 10])
def test_search_equals_brute_force(layers):
    rng = np.random.default_rng(layers)
    for _ in range(40):
        problem = _random_problem(rng, layers)
        groups, time = search(problem)
        _, best = brute_force(problem)
        assert time == pytest.approx(best, rel=1e-12, abs=1e-15)
        assert iteration_time(problem, groups) == pytest.approx(time, rel=1e-12)
        # the paper's greedy scan never beats the optimum
        assert greedy(problem)[1] >= best - 1e-15


def test_greedy_can_miss_the_optimum_the_search_finds():
    rng = np.random.default_rng(7)
    misses = sum(greedy(p)[1] > brute_force(p)[1] * (1 + 1e-9) for p in (_random_problem(rng, 6) for _ in range(100)))
    assert misses > 0


def test_affine_fit_of_measured_times():
    sizes = np.array([1e3, 1e4, 1e5, 1e6])
    fit = AffineTime.fit(sizes, 2e-4 + 3e-9 * sizes)
    assert fit.fixed == pytest.approx(2e-4) and fit.per_value == pytest.approx(3e-9)
    assert AffineTime.fit([100, 100], [1.0, 3.0]) == AffineTime(0.0, 0.02)
    with pytest.raises(ValueError, match="no samples"):
        AffineTime.fit([], [])
