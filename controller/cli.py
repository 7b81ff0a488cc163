"""inactl: the controller's command line.

    inactl topo validate|show FILE          check / list a topology
    inactl topo draw FILE -o out.png [job]  picture with a job's trees and aggregation points
    inactl plan FILE --workers ... --server ... [--policy P | --trees K --height H --min-bw r] [--json]
    inactl install FILE [--p4info F --device-config F] [job]   pipeline, topology entries, a job
    inactl serve FILE [--listen ADDR] [--install ...] [--state F]   run the job service
    inactl jobs [list|show ID|release ID] --controller ADDR
    inactl counters FILE [--switch S] [--job-index N]          ina_stats / drop_stats by name

Errors are one line on stderr: exit status 1, or 2 for a malformed argument (after argparse's usage
line). TLS flags are all or nothing: a CA, certificate or key without ``--tls`` (or the job service's
``--serve-tls-*`` without both certificate and key) is an error, never a plaintext connection.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from controller.cli_options import add_pool_size, add_result_mode, add_server, add_workers, pick_workers, worker_choice
from controller.errors import CliError, ControllerError
from controller.options import (
    AGGREGATION_MODES,
    DEFAULT_AGGREGATION,
    DEFAULT_LOSS_BOUND,
    DEFAULT_PLANNER,
    DEFAULT_POLICY,
    PLANNERS,
    POLICIES,
    PlanOptions,
)
from controller.plan import Hop, JobPlan
from controller.planner import plan_job
from controller.resources import AdoptedJob, Resources
from controller.tls import TlsFiles, address_in_use
from controller.topology import Topology
from controller.topology_yaml import load_topology

if TYPE_CHECKING:
    from controller.installer import Installer
    from controller.jobservice import JobManager

DEFAULT_CONTROLLER = "127.0.0.1:50050"


def _endpoint(text: str) -> str:
    """A HOST:PORT argument (argparse type): without a port, gRPC would dial its default or pick one.

    Examples
    --------
    >>> _endpoint("127.0.0.1:50050")
    '127.0.0.1:50050'
    """
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535 or (":" in host and not host.startswith("[")):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return text


def _client_tls(args: argparse.Namespace) -> TlsFiles | None:
    """The client TLS files of ``--tls``: a CA, certificate, key or server name without ``--tls``, or a
    certificate without its key, is an error naming what is missing (never a silent plaintext channel)."""
    given = [
        flag
        for flag, value in (
            ("--tls-ca", args.tls_ca),
            ("--tls-cert", args.tls_cert),
            ("--tls-key", args.tls_key),
            ("--tls-server-name", args.tls_server_name),
        )
        if value
    ]
    if not args.tls:
        if given:
            raise CliError(f"TLS flags without --tls: {', '.join(given)} (give --tls, or drop them)")
        return None
    if bool(args.tls_cert) != bool(args.tls_key):
        raise CliError("--tls-cert needs --tls-key" if args.tls_cert else "--tls-key needs --tls-cert")
    return TlsFiles(args.tls_cert, args.tls_key, args.tls_ca, server_name=args.tls_server_name)


def _server_tls(args: argparse.Namespace) -> TlsFiles | None:
    """The job service's TLS files: none of ``--serve-tls-*``, or a certificate and its key (and a CA to
    require client certificates)."""
    cert, key, ca = args.serve_tls_cert, args.serve_tls_key, args.serve_tls_ca
    if not (cert or key or ca):
        return None
    if ca and not (cert and key):
        raise CliError("--serve-tls-ca needs --serve-tls-cert and --serve-tls-key")
    if not (cert and key):
        raise CliError("--serve-tls-cert needs --serve-tls-key" if cert else "--serve-tls-key needs --serve-tls-cert")
    return TlsFiles(cert, key, ca, client_auth=bool(ca))


def _write_text(path: str, text: str) -> None:
    """Write an output file; a path that cannot be written is the user's to fix (one line)."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None


def _names(values: list[str] | None) -> list[str]:
    """Host names given as separate words and/or comma-separated."""
    return [n for v in values or [] for n in v.split(",") if n]


def _add_job_args(p: argparse.ArgumentParser, workers_default: str = "the hosts with role worker") -> None:
    g = p.add_argument_group("job")
    add_workers(g, default=workers_default)
    add_server(g)
    g.add_argument(
        "--planner",
        choices=PLANNERS,
        help=f"{' or '.join(PLANNERS)} (default {DEFAULT_PLANNER}; multitree is implied by --trees/--height/--min-bw)",
    )
    g.add_argument(
        "--policy",
        default=DEFAULT_POLICY,
        choices=POLICIES,
        help=f"multi-hop path policy (default {DEFAULT_POLICY})",
    )
    g.add_argument(
        "--aggregation",
        default=DEFAULT_AGGREGATION,
        choices=AGGREGATION_MODES,
        help="aggregate where flows merge (default), at every switch on the way (all), or "
        "nowhere (none: switches forward, the server sums; the parameter-server baseline)",
    )
    add_result_mode(g)
    add_pool_size(g)
    g.add_argument("--job-id", type=int, help="job id (default: lowest free)")
    g.add_argument("--trees", type=int, metavar="K", help="multi-tree: at most K trees")
    g.add_argument("--height", type=float, metavar="H", help="multi-tree: height bound H in ms")
    g.add_argument("--min-bw", type=float, metavar="R", help="multi-tree: residual bandwidth floor r, Mbit/s")
    g.add_argument("--tree-rate", type=float, metavar="B", help="multi-tree: rate cap b per tree, Mbit/s")
    g.add_argument(
        "--loss-bound",
        type=float,
        default=DEFAULT_LOSS_BOUND,
        help=f"multi-tree: throughput loss allowed when lowering the height (default {DEFAULT_LOSS_BOUND})",
    )
    g.add_argument("--seed", type=int, default=0, help="multi-tree: RNG seed for start nodes")


def _options(args: argparse.Namespace) -> PlanOptions:
    tree_args = any(getattr(args, a) is not None for a in ("trees", "height", "min_bw", "tree_rate"))
    opts = PlanOptions(
        planner=args.planner or ("multitree" if tree_args else DEFAULT_PLANNER),
        policy=args.policy,
        aggregation=args.aggregation,
        result_mode=args.result_mode,
        pool_size=args.pool_size,
        job_id=args.job_id,
        loss_bound=args.loss_bound,
        seed=args.seed,
        height=args.height,
        tree_rate=args.tree_rate,
    )
    if args.trees is not None:
        opts.trees = args.trees
    if args.min_bw is not None:
        opts.min_bw = args.min_bw
    return opts


def _job_hosts(topo: Topology, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    workers = pick_workers(worker_choice(args.workers), [h.name for h in topo.role_hosts("worker")], CliError)
    servers = _names(args.server) or [h.name for h in topo.role_hosts("server")]
    if not workers:
        raise CliError("no workers: give --workers (the topology has no hosts with role worker)")
    if not servers:
        raise CliError("no server: give --server (the topology has no host with role server)")
    return workers, servers


def _plan(args: argparse.Namespace) -> tuple[Topology, JobPlan]:
    topo = load_topology(args.file)
    workers, servers = _job_hosts(topo, args)
    return topo, plan_job(topo, workers, servers, _options(args))


# -- output ----------------------------------------------------------------------------------------


def _hop_text(h: Hop) -> str:
    if h.egress_port == 0 and h.switch_id >= 0x8000:
        return f"{h.name}[{h.fan_in}/#{h.child}]"
    return f"{h.name}[agg {h.fan_in}/#{h.child} ->{h.egress_port}]" if h.aggregate else f"{h.name}[->{h.egress_port}]"


def format_plan(plan: JobPlan) -> str:
    """A plan as text for people: trees, each worker's hop list, the server's children, switches.

    Examples
    --------
    >>> from controller.generators import star
    >>> from controller.planner import plan_job
    >>> print(format_plan(plan_job(star(2), ["h1", "h2"], ["h3"])).splitlines()[2])
      h1 (rank 0)  s1[agg 2/#0 ->3] > h3[1/#0]
    """
    lines = [
        f"job {plan.job_id} ({plan.planner}, {plan.policy}, {plan.result_mode} results, "
        f"pool {plan.pool_size} chunks in flight per tree, K={plan.value_count}, job index {plan.job_index})"
    ]
    for t in plan.trees:
        lines.append(
            f"tree {t.tree_id}: root {t.root}, rate {t.rate:g} Mbit/s, weight {t.weight:.3f}, "
            f"height {t.height:.3f} ms, aggregation at {', '.join(t.aggregation_points) or '-'}"
        )
        width = max(len(f"{w.name} (rank {w.rank})") for w in plan.workers)
        for w in plan.workers:
            hops = " > ".join(_hop_text(h) for h in t.grad_hops[w.name])
            lines.append(f"  {f'{w.name} (rank {w.rank})':<{width}}  {hops}")
        kids = ", ".join(f"#{c.index}={c.node}" for c in t.server.children)
        lines.append(f"  server {t.root}: fan-in {t.server.fan_in} ({kids})")
        if plan.planner == "multitree":
            host_tree = ", ".join(f"{h}<-{p}" for h, p in t.host_parent.items() if p)
            lines.append(f"  host-level tree: {host_tree}")
    lines.append("switches:")
    for c in plan.switches:
        extra = (
            f", group {c.result_group} -> " + ",".join(f"{m.port}/{m.replica_id}" for m in c.members)
            if c.result_group
            else ""
        )
        lines.append(
            f"  {c.switch} (device {c.device_id}) tree {c.tree_id}: "
            + (
                f"aggregates fan-in {c.max_fan_in}, slots {c.slot_base}..{c.slot_base + 2 * c.pool_size - 1} "
                f"(pool {c.pool_size} x 2 shadow sets)"
                if c.aggregates
                else "forwards"
            )
            + (", tree root: sends the results" if c.root else "")
            + extra
        )
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


# -- commands --------------------------------------------------------------------------------------


def cmd_topo(args: argparse.Namespace) -> int:
    """``inactl topo validate|show|draw FILE``: check, list or draw a topology."""
    topo = load_topology(args.file)
    if args.action == "validate":
        print(f"{args.file}: ok ({len(topo.hosts)} hosts, {len(topo.switches)} switches, {len(topo.links)} links)")
    elif args.action == "show":
        print(f"topology {topo.name}")
        print("switches:")
        for s in topo.switches:
            print(f"  {s.name:<8} device {s.device_id:<5} slots {s.slots:<6} grpc {s.grpc or '-'}")
        print("hosts:")
        for h in topo.hosts:
            print(f"  {h.name:<8} {h.ip:<15} {h.mac}  node {h.node_id:#06x}  {h.role or ''}".rstrip())
        print("links:")
        for link in topo.links:
            loss = f" loss {link.loss:g}%" if link.loss else ""
            print(
                f"  {link.id:<3} {link.a}:{link.a_port} - {link.b}:{link.b_port}  "
                f"{link.bandwidth:g} Mbit/s {link.delay:g} ms{loss}"
            )
    else:
        from controller.draw import draw_topology

        plan = None
        if args.workers or topo.role_hosts("worker"):
            plan = plan_job(topo, *_job_hosts(topo, args), _options(args))
        try:
            draw_topology(topo, plan, args.output)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror}") from None
        print(f"wrote {args.output}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """``inactl plan FILE``: plan a job and print it (text or ``--json``), or write it with ``-o``."""
    _, plan = _plan(args)
    text = plan.to_json(indent=2) if args.json else format_plan(plan)
    if args.output:
        _write_text(args.output, text + "\n")
        print(f"wrote {args.output}")
    else:
        print(text)
    return 0


def _installer(args: argparse.Namespace, topo: Topology) -> Installer:
    from controller.installer import Installer

    addresses = {}
    for item in args.address or []:
        name, sep, addr = item.partition("=")
        try:
            _endpoint(addr)
        except argparse.ArgumentTypeError:
            sep = ""
        if not sep:
            raise CliError(f"--address {item!r}: expected SWITCH=HOST:PORT")
        topo.switch(name)
        addresses[name] = addr
    for sw in topo.switches:
        address = addresses.get(sw.name) or sw.grpc
        try:
            if address:
                _endpoint(address)
        except argparse.ArgumentTypeError:
            raise CliError(
                f"switch {sw.name}'s P4Runtime address {address!r} has no port (expected HOST:PORT)"
            ) from None
    if bool(args.p4info) != bool(args.device_config):
        raise CliError("give both --p4info and --device-config to push a pipeline (or neither)")
    tls = _client_tls(args)
    return Installer(topo, args.p4info, args.device_config, addresses, timeout=args.timeout, tls=tls)


def _read_token(path: str | None) -> str | None:
    """The token in file ``path`` (first line), or None without a file."""
    if not path:
        return None
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise CliError(f"cannot read the token file {path}: {exc.strerror}") from None
    if not token:
        raise CliError(f"the token file {path} is empty")
    return token


def cmd_install(args: argparse.Namespace) -> int:
    """``inactl install FILE``: push the pipeline (optional), the topology's entries and a job's."""
    topo = load_topology(args.file)
    with _installer(args, topo) as inst:
        if args.p4info:
            inst.push_pipeline()
            print(f"pipeline pushed to {len(topo.switches)} switches")
        n = inst.install_topology()
        print(f"{n} topology entries written")
        if args.workers:
            options = _options(args)
            if options.root_results is None:  # results from a tree's root where the switches' program can
                options = dataclasses.replace(options, root_results=inst.root_multicast())
            from controller.jobservice import adopt_running_jobs

            resources = Resources.for_topology(topo)  # off the running jobs' slots, its id after theirs
            adopted, errors = adopt_running_jobs(resources, inst)
            _say_adopted(inst, list(adopted.values()), errors)
            plan = plan_job(topo, *_job_hosts(topo, args), options, resources)
            n = inst.install_job(plan)
            print(f"job {plan.job_id}: {n} entries written")
            if args.plan_out:
                _write_text(args.plan_out, plan.to_json(indent=2) + "\n")
    return 0


def _warn_cells_unread(inst: Installer) -> None:
    """Name the switches whose job ids a new job's id could not be chosen after (their slot cells or all)."""
    for switch, why in inst.cells_unread.items():
        print(f"warning: {switch}'s slot cells not read ({why}): a new job may reuse an id they hold", file=sys.stderr)


def _say_adopted(inst: Installer, adopted: list[AdoptedJob], errors: list[str]) -> None:
    """Say which running jobs were found on the switches and adopted, which could not be, and which switches
    could not be read (a new job may be planned onto what their jobs hold)."""
    from controller.jobservice import describe_adopted

    for job in adopted:
        print(f"found {describe_adopted(job)}", file=sys.stderr)
    for error in errors:
        print(f"warning: {error}", file=sys.stderr)
    for switch, why in inst.jobs_unread.items():
        print(
            f"warning: {switch}'s job entries not read ({why}): a new job may be planned onto a running job's slots",
            file=sys.stderr,
        )
    _warn_cells_unread(inst)


def _say_restored(path: str, manager: JobManager) -> None:
    """Say which jobs the state file gave back, and which it held that had to be re-installed or were dropped."""
    jobs = manager.list()
    if jobs:
        listed = ", ".join(f"{p.job_id} (plan version {p.version})" for p in jobs)
        print(f"took back {len(jobs)} job(s) from {path}: {listed}", file=sys.stderr)
    for note in manager.restore_notes:
        print(f"warning: {note}", file=sys.stderr)


def cmd_serve(args: argparse.Namespace) -> int:
    """``inactl serve FILE``: run the job service until interrupted."""
    from controller.jobservice import JobManager, JobServer

    topo = load_topology(args.file)
    tls = _server_tls(args)
    if address_in_use(args.listen):  # before the switches are touched
        raise CliError(f"address {args.listen} is in use")
    if args.state:  # a corrupt or another topology's state file, before the switches are touched
        from controller.job_state import StateFile

        StateFile(args.state, topo).load()
    installer = None
    if args.install:
        installer = _installer(args, topo)
        if args.p4info:
            installer.push_pipeline()
        installer.install_topology()
    token = _read_token(args.token_file)
    manager = JobManager(topo, installer, state=args.state)
    if args.state:
        _say_restored(args.state, manager)
    if installer is not None:
        _say_adopted(installer, manager.list_adopted(), manager.adoption_errors)
    server = JobServer(manager, args.listen, tls=tls, token=token).start()
    print(f"job service for {topo.name} on {server.address}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()
    if installer:
        installer.close()
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    """``inactl jobs list|show ID|release ID``: ask a running job service."""
    from controller.jobservice import JobClient

    tls = _client_tls(args)
    client = JobClient(args.controller, timeout=args.timeout, tls=tls, token=_read_token(args.token_file))
    try:
        if args.action == "list":
            jobs = client.list()
            if not jobs:
                print("no jobs")
            for j in jobs:
                if j.adopted:
                    print(
                        f"job {j.job_id} adopted (running on the switches before this controller started, no plan "
                        f"here): {j.trees} tree(s) on {','.join(j.switches)}"
                    )
                    continue
                print(
                    f"job {j.job_id} v{j.version} {j.planner}: {len(j.workers)} workers -> "
                    f"{','.join(j.servers)}, {j.trees} tree(s), {len(j.warnings)} warning(s)"
                )
        else:
            if args.job is None:
                raise CliError(f"jobs {args.action} needs a job id")
            if args.action == "show":
                plan = client.get_plan(args.job)
                print(plan.to_json(indent=2) if args.json else format_plan(plan))
            else:
                removed = client.release(args.job)
                print(f"job {args.job} released" + (" (switch entries removed)" if removed else ""))
    finally:
        client.close()
    return 0


def stat_names(prefix: str) -> dict[int, str]:
    """Counter index -> name of the protocol constants starting with ``prefix`` (``STAT_``, ``DROP_``).

    Examples
    --------
    >>> stat_names("STAT_")[0]
    'grad_aggregated'
    """
    from protocol import constants

    return {
        v: k[len(prefix) :].lower()
        for k, v in vars(constants).items()
        if k.startswith(prefix) and isinstance(v, int) and not k.endswith("RESERVED_MASK")
    }


def cmd_counters(args: argparse.Namespace) -> int:
    """``inactl counters FILE``: ina_stats and drop_stats of a job's counter row, by name."""
    from controller.limits import NUM_STATS

    topo = load_topology(args.file)
    switches = [args.switch] if args.switch else [s.name for s in topo.switches]
    for s in switches:
        topo.switch(s)
    stats, drops = stat_names("STAT_"), stat_names("DROP_")
    with _installer(args, topo) as inst:
        for s in switches:
            base = args.job_index * NUM_STATS
            values = inst.read_stats(s, [base + i for i in sorted(stats)])  # either program (programs.py)
            dropped = inst.read_counter(s, "InaIngress.drop_stats", sorted(drops))
            print(f"{s} job index {args.job_index}:")
            for i in sorted(stats):
                pkts, nbytes = values.get(base + i, (0, 0))
                if pkts or args.all:
                    print(f"  {stats[i]:<22} {pkts:>10} pkts {nbytes:>12} bytes")
            for i in sorted(drops):
                pkts, _ = dropped.get(i, (0, 0))
                if pkts or args.all:
                    print(f"  drop {drops[i]:<17} {pkts:>10} pkts")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``inactl`` (one sub-command per ``cmd_*`` function)."""
    p = argparse.ArgumentParser(
        prog="inactl",
        description="In-network aggregation controller: topologies, plans, switch installation and the job service.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    t = sub.add_parser(
        "topo",
        help="validate, show or draw a topology file",
        description="Validate, list or draw a topology (draw plans the job given, or the "
        "topology's role hosts, and highlights its trees and aggregation points).",
    )
    t.add_argument("action", choices=("validate", "show", "draw"))
    t.add_argument("file", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    t.add_argument("-o", "--output", default="topology.png", help="draw: PNG file (default topology.png)")
    _add_job_args(t)
    t.set_defaults(func=cmd_topo)

    pl = sub.add_parser(
        "plan",
        help="plan a job and print its hop lists or trees",
        description="Plan a job on a topology and print the hop lists (or JSON).",
    )
    pl.add_argument("file", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    _add_job_args(pl)
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.add_argument("-o", "--output", help="write to this file instead of stdout")
    pl.set_defaults(func=cmd_plan)

    def switch_args(q: argparse.ArgumentParser) -> None:
        q.add_argument("--p4info", help="P4Info file (text or binary) for the pipeline")
        q.add_argument(
            "--device-config",
            help="device config file: the P4 source for softswitch, the BMv2 JSON for simple_switch_grpc",
        )
        q.add_argument(
            "--address", action="append", metavar="SWITCH=HOST:PORT", help="override a switch's P4Runtime address"
        )
        q.add_argument("--timeout", type=float, default=10.0, help="P4Runtime timeout in seconds")
        tls_client_args(q, "the switches' P4Runtime servers")

    def tls_client_args(q: argparse.ArgumentParser, what: str) -> None:
        q.add_argument("--tls", action="store_true", help=f"talk to {what} over TLS")
        q.add_argument(
            "--tls-ca", metavar="PEM", help="CA that signs the servers' certificates (default: system roots)"
        )
        q.add_argument("--tls-cert", metavar="PEM", help="this client's certificate (servers that check clients)")
        q.add_argument("--tls-key", metavar="PEM", help="this client's private key")
        q.add_argument("--tls-server-name", metavar="NAME", help="the name the servers' certificates carry")

    i = sub.add_parser(
        "install",
        help="push the pipeline and write switch entries over P4Runtime",
        description="Push the pipeline (with --p4info/--device-config), write identity, "
        "routes and result_rewrite on every switch, and a job's entries if "
        "--workers is given.",
    )
    i.add_argument("file", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    switch_args(i)
    _add_job_args(i, workers_default="install no job, only the topology's entries")
    i.add_argument("--plan-out", help="save the installed job's plan (JSON)")
    i.set_defaults(func=cmd_install)

    s = sub.add_parser(
        "serve", help="run the job service", description="Serve plans to agents over gRPC until interrupted."
    )
    s.add_argument("file", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    s.add_argument(
        "--listen",
        default=DEFAULT_CONTROLLER,
        type=_endpoint,
        metavar="HOST:PORT",
        help=f"address (default {DEFAULT_CONTROLLER}, loopback only; agents on other machines need another "
        "address, with --serve-tls-cert/-key and --token-file: docs/security.md)",
    )
    s.add_argument("--install", action="store_true", help="install topology entries and every job over P4Runtime")
    s.add_argument(
        "--state",
        metavar="FILE",
        help="keep the jobs' plans in FILE (rewritten on every change) and take them back from it when "
        'started again (docs/design-decisions.md, "A controller that restarts")',
    )
    s.add_argument("--serve-tls-cert", metavar="PEM", help="serve over TLS with this certificate")
    s.add_argument("--serve-tls-key", metavar="PEM", help="the job service's private key")
    s.add_argument("--serve-tls-ca", metavar="PEM", help="require client certificates signed by this CA")
    s.add_argument(
        "--token-file",
        metavar="FILE",
        help="the service's token: registering and listing need it, each job gets its own",
    )
    switch_args(s)
    s.set_defaults(func=cmd_serve)

    j = sub.add_parser(
        "jobs", help="list, show or release jobs of a running job service", description="Talk to a running job service."
    )
    j.add_argument("action", nargs="?", default="list", choices=("list", "show", "release"))
    j.add_argument("job", nargs="?", type=int)
    j.add_argument(
        "--controller",
        default=DEFAULT_CONTROLLER,
        type=_endpoint,
        metavar="HOST:PORT",
        help=f"job service (default {DEFAULT_CONTROLLER})",
    )
    j.add_argument("--json", action="store_true")
    j.add_argument("--timeout", type=float, default=10.0)
    j.add_argument("--token-file", metavar="FILE", help="the service's (or the job's) token")
    tls_client_args(j, "the job service")
    j.set_defaults(func=cmd_jobs)

    c = sub.add_parser(
        "counters",
        help="read per-job and drop counters of switches",
        description="Read InaIngress.ina_stats (one row of NUM_STATS per job index) and "
        "InaIngress.drop_stats over P4Runtime.",
    )
    c.add_argument("file", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    c.add_argument("--switch", help="one switch (default: all)")
    c.add_argument("--job-index", type=int, default=0, help="the job's counter row (its plan's job_index)")
    c.add_argument("--all", action="store_true", help="also print zero counters")
    switch_args(c)
    c.set_defaults(func=cmd_counters)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``inactl`` with ``argv``; return the exit status.

    A ``ControllerError`` prints as ``inactl: error: ...`` and returns 1; any other exception is a bug
    and propagates with its traceback.

    Examples
    --------
    >>> main(["plan", "topologies/star.yaml", "--workers", "h9"])
    1
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
        return status
    except ControllerError as exc:  # anything else is a bug: its traceback shows
        print(f"inactl: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
