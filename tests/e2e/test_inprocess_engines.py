"""The in-process network's two engines (topologies/inprocess/fabric.py): "python" (every link and switch a
Python object) and "sim" (links and switches in the simulator's native core, the agents in Python). The
link model is one specification, so a lossless round carries the same packets and bytes on every link
direction and ends at the same modelled time on both; impairments, a dead switch and a re-plan behave
alike. (The whole in-process suite runs on the sim engine with INA_INPROCESS_ENGINE=sim.)"""

import shutil

import numpy as np
import pytest
from inprocess_jobs import int_inputs, network, star_topology, workers_and_servers

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler (the sim engine's core)"
)
ENGINES = ("python", "sim")


def _job(net, n_workers=None, **kwargs):
    from topologies.inprocess.jobs import InProcessJob

    workers, servers = workers_and_servers(net.topo, n_workers)
    return InProcessJob(net, workers, servers, **kwargs)


def _round(topo, n_workers, engine, program="v1model", **job_args):
    net = network(topo, program=program, engine=engine)
    job = _job(net, n_workers, **job_args)
    xs = int_inputs(n_workers, 64 * 120 + 17, seed=n_workers)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert sum(a.stats["retransmissions"] for a in job.agents) == 0
    return net


@pytest.mark.parametrize(
    "topo,n_workers,program,result_mode",
    [
        ("leaf_spine", 8, "v1model", "multicast"),  # two levels, results from the tree's root switch
        ("leaf_spine", 8, "tna", "multicast"),  # the server completes the sums (TNA)
        (star_topology(4, bandwidth=100.0), 4, "v1model", "unicast"),
    ],
    ids=["leaf_spine", "leaf_spine-tna", "star-unicast"],
)
def test_a_lossless_round_carries_the_same_bytes_on_every_link_on_both_engines(topo, n_workers, program, result_mode):
    from controller.planner import PlanOptions

    nets = {
        engine: _round(topo, n_workers, engine, program, options=PlanOptions(result_mode=result_mode))
        for engine in ENGINES
    }
    python, sim = nets["python"], nets["sim"]
    assert sim.net.__class__.__name__ == "SimEngineNetwork"
    assert sim.link_bytes() == python.link_bytes()
    assert sum(d["bytes"] for dirs in sim.link_bytes().values() for d in dirs.values()) > 0
    assert sim.loop.now() == pytest.approx(python.loop.now(), rel=1e-6)
    assert sim.switch_stats() == python.switch_stats()


@pytest.mark.parametrize("engine", ENGINES)
def test_loss_duplication_and_reordering_are_counted_and_the_sums_stay_exact(engine):
    net = network("leaf_spine", seed=3, engine=engine)
    net.set_impairments(loss=0.05, duplicate=0.05, reorder=0.1, reorder_delay_s=0.001)
    job = _job(net, 8)
    xs = int_inputs(8, 64 * 60, seed=5)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    totals = {k: sum(d[k] for dirs in net.link_bytes().values() for d in dirs.values()) for k in ("lost", "duplicated")}
    totals["reordered"] = sum(ch.stats.reordered for ch in net.net.channels)
    assert all(v > 0 for v in totals.values()), totals
    assert sum(a.stats["retransmissions"] for a in job.agents) > 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_spine_killed_mid_round_is_replanned_around_with_exact_sums(engine):
    """The controller's fault monitor notices the dead spine (its P4Runtime stops answering), re-plans, and
    the workers move their chunks in flight to the other spine."""
    from controller.jobservice import JobManager
    from controller.options import PlanOptions
    from controller.replan import FaultMonitor
    from topologies.inprocess.jobs import InProcessJob

    workers = [f"h{i}" for i in range(1, 9)]
    net = network("leaf_spine", seed=5, engine=engine)
    manager = JobManager(net.topo, installer=net.installer)
    plan, _ = manager.register(workers, ["h9"], PlanOptions())
    job = InProcessJob(net, workers, ["h9"], plan=plan, install=False)
    job.follow(manager)
    (dead,) = {c.switch for c in plan.switches if c.switch.startswith("sp")}
    monitor = FaultMonitor(net.installer, manager.switches_in_use, manager.switch_failed, net.loop, 0.002).start()
    xs = int_inputs(8, 64 * 200, seed=3)
    handles = job.start(xs)
    net.loop.call_later(0.0005, net.kill_switch, dead)
    for h in handles:
        np.testing.assert_array_equal(h.wait(), sum(xs))
    monitor.stop()
    new = manager.plan(plan.job_id)
    assert new.version == plan.version + 1 and dead not in {c.switch for c in new.switches}
    assert sum(a.stats["chunks_moved"] for a in job.agents) > 0  # chunks were in flight through the dead spine


def test_what_the_sim_engine_cannot_run_is_refused_naming_the_python_engine():
    from topologies.errors import LabError
    from topologies.inprocess import InProcessNetwork
    from worker.loop import RealTimeLoop

    topo = star_topology(2)
    loop = RealTimeLoop()
    try:
        with pytest.raises(LabError, match=r"virtual clock \(VirtualLoop\); use engine='python'"):
            InProcessNetwork(topo, loop=loop, engine="sim")
    finally:
        loop.close()
    with pytest.raises(LabError, match=r"no switch processing time \(processing_s\); use engine='python'"):
        InProcessNetwork(topo, processing_s=1e-6, engine="sim")
    with pytest.raises(LabError, match=r"in-process engine 'ns3' is not one of python, sim \(INA_INPROCESS_ENGINE\)"):
        InProcessNetwork(topo, engine="ns3")
    net = InProcessNetwork(topo, engine="sim")
    with pytest.raises(
        LabError, match=r"link s1:1->h1:0: .* nothing intercepts them per frame \(engine='python' does\)"
    ):
        net.net.channel("s1", "h1").send = lambda frame: None
