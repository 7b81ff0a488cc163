"""Every collective of the ina backend against gloo on the same inputs (3 ranks, one run).

Integers must match exactly; floats within the documented tolerance (docs/pytorch.md): the int32
quantization error, at most 16 N^3 2^-30 of the largest magnitude in a 64-value block for SUM and AVG
(the one-round path, which 3 ranks take) and 2 N^2 2^-30 for MAX and MIN, plus one rounding to the
tensor's dtype.
"""

import numpy as np
import pytest
from ina_jobs import ina_job
from rank_bodies import DTYPES, OPS, _np, all_reduce_seed, collectives, make_input
from torch_ranks import run_ranks

WORLD = 3
# ulp-scale rounding of each float dtype (float32 results are also rounded once)
DTYPE_EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with ina_job(WORLD, tmp_path_factory.mktemp("collectives")) as job:
        results = run_ranks(collectives, WORLD, env=job.worker_env)
    return results, job.switch_counters


@pytest.fixture(scope="module")
def results(run):
    return run[0]


def test_the_switch_summed_and_flagged_the_overflow(run):
    """The P4 program's own counters: s1 completed the job's chunks and flagged the int32 overflow."""
    counters = run[1]["s1"]
    assert counters["grad_completed"] > 0
    assert counters["grad_aggregated"] >= WORLD * counters["grad_completed"] - counters["grad_completed"]
    assert counters["overflow"] > 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_all_reduce_matches_gloo(results, dtype, op):
    for r in range(WORLD):
        ina, ref, ina_dtype = results[r][("all_reduce", dtype, op)]
        assert ina_dtype == f"torch.{dtype}", "all_reduce must keep the tensor's dtype"
        if op == "AVG":
            ref = np.trunc(ref / WORLD) if dtype.startswith("int") else ref / WORLD
        if dtype.startswith("int"):
            np.testing.assert_array_equal(ina, ref)
            continue
        xs = np.array([_np(make_input(q, dtype, seed=all_reduce_seed(dtype, op))) for q in range(WORLD)])
        exact = {"SUM": xs.sum(0), "AVG": xs.sum(0) / WORLD, "MAX": xs.max(0), "MIN": xs.min(0)}[op]
        eps = DTYPE_EPS[dtype]
        # ina: quantization error, then one rounding to the dtype
        bound = 16 * WORLD**3 * 2.0**-30 if op in ("SUM", "AVG") else 2 * WORLD**2 * 2.0**-30
        ina_tol = bound * np.abs(xs).max() + eps * np.abs(exact)
        assert np.all(np.abs(ina - exact) <= ina_tol), f"max error {np.abs(ina - exact).max()}"
        # vs gloo, which rounds every partial sum to the dtype
        gloo_tol = ina_tol + eps * (np.abs(exact) + (WORLD - 1) * np.abs(xs).sum(0))
        assert np.all(np.abs(ina - ref) <= gloo_tol), f"max deviation from gloo {np.abs(ina - ref).max()}"


def test_all_reduce_result_identical_on_every_rank(results):
    for key in results[0]:
        if isinstance(key, tuple) and key[0] == "all_reduce":
            for r in range(1, WORLD):
                np.testing.assert_array_equal(results[r][key][0], results[0][key][0])


def test_backend_name(results):
    assert results[0]["backend"] == "ina"


def test_in_place_on_a_non_contiguous_view(results):
    expected = np.arange(12.0).reshape(3, 4) * sum(range(1, WORLD + 1))
    for r in range(WORLD):
        np.testing.assert_allclose(results[r]["noncontiguous"], expected, rtol=1e-6)


def test_all_reduce_coalesced_keeps_each_shape(results):
    for r in range(WORLD):
        a, b = results[r]["coalesced"]
        np.testing.assert_allclose(a, np.full((2, 3), float(sum(range(WORLD)))), rtol=1e-6)
        np.testing.assert_allclose(b, np.full(5, float(sum(q + 10 for q in range(WORLD)))), rtol=1e-6)


def test_async_work_and_future_complete_with_the_tensor(results):
    total = sum(range(1, WORLD + 1))
    for r in range(WORLD):
        waited, completed, tensor, fut_tensor, same_object = results[r]["async"]
        assert waited is True and completed is True
        np.testing.assert_allclose(tensor, np.full(300, total), rtol=1e-6)
        np.testing.assert_array_equal(fut_tensor, tensor)
        assert same_object, "the future must complete with the caller's tensor (in place)"
        np.testing.assert_allclose(results[r]["async_then"], np.full(5, 2.0 * WORLD), rtol=1e-6)


def test_several_collectives_in_flight(results):
    for r in range(WORLD):
        for i, t in enumerate(results[r]["in_flight"]):
            np.testing.assert_allclose(t, np.full(70, float(sum(q + i for q in range(WORLD)))), rtol=1e-6)


@pytest.mark.parametrize(
    "name", ["broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter", "all_to_all", "all_to_all_single"]
)
def test_host_to_host_collectives_match_gloo(results, name):
    for r in range(WORLD):
        ina, ref = results[r][name]
        if isinstance(ina, list):
            for a, b in zip(ina, ref, strict=True):
                np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(ina, ref)
    assert results[0]["barrier"]


def test_second_ina_group_shares_the_agent(results):
    total = float(sum(range(WORLD)))
    for r in range(WORLD):
        a, b, shared = results[r]["second_group"]
        np.testing.assert_allclose(a, np.full(3, total), rtol=1e-6)
        np.testing.assert_allclose(b, np.full(3, 2 * total), rtol=1e-6)
        assert shared


@pytest.mark.parametrize(
    "key, words",
    [
        ("err_product", ["ReduceOp.PRODUCT is not supported", "SUM, AVG, MAX, MIN"]),
        ("err_band", ["ReduceOp.BAND is not supported"]),
        ("err_float64", ["dtype float64 is not supported", "float32"]),
        ("err_bool", ["dtype bool is not supported"]),
        ("err_int64_range", ["InaRangeError", "outside the int32 range", f"rank {WORLD - 1} has values"]),
        ("err_nan", ["NonFiniteInputError", f"rank {WORLD - 1} has a NaN or inf in elements 0..1"]),
        ("err_int32_overflow", ["OverflowError", "overflow"]),
    ],
)
def test_clear_errors_on_every_rank(results, key, words):
    for r in range(WORLD):
        message = results[r][key]
        assert "\n" not in message
        for w in words:
            assert w in message, message
    if key in ("err_nan", "err_int64_range"):  # agreed through the switches: the same line
        assert len({results[r][key] for r in range(WORLD)}) == 1


def test_group_keeps_working_after_agreed_errors(results):
    for r in range(WORLD):
        assert results[r]["after_range_error"] == sum(range(WORLD))
        assert results[r]["after_overflow"] == pytest.approx(1.5 * WORLD)
        assert results[r]["empty"] == (0,)
