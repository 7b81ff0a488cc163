"""Shared set-up of the end-to-end tests: a topology file on the in-process network (softswitch
running p4src/ina.p4 per switch, virtual clock), routes installed, jobs planned by the controller."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def network(name: str, seed: int = 0, program: str = "v1model", **kwargs):
    """The topology `name` (a file of topologies/ or a Topology) on the in-process network with routes
    installed; `program`: "v1model" (p4src/ina.p4) or "tna" (p4src/tna/ina_tna.p4)."""
    pytest.importorskip("softswitch.switch", reason="softswitch pipeline (softswitch.switch) not in this checkout")
    from controller.topology_yaml import load_topology
    from topologies.inprocess import InProcessNetwork

    topo = load_topology(TOPOLOGIES / f"{name}.yaml") if isinstance(name, str) else name
    net = InProcessNetwork(topo, seed=seed, program=program, **kwargs)
    net.install_routes()
    return net


def star_topology(n_workers: int, bandwidth: float = 1000.0, delay: float = 0.05):
    """One switch, n workers and a server (for up to 16 workers behind one aggregating switch); links of
    ``bandwidth`` Mbit/s and ``delay`` ms."""
    from controller.topology import Topology

    topo = Topology(name=f"star{n_workers}")
    topo.add_switch("s1", 1)
    for i in range(n_workers + 1):
        name = f"h{i + 1}"
        topo.add_host(
            name, f"10.0.0.{i + 1}", f"02:00:00:00:00:{i + 1:02x}", role="server" if i == n_workers else "worker"
        )
        topo.add_link(name, 0, "s1", i + 1, bandwidth=bandwidth, delay=delay)
    return topo.validate() or topo


def workers_and_servers(topo, n_workers: int | None = None):
    workers = [h.name for h in topo.role_hosts("worker")]
    servers = [h.name for h in topo.role_hosts("server")]
    if not servers:  # no roles in the file: the last host serves
        hosts = [h.name for h in topo.hosts]
        workers, servers = hosts[:-1], hosts[-1:]
    return workers[:n_workers] if n_workers else workers, servers


def int_inputs(n: int, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-(10**6), 10**6, size).astype(np.int32) for _ in range(n)]


def float_inputs(n: int, size: int, seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=size) * 10.0 ** rng.integers(-2, 3, size)).astype(dtype) for _ in range(n)]


def assert_float_close(outs, xs):
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    for out in outs:
        assert out.dtype == xs[0].dtype and out.shape == xs[0].shape
        assert np.abs(out.astype(np.float64) - exact).max() <= 1e-6 * np.abs(exact).max()


class NoRegisterReads:
    """A switch's P4Runtime client that refuses register reads, as BMv2's does ("Register reads are not
    supported yet"): what a controller that restarts sees of a BMv2 switch's slot owners."""

    def __init__(self, client):
        self.client = client

    def read(self, entities):
        from controller.errors import P4RuntimeError

        if any(e.HasField("register_entry") for e in entities):
            raise P4RuntimeError("Read failed: Register reads are not supported yet")
        return self.client.read(entities)

    def __getattr__(self, name):
        return getattr(self.client, name)
