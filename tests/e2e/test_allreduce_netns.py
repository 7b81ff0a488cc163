"""The same allreduce over kernel UDP sockets: agents in network namespaces, one softswitch process
(p4src/ina.p4, or its TNA version) on veth links, entries written over P4Runtime by the controller's
installer."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from netns_agent import inputs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("ip") is None
    or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0,
    reason="needs root and 'ip netns' (iproute2) to build namespaces and veth pairs",
)

TAG = os.getpid() % 10000
N_WORKERS, SIZE = 4, 500


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def star_netns():
    pytest.importorskip("softswitch.switch", reason="softswitch pipeline not in this checkout")
    from controller.topology_yaml import load_topology

    topo = load_topology(ROOT / "topologies" / "star.yaml")
    namespaces, links = [], []
    try:
        for h in topo.hosts:
            ns, sw_if = f"ina{TAG}{h.name}", f"ina{TAG}{h.name}s"
            port = topo.links_of(h.name)[0].port_of("s1")
            sh("ip", "netns", "add", ns)
            namespaces.append(ns)
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
            links.append((port, sw_if))
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
            sh("ip", "link", "set", sw_if, "up")
            inside = ("ip", "netns", "exec", ns)
            sh(*inside, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            sh(*inside, "ip", "link", "set", "lo", "up")
            sh(*inside, "ip", "link", "set", "eth0", "address", h.mac)
            sh(*inside, "ip", "addr", "add", f"{h.ip}/24", "dev", "eth0")
            sh(*inside, "ip", "link", "set", "eth0", "up")
            sh(*inside, "ethtool", "-K", "eth0", "tx", "off", check=False)
            for other in topo.hosts:
                if other.name != h.name:
                    sh(*inside, "ip", "neigh", "add", other.ip, "lladdr", other.mac, "dev", "eth0", "nud", "permanent")
        yield topo, namespaces, links
    finally:
        for _, sw_if in links:
            sh("ip", "link", "del", sw_if, check=False)
        for ns in namespaces:
            sh("ip", "netns", "del", ns, check=False)


def test_allreduce_over_kernel_udp_through_a_softswitch_process(star_netns, tmp_path, program):
    from controller.installer import Installer
    from controller.planner import PlanOptions, plan_job
    from controller.programs import PROGRAM_FILES

    topo, namespaces, links = star_netns
    addr = f"127.0.0.1:{_free_port()}"
    cmd = [str(ROOT / ".venv" / "bin" / "softswitch"), "--device-id", "1", "--grpc-server-addr", addr]
    for port, iface in links:
        cmd += ["-i", f"{port}@{iface}"]
    switch = subprocess.Popen(
        cmd + [str(PROGRAM_FILES[program])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    procs = []
    try:
        workers = [h.name for h in topo.role_hosts("worker")][:N_WORKERS]
        server = topo.role_hosts("server")[0].name
        # results from the switch where its program can send them (ina.p4; the TNA program keeps the server's)
        plan = plan_job(topo, workers, [server], PlanOptions(root_results=program != "tna"))
        plan_path = tmp_path / "plan.json"
        plan_path.write_text(plan.to_json())
        deadline = time.monotonic() + 60
        while True:
            try:
                with Installer(topo, addresses={"s1": addr}) as inst:
                    assert inst.program() == program  # learnt from the P4Info the switch serves
                    inst.install_topology()
                    inst.install_job(plan)
                break
            except Exception:
                if time.monotonic() > deadline or switch.poll() is not None:
                    raise
                time.sleep(0.5)
        agent = [sys.executable, str(Path(__file__).parent / "netns_agent.py"), str(plan_path)]
        ns_of = {h.name: ns for h, ns in zip(topo.hosts, namespaces, strict=True)}
        srv = subprocess.Popen(
            ["ip", "netns", "exec", ns_of[server], *agent, "server", str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(srv)
        assert srv.stdout.readline().strip() == "ready"
        for w in plan.workers:
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns_of[w.name], *agent, str(w.rank), str(tmp_path), str(SIZE)],
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for p in procs[1:]:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err.strip().splitlines()[-1] if err.strip() else "worker failed"
        ints = [inputs(r, SIZE)[0] for r in range(len(workers))]
        floats = [inputs(r, SIZE)[1].astype(np.float64) for r in range(len(workers))]
        exact = np.sum(floats, axis=0)
        for r in range(len(workers)):
            np.testing.assert_array_equal(np.load(tmp_path / f"int{r}.npy"), np.sum(ints, axis=0))
            got = np.load(tmp_path / f"float{r}.npy")
            assert np.abs(got - exact).max() <= 1e-6 * np.abs(exact).max()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        switch.terminate()
        try:
            switch.wait(10)
        except subprocess.TimeoutExpired:
            switch.kill()
            switch.wait()
