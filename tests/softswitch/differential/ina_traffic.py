"""Traffic for p4src/ina.p4 in the differential tests and bench/fuzz_backends.py: the control-plane
state of the STF scenarios (tests/dataplane/stf_scenarios.py: one switch, jobs that aggregate with
unicast and multicast results, a pass-through job, a pool at the end of the registers, routes, result
rewrites, a multicast group) and random frames that reach every branch of the program: GRADs and
RESULTs with random jobs, sequence numbers that reuse slots, hop lists, fan-ins, children, operations,
flags and values near the overflow edges; plain IPv4; then mutated copies of all of them.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import stf_scenarios as S

from protocol import codec
from protocol import constants as C
from protocol.codec import Hop
from softswitch.switch import Exact, Lpm, TableEntry

ROOT = Path(__file__).resolve().parents[3]

INA_P4 = ROOT / "p4src" / "ina.p4"
JOBS = [S.JOB_UNICAST, S.JOB_MCAST, S.JOB_PASS, S.JOB_OUT_OF_RANGE]
ROUTES = [("10.0.0.0", 24, 0x020000000010, 1), ("10.0.1.0", 24, 0x020000000011, 4), ("10.2.0.0", 16, 0x12, 2)]
MULTICAST_GROUP = 5
PORTS = (1, 2, 3, 4)


def configure(sw) -> None:
    """The STF scenarios' switch state on `sw` (a Switch, NativeSwitch or anything with their API)."""
    sw.table("InaIngress.switch_identity").set_default("InaIngress.set_switch_id", {"switch_id": S.SWITCH_ID})
    for job in JOBS:
        args = {k: job[k] for k in ("job_index", "slot_base", "pool_size", "max_fan_in", "aggregates", "result_group")}
        matches = {"hdr.ina.job_id": Exact(job["job_id"]), "hdr.ina.tree_id": Exact(job["tree_id"])}
        sw.table("InaIngress.ina_jobs").insert(TableEntry(matches, "InaIngress.set_job", args))
    for prefix, length, mac, port in ROUTES:
        value = int.from_bytes(codec.ip_bytes(prefix), "big")
        sw.table("InaIngress.ipv4_lpm").insert(
            TableEntry(
                {"hdr.ipv4.dst_addr": Lpm(value, length)}, "InaIngress.ipv4_forward", {"dst_mac": mac, "port": port}
            )
        )
    for port, (mac, ip) in zip(S.WORKER_PORTS, S.WORKERS, strict=True):
        sw.table("InaEgress.result_rewrite").insert(
            TableEntry(
                {"standard_metadata.egress_port": Exact(port)},
                "InaEgress.set_result_dst",
                {
                    "dst_mac": int.from_bytes(codec.mac_bytes(mac), "big"),
                    "dst_ip": int.from_bytes(codec.ip_bytes(ip), "big"),
                },
            )
        )
    sw.set_multicast_group(MULTICAST_GROUP, [(port, rid) for rid, port in enumerate(S.WORKER_PORTS)])


def _values(rng: random.Random, k: int) -> np.ndarray:
    kind = rng.random()
    if kind < 0.3:
        return np.array([rng.randint(-100, 100) for _ in range(k)], dtype=np.int64)
    if kind < 0.6:  # near the edges: sums overflow int32
        return np.array([rng.choice((2**31 - 1, -(2**31), 2**30, -(2**30), 1, -1)) for _ in range(k)], dtype=np.int64)
    return np.array([rng.randint(-(2**31), 2**31 - 1) for _ in range(k)], dtype=np.int64)


def random_frame(rng: random.Random, k: int = C.VALUES_PER_PACKET) -> tuple[int, bytes]:
    """(ingress port, frame): a GRAD, a RESULT or plain IPv4, mostly well formed."""
    kind = rng.random()
    if kind < 0.1:
        dst = rng.choice(("10.0.0.7", "10.0.1.9", "10.2.3.4", "192.168.1.1"))
        payload = rng.randbytes(rng.randint(0, 64))
        frame = codec.build_udp_frame(payload, S.WORKERS[0][0], S.SERVER[0], S.WORKERS[0][1], dst, 5000, 5001,
                                      ttl=rng.choice((0, 1, 2, 64)))  # fmt: skip
        return rng.choice(PORTS), frame
    job = rng.choice(JOBS)
    job_id, tree_id = job["job_id"], job["tree_id"]
    if rng.random() < 0.05:
        job_id = rng.choice((0, 77))
    pool = max(job["pool_size"], 1)
    seq = rng.randint(0, 6 * pool)
    slot, shadow = seq % pool, (seq // pool) % 2
    if rng.random() < 0.05:
        slot = rng.randint(0, C.SLOT_MAX)
    values = _values(rng, k)
    op = C.OP_MAX if rng.random() < 0.2 else C.OP_SUM
    flags = 0
    for flag, p in ((C.FLAG_RETX, 0.1), (C.FLAG_SPARSE, 0.03), (C.FLAG_OVERFLOW, 0.05), (C.FLAG_STORED, 0.02)):
        if rng.random() < p:
            flags |= flag
    value_count = k if rng.random() < 0.8 else rng.randint(1, k)  # value_count is 1..256 (docs/protocol.md)
    if kind < 0.75:
        fan_in = rng.choice((1, 2, 3, 4, 4, 4, 0, 9, 40))
        child = rng.randint(0, max(fan_in - 1, 0)) if rng.random() < 0.95 else fan_in
        switch_id = S.SWITCH_ID if rng.random() < 0.95 else 2
        hops = [Hop(switch_id, rng.random() < 0.9, fan_in, child, S.SERVER_PORT)]
        hops += [Hop(S.SERVER_NODE, True, 1, 0, 0)] * rng.choice((1, 1, 1, 0, 2))
        pkt = codec.grad(job_id, seq, hops, values, slot=slot, shadow=shadow, contributor=child, op=op,
                         flags=flags, tree_id=tree_id, value_count=value_count)  # fmt: skip
        worker = rng.randrange(3)
        mac, ip = S.WORKERS[worker]
        return S.WORKER_PORTS[worker], codec.build_frame(pkt, mac, S.SERVER[0], ip, S.SERVER[1], values_per_packet=k)
    if rng.random() < 0.4:
        flags |= C.FLAG_MCAST
        hops = [] if rng.random() < 0.9 else [Hop(S.SWITCH_ID, True, 2, 0, 1)]
    else:
        port = rng.choice(S.WORKER_PORTS)
        hops = [Hop(S.SWITCH_ID if rng.random() < 0.95 else 3, rng.random() < 0.7, 2, 0, port)]
    pkt = codec.result(job_id, seq, hops, values, slot=slot, shadow=shadow, op=op, flags=flags, tree_id=tree_id,
                       value_count=value_count)  # fmt: skip
    mac, ip = S.WORKERS[rng.randrange(3)]
    return S.SERVER_PORT, codec.build_frame(pkt, S.SERVER[0], mac, S.SERVER[1], ip, values_per_packet=k)
