"""A server hears at most MAX_CHILDREN children: a plan that would need more is refused, never produced."""

import pytest

from controller.errors import PlanError
from controller.generators import leaf_spine, star
from controller.limits import MAX_CHILDREN
from controller.planner import PlanOptions, plan_job
from controller.resources import Resources


def star_job(workers):
    topo = star(workers)
    return topo, [f"h{i + 1}" for i in range(workers)], [f"h{workers + 1}"]


@pytest.mark.parametrize("planner", ["multihop", "multitree"])
def test_a_switch_over_the_fan_in_limit_leaves_the_server_too_many_children_and_the_plan_is_refused(planner):
    topo, workers, servers = star_job(MAX_CHILDREN + 8)
    resources = Resources.for_topology(topo)
    with pytest.raises(PlanError) as err:
        plan_job(topo, workers, servers, PlanOptions(planner=planner), resources)
    assert str(err.value) == (
        f"server h41 would need fan-in 40 > {MAX_CHILDREN}, the children an agent tracks, in tree 0; "
        f"s1 forwards without aggregating (fan-in above {MAX_CHILDREN}); "
        "plan fewer workers per job or aggregate at switches"
    )
    # nothing was kept: a job within the limit gets the first counter row and s1's first slots
    plan = plan_job(topo, workers[:MAX_CHILDREN], servers, PlanOptions(planner=planner), resources)
    assert plan.job_index == 0 and [(c.switch, c.slot_base) for c in plan.switches] == [("s1", 0)]
    assert plan.trees[0].server.fan_in == 1


def test_the_parameter_server_takes_exactly_max_children_workers_and_not_one_more():
    ps = PlanOptions(aggregation="none", result_mode="unicast")
    topo, workers, servers = star_job(MAX_CHILDREN + 1)
    plan = plan_job(topo, workers[:MAX_CHILDREN], servers, ps)
    assert plan.trees[0].server.fan_in == MAX_CHILDREN
    plan.validate()  # what an agent checks before it starts
    with pytest.raises(
        PlanError, match=rf"^server h34 would need fan-in 33 > {MAX_CHILDREN}, .* in tree 0; plan fewer"
    ):
        plan_job(topo, workers, servers, ps)


def test_a_plan_within_the_limit_is_unchanged_by_the_check():
    plan = plan_job(leaf_spine(), ["h1", "h2", "h3"], ["h9"], PlanOptions(planner="multitree", trees=2))
    assert all(t.server.fan_in <= MAX_CHILDREN for t in plan.trees) and not plan.warnings
    plan.validate()
