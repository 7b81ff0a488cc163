"""Real BMv2 and softswitch give the same packets for every STF scenario of p4src/ina.p4,
p4src/ina_k256.p4 and p4src/ina_k344.p4 (the default program at a 1500-byte MTU), the 2:4 and 1:4 ones included (whose expansion must stay within BMv2's headroom:
PACKET_GROWTH_LIMIT_BYTES), and BMv2's counters are the ones each scenario checks.

Each scenario runs packet by packet on both switches: softswitch's outputs for a packet (checked against
the scenario's expectations by test_dataplane_stf.py) are what BMv2 must send for it, the same frames on
the same ports. A packet softswitch drops is done on BMv2 once BMv2 counted a drop (every drop of the
program is counted in ``drop_stats``). Needs the reference toolchain (p4c-bm2-ss, simple_switch_grpc) and
root for the veth pairs; skips otherwise. Compiled programs are cached under build/bmv2-stf/ (bmv2.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import bmv2
import pytest

from softswitch.stf import StfRunner, parse_stf
from softswitch.switch import Switch

HERE = Path(__file__).resolve().parent
INA_P4 = HERE.parents[1] / "p4src" / "ina.p4"
INA_K256_P4 = HERE.parents[1] / "p4src" / "ina_k256.p4"
INA_K344_P4 = HERE.parents[1] / "p4src" / "ina_k344.p4"
CASES = [
    *[("ina_program", INA_P4, path) for path in sorted((HERE / "stf").glob("*.stf"))],
    *[("ina_program_k256", INA_K256_P4, path) for path in sorted((HERE / "stf" / "k256").glob("*.stf"))],
    *[("ina_program_k344", INA_K344_P4, path) for path in sorted((HERE / "stf" / "k344").glob("*.stf"))],
]
PORTS = range(1, 9)  # the scenarios' ports (workers 1-3, server 4, a few more) and spare ones
PACKET_TIMEOUT_S = 10.0  # for BMv2 to send (or count the drop of) one packet: a bound, not a pace
QUIET_S = 0.3  # after the last packet: nothing more may come out


@pytest.fixture(scope="module")
def bmv2_switch(tmp_path_factory):
    reason = bmv2.missing()
    if reason:
        pytest.skip(reason)
    switch = bmv2.Bmv2Switch(PORTS, log=tmp_path_factory.mktemp("bmv2") / "simple_switch_grpc.log")
    yield switch
    switch.close()


@pytest.mark.parametrize("fixture, program, path", CASES, ids=lambda c: c.stem if isinstance(c, Path) else "")
def test_bmv2_sends_softswitchs_packets(fixture, program, path, bmv2_switch, request):
    bmv2_switch.load(*bmv2.compiled(program))
    soft = Switch(request.getfixturevalue(fixture), name=path.stem)
    runner = StfRunner(soft, str(path))
    nodes: list[list[tuple[int, int]]] = []
    groups: dict[int, list[tuple[int, int]]] = {}
    differences = []
    for command in parse_stf(path.read_text(), str(path)):
        op, a = command.op, command.args
        if op == "packet":
            want = sorted((port, bytes(frame)) for port, frame in soft.process(a["port"], a["data"]))
            got = _bmv2_outputs(bmv2_switch, a["port"], a["data"], len(want))
            if sorted(got) != want:
                differences.append(f"line {command.line}: softswitch sent {_show(want)}, BMv2 {_show(sorted(got))}")
            continue
        runner.execute(command)
        if op == "setdefault":
            bmv2_switch.setdefault(a["table"], a["action"], a["args"])
        elif op == "add":
            bmv2_switch.add(a["table"], a["keys"], a["action"], a["args"], a["priority"])
        elif op == "mc_node_create":
            nodes.append([(port, a["rid"]) for port in a["ports"]])
        elif op == "mc_node_associate":
            groups.setdefault(a["group"], []).extend(nodes[a["handle"]])
            bmv2_switch.multicast_group(a["group"], groups[a["group"]])
    late = bmv2_switch.receive(1, QUIET_S)
    assert not late, f"BMv2 sent more after the last packet: {_show(late)}"
    assert not differences, "\n".join(differences)
    problems = []
    for name, index, want in _counter_checks(path.read_text()):
        got = bmv2_switch.counter(name, [index]).get(index, (0, 0))[0]
        if got != want:
            problems.append(f"BMv2 counter {name}[{index}] = {got} packets, the scenario expects {want}")
    assert not problems, "\n".join(problems)


def _bmv2_outputs(switch: bmv2.Bmv2Switch, port: int, frame: bytes, expected: int) -> list[tuple[int, bytes]]:
    """What BMv2 sends for one packet: ``expected`` frames, or, when softswitch sent none, nothing once
    BMv2 counted the packet's drop."""
    if expected:
        switch.send(port, frame)
        return switch.receive(expected, PACKET_TIMEOUT_S)
    before = _drops(switch)
    switch.send(port, frame)
    deadline = time.monotonic() + PACKET_TIMEOUT_S
    while _drops(switch) == before and time.monotonic() < deadline:
        time.sleep(0.01)  # polling BMv2's counter: the drop is counted when BMv2 is done with the packet
    return switch.drain()


def _drops(switch: bmv2.Bmv2Switch) -> int:
    return sum(packets for packets, _ in switch.counter("InaIngress.drop_stats", range(32)).values())


def _counter_checks(text: str):
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["#", "check_counter"]:
            _, _, name, index, _kind, value = words
            yield name, int(index), int(value)


def _show(frames: list[tuple[int, bytes]]) -> str:
    return "[" + ", ".join(f"port {port}: {frame.hex()}" for port, frame in frames) + "]" if frames else "nothing"
