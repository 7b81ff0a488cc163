"""A DLRM-style click model whose embedding tables are sharded over the workers, on gloo or ina.

The data are synthetic clicks drawn from a known teacher (seeded, no downloads): 8 dense features
and 6 categorical features (one of them a bag of 0..4 keys, the history), keys drawn from Zipf-like
popularity; the teacher's click probability is a logistic function of the dense features and of a
hidden vector per key. The model: one table per categorical feature (``ShardedEmbedding``: rows
``key mod N`` on worker ``key mod N``, lookups through all-to-all, sparse Adagrad on the local rows)
and a dense part (bottom MLP, pairwise dot products of the feature vectors, top MLP) trained with
DDP; with ``--backend ina`` DDP's gradient all_reduces are summed by the switches, while the
all-to-alls travel host to host (the ina group's gloo companion).

Local run (no root): the script spawns --workers processes; with --backend ina it first starts an
in-process network of softswitches running p4src/ina.p4 in a child process:

    .venv/bin/python examples/train_recsys.py --backend ina --workers 4

``--embeddings replicated`` trains the baseline instead: every table whole on every worker, its
(dense) gradients all-reduced with the rest. The script prints accuracy and AUC next to the
teacher's, time per iteration, and the bytes the all-to-alls moved against that baseline, counted
from the collectives' sizes. One process per host (mininet lab) takes the same flags as
examples/train_digits.py (--rank, --world-size, --master-addr, --master-port, --transport, --host).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import launch  # noqa: E402  (examples/launch.py: how ranks start)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402

from worker.embedding import (  # noqa: E402
    Bags,
    EmbeddingTable,
    ShardAdagrad,
    ShardedEmbedding,
    initial_rows,
    replicated_allreduce_bytes,
)


@dataclass(frozen=True)
class Feature:
    """A categorical feature: its table size, the teacher's weight on it and its bag length."""

    name: str
    cardinality: int
    teacher_weight: float
    max_bag: int = 0  # 0: exactly one key per sample; > 0: a bag of 0..max_bag keys


FEATURES = (
    Feature("device", 10, 1.0),
    Feature("category", 50, 1.0),
    Feature("advertiser", 200, 0.8),
    Feature("publisher", 1_000, 0.6),
    Feature("history", 5_000, 0.4, max_bag=4),
    Feature("user", 20_000, 0.3),
)
DENSE_FEATURES = 8
TEACHER_DIM = 4
ZIPF_EXPONENT = 1.1
POPULARITY_SCALE = 300.0  # the teacher's key vectors shrink as H / (popularity rank + H)


# -- the teacher and its data: functions of the seed only -------------------------------------------


@dataclass
class Teacher:
    dense_weights: np.ndarray
    key_vectors: list[np.ndarray]  # per feature, (cardinality x TEACHER_DIM)
    feature_weights: list[np.ndarray]  # per feature, (TEACHER_DIM,)
    popularity: list[np.ndarray]  # per feature, key of each popularity rank
    bias: float


def make_teacher(seed: int) -> Teacher:
    rng = np.random.default_rng([seed, 1])
    popularity, vectors, weights = [], [], []
    for f in FEATURES:
        order = rng.permutation(f.cardinality)  # the most popular keys are spread over the key range
        rank_of_key = np.empty(f.cardinality)
        rank_of_key[order] = np.arange(f.cardinality)
        shrink = POPULARITY_SCALE / (rank_of_key + POPULARITY_SCALE)
        vectors.append(rng.normal(0.0, 1.0, (f.cardinality, TEACHER_DIM)) * shrink[:, None])
        weights.append(rng.normal(0.0, 1.0, TEACHER_DIM) * f.teacher_weight)
        popularity.append(order)
    return Teacher(rng.normal(0.0, 0.5, DENSE_FEATURES), vectors, weights, popularity, -1.0)


@dataclass
class Clicks:
    """n samples: dense features, per feature the keys (single: (n,); bags: flat keys + offsets),
    the labels and the teacher's click probability."""

    dense: np.ndarray
    keys: list[np.ndarray]
    offsets: list[np.ndarray | None]
    labels: np.ndarray
    teacher_probability: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def batch(self, index: np.ndarray) -> tuple[torch.Tensor, dict, torch.Tensor]:
        """(dense, {feature: keys or Bags}, labels) of the samples ``index``."""
        sparse = {}
        for f, keys, offsets in zip(FEATURES, self.keys, self.offsets, strict=True):
            if offsets is None:
                sparse[f.name] = torch.from_numpy(keys[index])
                continue
            ends = np.append(offsets[1:], len(keys))
            lengths = (ends - offsets)[index]
            starts = np.repeat(offsets[index], lengths)
            within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            sparse[f.name] = Bags(
                torch.from_numpy(keys[starts + within]), torch.from_numpy(np.cumsum(lengths) - lengths)
            )
        return torch.from_numpy(self.dense[index]), sparse, torch.from_numpy(self.labels[index])


def draw_clicks(teacher: Teacher, n: int, seed: int) -> Clicks:
    rng = np.random.default_rng([seed, 2])
    dense = rng.normal(0.0, 1.0, (n, DENSE_FEATURES)).astype(np.float32)
    logit = dense @ teacher.dense_weights + teacher.bias
    keys, offsets = [], []
    for i, f in enumerate(FEATURES):
        p = np.arange(1, f.cardinality + 1, dtype=np.float64) ** -ZIPF_EXPONENT
        lengths = rng.integers(0, f.max_bag + 1, n) if f.max_bag else np.ones(n, dtype=np.int64)
        drawn = teacher.popularity[i][rng.choice(f.cardinality, size=int(lengths.sum()), p=p / p.sum())]
        pooled = np.zeros((n, TEACHER_DIM))
        np.add.at(pooled, np.repeat(np.arange(n), lengths), teacher.key_vectors[i][drawn])
        pooled /= np.maximum(lengths, 1)[:, None]  # the mean of a bag (zeros for an empty one)
        logit += pooled @ teacher.feature_weights[i]
        keys.append(drawn.astype(np.int64))
        offsets.append((np.cumsum(lengths) - lengths).astype(np.int64) if f.max_bag else None)
    probability = 1.0 / (1.0 + np.exp(-logit))
    labels = (rng.random(n) < probability).astype(np.float32)
    return Clicks(dense, keys, offsets, labels, probability)


# -- the model -------------------------------------------------------------------------------------


def tables(dim: int) -> list[EmbeddingTable]:
    return [EmbeddingTable(f.name, f.cardinality, dim, "mean" if f.max_bag else "none") for f in FEATURES]


class DenseTower(nn.Module):
    """DLRM's dense part: bottom MLP on the dense features, pairwise dot products of all feature
    vectors, top MLP to one logit. Trained data-parallel (DDP)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        vectors = len(FEATURES) + 1
        self.bottom = nn.Sequential(nn.Linear(DENSE_FEATURES, 16), nn.ReLU(), nn.Linear(16, dim))
        self.register_buffer("pairs", torch.triu_indices(vectors, vectors, 1), persistent=False)
        self.top = nn.Sequential(nn.Linear(dim + self.pairs.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, dense: torch.Tensor, embedded: list[torch.Tensor]) -> torch.Tensor:
        bottom = self.bottom(dense)
        stacked = torch.stack([bottom, *embedded], dim=1)
        dots = (stacked @ stacked.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([bottom, dots], dim=1)).squeeze(1)


class ReplicatedTables(nn.Module):
    """The baseline: every table whole on every worker (same initial rows as the sharded tables)."""

    def __init__(self, specs: list[EmbeddingTable], seed: int):
        super().__init__()
        self.specs = specs
        self.tables = nn.ModuleDict()
        for i, t in enumerate(specs):
            rows = initial_rows(torch.arange(t.num_rows), t.dim, seed, i)
            if t.pooling == "none":
                self.tables[t.name] = nn.Embedding.from_pretrained(rows, freeze=False)
            else:
                self.tables[t.name] = nn.EmbeddingBag.from_pretrained(rows, freeze=False, mode=t.pooling)

    def forward(self, inputs: dict) -> dict:
        out = {}
        for t in self.specs:
            x = inputs[t.name]
            out[t.name] = self.tables[t.name](*x) if isinstance(x, Bags) else self.tables[t.name](x)
        return out


class ReplicatedModel(nn.Module):
    """Tables and tower in one module, so DDP all-reduces the tables' gradients too."""

    def __init__(self, embeddings: ReplicatedTables, tower: DenseTower):
        super().__init__()
        self.embeddings, self.tower = embeddings, tower

    def forward(self, dense: torch.Tensor, sparse: dict) -> torch.Tensor:
        out = self.embeddings(sparse)
        return self.tower(dense, [out[f.name] for f in FEATURES])


class AllreduceCounter:
    """DDP communication hook state: counts the bytes of every gradient bucket handed to all_reduce
    (then all-reduces it as DDP's default does)."""

    def __init__(self):
        self.bytes = 0
        self.calls = 0


def counting_allreduce_hook(state, bucket):  # no annotations: DDP compares them with its own types
    tensor = bucket.buffer()
    state.bytes += tensor.numel() * tensor.element_size()
    state.calls += 1
    return default_hooks.allreduce_hook(None, bucket)


# -- one worker ------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    launch.add_launch_flags(p, default_workers=4)
    p.add_argument("--embeddings", choices=["sharded", "replicated"], default="sharded")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-samples", type=int, default=200_000)
    p.add_argument("--test-samples", type=int, default=50_000)
    p.add_argument("--batch-size", type=int, default=128, help="per worker")
    p.add_argument("--dim", type=int, default=8, help="embedding dimension")
    p.add_argument("--hidden", type=int, default=32, help="top MLP width")
    p.add_argument("--lr-embedding", type=float, default=0.05, help="Adagrad on the embedding rows")
    p.add_argument("--lr-dense", type=float, default=0.003, help="Adam on the dense part")
    p.add_argument("--max-iterations", type=int, help="stop after this many iterations (quick runs)")
    args = p.parse_args(argv)
    launch.check_launch_flags(p, args)
    if args.epochs < 1 or args.train_samples < 1 or args.test_samples < 1 or args.batch_size < 1:
        p.error("--epochs, --train-samples, --test-samples and --batch-size must be at least 1")
    return args


def train_rank(rank: int, world: int, args: argparse.Namespace) -> dict | None:
    """One rank's training (inside its process group); rank 0 returns the summary."""
    torch.set_num_threads(1)
    teacher = make_teacher(args.seed)
    train_set = draw_clicks(teacher, args.train_samples, args.seed * 7919 + 1)
    test_set = draw_clicks(teacher, args.test_samples, args.seed * 7919 + 2)
    specs = tables(args.dim)
    torch.manual_seed(args.seed)
    tower = DenseTower(args.dim, args.hidden)
    counter = AllreduceCounter()
    if args.embeddings == "sharded":
        embeddings = ShardedEmbedding(specs, seed=args.seed)
        ddp = nn.parallel.DistributedDataParallel(tower)
        embedding_optimizer = ShardAdagrad(embeddings, lr=args.lr_embedding)
        dense_optimizer = torch.optim.Adam(ddp.parameters(), lr=args.lr_dense)

        def forward(dense, sparse):
            out = embeddings(sparse)
            return ddp(dense, [out[f.name] for f in FEATURES])

        def predict(dense, sparse):
            out = embeddings(sparse)
            return tower(dense, [out[f.name] for f in FEATURES])
    else:
        replicated = ReplicatedTables(specs, args.seed)
        ddp = nn.parallel.DistributedDataParallel(ReplicatedModel(replicated, tower))
        embedding_optimizer = torch.optim.Adagrad(replicated.parameters(), lr=args.lr_embedding)
        dense_optimizer = torch.optim.Adam(tower.parameters(), lr=args.lr_dense)
        forward = ddp

        def predict(dense, sparse):
            return ddp.module(dense, sparse)

    ddp.register_comm_hook(counter, counting_allreduce_hook)

    mine = np.arange(rank, len(train_set), world)
    steps = len(train_set) // world // args.batch_size  # the same on every rank
    step_times, losses = [], []
    if args.embeddings == "sharded":
        embeddings.traffic.reset()
    done = False
    for epoch in range(args.epochs):
        order = mine[np.random.default_rng([args.seed, epoch, rank]).permutation(len(mine))]
        for s in range(steps):
            dense, sparse, labels = train_set.batch(order[s * args.batch_size : (s + 1) * args.batch_size])
            t0 = time.perf_counter()
            embedding_optimizer.zero_grad()
            dense_optimizer.zero_grad()
            loss = F.binary_cross_entropy_with_logits(forward(dense, sparse), labels)
            loss.backward()  # DDP's all_reduce of the dense gradients, the reverse all-to-all of the rows'
            embedding_optimizer.step()
            dense_optimizer.step()
            step_times.append(time.perf_counter() - t0)
            losses.append(loss.item())
            if rank == 0 and len(step_times) % 100 == 0:
                print(
                    f"iteration {len(step_times):5d}  loss {np.mean(losses[-100:]):.4f}  "
                    f"{1000 * np.mean(step_times[-100:]):.1f} ms/iteration",
                    flush=True,
                )
            if args.max_iterations and len(step_times) >= args.max_iterations:
                done = True
                break
        if done:
            break
    iterations = len(step_times)
    traffic = embeddings.traffic.as_dict() if args.embeddings == "sharded" else {}
    alltoall_bytes = sum(c["bytes_sent"] for c in traffic.values())
    dense_bytes, dense_calls = counter.bytes, counter.calls

    probability = evaluate(predict, test_set, rank, world)
    # every rank's dense parameters must be identical after data-parallel steps
    flat = torch.cat([p.detach().reshape(-1) for p in tower.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    in_sync = all(torch.equal(gathered[0], t) for t in gathered)
    counts = [torch.zeros(2, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([alltoall_bytes, dense_bytes], dtype=torch.int64))
    per_rank = torch.stack(counts).sum(0)  # totals over ranks
    if rank != 0:
        return None

    from sklearn.metrics import roc_auc_score

    labels = test_set.labels
    baseline = replicated_allreduce_bytes(specs)
    summary = {
        "example": "recsys",
        "backend": args.backend,
        "embeddings": args.embeddings,
        "workers": world,
        "epochs": args.epochs,
        "seed": args.seed,
        "test_accuracy": float(((probability > 0.5) == labels).mean()),
        "test_auc": float(roc_auc_score(labels, probability)),
        "teacher_accuracy": float(((test_set.teacher_probability > 0.5) == labels).mean()),
        "teacher_auc": float(roc_auc_score(labels, test_set.teacher_probability)),
        "final_loss": float(np.mean(losses[-100:])),
        "iterations": iterations,
        "ms_per_iteration": 1000 * float(np.mean(step_times)),
        "ranks_in_sync": in_sync,
        "dense_parameters": sum(p.numel() for p in tower.parameters()),
        # bytes per rank and iteration (mean over ranks), from the collectives' sizes
        "alltoall_bytes_per_iteration": int(per_rank[0]) / world / iterations,
        "dense_allreduce_bytes_per_iteration": int(per_rank[1]) / world / iterations,
        "allreduce_calls_per_iteration": dense_calls / iterations,
        "replicated_table_bytes_per_iteration": baseline,
        "alltoall_by_purpose_rank0": traffic,
    }
    rounds = launch.switch_rounds()
    if rounds is not None:
        summary["ina_rounds"] = rounds
    print_summary(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return summary


def evaluate(predict, data: Clicks, rank: int, world: int, chunk: int = 4096) -> np.ndarray:
    """Click probabilities of the whole test set on rank 0: each rank predicts its samples (every
    rank calls the embedding the same number of times, the last chunks possibly empty)."""
    mine = np.arange(rank, len(data), world)
    share = math.ceil(len(data) / world)
    out = []
    with torch.no_grad():
        for start in range(0, share, chunk):
            dense, sparse, _ = data.batch(mine[start : start + chunk])
            out.append(torch.sigmoid(predict(dense, sparse)))
    mine_p = torch.cat(out)
    padded = torch.full((share,), -1.0)
    padded[: len(mine_p)] = mine_p
    gathered = [torch.empty(share) for _ in range(world)]
    dist.all_gather(gathered, padded)
    probability = np.empty(len(data))
    for r, values in enumerate(gathered):
        n = len(range(r, len(data), world))
        probability[r::world] = values[:n].numpy()
    return probability


def print_summary(s: dict) -> None:
    ratio = (
        s["replicated_table_bytes_per_iteration"] / s["alltoall_bytes_per_iteration"]
        if s["alltoall_bytes_per_iteration"]
        else float("inf")
    )
    print(
        f"backend {s['backend']}, {s['embeddings']} tables, {s['workers']} workers: "
        f"test accuracy {100 * s['test_accuracy']:.2f} % (teacher {100 * s['teacher_accuracy']:.2f} %), "
        f"AUC {s['test_auc']:.4f} (teacher {s['teacher_auc']:.4f}), "
        f"{s['ms_per_iteration']:.1f} ms/iteration over {s['iterations']} iterations, "
        f"dense parameters identical on all ranks: {s['ranks_in_sync']}",
        flush=True,
    )
    line = f"bytes per worker and iteration: dense all_reduce {s['dense_allreduce_bytes_per_iteration'] / 1e3:.1f} KB"
    if s["embeddings"] == "sharded":
        line += (
            f", embedding all-to-all {s['alltoall_bytes_per_iteration'] / 1e3:.1f} KB sent; replicated tables would "
            f"all-reduce {s['replicated_table_bytes_per_iteration'] / 1e3:.1f} KB of table gradients "
            f"({ratio:.1f}x the all-to-all)"
        )
    print(line, flush=True)


def main(argv=None) -> int:
    """Exit status; with --rank the process is one rank and ends here."""
    return launch.main(parse_args(argv), train_rank, "train_recsys")


if __name__ == "__main__":
    sys.exit(main())
