"""Host-to-host collectives of the ina backend: all_to_all honours torch's contract with a different
size per peer (gloo's own alltoall refuses that), all_to_all_single with split sizes works as on
gloo, and hundreds of back-to-back host-to-host collectives do not hang (they used to, within a few
hundred calls: worker/torch_backend/process_group.py says why)."""

import time

import numpy as np
import pytest
import torch
import torch.distributed as dist
from ina_jobs import server_only_job
from torch_ranks import init, run_ranks

WORLD = 3
BACK_TO_BACK = 400  # rounds of all_to_all_single + broadcast + all_gather


def _piece(src: int, dst: int, dtype) -> torch.Tensor:
    """What rank src sends rank dst: src + dst + 1 values (uneven), recognisable by their value."""
    return (torch.arange(src + dst + 1) + 100 * src + 10 * dst).to(dtype)


def exchanges(rank: int, world: int) -> dict:
    init("ina", rank, world)
    gloo = dist.new_group(backend="gloo")
    out = {}
    for dtype in (torch.float32, torch.int64):
        outputs = [torch.empty(s + rank + 1, dtype=dtype) for s in range(world)]
        dist.all_to_all(outputs, [_piece(rank, d, dtype) for d in range(world)])
        out[f"list_{dtype}"] = [o.numpy().copy() for o in outputs]
    # async, and outputs that are not contiguous (every other element of a larger tensor)
    backing = torch.zeros(world, 2 * (world + rank + 1))
    outputs = [backing[s, : 2 * (s + rank + 1) : 2] for s in range(world)]
    work = dist.all_to_all(outputs, [_piece(rank, d, torch.float32) for d in range(world)], async_op=True)
    work.wait()
    out["async_strided"] = backing.numpy().copy()
    # all_to_all_single with split sizes, rows of 2 values, on ina and on a plain gloo group
    send_splits = [rank + d + 1 for d in range(world)]
    recv_splits = [s + rank + 1 for s in range(world)]
    send = torch.cat([_piece(rank, d, torch.float32) for d in range(world)])[:, None].repeat(1, 2)
    single = [torch.empty(sum(recv_splits), 2) for _ in range(2)]
    dist.all_to_all_single(single[0], send, recv_splits, send_splits)
    dist.all_to_all_single(single[1], send, recv_splits, send_splits, group=gloo)
    out["single"] = [t.numpy().copy() for t in single]
    try:
        dist.all_to_all(
            [torch.empty(s + rank + 1) for s in range(world)],
            [_piece(rank, d, torch.float32) for d in range(world)],
            group=gloo,
        )
        out["gloo_list"] = "no error"
    except RuntimeError as exc:
        out["gloo_list"] = str(exc)
    try:
        dist.all_to_all([torch.empty(1)], [torch.empty(1)])
        out["wrong_count"] = "no error"
    except ValueError as exc:
        out["wrong_count"] = str(exc)
    # back to back, each call's tensors dropped at once (what used to deadlock against gloo's threads)
    start = time.monotonic()
    for i in range(BACK_TO_BACK):
        send_sizes = [1 + (i + rank + d) % 3 for d in range(world)]  # what s sends r: 1 + (i + s + r) % 3
        recv_sizes = [1 + (i + s + rank) % 3 for s in range(world)]
        received = torch.empty(sum(recv_sizes))
        dist.all_to_all_single(received, torch.full((sum(send_sizes),), float(i)), recv_sizes, send_sizes)
        value = torch.full((4,), float(rank + i))
        dist.broadcast(value, i % world)  # every rank now holds the root's value
        gathered = [torch.empty(4) for _ in range(world)]
        dist.all_gather(gathered, value)
        assert torch.equal(received, torch.full_like(received, float(i))) and torch.equal(gathered[0], value)
    out["back_to_back"] = (BACK_TO_BACK, time.monotonic() - start)
    dist.barrier()
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    with server_only_job(WORLD, tmp_path_factory.mktemp("a2a")) as env:
        return run_ranks(exchanges, WORLD, env=env)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_all_to_all_with_a_different_size_per_peer(results, dtype):
    for r in range(WORLD):
        got = results[r][f"list_{dtype}"]
        for s in range(WORLD):
            np.testing.assert_array_equal(got[s], _piece(s, r, dtype).numpy())


def test_async_all_to_all_into_strided_outputs(results):
    for r in range(WORLD):
        backing = results[r]["async_strided"]
        for s in range(WORLD):
            n = s + r + 1
            np.testing.assert_array_equal(backing[s, : 2 * n : 2], _piece(s, r, torch.float32).numpy())
            assert not backing[s, 1 : 2 * n : 2].any() and not backing[s, 2 * n :].any()


def test_all_to_all_single_with_split_sizes_equals_gloo(results):
    for r in range(WORLD):
        ina, gloo = results[r]["single"]
        want = np.concatenate([_piece(s, r, torch.float32).numpy() for s in range(WORLD)])
        np.testing.assert_array_equal(ina, np.stack([want, want], 1))
        np.testing.assert_array_equal(ina, gloo)


def test_gloo_refuses_uneven_lists_and_a_wrong_tensor_count_is_one_line(results):
    assert "invalid tensor size" in results[0]["gloo_list"]
    assert results[0]["wrong_count"] == (
        f"ina all_to_all: needs one input and one output tensor per rank ({WORLD}), got 1 inputs and 1 outputs"
    )


def test_hundreds_of_back_to_back_host_to_host_collectives_complete(results):
    for r in range(WORLD):
        rounds, _seconds = results[r]["back_to_back"]
        assert rounds == BACK_TO_BACK
