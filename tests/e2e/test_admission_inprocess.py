"""Admission in the data plane (ina_admission, installed by the controller): on the in-process
leaf-spine running the aggregation program in softswitch, hosts of one job forge packets into another job,
copying its job id, tree, hop lists, sequence numbers and slots. Every forged packet is dropped at the
first switch as DROP_NOT_ADMITTED, the victim's slots stay untouched, and both jobs' sums stay exact.
Each test runs on both programs (p4src/ina.p4 and the TNA p4src/tna/ina_tna.p4) with the same assertions."""

import numpy as np
from inprocess_jobs import int_inputs, network

from controller.installer import C_DROPS
from protocol import codec
from protocol import constants as C


def _two_jobs(net):
    from controller.resources import Resources
    from topologies.inprocess.jobs import InProcessJob

    resources, servers = Resources.for_topology(net.topo), {}
    victim = InProcessJob(net, ["h1", "h3", "h5", "h7"], ["h9"], resources=resources, server_agents=servers)
    attacker = InProcessJob(net, ["h2", "h4", "h6", "h8"], ["h9"], resources=resources, server_agents=servers)
    return victim, attacker


def _codec_hops(hops):
    return [h.to_codec() for h in hops]


def _forgeries(plan, first_seq: int, chunks: int) -> list[tuple[str, bytes, str]]:
    """(sending host, payload, destination ip) of packets forged into ``plan``'s job: its workers' GRADs
    with their own hop lists (as if from the victim's rank), a GRAD entering the fabric at another
    leaf, unicast RESULTs along the victims' reverse paths and multicast RESULTs."""
    tree = plan.trees[0]
    server_ip = plan.servers[0].ip
    neighbour = {"h1": "h2", "h3": "h4", "h5": "h6", "h7": "h8"}  # a host of the other job on the same leaf
    forged = []
    junk = np.full(C.VALUES_PER_PACKET, 1_000_000, dtype=np.int32)
    for w in plan.workers:
        attacker = neighbour[w.name]
        grad_hops = _codec_hops(tree.grad_hops[w.name])
        result_hops = _codec_hops(tree.result_hops[w.name])
        for i in range(chunks):
            seq = first_seq + i
            common = dict(slot=i % plan.pool_size, contributor=w.rank, tree_id=tree.tree_id)
            forged.append((attacker, codec.encode(codec.grad(plan.job_id, seq, grad_hops, junk, **common)), server_ip))
            forged.append((attacker, codec.encode(codec.result(plan.job_id, seq, result_hops, junk, **common)), w.ip))
            mcast = codec.result(plan.job_id, seq, [], junk, flags=C.FLAG_MCAST, **common)
            forged.append((attacker, codec.encode(mcast), w.ip))
    return forged


# the registers that say who holds a cell and which children it heard (docs/tofino.md, "Controller")
SLOT_STATE = {
    "v1model": ("slot_owner", "slot_bitmap"),
    "tna": ("slot_owner_job", "slot_owner_seq", "slot_bitmap"),
}


def _slot_state(net, plan) -> dict[str, list[tuple[int, ...]]]:
    """Per aggregating switch of ``plan``: each of its cells' owner and children-heard registers."""
    out = {}
    for cfg in plan.switches:
        if cfg.aggregates:
            switch = net.switches[cfg.switch]
            registers = [switch.register(f"InaIngress.{name}") for name in SLOT_STATE[net.installer.program()]]
            cells = range(cfg.slot_base, cfg.slot_base + 2 * cfg.pool_size)
            out[cfg.switch] = [tuple(r.read(i) for r in registers) for i in cells]
    return out


def _not_admitted(net) -> dict[str, int]:
    return {
        s: net.installer.read_counter(s, C_DROPS, [C.DROP_NOT_ADMITTED])[C.DROP_NOT_ADMITTED][0] for s in net.switches
    }


def test_forged_packets_from_another_jobs_hosts_are_dropped_and_leave_the_victims_slots_untouched(program):
    net = network("leaf_spine", seed=4, program=program)
    victim, attacker = _two_jobs(net)
    assert any(cfg.aggregates for cfg in victim.plan.switches)  # a multi-level tree: sp1/l3 aggregate
    forged = _forgeries(victim.plan, first_seq=1, chunks=10)
    before = _slot_state(net, victim.plan)
    for host, payload, dst in forged:
        net.transport(host).sendto(payload, dst)
    net.loop.run()
    assert _slot_state(net, victim.plan) == before  # nothing forged reached a slot of the victim
    dropped = _not_admitted(net)
    assert sum(dropped.values()) == len(forged)  # each forged packet dropped once, at its first switch
    assert set(s for s, n in dropped.items() if n) == {"l1", "l2", "l3", "l4"}

    # the victim's and the attacker's own jobs run while the forgeries keep coming: both sums exact
    xa, xb = int_inputs(4, 640, seed=1), int_inputs(4, 640, seed=2)
    storm = _forgeries(victim.plan, first_seq=1, chunks=10)
    for k, (host, payload, dst) in enumerate(storm):
        net.loop.call_later(k * 1e-5, net.transport(host).sendto, payload, dst)
    ha, hb = victim.start(xa), attacker.start(xb)
    for h in ha:
        np.testing.assert_array_equal(h.wait(), sum(xa))
    for h in hb:
        np.testing.assert_array_equal(h.wait(), sum(xb))
    net.loop.run()
    assert sum(_not_admitted(net).values()) == len(forged) + len(storm)


def test_without_admission_entries_the_same_forgery_is_summed_into_the_victims_slots(program):
    # the control experiment: the guard is what stops it (ina_jobs alone isolates jobs by id only)
    from p4.v1 import p4runtime_pb2

    from controller.installer import T_ADMISSION

    net = network("leaf_spine", seed=4, program=program)
    victim, _ = _two_jobs(net)
    inst = net.installer
    for switch in net.switches:
        entries = inst.read_table(switch, T_ADMISSION)
        inst.conn(switch).write([(p4runtime_pb2.Update.DELETE, p4runtime_pb2.Entity(table_entry=e)) for e in entries])
    before = _slot_state(net, victim.plan)
    for host, payload, dst in _forgeries(victim.plan, first_seq=1, chunks=10):
        if codec.decode(payload).header.pkt_type == C.PKT_TYPE_GRAD:
            net.transport(host).sendto(payload, dst)
    net.loop.run()
    assert _slot_state(net, victim.plan) != before
    assert sum(_not_admitted(net).values()) == 0
