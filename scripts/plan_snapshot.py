"""Print the plans of every shipped topology under every planner option set, as JSON lines.

A refactoring of the planners must not change a plan: run this before and after and compare the outputs
(``python scripts/plan_snapshot.py > before.jsonl``, change the code, ``... > after.jsonl``,
``cmp before.jsonl after.jsonl``). Failed plans are recorded by their error message, so a changed message
shows too. Plans keep their own order; path trees are sorted (their order is not used). Besides
topologies/*.yaml it plans on the generators' topologies (the benchmark's fat-tree) and re-plans every
job of the small topologies around each switch of its first tree (controller/replan.py).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.errors import ControllerError  # noqa: E402
from controller.generators import fat_tree, leaf_spine, star  # noqa: E402
from controller.multihop import path_tree  # noqa: E402
from controller.options import AGGREGATION_MODES, POLICIES, RESULT_MODES, PlanOptions  # noqa: E402
from controller.planner import plan_job  # noqa: E402
from controller.replan import plan_around, surviving_graph  # noqa: E402
from controller.resources import Resources  # noqa: E402
from controller.topology import Topology  # noqa: E402
from controller.topology_yaml import load_topology  # noqa: E402

REPLAN_MAX_HOSTS = 20  # re-plans on the small topologies only: the fat-tree's would take minutes


def option_sets() -> Iterator[PlanOptions]:
    """Every multi-hop combination, and multi-tree with each of its parameters varied."""
    for policy in POLICIES:
        for aggregation in AGGREGATION_MODES:
            for result_mode in RESULT_MODES:
                yield PlanOptions(policy=policy, aggregation=aggregation, result_mode=result_mode)
    yield PlanOptions(policy="widest", pool_size=3)
    for aggregation in AGGREGATION_MODES:
        yield PlanOptions(planner="multitree", aggregation=aggregation)
    for extra in (
        {"trees": 1},
        {"trees": 2},
        {"trees": 8},
        {"height": 0.2},
        {"height": 1.0},
        {"height": 5.0},
        {"min_bw": 100.0},
        {"min_bw": 5000.0},
        {"tree_rate": 50.0},
        {"tree_rate": 300.0, "trees": 16},
        {"loss_bound": 0.0},
        {"loss_bound": 0.5},
        {"seed": 1},
        {"seed": 7},
        {"result_mode": "unicast"},
    ):
        yield PlanOptions(planner="multitree", **extra)  # type: ignore[arg-type]


def host_sets(topo: Topology) -> Iterator[tuple[list[str], list[str]]]:
    """The file's roles, every host but the last to the last, two servers, and a small job."""
    hosts = [h.name for h in topo.hosts]
    workers = [h.name for h in topo.hosts if h.role == "worker"]
    servers = [h.name for h in topo.hosts if h.role == "server"]
    if workers and servers:
        yield workers, servers
    yield hosts[:-1], hosts[-1:]
    if len(hosts) >= 4:
        yield hosts[:-2], hosts[-2:]
        yield list(reversed(hosts[1:3])), [hosts[0]]


def plan_record(
    topo: Topology, workers: list[str], servers: list[str], options: PlanOptions, replan: bool
) -> dict[str, Any]:
    """One plan (and, with ``replan``, its re-plans around each switch of its first tree) or its error."""
    record: dict[str, Any] = {"workers": workers, "servers": servers, "options": dataclasses.asdict(options)}
    resources = Resources.for_topology(topo)
    graph = topo.to_graph()
    try:
        plan = plan_job(topo, workers, servers, options, resources, graph)
    except ControllerError as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        return record
    record["plan"] = json.loads(plan.to_json())
    replans = {}
    first_tree_switches = {n for edge in plan.trees[0].edges for n in edge if topo.is_switch(n)}
    for switch in sorted(first_tree_switches) if replan else ():
        try:
            new = plan_around(topo, surviving_graph(graph, {switch}, ()), resources, plan, options)
            replans[switch] = json.loads(new.to_json())
        except ControllerError as exc:
            replans[switch] = f"{type(exc).__name__}: {exc}"
    record["replans"] = replans
    return record


def topologies() -> Iterator[Topology]:
    """topologies/*.yaml, then the generators' topologies."""
    for path in sorted((ROOT / "topologies").glob("*.yaml")):
        yield load_topology(path)
    yield star(3)
    yield leaf_spine()
    yield fat_tree(4)
    yield fat_tree(8, bandwidth=10000.0, host_bandwidth=40000.0, delay=0.01)


def main() -> None:
    """Print the snapshot to stdout: one JSON line per plan or path tree, so a diff names what changed."""
    for topo in topologies():
        replan = len(topo.hosts) <= REPLAN_MAX_HOSTS
        for workers, servers in host_sets(topo):
            for options in option_sets():
                record = plan_record(topo, workers, servers, options, replan)
                print(json.dumps({"topology": topo.name, **record}))
        graph = topo.to_graph()
        for root in [h.name for h in topo.hosts][-2:]:
            for policy in POLICIES:
                tree = dict(sorted(path_tree(graph, root, policy).items()))
                print(json.dumps({"topology": topo.name, "root": root, "policy": policy, "path_tree": tree}))


if __name__ == "__main__":
    main()
