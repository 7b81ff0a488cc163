"""Shared pieces of the lab tests: a two-host spec and a look at the root namespace's interfaces."""

import subprocess

from topologies.lab_network import LabHost, LabLink, LabSpec, LabSwitch


def tiny_spec() -> LabSpec:
    return LabSpec(
        "tiny",
        [LabHost("lth1", "10.0.0.1", "02:00:00:00:00:01"), LabHost("lth2", "10.0.0.2", "02:00:00:00:00:02")],
        [LabSwitch("lt1", 1)],
        [LabLink("lth1", 0, "lt1", 1, 100.0), LabLink("lth2", 0, "lt1", 2, 100.0)],
    )


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def lab_interfaces(spec) -> set[str]:
    """Every interface name the lab creates for ``spec`` (host ends live in the hosts' namespaces,
    but a leaked one would show up in the root namespace under the same name)."""
    from topologies.lab_network import intf_name

    return {
        intf_name(node, port) for link in spec.links for node, port in ((link.a, link.a_port), (link.b, link.b_port))
    }


def host_namespaces_gone(resources) -> bool:
    """The hosts' shells hold their network namespaces: no shell, no namespace."""
    import os

    return not any(
        os.path.exists(f"/proc/{p['pid']}/ns/net") for p in resources.processes if p["what"].startswith("host ")
    )


def assert_lab_torn_down(lab, left) -> None:
    """What the lab tests check after ``MininetLab.stop()`` returned ``left``: nothing it recorded
    (switches, hosts, agents, training ranks) survives, no interface of its topology is left, its work
    directory (switch logs, plans, results, training logs) is gone and no other one of this process
    remains."""
    import glob
    import os
    import tempfile

    from topologies.lab_state import process_start, workdir_prefix

    assert left == []
    assert lab.network.workdir is not None and not lab.network.workdir.exists()
    prefix = workdir_prefix(os.getpid(), process_start(os.getpid()))  # this process's runs, not a reused pid's
    assert glob.glob(os.path.join(tempfile.gettempdir(), prefix + "*")) == []
    assert lab.network.resources.leftovers() == []
    assert root_links() & lab_interfaces(lab.spec) == set()
    assert host_namespaces_gone(lab.network.resources)
    switch_pids = [p["pid"] for p in lab.network.resources.processes if p["what"].startswith("switch ")]
    assert switch_pids and not any(os.path.exists(f"/proc/{pid}") for pid in switch_pids)
