"""What each rank runs in the sharded-embedding tests (module level, importable by spawned ranks).

``battery`` runs, in one process group, every scenario's forward and backward, the agreed error
for a bad key, training steps with ShardSGD and ShardAdagrad, and a checkpoint load (from another
world size) and save; it returns plain tensors for the test process to compare with the unsharded
reference.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from rank_bodies import _catch  # one line per error, as the torch tests record them
from scenarios import LR_ADAGRAD, LR_SGD, SCENARIOS, SEED, TABLES, batch, loss_weights, rank_loss
from torch_ranks import init

from worker.embedding import (
    Bags,
    EmbeddingTable,
    ShardAdagrad,
    ShardedEmbedding,
    ShardSGD,
    load_checkpoint,
    save_checkpoint,
)


def _grads(emb: ShardedEmbedding) -> dict:
    return {
        name: (w.grad.to_dense().clone() if w.grad is not None else torch.zeros_like(w))
        for name, w in emb.weights.items()
    }


def _weights(emb: ShardedEmbedding) -> dict:
    return {name: w.detach().clone() for name, w in emb.weights.items()}


def plain(value):
    """Tensors as numpy arrays, recursively: torch would pass tensors between processes through shared
    memory handles that die with the rank's process."""
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def as_tensors(value):
    """The inverse of ``plain`` in the test process."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, dict):
        return {k: as_tensors(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_tensors(v) for v in value]
    return value


def battery(rank: int, world: int, backend: str, load_from: str | None, save_to: str | None) -> dict:
    if backend != "none":
        init(backend, rank, world)
    out: dict = {"world": world, "rank": rank}
    emb = ShardedEmbedding(TABLES, seed=SEED)
    out["initial"] = _weights(emb)
    out["local_keys"] = {t.name: emb.local_keys(t.name) for t in TABLES}

    # forward and backward of every scenario, against the reference in the test process
    for scenario in SCENARIOS:
        emb.zero_grad(set_to_none=True)
        emb.traffic.reset()
        result = emb(batch(scenario, rank, world))
        rank_loss(result, loss_weights(scenario, rank, result)).backward()
        out[scenario] = {
            "outputs": {k: v.detach().clone() for k, v in result.items()},
            "grads": _grads(emb),
            "traffic": emb.traffic.as_dict(),
            "send_counts": emb.last_dispatch.send_counts.clone(),
            "recv_counts": emb.last_dispatch.recv_counts.clone(),
            "recv_keys": emb.last_dispatch.recv_keys.clone(),
        }

    # gradients summed over the ranks instead of averaged
    summed = ShardedEmbedding(TABLES, seed=SEED, average_gradients=False)
    result = summed(batch("uniform", rank, world))
    rank_loss(result, loss_weights("uniform", rank, result)).backward()
    out["summed_grads"] = _grads(summed)

    # the seed article's example: 2 ranks, keys [0, 1, 3, 5] and [4, 5, 6, 7], one vector per key
    if world == 2:
        article = ShardedEmbedding([EmbeddingTable("t", 8, 2, "none")], seed=SEED)
        keys = torch.tensor([[0, 1, 3, 5], [4, 5, 6, 7]][rank])
        vectors = article({"t": keys})["t"]
        (vectors * (keys[:, None] + 1.0)).sum().backward()  # d loss / d vector of key k = k + 1
        d = article.last_dispatch
        out["article"] = {
            "recv_keys": d.recv_keys.clone(),
            "recv_counts": d.recv_counts[:, 0].clone(),
            "local_rows": d.local_rows[0].clone(),
            "grad_rows": article.weights["t"].grad.coalesce().indices()[0].clone(),
            "grad": article.weights["t"].grad.to_dense().clone(),
        }

    # a bad key on the last rank: every rank raises the same line, and the group goes on working
    bad = batch("uniform", rank, world)
    if rank == world - 1:
        bad["genre"] = Bags(torch.tensor([3, 37, 1]), torch.tensor([0, 2]))
    out["err_key"] = _catch(lambda: emb(bad))
    negative = batch("uniform", rank, world)
    if rank == 0:
        negative["slot"] = torch.tensor([[1, -2]])
    out["err_negative"] = _catch(lambda: emb(negative))
    offsets = batch("uniform", rank, world)
    if rank == world - 1:
        offsets["clicks"] = Bags(torch.tensor([1, 2, 3]), torch.tensor([0, 2, 1]))
    out["err_offsets"] = _catch(lambda: emb(offsets))
    missing = batch("uniform", rank, world)
    if rank == 0:
        del missing["slot"]
    out["err_missing"] = _catch(lambda: emb(missing))
    out["after_errors"] = {k: v.detach().clone() for k, v in emb(batch("uniform", rank, world)).items()}

    # one SGD step, then two Adagrad steps (the accumulated sums matter in the second)
    for kind, make, scenarios in (
        ("sgd", lambda e: ShardSGD(e, LR_SGD), ("uniform",)),
        ("adagrad", lambda e: ShardAdagrad(e, LR_ADAGRAD), ("uniform", "skewed")),
    ):
        trained = ShardedEmbedding(TABLES, seed=SEED)
        optimizer = make(trained)
        for scenario in scenarios:
            optimizer.zero_grad()
            result = trained(batch(scenario, rank, world))
            rank_loss(result, loss_weights(scenario, rank, result)).backward()
            optimizer.step()
        out[kind] = _weights(trained)
        if kind == "adagrad":
            out["adagrad_sums"] = {n: s["sum"].clone() for n, s in optimizer.row_state().items()}
            if save_to:
                save_checkpoint(trained, save_to, optimizer)

    # a checkpoint written by another number of ranks: load it, then one more Adagrad step
    if load_from:
        loaded = ShardedEmbedding(TABLES, seed=SEED + 1)  # other initial rows: loading must overwrite them
        optimizer = ShardAdagrad(loaded, LR_ADAGRAD)
        load_checkpoint(loaded, load_from, optimizer)
        out["loaded"] = _weights(loaded)
        out["loaded_sums"] = {n: s["sum"].clone() for n, s in optimizer.row_state().items()}
        result = loaded(batch("repeated", rank, world))
        rank_loss(result, loss_weights("repeated", rank, result)).backward()
        optimizer.step()
        out["loaded_then_step"] = _weights(loaded)
    if dist.is_initialized():
        dist.barrier()
    return plain(out)
