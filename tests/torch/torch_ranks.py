"""Run a function on N ranks in separate processes, with a deadline: a stuck rank fails the test.

Each rank function is ``fn(rank, world, *args)`` (importable, module level); its return value comes
back pickled. ``init(backend)`` inside a rank joins the group rendezvous at ``TORCH_TEST_PORT``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import traceback

import torch.distributed as dist

RANK_DEADLINE_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init(backend: str, rank: int, world: int, **kwargs):
    if backend == "ina":
        import worker.torch_backend  # noqa: F401  (registers "ina")
    dist.init_process_group(
        backend, rank=rank, world_size=world, init_method=f"tcp://127.0.0.1:{os.environ['TORCH_TEST_PORT']}", **kwargs
    )


def _entry(fn, rank, world, args, env, results):
    os.environ.update(env)
    import torch

    torch.set_num_threads(1)
    try:
        out = fn(rank, world, *args)
        results.put((rank, "ok", out))
    except BaseException as exc:  # report, never hang the parent
        results.put((rank, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    finally:
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass


def run_ranks(fn, world: int, *args, env=None, deadline: float = RANK_DEADLINE_S) -> list:
    """[result of rank 0, ..., rank N-1]; raises AssertionError naming a failed or stuck rank.
    ``env``: one dict for every rank, or a callable rank -> dict."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = str(free_port())
    envs = [dict(env(r) if callable(env) else (env or {}), TORCH_TEST_PORT=port) for r in range(world)]
    procs = [ctx.Process(target=_entry, args=(fn, r, world, args, envs[r], results), daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    out: dict[int, object] = {}
    errors = []
    try:
        for _ in range(world):
            try:
                rank, status, value = results.get(timeout=deadline)
            except queue.Empty:
                missing = sorted(set(range(world)) - set(out))
                raise AssertionError(f"ranks {missing} did not finish within {deadline} s") from None
            if status == "ok":
                out[rank] = value
            else:
                errors.append(f"rank {rank}: {value}")
                break
    finally:
        for p in procs:
            p.join(timeout=5 if not errors else 0.5)
            if p.is_alive():
                p.kill()
                p.join()
    if errors:
        raise AssertionError(errors[0])
    return [out[r] for r in range(world)]
