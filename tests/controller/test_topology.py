"""Topology files: the shipped ones load, and every kind of mistake is named in one line."""

from pathlib import Path

import pytest

from controller.generators import fat_tree
from controller.topology import TopologyError
from controller.topology_yaml import dump_topology, load_topology, topology_from_dict

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


@pytest.mark.parametrize(
    "name,hosts,switches,links",
    [("star", 5, 1, 5), ("leaf_spine", 10, 6, 18), ("fat_tree_k4", 16, 20, 48), ("hetero_mesh", 6, 5, 14)],
)
def test_shipped_topologies_load(name, hosts, switches, links):
    topo = load_topology(TOPOLOGIES / f"{name}.yaml")
    assert (len(topo.hosts), len(topo.switches), len(topo.links)) == (hosts, switches, links)
    g = topo.to_graph()
    assert g.number_of_nodes() == hosts + switches and g.number_of_edges() == links
    e = g.edges["h1", topo.links_of("h1")[0].other("h1")]
    assert set(e) >= {"ports", "bandwidth", "delay", "loss", "eid"}


@pytest.mark.parametrize("name", ["star", "leaf_spine"])
def test_100_mbit_variants_are_the_shipped_files_a_tenth_as_fast(name):
    """The 100 Mbit/s files (bench/allreduce_netns.py, lab training): the same hosts, switches and
    ports, every link's bandwidth divided by ten, so the host links are at 100 Mbit/s."""
    full, slow = load_topology(TOPOLOGIES / f"{name}.yaml"), load_topology(TOPOLOGIES / f"{name}_100m.yaml")
    assert [(h.name, h.ip, h.mac, h.role) for h in slow.hosts] == [(h.name, h.ip, h.mac, h.role) for h in full.hosts]
    assert [(s.name, s.device_id) for s in slow.switches] == [(s.name, s.device_id) for s in full.switches]
    ends = [(link.a, link.a_port, link.b, link.b_port, link.delay) for link in full.links]
    assert [(link.a, link.a_port, link.b, link.b_port, link.delay) for link in slow.links] == ends
    assert [link.bandwidth for link in slow.links] == [link.bandwidth / 10 for link in full.links]
    hosts = {h.name for h in slow.hosts}
    assert {link.bandwidth for link in slow.links if link.a in hosts or link.b in hosts} == {100.0}


def test_graph_edge_attributes_of_star():
    g = load_topology(TOPOLOGIES / "star.yaml").to_graph()
    e = g.edges["h3", "s1"]
    assert e["ports"] == {"h3": 0, "s1": 3}
    assert (e["bandwidth"], e["delay"], e["eid"]) == (1000.0, 0.1, 2)
    assert g.nodes["h3"]["node_id"] == 0x8002 and g.nodes["s1"]["node_id"] == 1


def test_fat_tree_generator_sizes_and_round_trip():
    topo = fat_tree(8)
    assert len(topo.hosts) == 128 and len(topo.switches) == 80 and len(topo.links) == 3 * 128
    again = topology_from_dict(__import__("yaml").safe_load(dump_topology(topo)))
    assert [(link.a, link.a_port, link.b, link.b_port) for link in again.links] == [
        (link.a, link.a_port, link.b, link.b_port) for link in topo.links
    ]


def base():
    return {
        "name": "t",
        "hosts": [
            {"name": "h1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01", "role": "worker"},
            {"name": "h2", "ip": "10.0.0.2", "mac": "02:00:00:00:00:02", "role": "server"},
        ],
        "switches": [{"name": "s1", "device_id": 1}, {"name": "s2", "device_id": 2}],
        "links": [
            {"ends": ["h1", "s1:1"], "bandwidth": 100, "delay": 1},
            {"ends": ["s1:2", "s2:1"], "bandwidth": 100, "delay": 1},
            {"ends": ["h2", "s2:2"], "bandwidth": 100, "delay": 1},
        ],
    }


def broken(change):
    data = base()
    change(data)
    return data


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d["links"][1].update(ends=["s1:2", "x:1"]), "unknown node 'x' in link 1"),
        (lambda d: d["links"][2].update(ends=["h2", "s2:1"]), "port 1 of s2 used twice (links 1 and 2)"),
        (lambda d: d["links"][1].pop("bandwidth"), "missing bandwidth on link s1-s2"),
        (lambda d: d["links"][1].update(delay=-1), "bad delay -1 on link s1-s2"),
        (lambda d: d["hosts"][1].update(ip="10.0.0.1"), "duplicate IP 10.0.0.1 (h1 and h2)"),
        (lambda d: d["hosts"][1].update(mac="02:00:00:00:00:01"), "duplicate MAC"),
        (lambda d: d["hosts"][1].update(ip="10.0.0.300"), "host h2 has an invalid IPv4 address"),
        (lambda d: d["switches"][1].update(device_id=1), "duplicate device_id 1 (s1 and s2)"),
        (lambda d: d["switches"][1].update(device_id=0x8000), "switch s2 has device_id 32768"),
        (lambda d: d["switches"].append({"name": "s1", "device_id": 9}), "duplicate node name 's1'"),
        (lambda d: d["links"].pop(1), "worker h1 not connected to server h2"),
        (
            lambda d: d["links"].append({"ends": ["s2:3", "s1:3"], "bandwidth": 1, "delay": 1}),
            "parallel links between s2 and s1 (links 1 and 3)",
        ),
        (
            lambda d: d["links"].append({"ends": ["h1", "s2:4"], "bandwidth": 1, "delay": 1}),
            "host h1 has more than one link",
        ),
        (lambda d: d["hosts"][0].update(role="boss"), "host h1 has role 'boss'"),
        (lambda d: d["links"][0].update(colour="red"), "link 0: unknown key 'colour'"),
        (lambda d: d["links"][1].update(ends=["s1:x", "s2:1"]), "endpoint 's1:x' has a bad port"),
        (lambda d: d.pop("links"), "topology has no 'links' section"),
    ],
)
def test_validation_names_the_problem(change, message):
    with pytest.raises(TopologyError) as err:
        topology_from_dict(broken(change))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_yaml_syntax_error_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [\n  - {name: h1\n")
    with pytest.raises(TopologyError, match=r"bad.yaml: invalid YAML at line \d+"):
        load_topology(bad)
    with pytest.raises(TopologyError, match="cannot read topology"):
        load_topology(tmp_path / "missing.yaml")
