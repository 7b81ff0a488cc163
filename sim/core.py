"""The native event core (``sim/csrc/sim_core.c``), built and loaded through ``native/build.py``.

``SimCore`` owns one C simulation: nodes (switches, hosts), link directions, the hosts' agents, the
run loop. Everything per packet happens in C; Python only builds it and reads its counters.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

from native.build import load_library
from sim.errors import SimError

SOURCE = Path(__file__).resolve().parent / "csrc" / "sim_core.c"
PS_PER_S = 10**12
NODE_SWITCH, NODE_HOST = 0, 1
_LAYOUT_FIELDS = (
    "b0",
    "flags",
    "seq",
    "slot_word",
    "hop0_fan_in",
    "hop0_child",
    "header_end",
    "k",
    "pkt_grad",
    "pkt_result",
    "flag_retx",
    "udp_payload",
    "ip_tos",
    "ip_header",
    "tree_id",
    "flag_mcast",
)
_P, _U8P = ctypes.c_void_p, ctypes.c_char_p


@functools.cache
def library() -> ctypes.CDLL:
    """The core's shared library (compiled once per source and compiler, then cached)."""
    lib = load_library("sim_core", [SOURCE], cflags=("-O2", "-fPIC", "-shared", "-std=gnu11", "-Wall"))
    sigs = {
        "sim_create": (_P, [ctypes.c_uint64, _P, _P]),
        "sim_destroy": (None, [_P]),
        "sim_add_node": (ctypes.c_int64, [_P, ctypes.c_uint32, _P]),
        "sim_add_link": (
            ctypes.c_int64,
            [
                _P,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_double,
                ctypes.c_int64,
                ctypes.c_int64,
                ctypes.c_double,
            ],
        ),
        "sim_set_link_up": (None, [_P, ctypes.c_uint32, ctypes.c_int]),
        "sim_set_link_loss": (None, [_P, ctypes.c_uint32, ctypes.c_double]),
        "sim_link_stats": (None, [_P, ctypes.c_uint32, _P]),
        "sim_set_layout": (None, [_P, _P]),
        "sim_set_values": (None, [_P, _P, _P, _P, ctypes.c_uint64]),
        "sim_ina_worker": (
            ctypes.c_int,
            [
                _P,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_int64,
                ctypes.c_uint32,
                ctypes.c_int32,
                _P,
                ctypes.c_uint32,
            ],
        ),
        "sim_ina_worker_tree": (
            ctypes.c_int,
            [_P, ctypes.c_uint32, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_double],
        ),
        "sim_ina_worker_agent": (
            ctypes.c_int,
            [_P, ctypes.c_uint32, ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_int],
        ),
        "sim_ina_worker_replan": (ctypes.c_int, [_P, ctypes.c_uint32, _P, _U8P, ctypes.c_uint32]),
        "sim_set_depth_fn": (None, [_P, _P]),
        "sim_ina_server": (ctypes.c_int, [_P, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_uint32]),
        "sim_ina_server_answers": (
            ctypes.c_int,
            [_P, ctypes.c_uint32, ctypes.c_uint32, _P, ctypes.c_uint32, _P, _P, _P, _P],
        ),
        "sim_ring_worker": (
            ctypes.c_int,
            [_P, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32],
        ),
        "sim_ps_worker": (ctypes.c_int, [_P, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_uint64]),
        "sim_ps_server": (ctypes.c_int, [_P, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64]),
        "sim_sender": (ctypes.c_int, [_P, ctypes.c_uint32, _U8P, ctypes.c_uint32, ctypes.c_uint64]),
        "sim_sink": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_uint64]),
        "sim_start": (None, [_P]),
        "sim_run": (ctypes.c_uint64, [_P, ctypes.c_int64]),
        "sim_host_stats": (None, [_P, ctypes.c_uint32, _P]),
        "sim_state": (None, [_P, _P]),
        # external hosts (the in-process network's agents in Python): topologies/inprocess/sim_engine.py
        "sim_external_host": (ctypes.c_int, [_P, ctypes.c_uint32]),
        "sim_set_process": (None, [_P, _P, _P]),
        "sim_set_depth_cells": (None, [_P, ctypes.c_uint32]),
        "sim_set_node_dead": (None, [_P, ctypes.c_uint32, ctypes.c_int]),
        "sim_set_link_params": (
            ctypes.c_int,
            [
                _P,
                ctypes.c_uint32,
                ctypes.c_double,
                ctypes.c_int64,
                ctypes.c_int64,
                ctypes.c_double,
                ctypes.c_double,
                ctypes.c_double,
                ctypes.c_int64,
                ctypes.c_int,
            ],
        ),
        "sim_link_counters": (None, [_P, ctypes.c_uint32, _P]),
        "sim_link_reset_counters": (None, [_P, ctypes.c_uint32]),
        "sim_inject": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_int64, _U8P, ctypes.c_uint32]),
        "sim_run_external": (ctypes.c_uint32, [_P, ctypes.c_int64]),
        "sim_outbox": (ctypes.c_uint32, [_P, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_P)]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def _ptr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


class SimCore:
    """One simulation in native memory. ``process`` and ``free_records`` are the addresses of the
    native runtime's ``ss_process_one`` and ``ss_free`` (one program library serves every switch)."""

    def __init__(self, seed: int, process: int | None, free_records: int | None, queue_depth: int | None = None):
        self.lib = library()
        self._sim = self.lib.sim_create(seed, process, free_records)
        if not self._sim:
            raise MemoryError("sim_create failed")
        # the runtime's ss_port_queue_depth: switches see their egress queues (enq_qdepth, ECN marks)
        self.lib.sim_set_depth_fn(self._sim, queue_depth)
        self._keep: list[object] = []  # arrays C points into

    def close(self) -> None:
        if self._sim:
            self.lib.sim_destroy(self._sim)
            self._sim = None

    def __del__(self) -> None:
        self.close()

    def add_node(self, kind: int, switch: int | None = None) -> int:
        index = int(self.lib.sim_add_node(self._sim, kind, switch))
        if index < 0:
            raise MemoryError("sim_add_node failed")
        return index

    def add_link(
        self,
        src: int,
        src_port: int,
        dst: int,
        dst_port: int,
        bandwidth_bps: float,
        delay_s: float,
        queue_bytes: int | None,
        loss: float,
    ) -> int:
        index = int(
            self.lib.sim_add_link(
                self._sim,
                src,
                src_port,
                dst,
                dst_port,
                bandwidth_bps,
                round(delay_s * PS_PER_S),
                -1 if queue_bytes is None else queue_bytes,
                loss,
            )
        )
        if index < 0:
            raise SimError(f"link {src}:{src_port} -> {dst}:{dst_port} refused (port >= 512 or bandwidth <= 0)")
        return index

    def set_link_up(self, link: int, up: bool) -> None:
        self.lib.sim_set_link_up(self._sim, link, int(up))

    def set_link_loss(self, link: int, loss: float) -> None:
        self.lib.sim_set_link_loss(self._sim, link, loss)

    def link_stats(self, link: int) -> dict[str, int]:
        out = np.zeros(5, dtype=np.uint64)
        self.lib.sim_link_stats(self._sim, link, _ptr(out))
        return dict(zip(("packets", "bytes", "lost", "queue_drops", "max_queue_bytes"), map(int, out), strict=True))

    def set_layout(self, fields: dict[str, int]) -> None:
        arr = np.array([fields[name] for name in _LAYOUT_FIELDS], dtype=np.uint32)
        self._keep.append(arr)
        self.lib.sim_set_layout(self._sim, _ptr(arr))

    def set_values(self, a: np.ndarray, b: np.ndarray, expected: np.ndarray) -> None:
        arrays = [np.ascontiguousarray(x, dtype=np.int32) for x in (a, b, expected)]
        self._keep.extend(arrays)
        self.lib.sim_set_values(self._sim, *(_ptr(x) for x in arrays), len(arrays[0]))

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise SimError(f"{what}: refused by the core (out of memory, or sizes beyond the values given)")

    def ina_worker(
        self,
        node: int,
        trees: list[tuple[bytes, float]],
        tree_of: np.ndarray,
        pool: int,
        window: int,
        timeout_s: float,
        max_resends: int,
        coeff: int,
    ) -> None:
        """An INA worker striping ``len(tree_of)`` chunks over ``trees`` (each: the worker's GRAD frame on
        the tree, its send rate in bytes/s or 0), chunk j on tree ``tree_of[j]``."""
        assignment = np.ascontiguousarray(tree_of, dtype=np.uint8)
        rc = self.lib.sim_ina_worker(
            self._sim,
            node,
            len(assignment),
            pool,
            window,
            round(timeout_s * PS_PER_S),
            max_resends,
            coeff,
            _ptr(assignment),
            len(trees),
        )
        self._check(rc, "INA worker")
        for i, (template, rate) in enumerate(trees):
            rc = self.lib.sim_ina_worker_tree(self._sim, node, i, template, len(template), rate)
            self._check(rc, f"INA worker's tree {i}")

    def ina_worker_agent(
        self, node: int, window: float, threshold: float, min_window: float, rto_cap: float, ecn: bool
    ) -> None:
        """The worker agent's congestion control on an INA worker (``sim_ina_worker_agent``)."""
        rc = self.lib.sim_ina_worker_agent(self._sim, node, window, threshold, min_window, rto_cap, int(ecn))
        self._check(rc, "INA worker's agent settings")

    def ina_worker_replan(self, node: int, gone: list[bool], template: bytes) -> None:
        """A new plan version reaches INA worker ``node`` now: its trees with ``gone[i]`` set move their
        chunks without a result to the recovery tree (``template``: the worker's GRAD on it), those in flight
        at once (``sim_ina_worker_replan``)."""
        flags = np.ascontiguousarray(np.array(gone, dtype=np.uint8))
        self._check(self.lib.sim_ina_worker_replan(self._sim, node, _ptr(flags), template, len(template)), "re-plan")

    def ina_server(self, node: int, template: bytes, ring: int) -> None:
        self._check(self.lib.sim_ina_server(self._sim, node, template, len(template), ring), "INA server")

    def ina_server_answers(
        self, node: int, worker_ips: list[int], trees: list[tuple[int, bool, bool, list[bytes]]]
    ) -> None:
        """How INA server ``node`` answers resends: to their senders only, each by a unicast RESULT on its
        reverse hop list. ``worker_ips``: the workers' addresses (as integers); ``trees``: per tree served
        here, (tree id, whether its root switch multicasts the RESULTs, whether it is a re-planned job's
        recovery tree, one RESULT template per worker in the order of ``worker_ips``). Called again with
        more trees (a new plan version), it replaces what it set."""
        order = np.argsort(np.array(worker_ips, dtype=np.uint64), kind="stable")
        ips = np.ascontiguousarray(np.array(worker_ips, dtype=np.uint32)[order])
        frames = [tmpls[i] for _, _, _, tmpls in trees for i in order.tolist()]
        offsets = np.zeros(len(frames) + 1, dtype=np.uint64)
        offsets[1:] = np.cumsum([len(f) for f in frames])
        blob = np.frombuffer(b"".join(frames), dtype=np.uint8)
        tree_ids = np.array([t for t, _, _, _ in trees], dtype=np.uint8)
        flags = np.array([int(root) | int(recovery) << 1 for _, root, recovery, _ in trees], dtype=np.uint8)
        rc = self.lib.sim_ina_server_answers(
            self._sim, node, len(ips), _ptr(ips), len(trees), _ptr(tree_ids), _ptr(flags), _ptr(blob), _ptr(offsets)
        )
        self._check(rc, "INA server's answers (distinct worker addresses, 1 to 255 trees)")

    def ring_worker(self, node: int, template: bytes, per_step: int, steps: int) -> None:
        self._check(self.lib.sim_ring_worker(self._sim, node, template, len(template), per_step, steps), "ring worker")

    def ps_worker(self, node: int, template: bytes, packets: int) -> None:
        self._check(self.lib.sim_ps_worker(self._sim, node, template, len(template), packets), "PS worker")

    def ps_server(self, node: int, templates: list[bytes], packets: int) -> None:
        size = len(templates[0])
        self._check(
            self.lib.sim_ps_server(self._sim, node, b"".join(templates), size, len(templates), packets), "PS server"
        )

    def sender(self, node: int, template: bytes, packets: int) -> None:
        self._check(self.lib.sim_sender(self._sim, node, template, len(template), packets), "sender")

    def sink(self, node: int, packets: int) -> None:
        self._check(self.lib.sim_sink(self._sim, node, packets), "sink")

    def start(self) -> None:
        self.lib.sim_start(self._sim)

    def run(self, until_s: float | None = None) -> int:
        until = 2**62 if until_s is None else round(until_s * PS_PER_S)
        return int(self.lib.sim_run(self._sim, until))

    def host_stats(self, node: int) -> dict[str, float]:
        out = np.zeros(25, dtype=np.int64)
        self.lib.sim_host_stats(self._sim, node, _ptr(out))
        keys = (
            "done_s",
            "results",
            "mismatches",
            "resends",
            "duplicates",
            "grads",
            "answers",
            "frames_in",
            "timeouts",
            "window_halvings",
            "rate_cuts",
            "congested_results",
        )
        stats: dict[str, float] = dict(zip(keys, map(int, out[: len(keys)]), strict=True))
        stats["done_s"] = out[0] / PS_PER_S if out[0] >= 0 else -1.0
        stats["window"] = out[12] / 1000.0
        stats["rate_bytes_s"] = float(out[13])
        stats["srtt_s"] = out[14] / PS_PER_S if out[14] >= 0 else -1.0
        stats["lowest_rtt_s"] = out[15] / PS_PER_S
        stats["root_copies"] = int(out[16])  # an INA server's: the root switch's copies kept (nothing sent)
        stats["results_sent"] = int(out[17])  # RESULT frames the server sent (multicast, answers)
        stats["unknown_sources"] = int(out[18])  # resends it could not answer: from no worker's address
        stats["answered_from_other_tree"] = int(out[19])  # recovery-tree GRADs of chunks another tree completed
        # an INA worker's new plan version mid-round: its results then (-1: none came), the chunks in flight
        # it moved to the recovery tree, the chunks without a result it sent over it, sends of chunks that had
        # their result, and the finished chunks it offered the recovery tree at the re-plan (the agent's
        # finished_chunks_offered: those of the last pool before the first without a result, and after it)
        stats["results_at_replan"] = int(out[20])
        stats["chunks_moved"] = int(out[21])
        stats["recovery_chunks"] = int(out[22])
        stats["sent_after_done"] = int(out[23])
        stats["finished_chunks_offered"] = int(out[24])
        return stats

    def state(self) -> dict[str, float]:
        out = np.zeros(4, dtype=np.int64)
        self.lib.sim_state(self._sim, _ptr(out))
        return {"now_s": out[0] / PS_PER_S, "events": int(out[1]), "queued": int(out[2]), "pending_hosts": int(out[3])}


class ExternalFrame(ctypes.Structure):
    """One frame of the core's outbox (sim_core.c's ext_frame)."""

    _fields_ = [("frame", ctypes.c_void_p), ("node", ctypes.c_uint32), ("len", ctypes.c_uint32)]


class ExternalHostCore(SimCore):
    """A core whose hosts live in Python (the in-process network's agents): the frames that reach them come
    out of ``run_external``, the frames they send go in through ``inject``. Times are in picoseconds."""

    def __init__(self, seed: int):
        super().__init__(seed, None, None, None)

    def set_switch_entry(self, process: int, free_records: int, queue_depth: int, cell_bytes: int) -> None:
        """The native runtime's entry points (one program library serves every switch); ``cell_bytes`` > 0:
        switches read their queues in cells of that size (TNA)."""
        self.lib.sim_set_process(self._sim, process, free_records)
        self.lib.sim_set_depth_fn(self._sim, queue_depth)
        self.lib.sim_set_depth_cells(self._sim, cell_bytes)

    def external_host(self, node: int) -> None:
        self._check(self.lib.sim_external_host(self._sim, node), "external host")

    def set_node_dead(self, node: int, dead: bool) -> None:
        self.lib.sim_set_node_dead(self._sim, node, int(dead))

    def set_link_params(
        self,
        link: int,
        bandwidth_bps: float,
        delay_s: float,
        queue_bytes: int | None,
        loss: float,
        duplicate: float,
        reorder: float,
        reorder_delay_s: float,
    ) -> None:
        """Every parameter of a link direction, the drop-tail limit comparing the bytes already waiting."""
        rc = self.lib.sim_set_link_params(
            self._sim,
            link,
            bandwidth_bps,
            round(delay_s * PS_PER_S),
            -1 if queue_bytes is None else queue_bytes,
            loss,
            duplicate,
            reorder,
            round(reorder_delay_s * PS_PER_S),
            1,
        )
        if rc != 0:
            raise SimError(f"link direction {link}: bandwidth must be > 0 and delays >= 0")

    def link_counters(self, link: int) -> tuple[int, ...]:
        """packets, bytes, lost, queue_drops, duplicated, reordered, max_queue_bytes."""
        out = (ctypes.c_uint64 * 7)()
        self.lib.sim_link_counters(self._sim, link, out)
        return tuple(out)

    def reset_link_counters(self, link: int) -> None:
        self.lib.sim_link_reset_counters(self._sim, link)

    def inject(self, node: int, t_ps: int, frame: bytes) -> None:
        if self.lib.sim_inject(self._sim, node, t_ps, frame, len(frame)) != 0:
            raise SimError(f"node {node} is no external host (or out of memory)")

    def run_external(self, until_ps: int) -> int:
        """Run up to ``until_ps``; the number of frames that reached external hosts at the instant it
        stopped (``outbox``)."""
        return int(self.lib.sim_run_external(self._sim, until_ps))

    def outbox(self) -> tuple[int, list[tuple[int, bytes]]]:
        """The instant (ps) and the (node, frame) pairs of the last ``run_external``."""
        t = ctypes.c_int64()
        ptr = ctypes.c_void_p()
        n = self.lib.sim_outbox(self._sim, ctypes.byref(t), ctypes.byref(ptr))
        frames = ctypes.cast(ptr, ctypes.POINTER(ExternalFrame))
        return t.value, [(frames[i].node, ctypes.string_at(frames[i].frame, frames[i].len)) for i in range(n)]

    def pending_events(self) -> int:
        out = (ctypes.c_int64 * 4)()
        self.lib.sim_state(self._sim, out)
        return int(out[2])
