"""The scale simulator on small networks: exact sums through the P4 program, drop-tail queues, and the
link model's timing (docs/simulator.md)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from controller.generators import fat_tree, star
from sim.allreduce import BASELINE_PAYLOAD, WorkerValues, plan_ina, run_ina, run_ps, run_ring, run_transfer
from sim.errors import SimError
from sim.frames import UDP_PAYLOAD
from sim.network import LinkModel, SimNetwork

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)


def _fat_tree_job(links: LinkModel | None = None, seed: int = 0, root_results: bool | None = None):
    topo = fat_tree(4)
    hosts = [h.name for h in topo.hosts]
    net = SimNetwork(topo, links=links or LinkModel(), seed=seed)
    net.install_routes()
    plan = plan_ina(net, hosts[:-1], hosts[-1], root_results=root_results)
    return net, plan


def test_ina_sums_are_exact_through_the_p4_program_on_a_fat_tree():
    net, plan = _fat_tree_job()
    values = WorkerValues.random(len(plan.workers), 24 * K, seed=3)
    expected = np.sum([values.of(r) for r in range(len(plan.workers))], axis=0, dtype=np.int64).astype(np.int32)
    result = run_ina(net, plan, values, expected=expected)
    assert result.finished == len(plan.workers) == 15
    assert result.mismatches == 0
    assert result.completion_s > result.ideal_s
    # every GRAD of the edge switches' workers went through the pipeline: the edge switches aggregate
    assert sum(net.switches[s].stats["received"] for s in net.switches) > 0
    net.close()


def test_a_wrong_expected_sum_is_reported_by_every_worker():
    net, plan = _fat_tree_job()
    values = WorkerValues.random(len(plan.workers), 8 * K, seed=4)
    expected = values.total()
    expected[5 * K + 17] += 1  # chunk 5 is wrong
    result = run_ina(net, plan, values, expected=expected)
    assert result.finished == len(plan.workers)
    assert result.mismatches == len(plan.workers)  # each worker: one chunk
    net.close()


def test_values_that_are_not_whole_chunks_are_refused_with_the_reason():
    net, plan = _fat_tree_job()
    with pytest.raises(SimError, match=r"100 values are not a whole number of 344-value chunks"):
        run_ina(net, plan, WorkerValues.random(len(plan.workers), 100))
    net.close()


def test_lost_packets_are_resent_and_sums_stay_exact():
    net, plan = _fat_tree_job(LinkModel(loss_percent=2.0), seed=7)
    values = WorkerValues.random(len(plan.workers), 32 * K, seed=5)
    result = run_ina(net, plan, values, window=16)
    assert result.finished == len(plan.workers)
    assert result.mismatches == 0
    assert result.resends > 0
    net.close()


def test_a_cut_link_ends_the_run_with_the_workers_given_up_not_hung():
    net, plan = _fat_tree_job(root_results=False)  # the server on the path: it sends the RESULTs
    server = plan.servers[0].name
    net.cut(server, next(link.other(server) for link in net.topo.links_of(server)))
    result = run_ina(net, plan, WorkerValues.random(len(plan.workers), 4 * K), max_resends=3)
    assert result.finished == 0 and result.completion_s == -1.0
    # each worker resent its 4 chunks 3 times, then gave up on the first
    assert result.resends == 3 * 4 * len(plan.workers)
    net.close()


def test_a_full_queue_drops_what_does_not_fit_its_byte_limit():
    frame = UDP_PAYLOAD + BASELINE_PAYLOAD
    net = SimNetwork(star(2), links=LinkModel(queue_bytes=3 * frame + 10))
    net.install_routes()
    result = run_transfer(net, "h1", "h2", packets=100)
    sent = net.direction_stats("h1", "s1")
    # all 100 frames are offered at once: the queue takes 3, the rest find it full
    assert sent["packets"] == 3 and sent["queue_drops"] == 97
    assert result.finished == 0  # the sink never gets its 100 frames
    net.close()


def test_a_single_transfer_takes_its_bytes_over_the_bandwidth_plus_the_delays():
    bandwidth_mbps, delay_ms, packets = 100.0, 0.5, 40
    net = SimNetwork(star(2), links=LinkModel(bandwidth_mbps=bandwidth_mbps, delay_ms=delay_ms))
    net.install_routes()
    result = run_transfer(net, "h1", "h2", packets=packets)
    frame_s = (UDP_PAYLOAD + BASELINE_PAYLOAD) * 8 / (bandwidth_mbps * 1e6)
    # h1 -> s1 -> h2, store and forward: the last frame leaves h1 after packets frames, s1 after one more
    want = packets * frame_s + delay_ms / 1e3 + frame_s + delay_ms / 1e3
    assert result.completion_s == pytest.approx(want, abs=2 * packets * 1e-12)
    net.close()


def test_ring_and_parameter_server_finish_on_the_same_links():
    topo = fat_tree(4)
    hosts = [h.name for h in topo.hosts]
    for run in (lambda n: run_ring(n, hosts, 64 * 1024), lambda n: run_ps(n, hosts[:-1], hosts[-1], 64 * 1024)):
        net = SimNetwork(topo)
        net.install_routes()
        result = run(net)
        assert result.finished == result.workers
        assert result.completion_s > result.ideal_s
        net.close()


def test_the_native_switch_hands_out_its_c_entry_points_until_closed():
    from controller.programs import default_program, program_file
    from softswitch.compiler import compile_program
    from softswitch.switch import Switch

    program = compile_program(str(program_file(default_program(1500))), backend="native")
    sw = Switch(program, device_id=1, name="s1")
    entry = sw.c_entry_points()
    assert set(entry) == {"switch", "ss_process_one", "ss_free", "ss_port_queue_depth"}
    assert all(isinstance(v, int) and v > 0 for v in entry.values())
    sw.close()
    with pytest.raises(RuntimeError, match="^s1: the native switch is closed$"):
        sw.c_entry_points()
