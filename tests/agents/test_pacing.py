"""The pacing law (worker/pacing.py) and the plan's send rates (controller/pacing.py): exact arithmetic, no
clock (docs/design-decisions.md, "Congestion control")."""

from pathlib import Path

import numpy as np
import pytest

from worker import pacing as P

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_bucket_releases_its_depth_then_the_rate():
    pacer = P.Pacer(ceiling=1e6, now=0.0)  # 1 MB/s: a bucket of BURST_S at that rate
    bucket = int(1e6 * P.BURST_S) // 500
    assert pacer.take(0.0, packets=100, frame_bytes=500) == 0  # it starts empty
    assert pacer.take(0.001, packets=100, frame_bytes=500) == 2  # 1 ms refills 1 kB
    assert pacer.take(10.0, packets=100, frame_bytes=500) == bucket  # backlogged: at most the whole bucket
    assert pacer.take(10.0, packets=1, frame_bytes=500) == 0
    assert pacer.take(10.1, packets=1, frame_bytes=500) == 1  # it got all it asked for: no longer backlogged
    assert pacer.take(20.0, packets=100, frame_bytes=500) == P.MIN_BURST_PACKETS  # after idling: a small burst
    pacer.spend(20.0, packets=4, frame_bytes=500)  # retransmissions: later sends wait for them
    assert pacer.take(20.001, packets=100, frame_bytes=500) == 0
    assert pacer.wait(1, frame_bytes=500) == pytest.approx(0.0015)  # 1 kB owed, then one frame


def test_an_idle_sender_keeps_one_wake_ups_batch_which_the_link_carries_before_the_next():
    rate, frame = 12.5e6 * P.PACING_HEADROOM, 1100  # 100 Mbit/s, K = 256 frames
    batch = int(rate * P.WAKE_S) // frame  # 22 frames: what a backlogged sender sends per wake-up
    assert batch > P.MIN_BURST_PACKETS
    pacer = P.Pacer(ceiling=rate, now=0.0)
    assert pacer.take(5.0, packets=40, frame_bytes=frame) == batch  # a round's first batch, after idling
    wait = pacer.wait(40 - batch, frame_bytes=frame)
    left = rate * P.WAKE_S - batch * frame  # the bucket's tokens short of a frame
    assert wait == pytest.approx(((40 - batch) * frame - left) / rate)  # the rest as its tokens come, not 2 ms on
    assert batch * frame * 8 / 100e6 < P.WAKE_S  # the link has carried the first batch by the next wake-up
    assert pacer.take(5.0 + wait, packets=40 - batch, frame_bytes=frame) == 40 - batch
    assert pacer.take(5.5, packets=1000, frame_bytes=frame) == batch  # idle again: one batch, and backlogged
    assert pacer.take(5.6, packets=1000, frame_bytes=frame) == int(rate * P.BURST_S) // frame  # the whole bucket
    assert pacer.take(5.7, packets=1, frame_bytes=frame) == 1  # it got all it asked for: no longer backlogged
    assert pacer.take(9.0, packets=1000, frame_bytes=frame) == batch


def test_marked_epochs_cut_by_alpha_half_and_clean_ones_add_back():
    pacer = P.Pacer(ceiling=1e6, now=0.0)
    pacer.on_results(0.0005, results=10, congested=10, round_trip=0.002)  # the epoch is not over yet
    assert (pacer.rate, pacer.alpha) == (1e6, 0.0)
    pacer.on_results(0.002, results=10, congested=0, round_trip=0.002)  # 20 results, 10 congested
    assert pacer.alpha == pytest.approx(P.ALPHA_GAIN * 0.5)
    assert pacer.rate == pytest.approx(1e6 * (1 - P.ALPHA_GAIN * 0.5 / 2))
    alpha, rate = pacer.alpha, pacer.rate
    for step in range(10):  # every result congested: alpha grows toward 1, each epoch cuts deeper
        pacer.on_results(0.005 + 0.003 * step, results=20, congested=20, round_trip=0.002)
        assert pacer.alpha > alpha and (pacer.rate < rate or pacer.rate == P.MIN_RATE_SHARE * 1e6)
        alpha, rate = pacer.alpha, pacer.rate
    cut = pacer.rate
    assert cut == P.MIN_RATE_SHARE * 1e6  # the floor: half the plan's rate
    pacer.on_results(0.040, results=20, congested=0, round_trip=0.002)
    assert pacer.rate == pytest.approx(cut + P.INCREASE_SHARE * 1e6)
    for step in range(100):  # never above the plan's rate
        pacer.on_results(0.043 + 0.003 * step, results=20, congested=0, round_trip=0.002)
    assert pacer.rate == 1e6
    assert pacer.cuts == 11


def test_loss_halves_down_to_the_floor():
    pacer = P.Pacer(ceiling=1e6, now=0.0)
    assert pacer.on_loss() and pacer.rate == max(5e5, P.MIN_RATE_SHARE * 1e6)
    while pacer.on_loss():
        pass
    assert not pacer.on_loss()  # at the floor: the caller halves the window instead
    assert pacer.rate == P.MIN_RATE_SHARE * 1e6


def test_late_round_trips_count_as_congested():
    samples = np.array([0.001, 0.0059, 0.0061, 0.05])
    assert P.late(samples, 0.001).tolist() == [False, False, True, True]  # 1 ms + max(5 ms, 1 ms)
    assert P.late(samples, 0.010).tolist() == [False, False, False, True]  # 10 ms + 10 ms
    assert not P.late(samples, 0.0).any()  # no lowest round trip yet: nothing is late


def _plan(topology, workers, servers, **options):
    from controller.options import PlanOptions
    from controller.planner import plan_job
    from controller.topology_yaml import load_topology

    topo = load_topology(TOPOLOGIES / topology)
    return plan_job(topo, workers, servers, PlanOptions(**options))


def test_plan_rates_count_the_streams_on_each_link():
    workers = ["h1", "h2", "h3", "h4"]
    # aggregated with multicast results: every link carries one stream each way
    assert [t.send_rate for t in _plan("star_100m.yaml", workers, ["h5"]).trees] == [100.0]
    # unicast results: the server's link carries one RESULT per worker
    assert [t.send_rate for t in _plan("star_100m.yaml", workers, ["h5"], result_mode="unicast").trees] == [25.0]
    # no aggregation (a parameter server): every worker's stream reaches the server's link
    assert [t.send_rate for t in _plan("star_100m.yaml", workers, ["h5"], aggregation="none").trees] == [25.0]


def test_plan_rates_split_a_job_over_its_trees_by_weight():
    from controller.topology_yaml import load_topology

    topo = load_topology(TOPOLOGIES / "leaf_spine_100m.yaml")
    workers = [h.name for h in topo.role_hosts("worker")]
    servers = [h.name for h in topo.role_hosts("server")]
    plan = _plan("leaf_spine_100m.yaml", workers, servers, planner="multitree", trees=2)
    total = sum(t.send_rate for t in plan.trees)
    assert 0 < total <= 100.0
    for tree in plan.trees:
        assert tree.send_rate == pytest.approx(total * tree.weight)


def test_a_plan_written_before_send_rates_loads_unpaced():
    from controller.plan import JobPlan

    plan = _plan("star_100m.yaml", ["h1", "h2"], ["h5"])
    data = plan.to_dict()
    for tree in data["trees"]:
        del tree["send_rate"]
    assert [t.send_rate for t in JobPlan.from_dict(data).trees] == [0.0]


def test_a_shared_link_holds_the_rate_at_the_shared_share():
    pacer = P.Pacer(ceiling=1e6, now=0.0)
    pacer.share_link(True)
    assert pacer.rate == P.SHARED_RATE_SHARE * 1e6  # at once: the flow gets the rest from now
    for step in range(20):  # marks cut it no lower, clean epochs raise it no higher
        pacer.on_results(0.003 * (step + 1), results=20, congested=20 * (step % 2), round_trip=0.002)
        assert pacer.rate == P.SHARED_RATE_SHARE * 1e6
    assert not pacer.on_loss()
    pacer.share_link(False)  # the flow is gone: the rate is back above its floor and grows, INCREASE_SHARE an epoch
    assert pacer.rate == max(P.SHARED_RATE_SHARE, P.MIN_RATE_SHARE) * 1e6
    pacer.on_results(0.1, results=20, congested=0, round_trip=0.002)
    assert pacer.rate == pytest.approx((max(P.SHARED_RATE_SHARE, P.MIN_RATE_SHARE) + P.INCREASE_SHARE) * 1e6)
