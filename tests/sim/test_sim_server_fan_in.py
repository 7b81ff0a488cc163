"""The simulator's INA server hears as many children as the controller plans for a server (up to
SERVER_MAX_FAN_IN = 255, the hop's 8-bit fan-in), not a switch's 32: every sum exact, each child counted
once, the resends of children already heard ignored."""

from __future__ import annotations

import shutil

import pytest

from controller.generators import star
from sim.allreduce import WorkerValues, plan_ina, run_ina
from sim.network import SimNetwork

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")

K = 344  # the default program at a 1500-byte MTU (v1model-k344)
WORKERS = 70  # two 64-bit words of a cell's bitmap of children heard


@pytest.mark.parametrize("aggregation", ["merge", "none"], ids=["switch-forwards", "parameter-server"])
def test_a_server_of_70_children_sums_exactly_and_ignores_the_resends_of_children_it_heard(aggregation):
    topo = star(WORKERS, bandwidth=10000.0, delay=0.01)
    hosts = [h.name for h in topo.hosts]
    net = SimNetwork(topo, seed=1)
    net.install_routes()
    plan = plan_ina(net, hosts[:-1], hosts[-1], aggregation=aggregation)
    # s1 aggregates nothing (fan-in 70 is above a switch's 32, or the parameter server): the server hears all
    assert plan.trees[0].aggregation_points == [] and plan.trees[0].server.fan_in == WORKERS
    # h3's GRADs are lost often: the others resend chunks whose sum still lacks h3, the server hears them twice
    net.set_loss("h3", "s1", 40.0)
    result = run_ina(net, plan, WorkerValues.random(WORKERS, 32 * K, seed=2), timeout_s=0.004)
    assert result.finished == WORKERS and result.mismatches == 0
    assert result.resends > 0 and result.server["duplicates"] > 0
    net.close()
