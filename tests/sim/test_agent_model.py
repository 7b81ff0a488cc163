"""The simulated INA workers running the worker agent's congestion control (sim.allreduce.AgentModel):
on the lab's star_100m at the lab's settings the completion time is the physics of pacing at the plan's
rate (the calibration's base, bench/calibrate.py), a long round trip makes the agent's window the bound,
and a switch queue the plan did not foresee is marked CE by the P4 program and slows the senders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controller.topology_yaml import load_topology
from sim.allreduce import AgentModel, WorkerValues, plan_ina, run_ina
from sim.network import LinkModel, SimNetwork
from worker.pacing import PACING_HEADROOM
from worker.stream import SLOW_START_BYTES

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

ROOT = Path(__file__).resolve().parents[2]
LAB_POOL = 2048  # bench/allreduce_netns.py's --pool-size default
K = 344  # the default program at a 1500-byte MTU (v1model-k344)


def _star_100m_run(
    chunks: int,
    links: LinkModel | None = None,
    topology: Path | None = None,
    rate: float = 0.0,
    root_results: bool | None = None,
):
    topo = load_topology(topology or ROOT / "topologies" / "star_100m.yaml")
    workers = [h.name for h in topo.hosts if h.role == "worker"]
    net = SimNetwork(topo, links=links or LinkModel())
    net.install_routes(routes=False)
    plan = plan_ina(net, workers, "h5", pool_size=LAB_POOL, root_results=root_results)
    if rate:
        plan.trees[0].send_rate = rate  # a plan that over-estimates the path (the test's congestion)
    result = run_ina(net, plan, WorkerValues.random(len(workers), chunks * K, seed=5), agent=AgentModel())
    frame = net.direction_stats("h1", "s1")
    return net, plan, result, frame


def test_star_100m_at_the_labs_settings_takes_the_pacing_rates_time():
    chunks = 512  # 512 KB per worker
    net, plan, result, up = _star_100m_run(chunks)
    assert result.finished == 4 and result.mismatches == 0 and result.resends == 0
    assert up["packets"] == chunks  # every chunk sent once
    frame_bytes = up["bytes"] / up["packets"]
    # physics: every frame at 97% of the plan's rate (the link's 100 Mbit/s), then one round trip for the
    # last one (the switch, the tree's root, sends the RESULT back: 2 host links of 0.1 ms, a frame time on
    # each of them)
    rate_bps = plan.trees[0].send_rate * 1e6 * PACING_HEADROOM
    assert plan.trees[0].send_rate == 100.0
    expected = chunks * frame_bytes * 8 / rate_bps + 2 * 0.1e-3 + 2 * frame_bytes * 8 / 100e6
    assert abs(result.completion_s / expected - 1) < 0.15
    assert result.completion_s > result.ideal_s  # headers and the pacer's headroom cost time
    assert result.agent["congested_results"] == 0 and result.agent["timeouts"] == 0
    net.close()


@pytest.mark.parametrize(("root_results", "host_links"), [(None, 2), (False, 4)], ids=["root", "server-path"])
def test_a_long_round_trip_makes_the_agents_window_the_bound(root_results, host_links):
    chunks = 2048
    # per host link, for a round trip of about 40 ms: it crosses the worker's link twice, and the server's
    # twice more on the server's path
    extra_ms = 40.0 / host_links
    net, plan, result, _ = _star_100m_run(chunks, LinkModel(host_delay_extra_ms=extra_ms), root_results=root_results)
    assert result.finished == 4 and result.mismatches == 0 and result.resends == 0
    rtt = host_links * (0.1 + extra_ms) * 1e-3
    window = SLOW_START_BYTES // (4 * K)  # paced: the agent starts past slow start, at SLOW_START_BYTES of values
    # window-bound: a window of chunks per round trip (the window grows by about one chunk per round trip
    # above its threshold: 8 round trips, +3%), the last round trip added
    expected = chunks / window * rtt + rtt
    assert abs(result.completion_s / expected - 1) < 0.15
    assert result.completion_s > 2 * result.ideal_s  # far from the link's rate: the window, not the link
    assert abs(result.agent["lowest_rtt_s"] / rtt - 1) < 0.1
    net.close()


def _slow_server_link(tmp_path: Path) -> Path:
    text = (ROOT / "topologies" / "star_100m.yaml").read_text()
    slow = text.replace("{ends: [h5, 's1:5'], bandwidth: 100.0", "{ends: [h5, 's1:5'], bandwidth: 50.0")
    assert slow != text
    path = tmp_path / "star_slow_server.yaml"
    path.write_text(slow)
    return path


def test_a_queue_at_a_switch_is_marked_by_the_p4_program_and_slows_the_senders(tmp_path):
    chunks = 1024
    # the plan paces at 100 Mbit/s where the server's link takes 50: on the server's path (the server sends
    # the RESULTs) the switch's queue toward the server grows
    net, _, result, _ = _star_100m_run(chunks, topology=_slow_server_link(tmp_path), rate=100.0, root_results=False)
    assert result.finished == 4 and result.mismatches == 0
    assert result.agent["congested_results"] > 0  # results came back CE: the switch marked, the server echoed
    assert result.agent["rate_cuts"] > 0
    down = net.direction_stats("s1", "h5")
    assert down["max_queue_bytes"] >= 96 * 1000  # the P4 program marks from 96 packets in the queue
    net.close()


def test_results_from_the_root_leave_a_slow_server_link_off_the_workers_path(tmp_path):
    chunks = 1024
    # the same slow server link with the switch multicasting the RESULTs (the default): the server gets
    # nothing and answers nothing, so its link slows no worker
    net, plan, result, up = _star_100m_run(chunks, topology=_slow_server_link(tmp_path), rate=100.0)
    assert result.finished == 4 and result.mismatches == 0 and result.resends == 0
    assert result.agent["congested_results"] == 0 and result.agent["rate_cuts"] == 0
    rate_bps = plan.trees[0].send_rate * 1e6 * PACING_HEADROOM
    assert result.completion_s < 1.1 * chunks * (up["bytes"] / up["packets"]) * 8 / rate_bps
    assert net.direction_stats("s1", "h5")["packets"] == 0  # no copy of the sums queued on the slow link
    assert net.direction_stats("h5", "s1")["packets"] == 0
    net.close()
