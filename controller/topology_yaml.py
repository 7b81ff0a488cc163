"""Reading and writing topology files (YAML).

Format::

    name: star
    hosts:
      - {name: h1, ip: 10.0.0.1, mac: "02:00:00:00:00:01", role: worker}   # role optional
    switches:
      - {name: s1, device_id: 1, grpc: "127.0.0.1:50001", slots: 4096}     # grpc, slots optional
    links:
      - {ends: [h1, "s1:1"], bandwidth: 1000, delay: 0.1, loss: 0, mtu: 1500}  # Mbit/s, ms, %, bytes

``loss`` (default 0) and ``mtu`` (default 1500; 9000 for jumbo frames) are optional. The links' MTU decides
the program a switch runs by default (``controller.programs.default_program``): the largest K whose
packets fit every link.

An endpoint is ``node:port``; a host endpoint may omit the port (its interface is port 0).
Every problem is reported as TopologyError with a one-line message naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controller.errors import TopologyError
from controller.limits import DEFAULT_MTU
from controller.topology import DEFAULT_SLOTS, Host, Link, Switch, Topology

_HOST_KEYS = {"name", "ip", "mac", "role"}
_SWITCH_KEYS = {"name", "device_id", "grpc", "slots"}
_LINK_KEYS = {"ends", "bandwidth", "delay", "loss", "mtu"}


def load_topology(path: str | Path) -> Topology:
    """Read, parse and validate a topology file (YAML: docs/design-decisions.md, "Topology files").

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Topology

    Raises
    ------
    TopologyError
        The file cannot be read, is not YAML, or describes an unusable network; the message names the
        file and the problem.

    Examples
    --------
    >>> topo = load_topology("topologies/star.yaml")
    >>> topo.name, [h.name for h in topo.role_hosts("server")]
    ('star', ['h5'])
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"cannot read topology {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TopologyError(
            f"topology {path} is not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x})"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise TopologyError(f"{path.name}: invalid YAML{where}: {problem}") from None
    return topology_from_dict(data, default_name=path.stem)


def topology_from_dict(data: Any, default_name: str = "topology") -> Topology:
    """A validated Topology from parsed YAML data (``hosts``, ``switches``, ``links`` sections).

    Parameters
    ----------
    data : dict
        As ``yaml.safe_load`` gives it.
    default_name : str
        The name when ``data`` has none.

    Raises
    ------
    TopologyError
        A missing section, an unknown key, a malformed link end, or what ``Topology.validate`` finds.

    Examples
    --------
    >>> data = {
    ...     "hosts": [{"name": "h1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01"}],
    ...     "switches": [{"name": "s1", "device_id": 1}],
    ...     "links": [{"ends": ["h1", "s1:1"], "bandwidth": 1000, "delay": 0.1}],
    ... }
    >>> topology_from_dict(data).links[0].label
    'h1-s1'
    """
    if not isinstance(data, dict):
        raise TopologyError("a topology file must be a mapping with hosts, switches and links")
    unknown = set(data) - {"name", "hosts", "switches", "links"}
    if unknown:
        raise TopologyError(f"unknown top-level key '{sorted(unknown)[0]}' (expected name, hosts, switches, links)")
    topo = Topology(name=str(data.get("name") or default_name))
    for i, item in enumerate(_section(data, "hosts")):
        entry = _entry(item, "host", i, _HOST_KEYS, ("name", "ip", "mac"))
        topo.hosts.append(Host(str(entry["name"]), str(entry["ip"]), str(entry["mac"]), entry.get("role"), index=i))
    for i, item in enumerate(_section(data, "switches")):
        entry = _entry(item, "switch", i, _SWITCH_KEYS, ("name", "device_id"))
        topo.switches.append(
            Switch(
                str(entry["name"]), entry["device_id"], str(entry.get("grpc") or ""), entry.get("slots", DEFAULT_SLOTS)
            )
        )
    for i, item in enumerate(_section(data, "links")):
        entry = _entry(item, "link", i, _LINK_KEYS, ("ends",))
        ends = entry["ends"]
        if not isinstance(ends, list) or len(ends) != 2:
            raise TopologyError(f"link {i}: ends must be a list of two endpoints like [h1, 's1:1']")
        (a, a_port), (b, b_port) = (_endpoint(e, i) for e in ends)
        label = f"{a}-{b}"
        for key in ("bandwidth", "delay"):
            if entry.get(key) is None:
                raise TopologyError(f"missing {key} on link {label}")
        topo.links.append(
            Link(
                a,
                a_port,
                b,
                b_port,
                entry["bandwidth"],
                entry["delay"],
                entry.get("loss", 0.0),
                id=i,
                mtu=entry.get("mtu", DEFAULT_MTU),
            )
        )
    return topo.validate()


def topology_to_dict(topo: Topology) -> dict[str, Any]:
    """The data of a topology file for ``topo`` (what ``topology_from_dict`` reads back).

    Examples
    --------
    >>> from controller.generators import star
    >>> topology_to_dict(star(1))["links"][0]
    {'ends': ['h1', 's1:1'], 'bandwidth': 1000.0, 'delay': 0.1}
    """

    def end(node: str, port: int) -> str:
        return node if topo.is_host(node) and port == 0 else f"{node}:{port}"

    hosts: list[dict[str, Any]] = []
    for h in topo.hosts:
        item: dict[str, Any] = {"name": h.name, "ip": h.ip, "mac": h.mac}
        if h.role:
            item["role"] = h.role
        hosts.append(item)
    switches: list[dict[str, Any]] = []
    for s in topo.switches:
        item = {"name": s.name, "device_id": s.device_id}
        if s.grpc:
            item["grpc"] = s.grpc
        if s.slots != DEFAULT_SLOTS:
            item["slots"] = s.slots
        switches.append(item)
    links: list[dict[str, Any]] = []
    for link in topo.links:
        item = {
            "ends": [end(link.a, link.a_port), end(link.b, link.b_port)],
            "bandwidth": link.bandwidth,
            "delay": link.delay,
        }
        if link.loss:
            item["loss"] = link.loss
        if link.mtu != DEFAULT_MTU:
            item["mtu"] = link.mtu
        links.append(item)
    return {"name": topo.name, "hosts": hosts, "switches": switches, "links": links}


def dump_topology(topo: Topology) -> str:
    """YAML text with one flow-style line per host, switch and link.

    Examples
    --------
    >>> from controller.generators import star
    >>> print(dump_topology(star(1)).splitlines()[0])
    name: star
    """
    data = topology_to_dict(topo)
    lines = [f"name: {data['name']}"]
    for section in ("hosts", "switches", "links"):
        lines.append(f"{section}:")
        for item in data[section]:
            flow = yaml.safe_dump(item, sort_keys=False, default_flow_style=True, width=10**6).strip()
            lines.append(f"  - {flow}")
    return "\n".join(lines) + "\n"


def save_topology(topo: Topology, path: str | Path) -> None:
    """Write ``topo`` to ``path`` as a topology file (``dump_topology``)."""
    Path(path).write_text(dump_topology(topo))


def _section(data: dict[str, Any], key: str) -> list[Any]:
    items = data.get(key)
    if items is None:
        raise TopologyError(f"topology has no '{key}' section")
    if not isinstance(items, list):
        raise TopologyError(f"'{key}' must be a list")
    return items


def _entry(item: Any, kind: str, i: int, allowed: set[str], required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise TopologyError(f"{kind} {i} must be a mapping")
    unknown = set(item) - allowed
    if unknown:
        raise TopologyError(f"{kind} {i}: unknown key '{sorted(unknown)[0]}' (expected {', '.join(sorted(allowed))})")
    for key in required:
        if item.get(key) is None:
            what = f"{kind} {item['name']}" if key != "name" and item.get("name") else f"{kind} {i}"
            raise TopologyError(f"{what} has no {key}")
    return item


def _endpoint(value: Any, i: int) -> tuple[str, int]:
    text = str(value)
    if ":" not in text:
        return text, 0
    node, _, port = text.rpartition(":")
    try:
        return node, int(port)
    except ValueError:
        raise TopologyError(f"link {i}: endpoint {text!r} has a bad port (expected node:port)") from None
