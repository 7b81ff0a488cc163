"""One clear line for each way a sharded embedding can be misused: bad inputs, a table over the memory
budget, checkpoints that are incomplete, mixed, or of other tables (one process, no process group;
the same errors on several ranks are in test_sharded_embedding.py)."""

import json
import shutil

import pytest
import torch

from worker.embedding import (
    Bags,
    CheckpointError,
    EmbeddingInputError,
    EmbeddingMemoryError,
    EmbeddingTable,
    ShardAdagrad,
    ShardedEmbedding,
    ShardSGD,
    load_checkpoint,
    save_checkpoint,
)
from worker.embedding.tables import check_memory_budget, shard_size

TABLES = [EmbeddingTable("items", 20, 3, "sum"), EmbeddingTable("slot", 7, 2, "none")]


def good_input() -> dict:
    return {"items": Bags(torch.tensor([1, 2, 19]), torch.tensor([0, 1])), "slot": torch.tensor([0, 6])}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"items": Bags(torch.tensor([1.0, 2.0]), torch.tensor([0]))},
            "table 'items': rank 0 gave keys that are not integers",
        ),
        ({"items": torch.tensor([1, 2, 3])}, "table 'items': rank 0 gave input of the wrong form"),
        ({"slot": Bags(torch.tensor([1]), torch.tensor([0]))}, "table 'slot': rank 0 gave input of the wrong form"),
        (
            {"items": Bags(torch.tensor([1, 2]), torch.tensor([1]))},
            "table 'items': rank 0 gave invalid bag offsets (at offset 0)",
        ),
        (
            {"items": Bags(torch.tensor([1, 2]), torch.tensor([0, 3]))},
            "table 'items': rank 0 gave invalid bag offsets (at offset 1)",
        ),
        ({"other": torch.tensor([1])}, "rank 0 gave input for a table the embedding does not have"),
        ({"slot": torch.tensor([[7]])}, "table 'slot': rank 0 looked up key 7 (position 0 of its keys), outside"),
    ],
)
def test_bad_inputs_are_one_line(change, message):
    emb = ShardedEmbedding(TABLES)
    inputs = {**good_input(), **change}
    with pytest.raises(EmbeddingInputError) as err:
        emb(inputs)
    text = str(err.value)
    assert "\n" not in text and text.startswith(message), text
    assert emb(good_input())["items"].shape == (2, 3)  # and the module keeps working


def test_a_table_over_the_memory_budget_is_refused_in_one_line():
    big = [EmbeddingTable("users", 10_000_000, 64), EmbeddingTable("ads", 1_000, 64)]
    with pytest.raises(EmbeddingMemoryError) as err:
        ShardedEmbedding(big, memory_budget=1_000_000_000)
    assert str(err.value) == (
        "embedding rows need 2.56 GB per rank with 1 rank (largest: table 'users', 10,000,000 x 64 float32, "
        "2.56 GB per rank), over the memory budget of 1 GB per rank: use more ranks, smaller tables or a larger budget"
    )
    # rank 0 holds the most rows: with 4 ranks it needs ceil(10,000,000 / 4) + ceil(1,000 / 4) rows of 256 bytes
    assert shard_size(10_000_000, 0, 4) == 2_500_000 and shard_size(7, 3, 4) == 1 and shard_size(2, 3, 4) == 0
    check_memory_budget(big, 4, (2_500_000 + 250) * 256)  # fits exactly
    with pytest.raises(EmbeddingMemoryError, match="with 4 ranks"):
        check_memory_budget(big, 4, (2_500_000 + 250) * 256 - 1)


def test_optimizer_state_counts_against_the_budget():
    tables = [EmbeddingTable("t", 1_000, 10)]  # 40 kB of rows
    emb = ShardedEmbedding(tables, memory_budget=60_000)
    ShardSGD(emb, 0.1)  # no per-row state
    with pytest.raises(EmbeddingMemoryError, match=r"^embedding rows and optimizer state need 80 KB per rank"):
        ShardAdagrad(emb, 0.1)


@pytest.fixture
def checkpoint(tmp_path):
    emb = ShardedEmbedding(TABLES, seed=1)
    optimizer = ShardAdagrad(emb, 0.1)
    out = emb(good_input())
    (out["items"].sum() + out["slot"].sum()).backward()
    optimizer.step()
    return save_checkpoint(emb, tmp_path / "ckpt", optimizer), emb, optimizer


def test_round_trip_in_one_process(checkpoint):
    directory, emb, optimizer = checkpoint
    other = ShardedEmbedding(TABLES, seed=2)
    other_optimizer = ShardAdagrad(other, 0.1)
    load_checkpoint(other, directory, other_optimizer)
    for name in ("items", "slot"):
        assert torch.equal(other.weights[name], emb.weights[name])
        assert torch.equal(other_optimizer.state[name]["sum"], optimizer.state[name]["sum"])
    assert sorted(p.name for p in directory.iterdir()) == ["meta.json", "shard-00000-of-00001.pt"]


def _meta(directory, **changes):
    meta = json.loads((directory / "meta.json").read_text())
    meta.update(changes)
    (directory / "meta.json").write_text(json.dumps(meta))


def _load_error(directory, tables=TABLES, optimizer_kind=ShardAdagrad) -> str:
    emb = ShardedEmbedding(tables)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(emb, directory, optimizer_kind(emb, 0.1) if optimizer_kind else None)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_missing_shards_are_named(checkpoint):
    directory = checkpoint[0]
    _meta(directory, world_size=3)
    (directory / "shard-00000-of-00001.pt").rename(directory / "shard-00001-of-00003.pt")
    assert _load_error(directory) == (
        f"checkpoint {directory}: meta.json says 3 ranks wrote it, but the shards of ranks 0, 2 are missing "
        "(shard-00000-of-00003.pt)"
    )


def test_shards_of_another_world_size_are_refused(checkpoint):
    directory = checkpoint[0]
    shutil.copy(directory / "shard-00000-of-00001.pt", directory / "shard-00001-of-00002.pt")
    assert _load_error(directory) == (
        f"checkpoint {directory}: meta.json says 1 ranks wrote it, but it also holds shards written by 2 ranks "
        "(shard-00001-of-00002.pt): mixed checkpoints"
    )


def test_a_shard_that_claims_another_rank_or_world_size_is_refused(checkpoint):
    directory = checkpoint[0]
    _meta(directory, world_size=2)
    shutil.copy(directory / "shard-00000-of-00001.pt", directory / "shard-00001-of-00002.pt")
    (directory / "shard-00000-of-00001.pt").rename(directory / "shard-00000-of-00002.pt")
    assert _load_error(directory) == (
        f"checkpoint {directory}: shard-00000-of-00002.pt says it is rank 0 of 1 ranks, expected rank 0 of 2"
    )


def test_tables_and_optimizer_must_match(checkpoint):
    directory = checkpoint[0]
    resized = [EmbeddingTable("items", 21, 3, "sum"), TABLES[1]]
    assert _load_error(directory, resized) == f"checkpoint {directory}: table 'items' is 20 x 3 there, 21 x 3 here"
    renamed = [EmbeddingTable("things", 20, 3, "sum"), TABLES[1]]
    assert _load_error(directory, renamed) == f"checkpoint {directory}: has no table 'things' (it holds items, slot)"
    assert _load_error(directory, optimizer_kind=ShardSGD) == (
        f"checkpoint {directory}: holds optimizer state of ShardAdagrad, cannot load it into ShardSGD"
    )


def test_a_directory_without_meta_is_not_a_checkpoint(tmp_path):
    assert _load_error(tmp_path, optimizer_kind=None) == (
        f"checkpoint {tmp_path}: no meta.json (not a sharded-embedding checkpoint)"
    )
