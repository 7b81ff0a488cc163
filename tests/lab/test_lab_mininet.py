"""Topologies brought up in mininet with softswitch switches running p4src/ina.p4: allreduce sums are
exact, aggregation really happens in the switches, and teardown leaves nothing behind."""

import os
import subprocess

from conftest import needs_mininet
from lab_helpers import assert_lab_torn_down

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet


def _run_lab(topology, workers, rounds, values, check, program=None):
    from controller.planner import PlanOptions
    from topologies.mininet_lab import MininetLab

    # multicast results: each link then carries one stream per direction when switches aggregate
    lab = MininetLab(
        os.path.join(REPO, "topologies", topology),
        workers,
        values=values,
        log=lambda m: None,
        plan_options=PlanOptions(result_mode="multicast"),
        program=program,
    )
    try:
        lab.start()
        check(lab)
    finally:
        left = lab.stop()
    assert_lab_torn_down(lab, left)
    assert lab.logs_kept is None


def _server_and_worker_bytes(lab, bytes_by_link):
    topo = lab.topo
    server = sum(bytes_by_link[link.id] for link in topo.links_of(lab.server))
    per_worker = [sum(bytes_by_link[link.id] for link in topo.links_of(w)) for w in lab.workers]
    return server, per_worker


def test_star_allreduce_parameter_server_and_gloo_at_100_mbit_then_clean_teardown():
    def check(lab):
        # the file's 100 Mbit/s is what tc enforces on the switch's ports
        for port in range(1, 6):
            qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", f"s1-eth{port}"], capture_output=True, text=True)
            assert "rate 100Mbit" in qdiscs.stdout, qdiscs.stdout
        before = lab.link_bytes()
        rounds = lab.allreduce(2, 300)
        assert [r.verified for r in rounds] == [True, True]
        after = lab.link_bytes()
        server, per_worker = _server_and_worker_bytes(lab, {k: after[k] - before[k] for k in after})
        # s1 adds the 4 flows and, the tree's root, sends the results itself (docs/protocol.md, "Root
        # multicast"): the server's link carries nothing of the job (at most what the kernels send)
        assert [c.root for c in lab.plan.switches] == [True]
        assert server < 0.05 * min(per_worker)
        # read over P4Runtime: s1 added every worker's chunk once and completed each chunk once
        chunks = 2 * -(-300 // lab.plan.value_count)  # 2 rounds of 300 values in chunks of the switches' K
        s1 = lab.switch_counters()["s1"]
        assert (s1["grad_aggregated"], s1["grad_completed"]) == (4 * chunks, chunks)
        # the parameter-server job (same protocol, no aggregating switch): the server gets every
        # worker's packets and sends every worker its result, four times a worker link's bytes
        assert lab.ps_plan.trees[0].aggregation_points == [] and lab.ps_plan.job_id != lab.plan.job_id
        before = lab.link_bytes()
        assert [r.verified for r in lab.allreduce(2, 300, mode="ps")] == [True, True]
        after = lab.link_bytes()
        server_ps, per_worker_ps = _server_and_worker_bytes(lab, {k: after[k] - before[k] for k in after})
        assert 0.9 * 4 * min(per_worker_ps) < server_ps < 1.1 * 4 * max(per_worker_ps)
        # gloo between the worker hosts (sums checked by each rank): through s1, never the server's link
        before = lab.link_bytes()
        assert [r.verified for r in lab.allreduce(1, 300, mode="gloo")] == [True]
        after = lab.link_bytes()
        server_gloo, per_worker_gloo = _server_and_worker_bytes(lab, {k: after[k] - before[k] for k in after})
        assert server_gloo == 0 and min(per_worker_gloo) > 2 * 1200

    _run_lab("star_100m.yaml", 4, 2, 300, check)


def test_leaf_spine_multi_hop_aggregation():
    def check(lab):
        aggregating = {c.switch for c in lab.plan.switches if c.aggregates}
        assert {"l1", "l2", "sp1"} <= aggregating, lab.plan_text()
        before = lab.link_bytes()
        assert [r.verified for r in lab.allreduce(1, 500)] == [True]
        after = lab.link_bytes()
        delta = {k: after[k] - before[k] for k in after}
        server, per_worker = _server_and_worker_bytes(lab, delta)
        # sp1 aggregates every worker, the tree's root: it multicasts the results and the server hears nothing
        assert [c.switch for c in lab.plan.switches if c.root] == ["sp1"], lab.plan_text()
        assert server < 0.05 * min(per_worker)
        # the spine carries each leaf's partial sum once, not two workers' copies
        l1_up = sum(delta[link.id] for link in lab.topo.links_of("l1") if link.other("l1") == "sp1")
        assert 0 < l1_up < 1.5 * min(per_worker)

    _run_lab("leaf_spine.yaml", 4, 1, 500, check)


def test_leaf_spine_on_the_tna_program():
    """`--program tna`: softswitch processes run p4src/tna/ina_tna.p4; the installer learns that from the
    P4Info they serve and reads the statistics the TNA way (four counters summed), over P4Runtime."""

    def check(lab):
        assert lab.control.installer.program() == "tna"
        assert [r.verified for r in lab.allreduce(2, 300)] == [True, True]
        chunks = 2 * 5  # 2 rounds x ceil(300 / 64)
        counters = lab.switch_counters()
        aggregating = {c.switch for c in lab.plan.switches if c.aggregates}
        assert {"l1", "l2", "sp1"} <= aggregating, lab.plan_text()
        # every aggregating switch completed each chunk once, from at least two contributions each
        for switch in aggregating:
            completed, added = counters[switch]["grad_completed"], counters[switch]["grad_aggregated"]
            assert completed == chunks and added >= 2 * chunks and added % chunks == 0, (switch, counters[switch])

    _run_lab("leaf_spine.yaml", 4, 2, 300, check, program="tna")


def test_leaf_spine_on_the_k1024_program_carries_jumbo_frames():
    """`--program v1model-k1024`: every link of the lab (hosts' ends too) takes a 9000-byte MTU before the
    switches start, a chunk of 1024 values crosses as one frame of more than 4 KB (docs/protocol.md: 14 +
    20 + 8 + 16 + 8 per hop + 4,096 bytes), and the sums are exact through three aggregating switches."""
    from topologies.lab_network import _intf_counter, intf_name

    def check(lab):
        assert lab.network.mtu == 9000 and lab.plan.value_count == 1024
        for link in lab.topo.links:
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                shown = lab.network.net[node].cmd(f"ip link show dev {intf_name(node, port)}")
                assert " mtu 9000 " in shown, shown
        link = lab.topo.links_of(lab.workers[0])[0]
        switch = link.other(lab.workers[0])
        port = intf_name(switch, link.port_of(switch))
        before = {name: _intf_counter(port, name) for name in ("rx_packets", "rx_bytes")}
        assert [r.verified for r in lab.allreduce(2, 1500)] == [True, True]
        frames, size = (_intf_counter(port, name) - before[name] for name in ("rx_packets", "rx_bytes"))
        chunks = 2 * 2  # 2 rounds x ceil(1500 / 1024)
        assert frames >= chunks and size / frames > 4096, (frames, size)  # more: retransmissions
        counters = lab.switch_counters()
        aggregating = {c.switch for c in lab.plan.switches if c.aggregates}
        assert {"l1", "l2", "sp1"} <= aggregating, lab.plan_text()
        for name in aggregating:
            assert counters[name]["grad_completed"] == chunks, (name, counters[name])

    _run_lab("leaf_spine.yaml", 4, 2, 1500, check, program="v1model-k1024")


def test_a_program_whose_k_needs_jumbo_links_the_lab_did_not_set_is_refused_by_name(tmp_path):
    """The lab sets the links' MTU from the program's source (its VALUES_PER_PACKET); a source that only
    includes ina_k1024.p4 does not say it, so the links stay at 1500 while the switches run K = 1024 (their
    P4Info), whose frames would be fragmented and dropped. The start fails naming both, and stops cleanly."""
    import pytest

    from topologies.errors import LabError
    from topologies.mininet_lab import MininetLab

    wrapper = tmp_path / "wrapped_k1024.p4"
    wrapper.write_text(f'#include "{REPO}/p4src/ina_k1024.p4"\n')
    lab = MininetLab(
        os.path.join(REPO, "topologies", "star.yaml"),
        2,
        values=100,
        log=lambda m: None,
        program=str(wrapper),
        keep_logs=str(tmp_path / "kept"),
    )
    with pytest.raises(LabError, match=r"K = 1024 .* need an MTU of 9000, but the links were set to 1500"):
        lab.start()
    assert lab.logs_kept is not None  # a failed start keeps its logs where asked
    assert lab.network.resources.leftovers() == []
