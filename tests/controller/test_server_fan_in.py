"""A switch aggregates at most MAX_CHILDREN children and a server hears at most SERVER_MAX_CHILDREN (the
hop entry's 8-bit fan-in): a plan that would need more is refused, never produced."""

import json

import pytest

from controller.errors import PlanError
from controller.generators import leaf_spine, star
from controller.limits import MAX_CHILDREN, SERVER_MAX_CHILDREN
from controller.plan import JobPlan, PlanFormatError
from controller.planner import PlanOptions, plan_job
from controller.resources import Resources
from controller.topology import Topology

PS = PlanOptions(aggregation="none", result_mode="unicast")


def star_job(workers):
    """``controller.generators.star`` past its 254 addresses of one /24: workers h1..hN, server h(N+1)."""
    topo = star(workers) if workers < 254 else _wide_star(workers)
    return topo, [f"h{i + 1}" for i in range(workers)], [f"h{workers + 1}"]


def _wide_star(workers):
    topo = Topology(name=f"star{workers}")
    topo.add_switch("s1", 1)
    for i in range(workers + 1):
        role = "server" if i == workers else "worker"
        topo.add_host(f"h{i + 1}", f"10.0.{i // 250}.{i % 250 + 1}", f"02:00:00:00:{i >> 8:02x}:{i & 0xFF:02x}", role)
        topo.add_link(f"h{i + 1}", 0, "s1", i + 1, bandwidth=1000.0, delay=0.1)
    return topo.validate() or topo


def test_the_limits_are_the_switch_bitmap_and_the_hop_fields_8_bits():
    assert (MAX_CHILDREN, SERVER_MAX_CHILDREN) == (32, 255)


@pytest.mark.parametrize("planner", ["multihop", "multitree"])
def test_a_switch_over_its_fan_in_limit_forwards_and_the_server_hears_every_flow(planner):
    topo, workers, servers = star_job(MAX_CHILDREN + 8)
    plan = plan_job(topo, workers, servers, PlanOptions(planner=planner))
    assert plan.warnings == [f"s1 would need fan-in 40 > {MAX_CHILDREN}: it forwards tree 0 without aggregating"]
    assert plan.trees[0].aggregation_points == [] and plan.trees[0].server.fan_in == 40
    assert [plan.trees[0].grad_hops[w][-1].child for w in workers] == list(range(40))  # the server's entry
    plan.validate()  # what an agent checks before it starts


@pytest.mark.parametrize("planner", ["multihop", "multitree"])
def test_a_server_over_its_limit_is_refused_naming_the_switch_that_forwards(planner):
    topo, workers, servers = star_job(SERVER_MAX_CHILDREN + 8)
    resources = Resources.for_topology(topo)
    with pytest.raises(PlanError) as err:
        plan_job(topo, workers, servers, PlanOptions(planner=planner), resources)
    assert str(err.value) == (
        f"server h264 would need fan-in 263 > {SERVER_MAX_CHILDREN}, the children a server tracks, in tree 0; "
        f"s1 forwards without aggregating (fan-in above {MAX_CHILDREN}); "
        "plan fewer workers per job or aggregate at switches"
    )
    # nothing was kept: a job within the switch's limit gets the first counter row and s1's first slots
    plan = plan_job(topo, workers[:MAX_CHILDREN], servers, PlanOptions(planner=planner), resources)
    assert plan.job_index == 0 and [(c.switch, c.slot_base) for c in plan.switches] == [("s1", 0)]
    assert plan.trees[0].server.fan_in == 1


def test_the_parameter_server_takes_exactly_the_server_limit_of_workers_and_not_one_more():
    topo, workers, servers = star_job(SERVER_MAX_CHILDREN + 1)
    plan = plan_job(topo, workers[:SERVER_MAX_CHILDREN], servers, PS)
    assert plan.trees[0].server.fan_in == SERVER_MAX_CHILDREN
    plan.validate()
    with pytest.raises(
        PlanError, match=rf"^server h257 would need fan-in 256 > {SERVER_MAX_CHILDREN}, .* in tree 0; plan fewer"
    ):
        plan_job(topo, workers, servers, PS)


def _edited(plan, worker, hop, **fields):
    data = json.loads(plan.to_json())
    data["trees"][0]["grad_hops"][worker][hop].update(fields)
    return json.dumps(data)


def test_a_plan_file_over_either_limit_is_refused_on_load():
    topo, workers, servers = star_job(3)
    plan = plan_job(topo, workers, servers, PlanOptions())
    assert [h.name for h in plan.trees[0].grad_hops["h1"]] == ["s1", "h4"]
    with pytest.raises(PlanFormatError, match=r"h1 has child index 40 at s1 with fan-in 41 \(at most 32 children"):
        JobPlan.from_json(_edited(plan, "h1", 0, fan_in=41, child=40))
    with pytest.raises(PlanFormatError, match=r"h1 has child index 0 at h4 with fan-in 256 \(at most 255 children"):
        JobPlan.from_json(_edited(plan, "h1", 1, fan_in=256))
    assert JobPlan.from_json(_edited(plan, "h1", 1, fan_in=255, child=254)).trees[0].grad_hops["h1"][1].child == 254


def test_a_plan_within_the_limit_is_unchanged_by_the_check():
    plan = plan_job(leaf_spine(), ["h1", "h2", "h3"], ["h9"], PlanOptions(planner="multitree", trees=2))
    assert all(t.server.fan_in <= MAX_CHILDREN for t in plan.trees) and not plan.warnings
    plan.validate()
