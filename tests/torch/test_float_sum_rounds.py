"""Float sums in one round trip or two (worker/torch_backend/scales.py) through the in-process switch
network: a sequence of all_reduces of one size whose magnitudes jump about, checked against the exact
float64 sums within the documented bound of the path the group took, identical on every rank, with the
round trips each call took.

On the one-round path: one when the remembered scales fit, two or three when the values grew past them,
shrank far below them, or the size is new, and then only the blocks concerned go again. On the
two-round path (groups above ``INA_ONE_ROUND_MAX_WORLD`` ranks, or ``INA_FLOAT_SUM_ROUNDS=2``): two in
every call, with the tighter bound. A NaN is refused on every rank alike and the group carries on. Ranks
whose settings would take different paths are refused when the group is made.

The bounds are docs/pytorch.md's, written out here: |ina - exact| < 16 N^3 2^-30 max|x| over a block on the
one-round path and 2 N^2 2^-30 max|x| on the two-round path."""

import datetime
import threading
import time

import numpy as np
import pytest
import torch.distributed as dist
from ina_jobs import ina_job
from rank_bodies import FLOAT_SUM_STEPS, _np, float_sum_input, float_sum_sequence, init_error
from torch_ranks import run_ranks

from worker.torch_backend import InaConfigError, InaOptions
from worker.torch_backend.process_group import agree_float_sum_path
from worker.torch_backend.scales import ONE_ROUND_MAX_WORLD, error_bound

BLOCK = 64  # values per packet of p4src/ina.p4: the scale block


def documented_bound(world: int, path: int) -> float:
    """docs/pytorch.md's bound of |ina - exact| over a block, as a fraction of its largest magnitude."""
    return 16 * world**3 * 2.0**-30 if path == 1 else 2 * world**2 * 2.0**-30


# round trips per step on the one-round path, as (MAX rounds, SUM rounds) the agent sent: first call of the
# size (agree + values), the same scales, twice as large (room left by GROWTH_BITS), 2^13 smaller (values
# again: scale too coarse), 2^5 larger (values again at the exponents the lanes report), 2^27 larger (past
# the lanes: values, agree, values), zeros, a NaN (values, then agree: refused); then AVG after a 2^20
# shrink (values again, after an agreement or not), a new size (agree + values), the first size again, one
# block 2^10 larger on one rank (that block again), then back (that block again: its scale too coarse)
ONE_ROUND = [(1, 1), (0, 1), (0, 1), (0, 2), (0, 2), (1, 2), (0, 1), (1, 1), None, (1, 1), (0, 1), (0, 2), (0, 2)]
AVG_AFTER_SHRINK = ((0, 2), (1, 2))
BLOCKS = -(-700 // 64)
# blocks sent in a second values round: all of them after the scale changed everywhere, one after a jump
ONE_ROUND_RESENT = [0, 0, 0, BLOCKS, BLOCKS, BLOCKS, 0, 0, None, 0, 0, 1, 1]
# the two-round path: agree + values in every call, nothing sent again; the NaN is refused after the MAX round
NAN_STEP = next(i for i, s in enumerate(FLOAT_SUM_STEPS) if s[0] == "nan")
TWO_ROUNDS = [(1, 0) if step == NAN_STEP else (1, 1) for step in range(len(FLOAT_SUM_STEPS))]


def chunks(blocks: int, lanes: bool) -> int:
    """Packets of BLOCK int32 values one round of ``blocks`` blocks takes: an agreement sends one exponent
    per block, a values round BLOCK values per block, plus one lane per block on the one-round path."""
    return -(-blocks // BLOCK) if not lanes else -(-blocks * (BLOCK + 1) // BLOCK)


def expected_chunks(step: int, rounds: tuple[int, int], resent: int, path: int) -> int:
    """The chunks of a step's rounds: on the one-round path the first values round takes every block and
    later ones (and the agreement, after the first call of a size) the blocks sent again; on the two-round
    path an agreement of every block, then the values."""
    size = FLOAT_SUM_STEPS[step][2] if len(FLOAT_SUM_STEPS[step]) > 2 else 700
    blocks = -(-size // BLOCK)
    agreements, values = rounds
    if path == 2:
        return agreements * chunks(blocks, False) + (-(-size // BLOCK) if values else 0)
    first_of_size = step == 0 or (len(FLOAT_SUM_STEPS[step]) > 2)
    agreed = blocks if first_of_size else 1 if step == NAN_STEP else resent  # the NaN's one block: refused
    return agreements * chunks(agreed, False) + chunks(blocks, True) + (values - 1) * chunks(resent, True)


# group -> (ranks, INA_* settings, the path's round trips): both sides of a threshold lowered to 2 ranks
# (the default, 8, would need 9 ranks in process), and the default for 3 ranks
GROUPS = {
    "3 ranks, default threshold": (3, {}, 1),
    "3 ranks, threshold 2": (3, {"INA_ONE_ROUND_MAX_WORLD": "2"}, 2),
    "2 ranks, threshold 2": (2, {"INA_ONE_ROUND_MAX_WORLD": "2"}, 1),
}


@pytest.fixture(scope="module", params=list(GROUPS))
def group(request, tmp_path_factory):
    world, settings, path = GROUPS[request.param]
    with ina_job(world, tmp_path_factory.mktemp("float-sums")) as job:
        results = run_ranks(float_sum_sequence, world, env=lambda rank: dict(job.worker_env(rank), **settings))
    return world, path, results


def exact(step: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    """The float64 sum of every rank's input at ``step`` and, per value, its block's largest magnitude."""
    xs = np.array([_np(float_sum_input(r, step, world)) for r in range(world)])
    blocks = -(-xs.shape[1] // BLOCK)
    padded = np.zeros((world, blocks * BLOCK))
    padded[:, : xs.shape[1]] = np.abs(xs)
    block_max = np.repeat(padded.reshape(world, blocks, BLOCK).max(axis=(0, 2)), BLOCK)[: xs.shape[1]]
    return xs.sum(axis=0), block_max


def test_each_sum_is_within_its_paths_bound_and_identical_on_every_rank(group):
    world, path, results = group
    for step, (scale, op, *_) in enumerate(FLOAT_SUM_STEPS):
        if scale == "nan":
            continue  # test_a_nan_is_refused_on_every_rank
        total, block_max = exact(step, world)
        expected = total / world if op == "AVG" else total
        got = results[0][step][0]
        bound = documented_bound(world, path) * block_max / (world if op == "AVG" else 1)
        tolerance = bound + 2.0**-23 * np.abs(expected)  # and one rounding to float32
        assert np.all(np.abs(got - expected) <= tolerance), f"step {step}: max error {np.abs(got - expected).max()}"
        if scale is None:
            assert not got.any()
        for r in range(1, world):
            np.testing.assert_array_equal(results[r][step][0], got)


def test_error_bound_is_the_documented_one_and_auto_stays_within_64_ulps():
    for world in (2, 3, 8, 16, 64):
        assert (error_bound(world, 1), error_bound(world, 2)) == (
            documented_bound(world, 1),
            documented_bound(world, 2),
        )
    assert documented_bound(64, 1) > 1e-3 and documented_bound(64, 2) < 1e-5  # 0.4% against 7.6e-6
    assert documented_bound(ONE_ROUND_MAX_WORLD, 1) == 2.0**-17  # 64 units of 2^-23 of the block's largest


def test_round_trips_chunks_and_blocks_sent_again_per_call(group):
    """The round trips and chunks are those the agent sent (its counters where it sends), so a path that
    took one round more or fewer than described here fails."""
    world, path, results = group
    rounds, again = (ONE_ROUND, ONE_ROUND_RESENT) if path == 1 else (TWO_ROUNDS, [0] * len(TWO_ROUNDS))
    for r in range(world):
        for step, (expected, blocks) in enumerate(zip(rounds, again, strict=True)):
            (*taken, sent), resent = results[r][step][1:]
            if expected is None:  # AVG after a shrink: values again, with or without an agreement first
                assert tuple(taken) in AVG_AFTER_SHRINK and resent == BLOCKS, (step, taken, resent)
                expected = tuple(taken)
            else:
                assert (tuple(taken), resent) == (expected, blocks), (r, step, taken, resent)
            assert sent == expected_chunks(step, expected, resent, path), (r, step, sent)


def test_a_nan_is_refused_on_every_rank(group):
    world, _, results = group
    lines = {results[r][NAN_STEP][0] for r in range(world)}
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("NonFiniteInputError") and f"rank {world - 1} has a NaN or inf in elements 0..63" in line


def test_the_path_is_chosen_by_world_size_or_by_name():
    plan = {"INA_PLAN": "plan.json"}
    assert [InaOptions.from_env(plan).float_sum_path(n) for n in (2, 8, 9, 64)] == [1, 1, 2, 2]
    assert InaOptions.from_env(dict(plan, INA_ONE_ROUND_MAX_WORLD="16")).float_sum_path(16) == 1
    assert InaOptions.from_env(dict(plan, INA_FLOAT_SUM_ROUNDS="2")).float_sum_path(2) == 2
    assert InaOptions.from_env(dict(plan, INA_FLOAT_SUM_ROUNDS="1")).float_sum_path(63) == 1
    # from 64 ranks the lanes' window cannot tell a full window from a block past it: one round is refused
    with pytest.raises(ValueError, match="one round takes at most 63 ranks .* this group has 64: use INA_FLOAT_SUM"):
        InaOptions.from_env(dict(plan, INA_FLOAT_SUM_ROUNDS="1")).float_sum_path(64)
    assert InaOptions.from_env(dict(plan, INA_ONE_ROUND_MAX_WORLD="100")).float_sum_path(64) == 2
    with pytest.raises(InaConfigError, match="INA_FLOAT_SUM_ROUNDS must be auto, 1 or 2, got 'two'"):
        InaOptions.from_env(dict(plan, INA_FLOAT_SUM_ROUNDS="two"))
    with pytest.raises(InaConfigError, match="INA_ONE_ROUND_MAX_WORLD must be >= 1, got 0"):
        InaOptions.from_env(dict(plan, INA_ONE_ROUND_MAX_WORLD="0"))
    with pytest.raises(InaConfigError, match="INA_ONE_ROUND_MAX_WORLD must be a number"):
        InaOptions.from_env(dict(plan, INA_ONE_ROUND_MAX_WORLD="many"))


# rank 1's settings -> what each rank's init_process_group says: refused when they give another path (2
# ranks: auto takes one round trip up to the threshold), accepted when only the settings differ
SETTINGS_ACROSS_RANKS = {
    "another path": (
        {"INA_FLOAT_SUM_ROUNDS": "2"},
        "InaConfigError: ina float sums: rank {me} takes {mine} round trip(s) (INA_FLOAT_SUM_ROUNDS={my_rounds}, "
        "INA_ONE_ROUND_MAX_WORLD=8) but rank {other} takes {theirs} (INA_FLOAT_SUM_ROUNDS={their_rounds}, "
        "INA_ONE_ROUND_MAX_WORLD=8); every rank must take the same path: set INA_FLOAT_SUM_ROUNDS and "
        "INA_ONE_ROUND_MAX_WORLD alike on every rank",
    ),
    "the same path": ({"INA_ONE_ROUND_MAX_WORLD": "16"}, "no error: [3.0, 3.0, 3.0]"),
}


@pytest.mark.parametrize("case", list(SETTINGS_ACROSS_RANKS))
def test_ranks_whose_settings_take_different_paths_are_refused_when_the_group_is_made(case, tmp_path):
    settings, expected = SETTINGS_ACROSS_RANKS[case]
    with ina_job(2, tmp_path) as job:
        said = run_ranks(init_error, 2, env=lambda rank: dict(job.worker_env(rank), **(settings if rank else {})))
    paths = [(1, "auto"), (2, "2")]
    for me, other in ((0, 1), (1, 0)):
        (mine, my_rounds), (theirs, their_rounds) = paths[me], paths[other]
        assert said[me] == expected.format(
            me=me, mine=mine, my_rounds=my_rounds, other=other, theirs=theirs, their_rounds=their_rounds
        )


def verdicts(store: dist.Store, paths: list[int], timeout: float = 30.0) -> list[str]:
    """agree_float_sum_path on one store for each rank, rank 0 first and alone for half a second (it
    must wait for the others' values of this group, not read what they said of an earlier one)."""
    said = ["no answer"] * len(paths)

    def rank(r: int) -> None:
        try:
            agree_float_sum_path(
                store, r, len(paths), paths[r], f"path {paths[r]}", datetime.timedelta(seconds=timeout)
            )
            said[r] = "agreed"
        except InaConfigError as exc:
            said[r] = str(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(paths))]
    threads[0].start()
    threads[0].join(0.5)
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(timeout + 10)
    return said


def test_a_group_made_again_on_the_same_store_agrees_on_its_own_settings():
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=60))
    assert verdicts(store, [1, 1]) == ["agreed", "agreed"]
    # destroyed and made again with other settings on rank 1: refused, although rank 1 said 1 before
    said = verdicts(store, [1, 2])
    assert said[0].startswith("ina float sums: rank 0 takes 1 round trip(s) (path 1) but rank 1 takes 2 (path 2)")
    assert said[1].startswith("ina float sums: rank 1 takes 2 round trip(s) (path 2) but rank 0 takes 1 (path 1)")
    # and again with the same settings: accepted, although rank 1 said 2 before
    assert verdicts(store, [1, 1]) == ["agreed", "agreed"]
    # every group instance deleted its keys: what is left is the counter rank 0 numbers the instances with
    assert store.num_keys() == 1


def test_a_group_made_again_with_other_members_on_the_same_store_is_accepted():
    """torch gives a group made after destroy_process_group the same store prefix whatever its members: a
    rank new to the group must use the same instance number as the ranks that made groups before."""
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=60))
    assert verdicts(store, [1, 1], timeout=5) == ["agreed", "agreed"]
    assert verdicts(store, [1, 1, 1], timeout=5) == ["agreed", "agreed", "agreed"]
    assert verdicts(store, [2, 2], timeout=5) == ["agreed", "agreed"]
    assert store.num_keys() == 1


class EndsWithRankZero(dist.Store):
    """Another rank's view of a store that rank 0's process serves (TCPStore): every call fails as
    TCPStore's do once rank 0 has left agree_float_sum_path (a rank that refused the group raises, and its
    process ends), and this rank is slow to read what it waited for."""

    def __init__(self, store: dist.Store, rank_zero_left: threading.Event):
        super().__init__()
        self.store, self.rank_zero_left = store, rank_zero_left

    def _served(self) -> None:
        if self.rank_zero_left.is_set():
            raise dist.DistNetworkError("Connection reset by peer")

    def set(self, key, value):
        self._served()
        self.store.set(key, value)

    def get(self, key):
        time.sleep(0.3)
        self._served()
        return self.store.get(key)

    def add(self, key, value):
        self._served()
        return self.store.add(key, value)

    def delete_key(self, key):
        self._served()
        return self.store.delete_key(key)

    def check(self, keys):
        self._served()
        return self.store.check(keys)

    def wait(self, keys, timeout=None):
        self._served()
        return self.store.wait(keys) if timeout is None else self.store.wait(keys, timeout)


def test_a_rank_still_says_why_when_the_rank_that_served_the_store_refused_and_ended():
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=60))
    rank_zero_left = threading.Event()
    said = {}

    def rank(r: int, its_store: dist.Store) -> None:
        try:
            agree_float_sum_path(its_store, r, 2, r + 1, f"path {r + 1}", datetime.timedelta(seconds=30))
            said[r] = "agreed"
        except Exception as exc:
            said[r] = f"{type(exc).__name__}: {exc}"
        finally:
            if r == 0:
                rank_zero_left.set()

    ranks = [
        threading.Thread(target=rank, args=(0, store)),
        threading.Thread(target=rank, args=(1, EndsWithRankZero(store, rank_zero_left))),
    ]
    for thread in ranks:
        thread.start()
    for thread in ranks:
        thread.join(40)
    assert said[0].startswith(
        "InaConfigError: ina float sums: rank 0 takes 1 round trip(s) (path 1) but rank 1 takes 2 (path 2)"
    )
    assert said[1].startswith(
        "InaConfigError: ina float sums: rank 1 takes 2 round trip(s) (path 2) but rank 0 takes 1 (path 1)"
    )
    assert store.num_keys() == 1  # rank 0 left last: the instance's keys are gone


def test_a_rank_that_never_publishes_its_path_fails_the_group_after_the_groups_timeout():
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=600))  # the store's own timeout is not the one waited
    said = ["no answer"]

    def lonely() -> None:
        try:
            agree_float_sum_path(store, 0, 3, 1, "", datetime.timedelta(seconds=0.3))
        except InaConfigError as exc:
            said[0] = str(exc)

    thread = threading.Thread(target=lonely, daemon=True)
    thread.start()
    thread.join(30)
    assert said == [
        "ina float sums: rank 0 waited 0:00:00.300000 for rank(s) 1, 2 to publish their float sum path when making "
        "the group"
    ]
    assert store.num_keys() == 2  # its path and the instance counter: the numbers it handed out are gone
    # a rank whose rank 0 never comes
    with pytest.raises(InaConfigError, match=r"^ina float sums: rank 1 waited 0:00:00.300000 for rank 0 to number "):
        agree_float_sum_path(store, 1, 2, 1, "", datetime.timedelta(seconds=0.3))
