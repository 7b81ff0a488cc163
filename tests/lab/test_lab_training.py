"""examples/train_digits.py in the mininet lab, one process per worker host (star, 2 workers): gloo
and ina reach the same accuracy with the same seed, ina's all_reduces are aggregated by the switch,
a failing rank is named with its output, and teardown leaves nothing behind."""

import math
import os

import pytest
from conftest import needs_mininet
from lab_helpers import assert_lab_torn_down

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet

EPOCHS = 2
HIDDEN = 32  # train_digits.py's default MLP 64-HIDDEN-10


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from topologies.mininet_lab import MininetLab

    kept = tmp_path_factory.mktemp("kept-logs")
    lab = MininetLab(os.path.join(REPO, "topologies", "star.yaml"), 2, log=lambda m: None, keep_logs=str(kept))
    try:
        lab.start()
        yield lab
    finally:
        left = lab.stop()
    assert_lab_torn_down(lab, left)
    assert not any(
        os.path.exists(f"/proc/{p['pid']}")
        for p in lab.network.resources.processes
        if p["what"].startswith("training rank")
    )
    # keep_logs (--keep-logs DIR): the work directory was copied there before it was removed
    assert lab.logs_kept == kept
    assert (kept / "s1.log").is_file() and (kept / "plan.json").is_file()
    assert sorted(p.name for p in kept.glob("train-*/rank*.log")) == [
        "rank0-h1.log",
        "rank0-h1.log",
        "rank1-h2.log",
        "rank1-h2.log",
    ]


def _bytes_on(lab, host, before, after):
    return sum(after[link.id] - before[link.id] for link in lab.topo.links_of(host))


def test_gloo_and_ina_reach_the_same_accuracy_and_ina_is_summed_by_the_switch(lab):
    before = lab.link_bytes()
    gloo = lab.train(EPOCHS, "gloo", seed=0)
    after = lab.link_bytes()
    # gloo's TCP crosses the P4 switch (ipv4_lpm): every worker's link carried its gradients
    params = 64 * HIDDEN + HIDDEN + HIDDEN * 10 + 10
    for host in lab.workers:
        assert _bytes_on(lab, host, before, after) > gloo.iterations * params * 4

    ina = lab.train(EPOCHS, "ina", seed=0)
    for r in (gloo, ina):
        assert (r.workers, r.epochs, r.seed) == (2, EPOCHS, 0)
        assert r.ranks_in_sync
        assert r.ms_per_iteration > 0
    assert ina.iterations == gloo.iterations == EPOCHS * ((1797 - 449) // 2 // 32)
    assert gloo.test_accuracy > 0.5  # it learned (10 classes: chance is 0.1)
    assert abs(ina.test_accuracy - gloo.test_accuracy) <= 0.01

    # read over P4Runtime: s1 completed every chunk the float sums sent (worker/torch_backend/scales.py:
    # agreement rounds of block exponents, values rounds of the blocks plus one lane per block, in chunks
    # of K values, K the switches' program's) and added each of the 2 workers' packets into it; after the
    # first step, a step is about one values round
    rounds = ina.switch_rounds
    k = rounds["values_per_packet"]
    assert k == lab.plan.value_count == 344  # the lab's default program on star.yaml's 1500-byte links
    assert rounds["value_rounds"] >= ina.iterations and rounds["agreements"] >= 1
    assert rounds["agreements"] + rounds["value_rounds"] < 1.5 * ina.iterations
    block = rounds["scale_block"]
    blocks = math.ceil(params / block)
    # a full values round a step: the values in whole blocks, then one lane per block
    assert rounds["chunks"] >= ina.iterations * math.ceil((blocks * block + blocks) / k)
    s1 = ina.switch_counters["s1"]
    assert (s1["grad_completed"], s1["grad_aggregated"]) == (rounds["chunks"], 2 * rounds["chunks"]), s1
    # the training job is gone from the controller again; the lab's own job stays
    jobs = {p.job_id for p in lab.control.manager().list()}
    assert lab.plan.job_id in jobs and ina.job_id not in jobs


def test_a_failing_rank_is_named_with_its_last_output(lab, tmp_path):
    from topologies.lab_training import RankHost, TrainError, run_ranks

    h1, h2 = (lab.spec.host(n) for n in lab.workers)
    hosts = [
        RankHost(h1.name, h1.ip, f"{h1.name}-eth{h1.port}"),
        RankHost(h2.name, h2.ip, "nosuchif0"),
    ]  # gloo cannot use this interface
    with pytest.raises(TrainError) as err:
        run_ranks(lab.network, hosts, "gloo", 1, 0, tmp_path, port=29600, log=lambda m: None, grace=5)
    msg = str(err.value)
    assert msg.startswith(f"training failed on {h2.name} (rank 1): exit status 1; its last output:")
    assert "train_digits: error:" in msg and "nosuchif0" in msg
