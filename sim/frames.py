"""Frames of the simulated agents, built by the wire codec (protocol/): templates the core copies and
the byte offsets of the fields it writes per packet, read off the codec's own layout."""

from __future__ import annotations

import numpy as np

from controller.plan import Hop, HostRef, hops_to_codec
from protocol import codec
from protocol import constants as C
from protocol.batch import PacketTemplate, layout_dtype

UDP_PAYLOAD = C.ETHERNET_HEADER_BYTES + C.IPV4_HEADER_BYTES + C.UDP_HEADER_BYTES


def core_layout(k: int) -> dict[str, int]:
    """Offsets (from a frame's first byte) of the INA fields the core reads and writes."""
    header = layout_dtype(1, k).fields
    assert header is not None
    hop = header["hops"][0].base.fields
    assert hop is not None
    hops_at = header["hops"][1]
    return {
        "b0": UDP_PAYLOAD + header["b0"][1],
        "flags": UDP_PAYLOAD + header["flags"][1],
        "seq": UDP_PAYLOAD + header["seq"][1],
        "slot_word": UDP_PAYLOAD + header["slot_word"][1],
        "hop0_fan_in": UDP_PAYLOAD + hops_at + hop["fan_in"][1],
        "hop0_child": UDP_PAYLOAD + hops_at + hop["child"][1],
        "header_end": UDP_PAYLOAD + C.INA_HEADER_BYTES,
        "k": k,
        "pkt_grad": C.PKT_TYPE_GRAD,
        "pkt_result": C.PKT_TYPE_RESULT,
        "flag_retx": C.FLAG_RETX,
        "udp_payload": UDP_PAYLOAD,
        "ip_tos": C.ETHERNET_HEADER_BYTES + 1,
        "ip_header": C.ETHERNET_HEADER_BYTES,
        "tree_id": UDP_PAYLOAD + header["tree_id"][1],
        "flag_mcast": C.FLAG_MCAST,
    }


def _frame(template: PacketTemplate, src: HostRef, dst: HostRef, tos: int = 0) -> bytes:
    k = template.values_per_packet
    row = template.encode(np.zeros((1, k), dtype=np.int32), seq=np.ones(1, dtype=np.int64))[0]
    return codec.build_udp_frame(row.tobytes(), src.mac, dst.mac, src.ip, dst.ip, tos=tos)


def grad_frame(
    job_id: int, tree_id: int, hops: list[Hop], worker: HostRef, server: HostRef, k: int, tos: int = 0
) -> bytes:
    """A worker's GRAD on its plan's hop list (seq, slot and values are written per chunk); ``tos``
    ECN-capable (C.ECN_ECT0) as the agents send them, or not (0)."""
    t = PacketTemplate(
        C.PKT_TYPE_GRAD,
        job_id=job_id,
        hops=hops_to_codec(hops),
        contributor=worker.rank,
        values_per_packet=k,
        tree_id=tree_id,
    )
    return _frame(t, worker, server, tos)


def multicast_result_frame(
    job_id: int, tree_id: int, server: HostRef, first_worker: HostRef, k: int, tos: int = 0
) -> bytes:
    """The server's multicast RESULT (hop_count 0, MCAST), addressed as the server agent does: to the
    lowest rank's address, which the switches' result_rewrite replaces per copy."""
    t = PacketTemplate(
        C.PKT_TYPE_RESULT,
        job_id=job_id,
        flags=C.FLAG_MCAST,
        contributor=server.node_id,
        values_per_packet=k,
        tree_id=tree_id,
    )
    return _frame(t, server, first_worker, tos)


def unicast_result_frame(
    job_id: int, tree_id: int, hops: list[Hop], server: HostRef, worker: HostRef, k: int, tos: int = 0
) -> bytes:
    """The server's RESULT to one worker on its reverse hop list (the tree's ``result_hops``): how the
    server agent answers a resend, to its sender only."""
    t = PacketTemplate(
        C.PKT_TYPE_RESULT,
        job_id=job_id,
        hops=hops_to_codec(hops),
        contributor=server.node_id,
        values_per_packet=k,
        tree_id=tree_id,
    )
    return _frame(t, server, worker, tos)


def plain_frame(src: HostRef, dst: HostRef, payload_bytes: int, port: int) -> bytes:
    """A plain UDP datagram (the baselines' traffic, routed by the program's IPv4 tables)."""
    return codec.build_udp_frame(bytes(payload_bytes), src.mac, dst.mac, src.ip, dst.ip, src_port=port, dst_port=port)
