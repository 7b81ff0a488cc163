"""Where a lab's packets are lost: every counter of a drop between two agents, read from the kernel and
the switches, so a resent chunk can be traced to the component that dropped it.

``DropCounters(network).read()`` takes one snapshot, ``drops_between(before, after)`` the growth over a
round, ``drops_line`` one line of it. Components (keys of a snapshot):

- ``qdisc``: each interface's root qdisc (the links' tc tbf shaping, the queue a switch's port buffer
  stands for; a netem child's drops count at its tbf too): ``drops``, ``overlimits`` (packets that had
  to wait for tokens), ``backlog`` bytes now; both ends of every link, hosts' ends in their namespaces;
- ``veth``: each interface's ``rx_dropped`` + ``tx_dropped`` (a veth whose peer's queue was full);
- ``ring``: each switch port's frames the kernel dropped before the switch read them (a full receive
  ring or socket buffer), and those longer than what received them (``rx_truncated``); softswitch's
  ``--stats-file``, asked with SIGUSR1;
- ``udp``: each host's UDP ``RcvbufErrors`` (a full socket receive buffer: an agent that did not keep up),
  ``InErrors`` (those and other datagrams lost on receive) and ``SndbufErrors`` (sends the kernel
  refused: the host's own qdisc dropped them, counted there too, or a full send buffer), from
  /proc/PID/net/snmp of the host's namespace;
- ``softnet``: the machine's per-CPU input backlog drops (/proc/net/softnet_stat, all namespaces).

A root-namespace sampler (``BacklogSampler``) records the largest backlog of each switch-side qdisc
during a round; the hosts' ends are read before and after only (a tc process per host namespace per
sample would take a share of a core on a 2-core machine).
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from topologies.lab_network import LabNetwork, intf_name

QDISC_FIELDS = ("drops", "overlimits")
UDP_FIELDS = ("RcvbufErrors", "SndbufErrors", "InErrors")


def qdisc_stats(pid: int | None = None) -> dict[str, dict[str, int]]:
    """Root qdisc of every interface of a namespace (that of ``pid``; None: the root namespace):
    interface -> {"kind", "drops", "overlimits", "backlog"}."""
    argv = ["tc", "-s", "-j", "qdisc", "show"]
    if pid is not None:
        argv = ["nsenter", "-t", str(pid), "-n", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    if out.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {out.stderr.strip() or out.returncode}")
    stats = {}
    for q in json.loads(out.stdout or "[]"):
        if q.get("root"):
            row = {k: int(q.get(k, 0)) for k in QDISC_FIELDS}
            stats[q["dev"]] = {"kind": q.get("kind", "?"), **row, "backlog": int(q.get("backlog", 0))}
    return stats


def interface_drops(net_dev: str) -> dict[str, int]:
    """rx_dropped + tx_dropped of every interface in a /proc/net/dev text."""
    out = {}
    for line in net_dev.splitlines()[2:]:
        name, _, fields = line.partition(":")
        values = fields.split()
        if len(values) >= 12:
            out[name.strip()] = int(values[3]) + int(values[11])  # receive drop, transmit drop
    return out


def udp_errors(snmp: str) -> dict[str, int]:
    """The Udp: error counters of a /proc/net/snmp text."""
    rows = [line.split()[1:] for line in snmp.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return {}
    names, values = rows[0], rows[1]
    return {n: int(v) for n, v in zip(names, values, strict=False) if n in UDP_FIELDS}


def softnet_counts() -> list[tuple[int, int]]:
    """Per CPU: frames its receive softirq has taken off the backlog and frames dropped because the
    backlog was full (netdev_max_backlog) so far (/proc/net/softnet_stat, first two columns)."""
    rows = Path("/proc/net/softnet_stat").read_text().split("\n")
    return [(int(r.split()[0], 16), int(r.split()[1], 16)) for r in rows if r.strip()]


def softnet_drops() -> dict[str, int]:
    """Each CPU's input backlog drops so far."""
    return {f"cpu{i}": dropped for i, (_, dropped) in enumerate(softnet_counts())}


class DropCounters:
    """Snapshots of every drop counter of a running LabNetwork."""

    def __init__(self, network: LabNetwork):
        self.network = network
        hosts = {h.name for h in network.spec.hosts}
        # the switch-side ends of the links live in the root namespace, hosts' ends in their own
        self.host_ends = {h.name: intf_name(h.name, h.port) for h in network.spec.hosts}
        self.switch_ends = [
            intf_name(node, port)
            for link in network.spec.links
            for node, port in ((link.a, link.a_port), (link.b, link.b_port))
            if node not in hosts
        ]

    def read(self) -> dict[str, dict]:
        net = self.network.net
        root_qdiscs = qdisc_stats()
        snap: dict[str, dict] = {"qdisc": {}, "veth": {}, "ring": {}, "udp": {}, "softnet": softnet_drops()}
        root_dev = interface_drops(Path("/proc/net/dev").read_text())
        for intf in self.switch_ends:
            if intf in root_qdiscs:
                snap["qdisc"][intf] = root_qdiscs[intf]
            snap["veth"][intf] = root_dev.get(intf, 0)
        for host, intf in self.host_ends.items():
            pid = net[host].pid
            q = qdisc_stats(pid)
            if intf in q:
                snap["qdisc"][intf] = q[intf]
            snap["veth"][intf] = interface_drops(Path(f"/proc/{pid}/net/dev").read_text()).get(intf, 0)
            snap["udp"][host] = udp_errors(Path(f"/proc/{pid}/net/snmp").read_text())
        for sw in net.switches:
            for port, row in sw.port_stats().items():
                snap["ring"][f"{sw.name} port {port}"] = row["kernel_drops"] + row.get("rx_truncated", 0)
        return snap


def drops_between(before: dict[str, dict], after: dict[str, dict], backlog_max: dict[str, int] | None = None) -> dict:
    """What grew between two snapshots, per component; every counter that did not grow is left out.
    ``backlog_max``: the sampler's largest backlog per interface (bytes), kept for every qdisc that
    dropped or queued."""
    out: dict[str, dict] = {}
    qdiscs = {}
    for dev, now in after["qdisc"].items():
        was = before["qdisc"].get(dev, {})
        grew = {k: now[k] - was.get(k, 0) for k in QDISC_FIELDS if now[k] - was.get(k, 0)}
        peak = (backlog_max or {}).get(dev, 0)
        if grew or peak:
            qdiscs[dev] = {"kind": now["kind"], **grew, **({"backlog_max": peak} if peak else {})}
    out["qdisc"] = qdiscs
    for part in ("veth", "ring", "softnet"):
        out[part] = {k: v - before[part].get(k, 0) for k, v in after[part].items() if v - before[part].get(k, 0)}
    udp = {}
    for host, now in after["udp"].items():
        grew = {k: v - before["udp"].get(host, {}).get(k, 0) for k, v in now.items()}
        grew = {k: v for k, v in grew.items() if v}
        if grew:
            udp[host] = grew
    out["udp"] = udp
    return out


def drop_total(delta: dict) -> int:
    """Packets lost in all (a qdisc's overlimits and backlog are not losses; a refused send is counted at
    the qdisc that dropped it)."""
    return (
        sum(q.get("drops", 0) for q in delta["qdisc"].values())
        + sum(delta["veth"].values())
        + sum(delta["ring"].values())
        + sum(delta["softnet"].values())
        + sum(r.get("InErrors", 0) for r in delta["udp"].values())
    )


def drops_line(delta: dict) -> str:
    """One line: every place that lost packets, with how many ("drops: tbf s1-eth2 12, ring sp1 port 3 4");
    "drops: none" when nothing was lost."""
    parts = [f"{q['kind']} {dev} {q['drops']}" for dev, q in sorted(delta["qdisc"].items()) if q.get("drops")]
    parts += [f"veth {dev} {n}" for dev, n in sorted(delta["veth"].items())]
    parts += [f"ring {port} {n}" for port, n in sorted(delta["ring"].items())]
    parts += [f"softnet {cpu} {n}" for cpu, n in sorted(delta["softnet"].items())]
    for host, row in sorted(delta["udp"].items()):
        other = row.get("InErrors", 0) - row.get("RcvbufErrors", 0)  # InErrors counts RcvbufErrors too
        parts += [f"udp {host} RcvbufErrors {row['RcvbufErrors']}"] if row.get("RcvbufErrors") else []
        parts += [f"udp {host} other InErrors {other}"] if other else []
        parts += [f"udp {host} sends refused {row['SndbufErrors']}"] if row.get("SndbufErrors") else []
    return "drops: " + (", ".join(parts) if parts else "none")


class BacklogSampler:
    """A thread that reads the root namespace's qdiscs every ``interval`` seconds while it runs and keeps
    each interface's largest backlog (bytes)."""

    def __init__(self, interfaces: list[str], interval: float = 0.2):
        self.interfaces = set(interfaces)
        self.interval = interval
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> BacklogSampler:
        self._thread = threading.Thread(target=self._run, name="backlog-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for dev, q in qdisc_stats().items():
                    if dev in self.interfaces and q["backlog"] > self.peak.get(dev, 0):
                        self.peak[dev] = q["backlog"]
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass  # a sample missed; the drop counters are read before and after anyway
            self._stop.wait(self.interval)
