"""The program a switch runs when nobody names one follows the links' MTU (controller.programs.default_program),
and a plan whose chunks are not the switches' K is refused before any entry is written."""

from __future__ import annotations

import pytest

from controller.errors import PlanError, TopologyError
from controller.programs import ProgramChoiceError, default_program, program_file
from controller.topology_yaml import dump_topology, load_topology, topology_from_dict


def _topology(**link_extra):
    return {
        "hosts": [
            {"name": "h1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01", "role": "worker"},
            {"name": "h2", "ip": "10.0.0.2", "mac": "02:00:00:00:00:02", "role": "server"},
        ],
        "switches": [{"name": "s1", "device_id": 1}],
        "links": [
            {"ends": ["h1", "s1:1"], "bandwidth": 100, "delay": 0.1, **link_extra},
            {"ends": ["h2", "s1:2"], "bandwidth": 100, "delay": 0.1},
        ],
    }


def test_shipped_topologies_default_to_k344():
    topo = load_topology("topologies/star_100m.yaml")
    assert topo.smallest_mtu() == 1500
    assert program_file(default_program(topo.smallest_mtu())).name == "ina_k344.p4"


def test_jumbo_links_default_to_k1024_only_when_every_link_is_jumbo():
    one_jumbo = topology_from_dict(_topology(mtu=9000))
    assert one_jumbo.smallest_mtu() == 1500
    assert default_program(one_jumbo.smallest_mtu()) == "v1model-k344"
    data = _topology(mtu=9000)
    data["links"][1]["mtu"] = 9000
    assert default_program(topology_from_dict(data).smallest_mtu()) == "v1model-k1024"


def test_each_build_needs_its_whole_packet_k344_fits_1500():
    # a dense K = 1024 packet with 8 hops is 20 + 8 + 16 + 64 + 4096 = 4204 bytes of IPv4
    assert default_program(4204) == "v1model-k1024"
    assert default_program(4203) == "v1model-k344"
    assert default_program(1484) == "v1model-k344"  # 20 + 8 + 16 + 64 + 1376: a 1500-byte MTU carries it
    assert default_program(1483) == "v1model-k256"
    assert default_program(1132) == "v1model-k256"  # 20 + 8 + 16 + 64 + 1024
    assert default_program(1131) == "v1model"


def test_tofino_runs_tna_and_tiny_links_are_refused():
    assert default_program(9000, "tofino") == "tna"
    with pytest.raises(ProgramChoiceError, match="MTU of 300 bytes carry no build"):
        default_program(300)
    with pytest.raises(ProgramChoiceError, match="unknown target 'cpu'"):
        default_program(1500, "cpu")


def test_mtu_round_trips_and_bad_mtus_name_the_link():
    topo = topology_from_dict(_topology(mtu=9000))
    assert "mtu: 9000" in dump_topology(topo)
    assert "mtu" not in dump_topology(topology_from_dict(_topology()))
    for bad in (0, 67, 65536, 1500.5, "9000", True):
        with pytest.raises(TopologyError, match=r"bad mtu .* on link h1-s1 \(bytes, an integer in 68..65535\)"):
            topology_from_dict(_topology(mtu=bad))


def test_a_plan_with_another_k_is_refused_before_any_entry(tmp_path):
    from controller.planner import PlanOptions, plan_job
    from controller.resources import Resources
    from topologies.inprocess.fabric import InProcessNetwork

    topo = load_topology("topologies/star.yaml")
    net = InProcessNetwork(topo, program="v1model")  # K = 64
    plan = plan_job(topo, ["h1", "h2"], ["h5"], PlanOptions(value_count=256), Resources.for_topology(topo))
    with pytest.raises(PlanError, match="planned with 256 values per packet but s1 runs a program built with K = 64"):
        net.install_job(plan)
    assert net.installer.read_table("s1", "InaIngress.ina_jobs") == []
