"""The installer against softswitch P4Runtime servers in this process (127.0.0.1, ephemeral ports):
pipeline push, topology entries, job entries and groups read back, reinstall, job removal, counters."""

from pathlib import Path

import pytest

from controller.generators import leaf_spine
from controller.installer import T_ADMISSION, T_JOBS, T_REWRITE, T_ROUTES, Installer
from controller.p4rt import P4RuntimeError, decode
from controller.planner import PlanOptions, plan_job
from controller.resources import Resources
from protocol import constants as C

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "ina.p4"


def _compiled():
    from softswitch.cli import device_config_of
    from softswitch.compiler import compile_program
    from softswitch.p4info import build_p4info
    from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService

    program = compile_program(str(PROGRAM), include_dirs=(str(PROGRAM.parent),))
    return build_p4info(program.info), device_config_of(program, str(PROGRAM)), P4RuntimeServer, P4RuntimeService


@pytest.fixture
def network():
    p4info, config, Server, Service = _compiled()
    from softswitch.switch import Switch

    topo = leaf_spine()
    servers = []
    addresses = {}
    for s in topo.switches:
        service = Service(
            None,
            device_id=s.device_id,
            include_dirs=[str(PROGRAM.parent)],
            make_switch=lambda prog, d=s.device_id: Switch(prog, device_id=d),
        )
        srv = Server(service, "127.0.0.1:0").start()
        servers.append(srv)
        addresses[s.name] = srv.address
    # a push builds the program's native library when the shared cache has none yet (ina.p4's C: about
    # 8 s of gcc on an idle core, several times that on a loaded machine)
    inst = Installer(topo, p4info, config, addresses, timeout=120)
    yield topo, inst
    inst.close()
    for srv in servers:
        srv.stop()


def _jobs(inst, switch):
    out = {}
    for e in inst.read_table(switch, T_JOBS):
        key = tuple(decode(m.exact.value) for m in sorted(e.match, key=lambda m: m.field_id))
        out[key] = [decode(p.value) for p in sorted(e.action.action.params, key=lambda p: p.param_id)]
    return out


def test_install_reinstall_and_remove(network):
    topo, inst = network
    inst.push_pipeline()
    n = inst.install_topology()
    assert n == len(topo.switches) * (1 + len(topo.hosts)) + len(topo.hosts)
    routes = inst.read_table("l1", T_ROUTES)
    assert len(routes) == len(topo.hosts)
    assert len(inst.read_table("l4", T_REWRITE)) == 3  # h7, h8 and the server h10
    assert inst.install_topology() == n  # idempotent: modify, no duplicates
    assert len(inst.read_table("l1", T_ROUTES)) == len(topo.hosts)

    res = Resources.for_topology(topo)
    plan = plan_job(
        topo, [f"h{i}" for i in range(1, 9)], ["h9"], PlanOptions(result_mode="multicast", pool_size=64), res
    )
    inst.install_job(plan)
    cfg = {c.switch: c for c in plan.switches}
    # params in P4Info order: job_index, slot_base, pool_size, max_fan_in, aggregates, result_group
    assert _jobs(inst, "sp1") == {(plan.job_id, 0): [plan.job_index, 0, 64, 3, 1, cfg["sp1"].result_group]}
    groups = inst.read_groups("l1")
    assert groups[cfg["l1"].result_group] == [(1, 0), (2, 1)]
    inst.install_job(plan)  # reinstall: still one entry
    assert len(_jobs(inst, "sp1")) == 1

    other = plan_job(topo, ["h1", "h3"], ["h10"], PlanOptions(), res)
    inst.install_job(other)
    assert set(_jobs(inst, "sp1")) == {(plan.job_id, 0), (other.job_id, 0)}
    admission = sum(len(entries) for entries in inst.admission_entries(plan).values())
    assert admission == 5 + 5 + 5 + 6 + 6  # l1, l2, l4: 2 children; l3, sp1: 3; a parent port, 2 catch-alls each
    assert inst.remove_job(plan) == len(plan.switches) + len({c.switch for c in plan.switches}) + admission
    assert set(_jobs(inst, "sp1")) == {(other.job_id, 0)}
    kept = {decode(e.match[0].exact.value) for e in inst.read_table("sp1", T_ADMISSION)}
    assert kept == {other.job_id}  # the other job stays guarded
    assert cfg["l1"].result_group not in inst.read_groups("l1")
    assert inst.remove_job(plan) == 0  # already gone

    counters = inst.read_counter("sp1", "InaIngress.ina_stats", [0, 1])
    assert counters == {0: (0, 0), 1: (0, 0)}


def test_unreachable_switch_is_named():
    topo = leaf_spine()
    inst = Installer(topo, addresses={"l1": "127.0.0.1:1"}, timeout=1)
    with pytest.raises(P4RuntimeError, match="switch l1: no P4Runtime server at 127.0.0.1:1"):
        inst.install_topology(["l1"])


def test_cli_install_and_counters(network, tmp_path, capsys):
    from google.protobuf import text_format

    from controller.cli import main
    from controller.topology_yaml import save_topology

    topo, inst = network
    p4info = tmp_path / "ina.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(inst.p4info))
    config = tmp_path / "ina.p4"
    config.write_bytes(inst.device_config)
    topo_file = tmp_path / "ls.yaml"
    save_topology(topo, topo_file)
    addr = [a for s in topo.switches for a in ("--address", f"{s.name}={inst.addresses[s.name]}")]
    code = main(
        [
            "install",
            str(topo_file),
            "--p4info",
            str(p4info),
            "--device-config",
            str(config),
            *addr,
            "--workers",
            "h1",
            "h2",
            "--server",
            "h9",
            "--plan-out",
            str(tmp_path / "plan.json"),
            "--timeout",
            "120",  # each switch compiles the device config (seconds of CPU for ina.p4), more on a loaded machine
        ]
    )
    out = capsys.readouterr().out
    assert (
        code == 0 and "pipeline pushed to 6 switches" in out and "job 1: 19 entries written" in out
    )  # 3 ina_jobs, admission: l1 5, sp1 4, l3 4; a multicast group for the results on each (the default mode)
    # the default pool; the results' multicast group 1 (the default result mode)
    # l1 aggregates both workers: the tree's root (aggregates = AGGREGATES_ROOT), its results its own
    assert _jobs(inst, "l1") == {(1, 0): [0, 0, PlanOptions().pool_size, 2, C.AGGREGATES_ROOT, 1]}
    code = main(["counters", str(topo_file), "--switch", "l1", "--all", *addr])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("l1 job index 0:") and "grad_aggregated" in out and "drop unknown_job" in out
    # a second install (another controller run): job 1's set_job entries are on the switches, so the next
    # job's id comes after it rather than starting the rotation at 1 again
    code = main(["install", str(topo_file), *addr, "--workers", "h3", "h4", "--server", "h10", "--timeout", "120"])
    out = capsys.readouterr().out
    assert code == 0 and "job 2: " in out


def test_routing_around_a_dead_spine_rewrites_only_changed_routes_and_keeps_old_plans_readable():
    """route_around (the lab's fault monitor, after a re-plan): the leaves whose routes crossed the dead
    spine get new ones, nothing else is written, the same failure again writes nothing, and the ports of a
    plan made before the failure (its entries are removed afterwards) are still read off the topology."""
    from softswitch.compiler import compile_program
    from softswitch.p4info import build_p4info

    topo = leaf_spine()
    inst = Installer(topo, p4info=build_p4info(compile_program(str(PROGRAM)).info))
    written: dict[str, int] = {}

    def upsert(switch, tables, groups=None):
        written[switch] = len(tables)
        return len(tables)

    inst._upsert = upsert
    plan = plan_job(topo, ["h1", "h3", "h5", "h7"], ["h9"], PlanOptions())
    ports = inst.admission_ports(plan)
    hosts = [h.name for h in topo.hosts]
    before = {h: dict(inst._toward(h)) for h in hosts}
    dead = "sp1"
    crossed = {s for h in hosts for s, parent in before[h].items() if parent == dead and s != dead}
    assert crossed  # fewest hops ties between the spines: some leaf routed over sp1
    count = inst.route_around({dead}, set())
    assert set(written) == crossed and count == sum(written.values())
    assert all(inst._toward(h).get(s) not in (dead, None) for h in hosts for s in crossed if s != h)
    written.clear()
    assert inst.route_around({dead}, set()) == 0 and written == {}
    assert inst.admission_ports(plan) == ports


def test_an_empty_list_of_switches_writes_to_none():
    """``install_topology([])`` / ``push_pipeline([])``: no switch (route_around with nothing changed);
    None is what means every switch."""
    from p4.config.v1 import p4info_pb2

    topo = leaf_spine()
    connected: list[str] = []

    def connect(switch):
        connected.append(switch)
        raise P4RuntimeError(f"switch {switch}: not to be touched")

    inst = Installer(topo, p4info_pb2.P4Info(), b"pipeline", connect=connect)
    assert inst.install_topology([]) == 0
    inst.push_pipeline([])
    assert connected == []
    with pytest.raises(P4RuntimeError, match="not to be touched"):
        inst.push_pipeline()  # None: every switch, the first one first
    assert connected == [topo.switches[0].name]
