"""The compression hooks under DDP (2 and 4 ranks): ina_sparse24_hook and dlgs_hook, through the
switches (an ina group) and on gloo, with their state objects."""

import numpy as np
import pytest
from compression_ranks import hooked_training, initial_full_loss
from ina_jobs import ina_job
from torch_ranks import run_ranks

from protocol import layouts as L


def _identical(runs):
    for run in runs[1:]:
        np.testing.assert_array_equal(run["params"], runs[0]["params"])


@pytest.mark.parametrize(
    "world, program, k", [(2, "v1model", 64), (4, "v1model", 64), (2, "v1model-k344", 344), (2, "v1model-k1024", 1024)]
)
def test_sparse24_hook_through_the_switches(tmp_path, world, program, k):
    """ina.p4 and the larger-K programs: 2:4 and 1:4 chunks of their layout's positions (docs/protocol.md,
    "Layouts"), summed by the switch, train as gloo does."""
    schedule = [(0, "dense"), (5, "2:4"), (20, "1:4")]
    with ina_job(world, tmp_path, program=program) as job:
        runs = run_ranks(hooked_training, world, "ina", "sparse24", 30, {"schedule": schedule}, env=job.worker_env)
    _identical(runs)
    # the schedule, one bucket (all 771 values) per iteration: 0-4 dense, 5-19 2:4, 20-29 1:4
    counts = runs[0]["allreduces"]
    assert counts == {"dense": 5, "2:4": 15, "1:4": 10}
    assert runs[0]["full_loss"] < 0.6 * initial_full_loss()
    # the switch expanded every rank's MASKED packets: chunks of the layouts' positions (K = 64: 13 and 13,
    # K = 256: 4 and 5); a retransmission (a loaded machine) is expanded again
    masked = world * (15 * -(-771 // L.TWO_OF_FOUR.positions(k)) + 10 * -(-771 // L.ONE_OF_FOUR.positions(k)))
    assert job.switch_counters["s1"]["grad_masked"] >= masked
    gloo = run_ranks(hooked_training, world, "gloo", "sparse24", 30, {"schedule": schedule})
    _identical(gloo)
    np.testing.assert_allclose(runs[0]["params"], gloo[0]["params"], atol=2e-3)


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("path", ["shared", "server"])
def test_dlgs_hook_through_the_network(tmp_path, world, path):
    options = dict(ratio=0.1, reuse=5, path=path, profile=4)
    with ina_job(world, tmp_path) as job:
        runs = run_ranks(hooked_training, world, "ina", "dlgs", 30, options, env=job.worker_env)
    _identical(runs)
    plans = [run["plan"] for run in runs]
    assert plans[0] is not None and all(p == plans[0] for p in plans), "one merge plan, agreed by every rank"
    assert sum(plans[0]) == 4  # the model's four parameters, one bucket each
    assert runs[0]["full_loss"] < 0.7 * initial_full_loss()
    gloo = run_ranks(hooked_training, world, "gloo", "dlgs", 30, options)
    _identical(gloo)
    assert gloo[0]["full_loss"] < 0.7 * initial_full_loss()
