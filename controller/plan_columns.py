"""A job plan as columns of integers in one numpy ``.npz`` file: the plan file of a data-centre-scale job.

A multi-tree plan of tens of thousands of workers is mostly hop lists: per worker and tree, a GRAD and a
RESULT list of hop entries, each a JSON object repeating its field names and its switch's name, so the
controller's JSON of a k = 64 fat-tree job runs to hundreds of MB. Here every hop list becomes rows of
integer columns (switch id, aggregate, fan-in, child, egress port, name) with one offset per worker, every
name an index into one table of names, and the same for the tree edges, the host-level tree, the workers
and the switch configurations; what is left (the job's scalars, its servers, each tree's scalars and
server view, warnings) is a small JSON document inside the file. The arrays are stored compressed.
``load_plan_columns`` gives back an equal ``JobPlan``, checked by ``JobPlan.validate`` as ``from_json``
checks a JSON plan. The JSON (``JobPlan.to_json``) stays the format of the job service and of small jobs.

    save_plan_columns(plan, "job.npz")
    plan == load_plan_columns("job.npz")
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from controller.errors import PlanFormatError
from controller.plan import (
    ChildInfo,
    Hop,
    HostRef,
    JobPlan,
    McastMember,
    ServerView,
    SwitchJobConfig,
    TreePlan,
)

COLUMNS_FORMAT = 1  # layout of this file (independent of the plan's own PLAN_VERSION)
_HOP_COLUMNS = ("switch_id", "aggregate", "fan_in", "child", "egress_port", "name")
_SEP = "\n"  # names never hold a newline (topology names are identifiers)


class _Names:
    """Strings interned to indices (one table per file)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = len(self.index)
        return found

    def array(self) -> np.ndarray:
        if any(_SEP in n for n in self.index):
            raise PlanFormatError("a name in the plan holds a newline: the columnar plan file cannot store it")
        return np.frombuffer(_SEP.join(self.index).encode(), dtype=np.uint8)


def _hop_lists(lists: dict[str, list[Hop]], names: _Names, prefix: str, out: dict[str, np.ndarray]) -> None:
    keys = list(lists)
    lengths = [len(lists[k]) for k in keys]
    hops = [h for k in keys for h in lists[k]]
    out[f"{prefix}keys"] = np.array([names(k) for k in keys], dtype=np.int32)
    out[f"{prefix}offsets"] = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    out[f"{prefix}switch_id"] = np.array([h.switch_id for h in hops], dtype=np.int32)
    out[f"{prefix}aggregate"] = np.array([h.aggregate for h in hops], dtype=np.uint8)
    out[f"{prefix}fan_in"] = np.array([h.fan_in for h in hops], dtype=np.int32)
    out[f"{prefix}child"] = np.array([h.child for h in hops], dtype=np.int32)
    out[f"{prefix}egress_port"] = np.array([h.egress_port for h in hops], dtype=np.int32)
    out[f"{prefix}name"] = np.array([names(h.name) for h in hops], dtype=np.int32)


def _tree_columns(i: int, tree: TreePlan, names: _Names, out: dict[str, np.ndarray]) -> dict[str, Any]:
    p = f"t{i}_"
    out[f"{p}edges"] = np.array([[names(a), names(b)] for a, b in tree.edges], dtype=np.int32).reshape(-1, 2)
    out[f"{p}aggregation_points"] = np.array([names(n) for n in tree.aggregation_points], dtype=np.int32)
    _hop_lists(tree.grad_hops, names, f"{p}grad_", out)
    _hop_lists(tree.result_hops, names, f"{p}result_", out)
    out[f"{p}parent_keys"] = np.array([names(k) for k in tree.host_parent], dtype=np.int32)
    out[f"{p}parent_values"] = np.array(
        [-1 if v is None else names(v) for v in tree.host_parent.values()], dtype=np.int32
    )
    children = tree.host_children
    out[f"{p}children_keys"] = np.array([names(k) for k in children], dtype=np.int32)
    out[f"{p}children_offsets"] = np.concatenate(([0], np.cumsum([len(v) for v in children.values()], dtype=np.int64)))
    out[f"{p}children_values"] = np.array([names(c) for v in children.values() for c in v], dtype=np.int32)
    return {
        "tree_id": tree.tree_id,
        "root": tree.root,
        "rate": tree.rate,
        "weight": tree.weight,
        "height": tree.height,
        "send_rate": tree.send_rate,
        "server": dataclasses.asdict(tree.server),
    }


def _worker_columns(workers: list[HostRef], names: _Names, out: dict[str, np.ndarray]) -> None:
    out["w_name"] = np.array([names(w.name) for w in workers], dtype=np.int32)
    out["w_ip"] = np.array([names(w.ip) for w in workers], dtype=np.int32)
    out["w_mac"] = np.array([names(w.mac) for w in workers], dtype=np.int32)
    out["w_node_id"] = np.array([w.node_id for w in workers], dtype=np.int32)
    out["w_host_index"] = np.array([w.host_index for w in workers], dtype=np.int32)
    out["w_rank"] = np.array([w.rank for w in workers], dtype=np.int32)


_SWITCH_INTS = ("device_id", "tree_id", "job_index", "slot_base", "pool_size", "max_fan_in", "result_group")


def _switch_columns(configs: list[SwitchJobConfig], names: _Names, out: dict[str, np.ndarray]) -> None:
    out["s_switch"] = np.array([names(c.switch) for c in configs], dtype=np.int32)
    for f in _SWITCH_INTS:
        out[f"s_{f}"] = np.array([getattr(c, f) for c in configs], dtype=np.int64)
    # 0: passes, 1: aggregates, 2: aggregates as the tree's root (multicasts the RESULTs it completes)
    out["s_aggregates"] = np.array([int(c.aggregates) + int(c.root) for c in configs], dtype=np.uint8)
    members = [m for c in configs for m in c.members]
    out["s_members_offsets"] = np.concatenate(([0], np.cumsum([len(c.members) for c in configs], dtype=np.int64)))
    out["s_members_port"] = np.array([m.port for m in members], dtype=np.int32)
    out["s_members_replica"] = np.array([m.replica_id for m in members], dtype=np.int32)
    out["s_members_toward"] = np.array([names(m.toward) for m in members], dtype=np.int32)


def save_plan_columns(plan: JobPlan, file: str | Path | IO[bytes]) -> None:
    """Write ``plan`` as a columnar plan file (``.npz``, compressed)."""
    names = _Names()
    arrays: dict[str, np.ndarray] = {}
    trees = [_tree_columns(i, t, names, arrays) for i, t in enumerate(plan.trees)]
    _worker_columns(plan.workers, names, arrays)
    _switch_columns(plan.switches, names, arrays)
    skip = {"workers", "trees", "switches", "servers"}
    meta = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan) if f.name not in skip}
    meta.update(columns_format=COLUMNS_FORMAT, servers=[dataclasses.asdict(s) for s in plan.servers], trees=trees)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    arrays["names"] = names.array()
    np.savez_compressed(file, **arrays)  # type: ignore[arg-type]


def _hops(cols: dict[str, np.ndarray], prefix: str, names: list[str]) -> dict[str, list[Hop]]:
    keys, offsets = cols[f"{prefix}keys"], cols[f"{prefix}offsets"]
    columns = [cols[f"{prefix}{c}"].tolist() for c in _HOP_COLUMNS]
    rows = [
        Hop(switch_id, bool(aggregate), fan_in, child, port, names[name])
        for switch_id, aggregate, fan_in, child, port, name in zip(*columns, strict=True)
    ]
    bounds = offsets.tolist()
    return {names[k]: rows[bounds[i] : bounds[i + 1]] for i, k in enumerate(keys.tolist())}


def _grouped(offsets: npt.NDArray[np.int64], values: list[Any]) -> list[list[Any]]:
    bounds = offsets.tolist()
    return [values[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]


def _tree(i: int, meta: dict[str, Any], cols: dict[str, np.ndarray], names: list[str]) -> TreePlan:
    p = f"t{i}_"
    server = dict(meta["server"])
    server["children"] = [ChildInfo(**c) for c in server["children"]]
    parents = [None if v < 0 else names[v] for v in cols[f"{p}parent_values"].tolist()]
    child_names = [names[c] for c in cols[f"{p}children_values"].tolist()]
    return TreePlan(
        tree_id=meta["tree_id"],
        root=meta["root"],
        rate=meta["rate"],
        weight=meta["weight"],
        height=meta["height"],
        edges=[[names[a], names[b]] for a, b in cols[f"{p}edges"].tolist()],
        aggregation_points=[names[n] for n in cols[f"{p}aggregation_points"].tolist()],
        grad_hops=_hops(cols, f"{p}grad_", names),
        result_hops=_hops(cols, f"{p}result_", names),
        server=ServerView(**server),
        host_parent={names[k]: v for k, v in zip(cols[f"{p}parent_keys"].tolist(), parents, strict=True)},
        host_children={
            names[k]: v
            for k, v in zip(
                cols[f"{p}children_keys"].tolist(), _grouped(cols[f"{p}children_offsets"], child_names), strict=True
            )
        },
        send_rate=meta["send_rate"],
    )


def _switches(cols: dict[str, np.ndarray], names: list[str]) -> list[SwitchJobConfig]:
    members = [
        McastMember(port, replica, names[toward])
        for port, replica, toward in zip(
            cols["s_members_port"].tolist(),
            cols["s_members_replica"].tolist(),
            cols["s_members_toward"].tolist(),
            strict=True,
        )
    ]
    ints = [cols[f"s_{f}"].tolist() for f in _SWITCH_INTS]
    out = []
    for i, (switch, aggregates, group) in enumerate(
        zip(
            cols["s_switch"].tolist(),
            cols["s_aggregates"].tolist(),
            _grouped(cols["s_members_offsets"], members),
            strict=True,
        )
    ):
        fields = {f: ints[j][i] for j, f in enumerate(_SWITCH_INTS)}
        out.append(
            SwitchJobConfig(
                switch=names[switch], aggregates=bool(aggregates), root=aggregates == 2, members=group, **fields
            )
        )
    return out


def load_plan_columns(file: str | Path | IO[bytes], *, validate: bool = True) -> JobPlan:
    """The plan in a columnar plan file, validated as ``JobPlan.from_json`` validates a JSON plan
    (``validate=False``: not checked, for tools that inspect a plan an agent would refuse).

    Raises
    ------
    PlanFormatError
        Not such a file, another columnar format, or a plan ``JobPlan.validate`` refuses.
    """
    try:
        with np.load(file, allow_pickle=False) as data:
            cols = {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise PlanFormatError(f"not a columnar plan file: {exc}") from None
    try:
        meta = json.loads(cols.pop("meta").tobytes())
        names = cols.pop("names").tobytes().decode().split(_SEP)
        if meta.get("columns_format") != COLUMNS_FORMAT:
            raise PlanFormatError(
                f"columnar plan format {meta.get('columns_format')!r} is not supported (this code reads "
                f"{COLUMNS_FORMAT})"
            )
        workers = [
            HostRef(names[n], names[ip], names[mac], node, index, rank)
            for n, ip, mac, node, index, rank in zip(
                *(cols[f"w_{c}"].tolist() for c in ("name", "ip", "mac", "node_id", "host_index", "rank")),
                strict=True,
            )
        ]
        trees = [_tree(i, t, cols, names) for i, t in enumerate(meta.pop("trees"))]
        servers = [HostRef(**s) for s in meta.pop("servers")]
        del meta["columns_format"]
        plan = JobPlan(workers=workers, servers=servers, trees=trees, switches=_switches(cols, names), **meta)
    except PlanFormatError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise PlanFormatError(f"columnar plan file is incomplete or inconsistent: {exc!r}") from None
    if validate:
        plan.validate()
    return plan
