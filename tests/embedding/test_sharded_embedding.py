"""The sharded embedding on N = 1, 2, 3, 4 gloo ranks, and on 3 ranks of the ina backend (the
in-process switch network), against one unsharded nn.EmbeddingBag / nn.Embedding holding the same
rows: outputs, gradients, training steps (only touched rows change), the agreed errors, the bytes of
each exchange, and checkpoints reloaded on another N.

One process group per run does every check (embedding_ranks.battery); the gloo runs are chained so
that N loads the checkpoint N-1 wrote (1 -> 2 -> 3 -> 4), the ina run loads the one of 2 gloo ranks,
and the test process loads N=4's into one rank.
"""

import pytest
import torch
from embedding_ranks import as_tensors, battery
from ina_jobs import switch_job
from scenarios import (
    LR_ADAGRAD,
    LR_SGD,
    SCENARIOS,
    SEED,
    TABLES,
    Reference,
    batch,
    full_rows,
    loss_weights,
    rank_loss,
    reference_step,
)
from torch_ranks import run_ranks

from worker.embedding import ShardAdagrad, ShardedEmbedding, load_checkpoint
from worker.embedding.dispatch import group_by_owner, prepare_inputs

WORLDS = (1, 2, 3, 4)
RUNS = (*WORLDS, "ina")  # "ina": 3 ranks of the ina backend
INA_WORLD = 3
NAMES = [t.name for t in TABLES]
DIMS = {t.name: t.dim for t in TABLES}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("checkpoints")
    out = {}
    for world in WORLDS:
        load_from = str(base / f"n{world - 1}") if world > 1 else None
        out[world] = as_tensors(run_ranks(battery, world, "gloo", load_from, str(base / f"n{world}")))
    with switch_job(INA_WORLD) as job:
        out["ina"] = as_tensors(run_ranks(battery, INA_WORLD, "ina", str(base / "n2"), None, env=job.worker_env))
    out["dir"] = base
    return out


def assemble(results: list[dict], key: str | tuple, name: str) -> torch.Tensor:
    """The whole table from every rank's shard (rank r holds keys r, r+N, ...); ``key`` is where the
    rank's per-table shards are in its results (a tuple: a path)."""
    world = len(results)
    table = next(t for t in TABLES if t.name == name)
    full = torch.full((table.num_rows, table.dim), float("nan"))
    for r, res in enumerate(results):
        for step in key if isinstance(key, tuple) else (key,):
            res = res[step]
        full[r::world] = res[name]
    return full


@pytest.mark.parametrize("run", RUNS)
def test_initial_rows_do_not_depend_on_the_number_of_ranks(runs, run):
    world = len(runs[run])
    for i, name in enumerate(NAMES):
        torch.testing.assert_close(assemble(runs[run], "initial", name), full_rows(i), rtol=0, atol=0)
        for r, res in enumerate(runs[run]):
            assert res["local_keys"][name].tolist() == list(range(r, TABLES[i].num_rows, world))


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("run", RUNS)
def test_outputs_and_gradients_equal_the_unsharded_tables(runs, run, scenario):
    world = len(runs[run])
    reference = Reference()
    outputs, loss = reference_step(reference, scenario, world)
    loss.backward()
    for r, res in enumerate(runs[run]):
        for name in NAMES:
            got = res[scenario]["outputs"][name]
            assert got.shape == outputs[r][name].shape, (name, r)
            torch.testing.assert_close(got, outputs[r][name].detach(), rtol=1e-6, atol=1e-6)
    for name in NAMES:
        want = reference.weight(name).grad.to_dense()
        torch.testing.assert_close(assemble(runs[run], (scenario, "grads"), name), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("world", (2, 3))
def test_average_gradients_false_sums_the_ranks_gradients(runs, world):
    for name in NAMES:
        averaged = assemble(runs[world], ("uniform", "grads"), name)
        torch.testing.assert_close(assemble(runs[world], "summed_grads", name), world * averaged, rtol=1e-6, atol=1e-6)


def test_empty_bags_and_a_rank_without_samples_give_zeros_and_empty_outputs(runs):
    for world in (2, 3, 4):
        rank1 = runs[world][1]["skewed"]["outputs"]
        assert rank1["clicks"].shape == (0, 4) and rank1["genre"].shape == (0, 3) and rank1["slot"].shape == (0, 5)
    uniform = batch("uniform", 0, 3)
    empty = (torch.diff(uniform["clicks"].offsets, append=torch.tensor([len(uniform["clicks"].keys)])) == 0).nonzero()
    assert len(empty), "the scenario must contain empty bags"
    assert torch.equal(runs[3][0]["uniform"]["outputs"]["clicks"][empty[:, 0]], torch.zeros(len(empty), 4))


def _dims_bytes(counts: torch.Tensor) -> int:
    """float32 bytes of the vectors for counts [ranks, tables]."""
    return int(sum(counts[:, i].sum() * DIMS[n] for i, n in enumerate(NAMES))) * 4


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("run", (2, 3, 4, "ina"))
def test_each_distinct_key_travels_once_per_destination_and_bytes_are_counted(runs, run, scenario):
    world = len(runs[run])
    for r, res in enumerate(runs[run]):
        got = res[scenario]
        # expected from the input alone: the distinct keys of each table, by owner
        batches, problem = prepare_inputs(TABLES, batch(scenario, r, world))
        assert problem is None
        want = torch.zeros(world, len(TABLES), dtype=torch.int64)
        for i, b in enumerate(batches):
            for key in set(b.keys.tolist()):
                want[key % world, i] += 1
        assert torch.equal(got["send_counts"], want)
        # what rank r received from s is what s sent to r
        for s in range(world):
            assert torch.equal(got["recv_counts"][s], runs[run][s][scenario]["send_counts"][r])
        # received keys: the distinct keys rank s asked rank r for, by source then table, ascending
        expected_keys = []
        for s in range(world):
            for b in prepare_inputs(TABLES, batch(scenario, s, world))[0]:
                expected_keys += sorted(k for k in set(b.keys.tolist()) if k % world == r)
        assert got["recv_keys"].tolist() == expected_keys
        others = [d for d in range(world) if d != r]
        traffic = got["traffic"]
        assert traffic["sizes"]["bytes_sent"] == (world - 1) * (len(TABLES) + 4) * 8
        assert traffic["keys"]["bytes_sent"] == int(want[others].sum()) * 4  # int32 keys
        assert traffic["keys"]["bytes_received"] == int(got["recv_counts"][others].sum()) * 4
        assert traffic["vectors"]["bytes_sent"] == _dims_bytes(got["recv_counts"][others])
        assert traffic["vectors"]["bytes_received"] == _dims_bytes(want[others])
        # backward: the same vectors' gradients, the reverse way
        assert traffic["gradients"]["bytes_sent"] == traffic["vectors"]["bytes_received"]
        assert traffic["gradients"]["bytes_received"] == traffic["vectors"]["bytes_sent"]
        assert all(c["calls"] == 1 for c in traffic.values())


def test_the_seed_articles_example_with_two_ranks(runs):
    rank0, rank1 = runs[2][0]["article"], runs[2][1]["article"]
    # rank 0 owns the even keys: its own 0, and 4 and 6 from rank 1; rank 1 gets 1, 3, 5 from rank 0
    # and its own 5 and 7
    assert rank0["recv_keys"].tolist() == [0, 4, 6] and rank0["recv_counts"].tolist() == [1, 2]
    assert rank1["recv_keys"].tolist() == [1, 3, 5, 5, 7] and rank1["recv_counts"].tolist() == [3, 2]
    assert rank0["local_rows"].tolist() == [0, 2, 3] and rank1["local_rows"].tolist() == [0, 1, 2, 2, 3]
    # backward: gradients of keys 0, 4, 6 end on rank 0, those of 1, 3, 5, 5, 7 on rank 1; key 5's two
    # gradients (one per rank) are summed; averaged over the 2 ranks (d loss / d vector of key k = k + 1)
    assert rank0["grad_rows"].tolist() == [0, 2, 3] and rank1["grad_rows"].tolist() == [0, 1, 2, 3]
    want0 = torch.tensor([[1.0], [0.0], [5.0], [7.0]]).expand(4, 2) / 2
    want1 = torch.tensor([[2.0], [4.0], [12.0], [8.0]]).expand(4, 2) / 2
    assert torch.equal(rank0["grad"], want0) and torch.equal(rank1["grad"], want1)


def test_step_one_groups_by_key_mod_n_as_in_the_article():
    batches, _ = prepare_inputs(TABLES[2:], {"slot": torch.tensor([0, 1, 2, 3])})
    keys, counts, positions = group_by_owner(batches, 2)
    assert keys.tolist() == [0, 2, 1, 3] and counts[:, 0].tolist() == [2, 2]
    assert positions[0].tolist() == [0, 2, 1, 3]  # where each input key's vector comes back


@pytest.mark.parametrize("run", RUNS)
def test_a_bad_input_raises_the_same_line_on_every_rank_and_the_group_keeps_working(runs, run):
    last = len(runs[run]) - 1
    expected = {
        "err_key": f"EmbeddingKeyError: table 'genre': rank {last} looked up key 37 (position 1 of its keys), "
        "outside the table's keys 0..36",
        "err_negative": "EmbeddingKeyError: table 'slot': rank 0 looked up key -2 (position 1 of its keys), "
        "outside the table's keys 0..10",
        "err_offsets": f"EmbeddingInputError: table 'clicks': rank {last} gave invalid bag offsets (at offset 2): "
        "offsets must start at 0, never decrease and not pass the number of keys",
        "err_missing": "EmbeddingInputError: table 'slot': rank 0 gave no input for it "
        "(every rank must give every table, possibly empty)",
    }
    for res in runs[run]:
        for key, message in expected.items():
            assert res[key] == message
        for name in NAMES:
            torch.testing.assert_close(res["after_errors"][name], res["uniform"]["outputs"][name], rtol=0, atol=0)


def _train_reference(optimizer_kind: str, scenarios, world: int, rows=None, sums=None) -> Reference:
    reference = Reference(rows)
    params = [reference.weight(n) for n in NAMES]
    if optimizer_kind == "sgd":
        optimizer = torch.optim.SGD(params, lr=LR_SGD)
    else:
        optimizer = torch.optim.Adagrad(params, lr=LR_ADAGRAD)
        if sums is not None:
            for p, s in zip(params, sums, strict=True):
                optimizer.state[p]["sum"].copy_(s)
    for scenario in scenarios:
        optimizer.zero_grad()
        _, loss = reference_step(reference, scenario, world)
        loss.backward()
        optimizer.step()
    return reference


@pytest.mark.parametrize("run", RUNS)
def test_training_steps_equal_torch_optimizers_and_change_only_touched_rows(runs, run):
    world = len(runs[run])
    for kind, scenarios in (("sgd", ["uniform"]), ("adagrad", ["uniform", "skewed"])):
        reference = _train_reference(kind, scenarios, world)
        for i, name in enumerate(NAMES):
            got = assemble(runs[run], kind, name)
            torch.testing.assert_close(got, reference.weight(name).detach(), rtol=1e-5, atol=1e-6)
            touched = set()
            for scenario in scenarios:
                for r in range(world):
                    touched |= set(prepare_inputs(TABLES, batch(scenario, r, world))[0][i].keys.tolist())
            untouched = sorted(set(range(TABLES[i].num_rows)) - touched)
            assert untouched, "every table must keep rows no step touched"
            assert torch.equal(got[untouched], full_rows(i)[untouched]), f"{kind}: untouched rows of {name} changed"
            assert not torch.equal(got[sorted(touched)], full_rows(i)[sorted(touched)])


@pytest.mark.parametrize("run", (2, 3, 4, "ina"))
def test_checkpoint_from_another_number_of_ranks_reloads_and_trains_on(runs, run):
    world = len(runs[run])
    previous = runs[2] if run == "ina" else runs[world - 1]
    rows = [assemble(previous, "adagrad", n) for n in NAMES]
    sums = [assemble(previous, "adagrad_sums", n) for n in NAMES]
    for i, name in enumerate(NAMES):
        assert torch.equal(assemble(runs[run], "loaded", name), rows[i])
        assert torch.equal(assemble(runs[run], "loaded_sums", name), sums[i])
    # one more Adagrad step after loading equals torch's Adagrad continuing from the same state
    reference = _train_reference("adagrad", ["repeated"], world, rows, sums)
    for name in NAMES:
        torch.testing.assert_close(
            assemble(runs[run], "loaded_then_step", name), reference.weight(name).detach(), rtol=1e-5, atol=1e-6
        )


def test_checkpoint_of_four_ranks_loads_into_one_process(runs):
    emb = ShardedEmbedding(TABLES, seed=SEED + 3)  # no process group: one rank holds everything
    optimizer = ShardAdagrad(emb, LR_ADAGRAD)
    load_checkpoint(emb, runs["dir"] / "n4", optimizer)
    for name in NAMES:
        assert torch.equal(emb.weights[name].detach(), assemble(runs[4], "adagrad", name))
        assert torch.equal(optimizer.state[name]["sum"], assemble(runs[4], "adagrad_sums", name))
    # and a forward in one process equals the unsharded reference
    out = emb(batch("uniform", 0, 1))
    ref = Reference([assemble(runs[4], "adagrad", n) for n in NAMES])(batch("uniform", 0, 1))
    for name in NAMES:
        torch.testing.assert_close(out[name], ref[name], rtol=1e-6, atol=1e-6)
    rank_loss(out, loss_weights("uniform", 0, out)).backward()  # single-process backward works too
