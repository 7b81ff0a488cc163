"""DDP on the ina backend unchanged, and the comm hook with gloo as the default group."""

import numpy as np
import pytest
from ina_jobs import ina_job
from rank_bodies import ddp_training, initial_loss
from torch_ranks import run_ranks


@pytest.fixture(scope="module")
def gloo_run():
    return run_ranks(ddp_training, 2, "gloo")


def test_ddp_on_ina_converges_and_keeps_ranks_identical(tmp_path, gloo_run):
    with ina_job(2, tmp_path) as job:
        runs = run_ranks(ddp_training, 2, "ina", env=job.worker_env)
    assert job.switch_counters["s1"]["grad_completed"] > 0, "gradient buckets must be summed by the switch"
    assert runs[0]["backend"] == "ina"
    start = initial_loss()
    for run in runs:
        assert run["full_loss"] < 0.5 * start, (start, run["full_loss"])
    # every rank applied the same averaged gradients
    np.testing.assert_array_equal(runs[0]["params"], runs[1]["params"])
    # and they are those gloo computes, up to the quantization error
    np.testing.assert_allclose(runs[0]["params"], gloo_run[0]["params"], atol=1e-4)
    assert abs(runs[0]["full_loss"] - gloo_run[0]["full_loss"]) < 1e-3


def test_comm_hook_aggregates_through_ina_with_gloo_default_group(tmp_path, gloo_run):
    with ina_job(2, tmp_path) as job:
        runs = run_ranks(ddp_training, 2, "gloo", 25, True, env=job.worker_env)
    assert job.switch_counters["s1"]["grad_completed"] > 0, "the hook's buckets must be summed by the switch"
    assert runs[0]["backend"] == "gloo"
    np.testing.assert_array_equal(runs[0]["params"], runs[1]["params"])
    np.testing.assert_allclose(runs[0]["params"], gloo_run[0]["params"], atol=1e-4)
