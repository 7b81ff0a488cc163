"""examples/train_recsys.py in the mininet lab (star, 2 workers, a short run on ina): the embedding
all-to-alls cross the P4 switch host to host, the dense gradients are summed by it, the figures come
back to the launcher, and teardown leaves nothing behind."""

import os

import pytest
from conftest import needs_mininet
from example_runs import assert_float_sums_took_one_round_per_call
from lab_helpers import assert_lab_torn_down

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet
QUICK = ["--train-samples", "6000", "--test-samples", "2000", "--batch-size", "64", "--seed", "3"]


@pytest.fixture(scope="module")
def lab():
    from topologies.mininet_lab import MininetLab

    lab = MininetLab(os.path.join(REPO, "topologies", "star.yaml"), 2, log=lambda m: None)
    try:
        lab.start()
        yield lab
    finally:
        left = lab.stop()
    assert_lab_torn_down(lab, left)


def test_recsys_trains_on_ina_with_all_to_all_across_the_switch(lab):
    before = lab.link_bytes()
    result = lab.train(1, "ina", seed=3, example="recsys", example_args=QUICK)
    after = lab.link_bytes()
    assert result.example == "recsys" and result.ranks_in_sync
    assert result.iterations == 6000 // 2 // 64
    f = result.figures
    assert result.test_accuracy > 0.75 and f["test_auc"] > 0.75 and f["teacher_auc"] > 0.9
    assert 0 < f["alltoall_bytes_per_iteration"] < f["replicated_table_bytes_per_iteration"] / 10
    # every worker's link carried at least its own all-to-all bytes (TCP through the P4 switch)
    for host in lab.workers:
        carried = sum(after[link.id] - before[link.id] for link in lab.topo.links_of(host))
        assert carried > f["alltoall_bytes_per_iteration"] * result.iterations
    # the dense gradients (1,273 values, one DDP bucket per iteration) in one round trip per call (values
    # and a lane per block of K, the switches' K), summed by s1, 2 workers' packets into each chunk
    chunks = assert_float_sums_took_one_round_per_call(result.switch_rounds, result.iterations, 1273)
    s1 = result.switch_counters["s1"]
    assert (s1["grad_completed"], s1["grad_aggregated"]) == (chunks, 2 * chunks), s1
    assert "teacher accuracy" in result.summary_line()


def test_an_unknown_example_is_refused_in_one_line(lab):
    from topologies.errors import LabError, TrainError
    from topologies.lab_cli import parse_train_line

    with pytest.raises(LabError, match=r"^train: unknown example 'movies' \(choose digits or recsys\)$"):
        parse_train_line("1 --example movies")
    assert parse_train_line("2 --example recsys --backend gloo")["example"] == "recsys"
    with pytest.raises(TrainError, match="unknown example 'movies'"):
        lab.train(1, "gloo", example="movies")
    assert not lab.failed  # nothing started, nothing to keep
