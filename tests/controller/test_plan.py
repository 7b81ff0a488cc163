"""JobPlan: JSON round trip, validation on load, conversion to the codec's hop entries."""

import json
from pathlib import Path

import pytest

from controller.plan import PLAN_VERSION, JobPlan, PlanFormatError, hops_to_codec
from controller.planner import PlanOptions, plan_job
from controller.topology_yaml import load_topology

TOPO = Path(__file__).resolve().parents[2] / "topologies"


@pytest.fixture(scope="module")
def plan():
    return plan_job(
        load_topology(TOPO / "leaf_spine.yaml"),
        [f"h{i}" for i in range(1, 9)],
        ["h9", "h10"],
        PlanOptions(result_mode="multicast"),
    )


def test_round_trip(plan):
    text = plan.to_json()
    again = JobPlan.from_json(text)
    assert again == plan and again.to_json() == text
    assert json.loads(text)["plan_version"] == PLAN_VERSION == 1
    assert again.worker(3).name == "h4" and again.tree(1).root == "h10" and again.weights() == [0.5, 0.5]


def _mutated(plan, change):
    data = json.loads(plan.to_json())
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d.update(plan_version=2), "plan format version 2 is not supported (this code reads version 1)"),
        (lambda d: d.pop("plan_version"), "plan format version None is not supported"),
        (lambda d: d.pop("job_id"), "plan: missing field 'job_id'"),
        (lambda d: d["trees"][0].update(rate="fast"), "plan.trees[0].rate: expected a number"),
        (lambda d: d.update(result_mode="broadcast"), "result_mode 'broadcast' is not one of"),
        (lambda d: d["trees"][0]["grad_hops"]["h1"].pop(), "does not end with the terminal entry of server h9"),
        (lambda d: d["trees"][0]["grad_hops"]["h1"][0].update(child=7), "h1 has child index 7 at l1 with fan-in 2"),
        (lambda d: d["trees"][1].update(weight=0.7), "tree weights sum to 1.2"),
        (lambda d: d["trees"][0]["grad_hops"].pop("h3"), "tree 0 has no hop list for worker h3"),
    ],
)
def test_bad_plans_are_refused_with_a_reason(plan, change, message):
    with pytest.raises(PlanFormatError) as err:
        JobPlan.from_json(_mutated(plan, change))
    assert message in str(err.value)


def test_not_json():
    with pytest.raises(PlanFormatError, match="plan is not valid JSON"):
        JobPlan.from_json("{")


def test_hops_encode_with_the_codec(plan):
    codec = pytest.importorskip("protocol.codec")
    hops = plan.trees[0].grad_hops["h7"]
    pkt = codec.grad(plan.job_id, 5, hops_to_codec(hops), range(64), tree_id=0, contributor=6)
    back = codec.decode(codec.encode(pkt))
    assert [(h.switch_id, h.aggregate, h.fan_in, h.child, h.egress_port) for h in back.hops] == [
        (h.switch_id, h.aggregate, h.fan_in, h.child, h.egress_port) for h in hops
    ]
    assert back.hops[-1].switch_id == 0x8008
