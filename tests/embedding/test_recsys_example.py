"""examples/train_recsys.py end to end (short runs): sharded tables train exactly like replicated
ones, the bytes each way are those of the collectives, and on ina the dense gradients are summed
by the switch while the all-to-alls go host to host."""

import json
from pathlib import Path

import pytest
from example_runs import assert_float_sums_took_one_round_per_call, run_example

QUICK = ["--workers", "2", "--train-samples", "6000", "--test-samples", "2000", "--batch-size", "64", "--seed", "3"]
TABLE_ROWS = 10 + 50 + 200 + 1_000 + 5_000 + 20_000  # the example's six tables
DIM = 8


def recsys_summary(tmp_path: Path, *flags: str) -> dict:
    out = tmp_path / f"summary-{len(list(tmp_path.iterdir()))}.json"
    proc = run_example("train_recsys.py", *QUICK, *flags, "--json", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(out.read_text())
    summary["stdout"] = proc.stdout
    return summary


@pytest.fixture(scope="module")
def gloo_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recsys")
    return {mode: recsys_summary(tmp, "--backend", "gloo", "--embeddings", mode) for mode in ("sharded", "replicated")}


def test_sharded_tables_train_like_replicated_ones(gloo_runs):
    sharded, replicated = gloo_runs["sharded"], gloo_runs["replicated"]
    for s in (sharded, replicated):
        assert s["ranks_in_sync"] and s["iterations"] == 6000 // 2 // 64
        assert s["test_auc"] > 0.75  # it learned (the teacher's own AUC is about 0.95)
    # the same data, initial rows and averaged gradients: the same model up to float rounding
    assert abs(sharded["test_accuracy"] - replicated["test_accuracy"]) <= 0.002
    assert abs(sharded["test_auc"] - replicated["test_auc"]) <= 0.002
    assert abs(sharded["final_loss"] - replicated["final_loss"]) <= 1e-3
    assert sharded["teacher_accuracy"] == replicated["teacher_accuracy"]


def test_bytes_are_those_of_the_collectives(gloo_runs):
    sharded, replicated = gloo_runs["sharded"], gloo_runs["replicated"]
    dense = sharded["dense_parameters"] * 4
    table_bytes = TABLE_ROWS * DIM * 4
    # DDP's buckets, counted by the example's comm hook: the dense part only, or the dense part and the tables
    assert sharded["dense_allreduce_bytes_per_iteration"] == dense
    assert replicated["dense_allreduce_bytes_per_iteration"] == dense + table_bytes
    assert sharded["replicated_table_bytes_per_iteration"] == table_bytes
    # all-to-all: sizes (one int64 row of 6 counts + 4 problem fields per peer), keys, vectors, gradients
    traffic = sharded["alltoall_by_purpose_rank0"]
    assert set(traffic) == {"sizes", "keys", "vectors", "gradients"}
    assert traffic["sizes"]["bytes_sent"] == traffic["sizes"]["calls"] * (6 + 4) * 8
    assert traffic["vectors"]["bytes_received"] == traffic["keys"]["bytes_sent"] // 4 * DIM * 4  # int32 keys
    assert traffic["gradients"]["bytes_sent"] == traffic["vectors"]["bytes_received"]
    assert 0 < sharded["alltoall_bytes_per_iteration"] < table_bytes / 10
    assert "replicated tables would all-reduce 840.3 KB of table gradients" in sharded["stdout"]


def test_on_ina_the_switch_sums_the_dense_gradients(tmp_path, gloo_runs):
    ina = recsys_summary(tmp_path, "--backend", "ina")
    gloo = gloo_runs["sharded"]
    assert ina["ranks_in_sync"] and ina["iterations"] == gloo["iterations"]
    assert abs(ina["test_accuracy"] - gloo["test_accuracy"]) <= 0.005
    # the all-to-alls do not depend on the backend
    assert ina["alltoall_by_purpose_rank0"] == gloo["alltoall_by_purpose_rank0"]
    # one DDP bucket of the dense gradient per iteration, summed in one round trip (the first call also
    # agrees on its exponents, a few go again): the chunks the plan gives for that, and the switch summed
    # every one of them from both workers
    chunks = assert_float_sums_took_one_round_per_call(ina["ina_rounds"], ina["iterations"], ina["dense_parameters"])
    s1 = ina["switch_counters"]["s1"]
    assert (s1["grad_completed"], s1["grad_aggregated"]) == (chunks, 2 * chunks)


def test_bad_flags_are_one_line():
    proc = run_example("train_recsys.py", "--batch-size", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith("must be at least 1")
