"""Inputs of the sharded-embedding tests and their unsharded reference (torch's nn.EmbeddingBag /
nn.Embedding holding the same rows). Every input is a function of (scenario, rank, world), so the
ranks and the test process build the same batches independently."""

from __future__ import annotations

import torch
from torch import nn

from worker.embedding import Bags, EmbeddingTable, initial_rows

SEED = 7
TABLES = [
    EmbeddingTable("clicks", 50, 4, "sum"),
    EmbeddingTable("genre", 37, 3, "mean"),
    EmbeddingTable("slot", 11, 5, "none"),
]
SCENARIOS = ("uniform", "skewed", "repeated")
LR_SGD, LR_ADAGRAD = 0.5, 0.3


def _bags(g: torch.Generator, n_bags: int, max_len: int, draw) -> Bags:
    lengths = torch.randint(0, max_len + 1, (n_bags,), generator=g)
    keys = draw(int(lengths.sum()))
    offsets = torch.cumsum(lengths, 0) - lengths
    return Bags(keys, offsets)


def batch(scenario: str, rank: int, world: int) -> dict:
    """This rank's batch for ``scenario``:
    uniform  - random bags of 0..4 keys (empty bags included), keys uniform over each table;
    skewed   - batch sizes differ by rank (rank 1 has no samples at all), 80% of the keys are one hot
               key and the other keys of 'clicks' all belong to rank 0 (one rank receives everything);
    repeated - the same few keys over and over, within bags, across bags and across ranks."""
    g = torch.Generator().manual_seed(1000 * SCENARIOS.index(scenario) + 17 * rank + world)
    if scenario == "uniform":
        return {
            "clicks": _bags(g, 6, 4, lambda n: torch.randint(0, 50, (n,), generator=g)),
            "genre": _bags(g, 5, 3, lambda n: torch.randint(0, 37, (n,), generator=g)),
            "slot": torch.randint(0, 11, (3, 2), generator=g),
        }
    if scenario == "skewed":
        n_bags = 0 if rank == 1 else 3 + 4 * rank

        def hot(num_rows: int, owner_zero: bool):
            def draw(n: int) -> torch.Tensor:
                cold = torch.randint(0, num_rows // world if owner_zero else num_rows, (n,), generator=g)
                cold = cold * world if owner_zero else cold
                return torch.where(torch.rand(n, generator=g) < 0.8, torch.full((n,), 3), cold)

            return draw

        return {
            "clicks": _bags(g, n_bags, 5, hot(50, True)),
            "genre": torch.stack([hot(37, False)(2) for _ in range(n_bags)])
            if n_bags
            else torch.zeros(0, 2, dtype=torch.long),
            "slot": hot(11, False)(n_bags),
        }
    if scenario == "repeated":
        return {
            "clicks": Bags(torch.tensor([7, 7, 7, 7, 8, 7, 8, 49, 49]), torch.tensor([0, 4, 4, 7])),
            "genre": Bags(torch.tensor([5, 5, 5, 36]), torch.tensor([0, 3])),
            "slot": torch.tensor([[2, 2, 2], [10, 2, 10]]),
        }
    raise ValueError(scenario)


def loss_weights(scenario: str, rank: int, outputs: dict) -> dict:
    """Fixed random weights so that every output element gets a different gradient."""
    g = torch.Generator().manual_seed(500 + 10 * SCENARIOS.index(scenario) + rank)
    return {name: torch.randn(out.shape, generator=g) for name, out in outputs.items()}


def rank_loss(outputs: dict, weights: dict) -> torch.Tensor:
    return sum((outputs[name] * weights[name]).sum() for name in sorted(outputs))


def full_rows(index: int) -> torch.Tensor:
    t = TABLES[index]
    return initial_rows(torch.arange(t.num_rows), t.dim, SEED, index)


class Reference(nn.Module):
    """One unsharded table per name: nn.EmbeddingBag for pooled tables, nn.Embedding otherwise."""

    def __init__(self, rows: list[torch.Tensor] | None = None):
        super().__init__()
        rows = rows or [full_rows(i) for i in range(len(TABLES))]
        self.tables = nn.ModuleDict()
        for t, r in zip(TABLES, rows, strict=True):
            if t.pooling == "none":
                self.tables[t.name] = nn.Embedding.from_pretrained(r.clone(), freeze=False, sparse=True)
            else:
                self.tables[t.name] = nn.EmbeddingBag.from_pretrained(
                    r.clone(), freeze=False, mode=t.pooling, sparse=True
                )

    def forward(self, inputs: dict) -> dict:
        out = {}
        for t in TABLES:
            x = inputs[t.name]
            if t.pooling == "none":
                out[t.name] = self.tables[t.name](x)
            elif isinstance(x, Bags):
                out[t.name] = self.tables[t.name](x.keys, x.offsets)
            else:
                out[t.name] = self.tables[t.name](x)
        return out

    def weight(self, name: str) -> torch.Tensor:
        return self.tables[name].weight


def reference_step(reference: Reference, scenario: str, world: int) -> tuple[list[dict], torch.Tensor]:
    """Every rank's outputs from the unsharded tables, and the loss whose gradient the shards must
    get: the mean of the ranks' losses (DDP's averaging)."""
    outputs, losses = [], []
    for rank in range(world):
        out = reference(batch(scenario, rank, world))
        outputs.append(out)
        losses.append(rank_loss(out, loss_weights(scenario, rank, out)))
    return outputs, sum(losses) / world
