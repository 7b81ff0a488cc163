"""Shared pieces of the lab tests: a two-host spec and a look at the root namespace's interfaces."""

import subprocess

from topologies.lab_network import LabHost, LabLink, LabSpec, LabSwitch


def tiny_spec() -> LabSpec:
    return LabSpec("tiny", [LabHost("lth1", "10.0.0.1", "02:00:00:00:00:01"),
                            LabHost("lth2", "10.0.0.2", "02:00:00:00:00:02")],
                   [LabSwitch("lt1", 1)],
                   [LabLink("lth1", 0, "lt1", 1, 100.0), LabLink("lth2", 0, "lt1", 2, 100.0)])


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}
