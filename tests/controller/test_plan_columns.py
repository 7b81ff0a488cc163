"""The columnar plan file (controller/plan_columns.py): the same plan back, smaller than the JSON, and
one clear error for what is not such a file."""

from __future__ import annotations

import io

import numpy as np
import pytest

from controller.errors import PlanFormatError
from controller.generators import fat_tree, leaf_spine
from controller.plan_columns import load_plan_columns, save_plan_columns
from controller.planner import PlanOptions, plan_job
from controller.replan import plan_around, surviving_graph
from controller.resources import Resources


def _round_trip(plan):
    buffer = io.BytesIO()
    save_plan_columns(plan, buffer)
    buffer.seek(0)
    return load_plan_columns(buffer), len(buffer.getvalue())


def test_a_multitree_plan_comes_back_equal_and_smaller_than_its_json():
    topo = fat_tree(8, bandwidth=10000.0, host_bandwidth=40000.0, delay=0.01)
    hosts = [h.name for h in topo.hosts]
    opts = PlanOptions(planner="multitree", trees=4, height=0.1, min_bw=100.0, result_mode="multicast")
    plan = plan_job(topo, hosts[1::2], [hosts[0]], opts)
    assert len(plan.trees) == 4 and any(c.members for c in plan.switches)
    loaded, size = _round_trip(plan)
    assert loaded == plan
    assert loaded.trees[2].grad_hops[hosts[5]] == plan.trees[2].grad_hops[hosts[5]]
    assert size * 5 < len(plan.to_json())


def test_a_replanned_plan_with_its_recovery_tree_and_unicast_results_comes_back_equal():
    topo = leaf_spine()
    hosts = [h.name for h in topo.hosts]
    resources = Resources.for_topology(topo)
    opts = PlanOptions(result_mode="unicast")
    plan = plan_job(topo, hosts[:4], [hosts[-1]], opts, resources)
    replanned = plan_around(topo, surviving_graph(topo.to_graph(), ["sp1"], []), resources, plan, opts)
    assert any(t.weight == 0 for t in replanned.trees)  # the recovery tree: host_parent values None too
    loaded, _ = _round_trip(replanned)
    assert loaded == replanned


def test_not_a_plan_file_is_one_clear_error(tmp_path):
    path = tmp_path / "job.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(PlanFormatError, match="^not a columnar plan file: "):
        load_plan_columns(path)
    np.savez(path, meta=np.frombuffer(b'{"columns_format": 9}', dtype=np.uint8), names=np.zeros(0, np.uint8))
    with pytest.raises(PlanFormatError, match=r"^columnar plan format 9 is not supported \(this code reads 1\)$"):
        load_plan_columns(path)
