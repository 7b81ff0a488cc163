"""A spine failing mid-round, recovered within the round (sim.allreduce.Recovery): the controller notices
the dead switch after a modelled delay, re-plans the job (controller/replan.py) and installs it, and the
workers move their chunks without a result to the new plan's recovery tree and offer it their finished
chunks of the last pool, as the agents do (worker/stream.py, Round.trees_changed: a root that died
multicasting may have left other workers and the server without a RESULT). The round finishes with exact
sums, later than a healthy one, and no other chunk that had its result is sent again."""

from __future__ import annotations

import shutil

import pytest

from controller.generators import fat_tree, leaf_spine
from controller.topology import Topology
from sim.allreduce import Recovery, WorkerValues, plan_ina, run_ina, run_ina_jobs
from sim.network import SimNetwork

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)
CHUNKS = 1024  # per worker: more than a window, so the failure catches the round with chunks in flight
DETECT_S = 0.002  # the monitor's probe interval in the in-process tests (tests/e2e/test_replan_inprocess.py)


def _network(topo: Topology) -> tuple[SimNetwork, list[str]]:
    """``topo`` simulated, with the INA job's routes only (no IPv4 routes), and its host names."""
    net = SimNetwork(topo)
    net.install_routes(routes=False)
    return net, [h.name for h in topo.hosts]


def _spine(plan) -> str:
    """A core (fat-tree) or spine (leaf-spine) switch the job's tree crosses."""
    on_tree = [n for edge in plan.trees[0].edges for n in edge]
    return next(n for n in on_tree if n.startswith(("c", "sp")) and n.lstrip("csp").split("_")[0].isdigit())


@pytest.mark.parametrize("make_topo", [leaf_spine, lambda: fat_tree(4)], ids=["leaf_spine", "fat_tree_k4"])
def test_a_spine_failing_mid_round_is_recovered_within_the_round_with_exact_sums(make_topo):
    net, hosts = _network(make_topo())
    workers, server = hosts[:-1], hosts[-1]
    values = WorkerValues.random(len(workers), CHUNKS * K, seed=7)
    healthy = run_ina(net, plan_ina(net, workers, server), values)
    assert healthy.finished == len(workers) and healthy.mismatches == 0

    net.fresh_core()
    plan = plan_ina(net, workers, server)  # a job of its own: the switches' slots remember the last one's seqs
    spine = _spine(plan)
    at = healthy.completion_s / 2
    result = run_ina(net, plan, values, failures=[(at, spine)], recovery=Recovery(detect_s=DETECT_S))

    assert result.finished == len(workers) and result.mismatches == 0  # every worker, every sum exact
    assert result.completion_s > at + DETECT_S  # it went on after the re-plan
    assert result.completion_s > healthy.completion_s
    (replan,) = result.recovery["replans"]  # type: ignore[misc]
    assert replan["switch"] == spine and replan["version"] == plan.version + 1
    assert result.recovery["chunks_moved"] > 0  # chunks were in flight through the dead spine
    for w in plan.workers:
        stats = net.core.host_stats(net.node[w.name])
        assert 0 < stats["results_at_replan"] < CHUNKS  # the failure caught the round in the middle
        # every chunk without its result went over the recovery tree; of those that had it, the ones from
        # a pool before the first without one were offered it once, at the re-plan, and no other was sent again
        assert stats["results_at_replan"] + stats["recovery_chunks"] == CHUNKS
        assert 0 < stats["finished_chunks_offered"] <= 2 * plan.pool_size * len(plan.trees)
        assert stats["sent_after_done"] == stats["finished_chunks_offered"]
    # the root sent the server no copy: every chunk the recovery tree finished, it finished from the workers'
    # values (their chunks in flight and those they offered)
    assert result.server["root_copies"] == 0 and result.recovery["answered_from_other_tree"] == 0
    net.close()


def test_two_jobs_through_a_failed_core_both_recover():
    net, hosts = _network(fat_tree(4))
    groups = [hosts[0::2], hosts[1::2]]  # both jobs span every pod, so both cross the core
    jobs = [
        (plan_ina(net, g[:-1], g[-1]), WorkerValues.random(len(g) - 1, 512 * K, seed=i)) for i, g in enumerate(groups)
    ]
    spine = _spine(jobs[0][0])
    results = run_ina_jobs(net, jobs, failures=[(0.0003, spine)], recovery=Recovery(detect_s=DETECT_S))
    for (plan, _), result in zip(jobs, results, strict=True):
        assert result.finished == len(plan.workers) and result.mismatches == 0
        if spine in {c.switch for c in plan.switches}:
            assert result.recovery["plan_version"] == plan.version + 1
    assert any(r.recovery.get("chunks_moved", 0) for r in results)
    net.close()


def test_a_refused_replan_ends_the_round_without_a_hang():
    net, hosts = _network(fat_tree(4))
    plan = plan_ina(net, hosts[:-1], hosts[-1])
    values = WorkerValues.random(len(plan.workers), 64 * K, seed=3)
    # h0's only switch: no tree reaches every worker any more, the controller refuses the job
    result = run_ina(net, plan, values, failures=[(0.0001, "e0_0")], recovery=Recovery(detect_s=DETECT_S))
    assert result.recovery["refused"] == "worker h0 not connected to server h15"  # the controller's PlanError
    assert result.recovery["plan_version"] == plan.version
    assert result.finished < len(plan.workers) and result.completion_s == -1.0
    net.close()


def test_a_worker_that_finished_its_round_offers_its_last_pool_to_the_recovery_tree():
    """The root keeps no copy of its sums anywhere else, so a re-plan that finds a worker done with the
    round must still get that worker's values of the chunks a peer may miss: its last pool of the tree
    (the agent's RoundTail). Sent once, as resends of chunks that had their result; the round stays done."""
    from sim.allreduce import replan_ina
    from sim.frames import grad_frame

    net, hosts = _network(leaf_spine(2, 2, 2))
    workers, server = hosts[:-1], hosts[-1]
    plan = plan_ina(net, workers, server)
    values = WorkerValues.random(len(workers), 3 * plan.pool_size * K, seed=3)
    assert run_ina(net, plan, values).finished == len(workers)
    new = replan_ina(net, plan, [_spine(plan)])
    (recovery,) = [t for t in new.trees if t.weight <= 0]
    w = new.workers[0]
    before = net.core.host_stats(net.node[w.name])
    assert before["finished_chunks_offered"] == before["sent_after_done"] == 0
    frame = grad_frame(new.job_id, recovery.tree_id, recovery.grad_hops[w.name], w, new.servers[0], K)
    net.core.ina_worker_replan(net.node[w.name], [True] * len(plan.trees), frame)
    after = net.core.host_stats(net.node[w.name])
    assert after["finished_chunks_offered"] == after["sent_after_done"] == plan.pool_size
    assert after["chunks_moved"] == after["recovery_chunks"] == 0  # nothing was waiting for a result
    net.close()
