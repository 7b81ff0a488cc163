"""The project's demo (``make run``): multi-hop in-switch aggregation on the leaf-spine topology.

Eight workers and one aggregation server run a few int32 allreduce rounds through P4 switches
running p4src/ina.p4; every result is checked exactly against numpy sums of the hosts' inputs. The
same rounds then go through a parameter server on the same network, and the demo prints the plan,
bytes per link for both, the server link's reduction factor and completion times, and saves a PNG of
the topology with the aggregation tree and link loads.

As root with mininet the network is real (one softswitch process per switch, one agent process per
host on kernel UDP); otherwise the same job runs on the in-process network (virtual clock).

    python -m topologies.demo [--workers N|HOST...] [--rounds R] [--values V] [--quick] [--inprocess]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from controller.cli_options import add_program, add_result_mode, add_server, add_workers, worker_choice
from topologies.errors import USER_ERRORS, LabError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TOPOLOGY = REPO / "topologies" / "leaf_spine.yaml"
DEFAULT_PICTURE = REPO / "build" / "demo" / "leaf_spine_aggregation.png"


# the process each switch of the mininet lab runs, by --target
_SWITCH_PROCESS = {"softswitch": "softswitch", "bmv2": "simple_switch_grpc"}


def mininet_available() -> tuple[bool, str]:
    """Whether the demo can use mininet here, and if not, why (one line)."""
    if os.geteuid() != 0:
        return False, "not root"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return False, "mininet is not installed"
    import shutil

    if shutil.which("mnexec") is None:
        return False, "mnexec is not on PATH"
    return True, ""


class Step:
    """Numbered progress lines: ``[2/6] starting the network ... done in 4.1 s``."""

    def __init__(self, total: int):
        self.total, self.n = total, 0

    def __call__(self, text: str) -> Step:
        self.n += 1
        self.t0 = time.monotonic()
        print(f"[{self.n}/{self.total}] {text}", flush=True)
        return self

    def done(self, extra: str = "") -> None:
        print(f"      done in {time.monotonic() - self.t0:.1f} s{(' - ' + extra) if extra else ''}", flush=True)


def run_demo(args) -> int:
    from controller.topology_yaml import load_topology
    from topologies import report

    use_mininet, why = _choose_network(args)
    topo = load_topology(args.topology)
    step = Step(6)
    if use_mininet:
        print(f"demo: mininet network with {args.target} switches (root, mininet found)")
    else:
        print(f"demo: {why}: running the same job on the in-process network (virtual clock) instead of mininet")
    _announce_program(args, topo, use_mininet)
    choice = worker_choice(args.workers)
    count = "all worker hosts" if choice is None else f"{choice if isinstance(choice, int) else len(choice)} workers"
    step(f"planning: {count}, 1 server on {topo.name}")
    backend = make_backend(use_mininet, args)
    failed = True
    try:
        step(
            "starting the network and installing the job"
            + (f" (one {_SWITCH_PROCESS[args.target]} process per switch)" if use_mininet else "")
        )
        backend.start()
        step.done()
        print(report.plan_text(backend.plan))
        ina_rounds, ina_bytes, ps_rounds, ps_bytes = _run_rounds(step, backend, args)
        step("traffic and timings")
        _report_traffic(topo, backend.plan, ina_bytes, ps_bytes)
        _report_times(ina_rounds, ps_rounds, use_mininet)
        step("drawing the topology")
        _draw(topo, backend.plan, ina_bytes, args)
        step.done()
        failed = False
    finally:
        left = backend.stop(failed=failed)  # a failed run keeps its logs and says where
    if left:
        print("demo: teardown left " + ", ".join(left), file=sys.stderr)
        return 1
    print("demo: finished, network torn down")
    return 0


def _choose_network(args) -> tuple[bool, str]:
    """The mininet lab where it can run (root, mininet) and was not refused with --inprocess, else the
    in-process network (and why)."""
    use_mininet, why = mininet_available()
    if args.inprocess:
        use_mininet, why = False, "--inprocess given"
    if args.target != "softswitch" and not use_mininet:  # the in-process network runs softswitch only
        raise LabError(f"--target {args.target} runs in the mininet lab, which needs root and mininet ({why})")
    return use_mininet, why


def _announce_program(args, topo, use_mininet: bool) -> None:
    """Which program the switches run (softswitch without --program: the largest K the links carry)."""
    from controller.programs import default_program, program_file

    if args.program is None and (args.target == "softswitch" or not use_mininet):
        args.program = default_program(topo.smallest_mtu())
        why = f"the largest K whose packets fit the links' {topo.smallest_mtu()}-byte MTU; --program changes it"
        print(f"demo: the switches run {_relative(program_file(args.program))} ({why})")
    elif args.program:
        print(f"demo: the switches run {_relative(program_file(args.program))}")
    elif not args.device_config:
        name = default_program(topo.smallest_mtu(), "bmv2")
        print(f"demo: BMv2 runs {_relative(program_file(name))}, compiled by p4c-bm2-ss into build/bmv2/")


def _run_rounds(step: Step, backend, args) -> tuple[list, dict[int, int], list, dict[int, int]]:
    """The job's rounds, then the parameter server's: (rounds, bytes per link) of each."""
    step(f"in-network aggregation: {args.rounds} rounds x {args.values} int32 values per worker")
    before = backend.link_bytes()
    ina_rounds = backend.allreduce(args.rounds, args.values, "ina")
    ina_bytes = _delta(backend.link_bytes(), before)
    step.done(f"{len(ina_rounds)} rounds, every worker's result equals the numpy sum of all inputs")

    step(f"parameter-server baseline on the same network: {args.rounds} rounds")
    before = backend.link_bytes()
    ps_rounds = backend.allreduce(args.rounds, args.values, "ps")
    ps_bytes = _delta(backend.link_bytes(), before)
    step.done("results verified the same way")
    return ina_rounds, ina_bytes, ps_rounds, ps_bytes


def _report_traffic(topo, plan, ina_bytes: dict[int, int], ps_bytes: dict[int, int]) -> None:
    from topologies import report

    server_links = report.server_link_ids(topo, plan)
    print(report.traffic_table(topo, {"in-network": ina_bytes, "param-server": ps_bytes}, server_links))
    print("  (* = the server's link)")
    ps_server = report.fmt_bytes(sum(ps_bytes.get(i, 0) for i in server_links))
    ina_server = sum(ina_bytes.get(i, 0) for i in server_links)
    if not ina_server:  # the tree's root switch completed every sum (docs/protocol.md, "Root multicast")
        print(
            f"server link: {ps_server} with the parameter server, nothing with in-network aggregation: the "
            "switch at the tree's root completed every sum and sent the results down itself"
        )
        return
    factor = report.reduction_factor(ps_bytes, ina_bytes, server_links)
    print(
        f"server link: {ps_server} with the parameter server, {report.fmt_bytes(ina_server)} with in-network "
        f"aggregation: {factor:.1f}x less"
    )


def _report_times(ina_rounds: list, ps_rounds: list, use_mininet: bool) -> None:
    from topologies import report

    rows = [
        [r.round - ina_rounds[0].round, _ms(r.elapsed), _ms(p.elapsed)]
        for r, p in zip(ina_rounds, ps_rounds, strict=True)
    ]
    clock = "wall clock" if use_mininet else "virtual clock of the modelled links"
    print(f"completion time per round, slowest worker, ms ({clock}):")
    print(report.table(["round", "in-network", "param-server"], rows))


def _draw(topo, plan, ina_bytes: dict[int, int], args) -> None:
    from topologies import report

    png = report.draw_network(
        topo,
        plan,
        ina_bytes,
        args.picture,
        title=f"{topo.name}: aggregation tree (orange), aggregating switches (red; the root sends the results), "
        f"link width = in-network bytes over {args.rounds} rounds",
    )
    print(f"picture: {png}")


def _relative(path: Path) -> str:
    """A path inside the checkout as the README names it (p4src/ina_k256.p4)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.2f}"


def _delta(after: dict[int, int], before: dict[int, int]) -> dict[int, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


def make_backend(use_mininet: bool, args):
    from controller.planner import PlanOptions

    workers = worker_choice(args.workers)
    options = PlanOptions(result_mode=args.result_mode)
    if use_mininet:
        from topologies.mininet_lab import MininetLab

        return MininetLab(
            str(args.topology),
            workers,
            args.server,
            args.target,
            program=args.program,
            values=args.values,
            log=lambda m: print("      " + m, flush=True),
            plan_options=options,
            p4info=args.p4info,
            device_config=args.device_config,
        )
    from topologies.inprocess_lab import InProcessLab

    return InProcessLab(str(args.topology), workers, args.server, program=args.program, plan_options=options)


def _positive(text: str) -> int:
    """A count of workers, rounds or values: zero or fewer would verify nothing."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The demo's options (docs/cli.md: the words every command shares)."""
    ap = argparse.ArgumentParser(prog="python -m topologies.demo", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--topology", default=str(DEFAULT_TOPOLOGY), help="topology YAML (default topologies/leaf_spine.yaml)"
    )
    add_workers(ap, default="all the topology's worker hosts, 8 on leaf_spine")
    add_server(ap, several=False, default="the first host with role server")
    ap.add_argument("--rounds", type=_positive, default=3, metavar="R", help="allreduce rounds (default 3)")
    ap.add_argument(
        "--values", type=_positive, default=2048, metavar="V", help="int32 values per worker per round (default 2048)"
    )
    add_result_mode(ap, old="--results")
    ap.add_argument("--target", choices=("softswitch", "bmv2"), default="softswitch")
    add_program(
        ap,
        help="what the switches start with (default on softswitch: the largest K the links' MTU carries, "
        "v1model-k344 at 1500 bytes, v1model-k1024 on jumbo links): v1model (p4src/ina.p4, K = 64), v1model-k256 "
        "(p4src/ina_k256.p4), v1model-k344 (p4src/ina_k344.p4), v1model-k1024 (p4src/ina_k1024.p4), tna (p4src/tna/ina_tna.p4, softswitch only) or a "
        "path (on bmv2, without --device-config: the same default, compiled by p4c-bm2-ss into build/bmv2/)",
    )
    ap.add_argument("--p4info", help="P4Info to push with --device-config (bmv2 started without a program)")
    ap.add_argument("--device-config", help="the BMv2 JSON compiled from p4src/ina.p4")
    ap.add_argument("--inprocess", action="store_true", help="use the in-process network even as root")
    ap.add_argument("--quick", action="store_true", help="4 workers, 2 rounds of 256 values")
    ap.add_argument(
        "--picture", default=str(DEFAULT_PICTURE), metavar="PNG", help="where to save the picture (default build/demo/)"
    )
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if worker_choice(args.workers) == 0:
        ap.error("--workers 0: a job needs at least one worker")  # the labs would plan a job of none
    if args.inprocess and args.target != "softswitch":
        ap.error(f"--inprocess runs the switches on softswitch in this process: --target {args.target} needs mininet")
    if args.quick:
        args.workers, args.rounds, args.values = ["4"], 2, 256
    from topologies.mininet_lab import install_signal_handlers

    install_signal_handlers()
    try:
        return run_demo(args)
    except KeyboardInterrupt:
        print("\ndemo: interrupted, network torn down")
        return 130
    except USER_ERRORS as exc:  # one line; anything else is a bug and shows its traceback
        if os.environ.get("INA_DEBUG"):
            raise
        print(f"demo: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
