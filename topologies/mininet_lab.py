"""The mininet lab: a topology file as a live network of P4 switches running one aggregation job.

    python -m topologies.mininet_lab topologies/leaf_spine.yaml                 # mininet CLI + extras
    python -m topologies.mininet_lab topologies/star.yaml --rounds 3 --batch    # run, check, exit
    python -m topologies.mininet_lab topologies/star.yaml --train --epochs 20 --collective ina   # train, exit
    python -m topologies.mininet_lab topologies/star.yaml --train --example recsys --epochs 1  # sharded tables
    python -m topologies.mininet_lab --clean                                    # remove dead runs' leftovers

A run's files (switch logs, plans, agents' results, training logs) live in its work directory,
removed at teardown unless the run failed (then the error says where they are) or ``--keep-logs DIR``
asks for a copy.

Extra CLI commands: ``allreduce [ROUNDS] [VALUES]`` (run and check sums), ``baseline [ROUNDS] [VALUES]``
(the same through the parameter-server baseline), ``gloo [ROUNDS] [VALUES]`` (the same inputs through
torch.distributed's gloo between the worker hosts), ``counters`` (bytes per link, switch packet
and drop counts, the server agent's counters), ``plan`` (which switches aggregate, fan-ins, paths), ``train [EPOCHS] [--collective ina|gloo]
[--seed S] [--example digits|recsys]`` (examples/train_digits.py or train_recsys.py, one process per worker
host), ``kill SWITCH`` (kill a switch's process). Needs root and Debian's mininet.

Faults: the controller's fault monitor probes the switches over P4Runtime and reads the switch ports'
state every ``monitor_interval`` seconds; a switch that stops answering (``kill SWITCH``) or a link whose
ports go down (mininet's ``link A B down``) re-plans the lab's jobs around it, and the new plan version
goes to the server agent, then to the workers, which move their chunks in flight (docs/agents.md).

The parts, each with one owner (docs/architecture.md): ``LabNetwork`` (hosts, P4 switches and links built
from the file's ``LabTopo``), ``LabControl`` (installer, job manager, the lab's jobs), ``LabAgents`` (the
processes in the hosts), ``AllreduceRounds``, ``PlanHandover`` (new plan versions to the agents and
training ranks), ``LabFaults`` (the fault monitor) and ``LabCLI``; ``MininetLab`` puts them together and
``main`` is the launcher. Two labs never run at once on a machine: the second waits for the first
(topologies/lab_lock.py).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NoReturn

from controller.cli_options import (
    PROGRAM_HELP,
    add_deprecated,
    add_program,
    add_result_mode,
    add_server,
    add_workers,
    worker_choice,
)
from controller.plan import JobPlan
from controller.planner import PlanOptions
from controller.topology_yaml import load_topology
from topologies.errors import USER_ERRORS, LabError, LabJobError, TrainError
from topologies.lab_agents import LabAgents
from topologies.lab_cli import LabCLI
from topologies.lab_control import LabControl, pick_hosts
from topologies.lab_faults import LabFaults
from topologies.lab_handover import PlanHandover
from topologies.lab_network import LabNetwork, LabSpec, intf_name
from topologies.lab_rounds import AllreduceRounds, RoundResult
from topologies.lab_state import clean_stale
from topologies.lab_training import BACKENDS, EXAMPLES, RankHost, TrainResult, run_ranks

RENDEZVOUS_BASE_PORT = 29500  # torch's rendezvous: gloo rounds and training runs count up from the next one
COLLECTIVES = (*BACKENDS, "both")  # --collective: both is gloo, then ina, with the same seed


class MininetLab:
    """Network + controller + one job + agents. ``start``, then ``allreduce``/``train``/``counters_text``, ``stop``."""

    def __init__(
        self,
        topology_path: str,
        workers: int | Sequence[str] | None = None,
        server: str | None = None,
        target: str = "softswitch",
        program: str | None = None,
        values: int = 2048,
        log: Callable[[str], None] = print,
        plan_options: PlanOptions | None = None,  # None: the controller's defaults
        p4info: str | None = None,
        device_config: str | None = None,
        keep_logs: str | None = None,
        tls: bool = False,
        monitor_interval: float = 0.5,  # seconds between the fault monitor's probes (0: no monitor)
    ):
        self.topo = load_topology(topology_path)
        self.workers, self.server = pick_hosts(self.topo, workers, server)
        self.spec = LabSpec.from_topology(self.topo)
        self.values = values
        self.log = log
        self.p4info, self.device_config = p4info, device_config  # pushed to switches started without a program
        self.network = LabNetwork(self.spec, target=target, program=program, log=log, tls=tls)
        self.control = LabControl(self.topo, self.workers, self.server, plan_options)
        self.agents = LabAgents(self.network, self.server)
        self.rounds = AllreduceRounds(self.agents, lambda: self.control.plan, log)
        self.handover = PlanHandover(self.control, self.agents, lambda: self.workdir, log)
        self.faults = LabFaults(self.control, self.network, monitor_interval, log)
        self.keep_logs = Path(keep_logs) if keep_logs else None  # copy the work directory there at teardown
        self.logs_kept: Path | None = None
        self.train_runs = 0  # rendezvous ports used (gloo ranks, training runs)
        self._failed = False  # a job or training run failed: keep the logs at teardown

    @property
    def plan(self) -> JobPlan:
        """The lab's aggregation job as it runs now."""
        return self.control.plan

    @property
    def ps_plan(self) -> JobPlan:
        """The parameter-server baseline's job as it runs now."""
        return self.control.ps_plan

    @property
    def failed(self) -> bool:
        """A round, a training run, a re-plan or a plan handover failed: teardown keeps the logs."""
        return self._failed or self.handover.failed or self.faults.failed

    @property
    def workdir(self) -> Path:
        """The run's work directory (the network's: made at start, removed at teardown)."""
        if self.network.workdir is None:
            raise LabError("the lab has not started")
        return self.network.workdir

    # -- bring-up --------------------------------------------------------------------------------
    def start(self) -> MininetLab:
        """Network, routes and jobs, agents, fault monitor; on any error everything started is stopped."""
        self._compile_for_bmv2()
        self._start_network()
        try:
            self._install()
            self._start_agents()
            self.handover.follow_lab_jobs()
            self.faults.start()
        except BaseException as exc:
            self.stop(failed=not isinstance(exc, KeyboardInterrupt))
            raise
        return self

    def _compile_for_bmv2(self) -> None:
        """BMv2 given no pipeline gets its program compiled by p4c-bm2-ss (topologies/bmv2_build.py) and pushed
        like --device-config: the one --program names if it is a P4 source (simple_switch_grpc loads only a
        compiled JSON itself), else the default program (the largest K the links carry)."""
        program = self.network.program
        if self.network.target.name != "bmv2" or self.device_config or (program and not program.endswith(".p4")):
            return
        from controller.programs import default_program
        from topologies.bmv2_build import compiled

        name = program or default_program(self.topo.smallest_mtu(), "bmv2")
        self.log(f"[lab] BMv2 runs {name}: compiling it with p4c-bm2-ss (once; kept in build/bmv2/)")
        json_path, p4info_path = compiled(name)
        self.device_config, self.p4info = str(json_path), str(p4info_path)
        self.network.program = None  # started with --no-p4, given the compiled pipeline over P4Runtime

    def _start_network(self) -> None:
        t0 = time.monotonic()
        self.log(
            f"[lab] starting {len(self.spec.switches)} {self.network.target.name} switches, "
            f"{len(self.spec.hosts)} hosts, {len(self.spec.links)} links ({self.topo.name})"
        )
        self.network.start()
        self.log(f"[lab] network up in {time.monotonic() - t0:.1f} s")

    def _install(self) -> None:
        t1 = time.monotonic()
        addresses, tls = self.network.grpc_addresses(), self.network.client_tls()
        self.control.install(addresses, tls, self.network.mtu, self.p4info, self.device_config)
        (self.workdir / "plan.json").write_text(self.plan.to_json(indent=1))
        self.log(f"[lab] controller installed routes and job {self.plan.job_id} in {time.monotonic() - t1:.1f} s")

    def _start_agents(self) -> None:
        ps_file = self.workdir / "ps-plan.json"
        ps_file.write_text(self.ps_plan.to_json(indent=1))
        self.agents.start(self.plan, self.workdir / "plan.json", ps_file)
        self.log(f"[lab] agents ready: server on {self.server}, workers on {', '.join(self.agents.workers)}")

    def _rendezvous_port(self) -> int:
        """A port for torch's rendezvous not used before in this run: no TIME_WAIT of an earlier store."""
        self.train_runs += 1
        return RENDEZVOUS_BASE_PORT + self.train_runs

    # -- faults ----------------------------------------------------------------------------------
    def kill_switch(self, switch: str) -> None:
        """Kill a switch's process (SIGKILL, as a crash): it stops forwarding and answering P4Runtime."""
        node = self.network.net.nameToNode.get(switch) if self.network.net is not None else None
        if node is None or getattr(node, "proc", None) is None:
            raise LabError(f"no running switch {switch!r} in this lab")
        try:
            os.killpg(node.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.proc.wait(10)
        self.log(f"[lab] killed switch {switch}")

    def link_down(self, a: str, b: str) -> None:
        """Take the link between ``a`` and ``b`` down (mininet's ``link a b down``: both ports down)."""
        self.network.set_link(a, b, up=False)
        self.log(f"[lab] link {a}-{b} down")

    # -- jobs ------------------------------------------------------------------------------------
    def allreduce(
        self,
        rounds: int = 1,
        values: int | None = None,
        mode: str = "ina",
        timeout: float = 120.0,
        rto: float | None = None,
        spurious: bool | None = None,
    ) -> list[RoundResult]:
        """Run ``rounds`` allreduces on every worker at once and check each result exactly (mode ``ina``,
        ``ps`` or ``gloo``). ``rto``: the worker agents' base retransmission timeout (seconds) from these
        rounds on (None: as it is); ``spurious``: their detection of spurious timeouts on or off from these
        rounds on (None: as it is)."""
        settings = {k: v for k, v in (("rto", rto), ("spurious", spurious)) if v is not None}
        try:
            if mode == "gloo":
                self.start_gloo()
            return self.rounds.run(rounds, values or self.values, mode, timeout, settings)
        except LabJobError:
            self._failed = True
            raise

    def start_gloo(self) -> None:
        """Start a gloo rank on every worker host (once; the first round in mode "gloo" does it too),
        so a timed round does not include the rendezvous and gloo's connections."""
        if not self.agents.gloo_ranks:
            self.agents.start_gloo(self.plan, self._rendezvous_port())

    # -- training ------------------------------------------------------------------------------------
    def train(
        self,
        epochs: int = 20,
        collective: str = "ina",
        seed: int = 0,
        timeout: float | None = None,
        example: str = "digits",
        example_args: Sequence[str] = (),
    ) -> TrainResult:
        """A training example (``digits``: examples/train_digits.py, ``recsys``: examples/train_recsys.py,
        sharded embedding tables) with one ``--rank R`` process per worker host (ranks in the job's
        order, rendezvous on rank 0's IP), its all_reduces through ``collective`` (``ina`` or ``gloo``).
        With ina the run is a job of its own: a job id never used before in this lab (the switches then
        take its chunks afresh, whatever the lab's agents sent), served by the lab's server agent, removed
        from switches and server afterwards."""
        if example not in EXAMPLES:  # refused before anything starts (the run did not fail)
            raise TrainError(f"unknown example {example!r} (choose {' or '.join(EXAMPLES)})")
        try:
            return self._train(epochs, collective, seed, timeout, example, example_args)
        except USER_ERRORS:
            self._failed = True
            raise

    def _train(
        self, epochs: int, collective: str, seed: int, timeout: float | None, example: str, example_args: Sequence[str]
    ) -> TrainResult:
        port = self._rendezvous_port()
        hosts = [RankHost(w.name, w.ip, intf_name(w.name, self.spec.host(w.name).port)) for w in self.plan.workers]
        self.log(
            f"[lab] training {example} {collective}: {len(hosts)} ranks on {', '.join(h.name for h in hosts)}, "
            f"{epochs} epochs, seed {seed}, rendezvous {hosts[0].ip}:{port}"
        )
        common: dict[str, Any] = dict(
            port=port, timeout=timeout, log=self.log, example=example, example_args=example_args
        )
        if collective != "ina":
            result = run_ranks(self.network, hosts, collective, epochs, seed, self.workdir, **common)
            self.log("[lab] " + result.summary_line())
            return result
        return self._train_ina(hosts, epochs, seed, common)

    def _train_ina(self, hosts: list[RankHost], epochs: int, seed: int, common: dict[str, Any]) -> TrainResult:
        """A training run as a job of its own, with what the switches and the server agent did for it."""
        with self.training_job() as (plan, plan_path):
            before, held = self.switch_counters(plan), self.server_stats().get("held_batches", 0)
            result = run_ranks(
                self.network, hosts, "ina", epochs, seed, self.workdir, plan_path=str(plan_path), **common
            )
            after, held = self.switch_counters(plan), self.server_stats().get("held_batches", 0) - held
            result.job_id = plan.job_id
            result.switch_counters = {
                s: {k: v - before[s].get(k, 0) for k, v in row.items() if v - before[s].get(k, 0)}
                for s, row in after.items()
            }
        self.log("[lab] " + result.summary_line())
        self.log(f"[lab] the server agent left its port unread {held} times to gather a batch (receive coalescing)")
        for name, row in sorted(result.switch_counters.items()):
            if row.get("grad_completed"):
                self.log(
                    f"[lab] switch {name} (P4 counters, job {plan.job_id}): {row.get('grad_aggregated', 0)} "
                    f"gradient packets aggregated, {row['grad_completed']} chunks completed in the data plane"
                )
        return result

    def training_job(self) -> AbstractContextManager[tuple[JobPlan, Path]]:
        """A job of its own for processes that join the network through the torch backend (training,
        bench/allreduce_latency.py): yields (plan, plan file); PlanHandover.training_job."""
        return self.handover.training_job()

    # -- inspection ----------------------------------------------------------------------------------
    def link_bytes(self) -> dict[int, int]:
        return self.network.link_bytes()

    def switch_counters(self, plan: JobPlan | None = None) -> dict[str, dict[str, int]]:
        """Non-zero packet counts of ``plan`` (default: the lab's job) and drop reasons of every live switch."""
        return self.control.switch_counters(plan)

    def server_stats(self) -> dict[str, int]:
        """The server agent's counters (all jobs, cumulative)."""
        return self.agents.server_stats()

    def counters_text(self) -> str:
        from topologies.report import traffic_table

        lines = [traffic_table(self.topo, {"total": self.link_bytes()}), "switch counters (packets):"]
        for name, row in self.switch_counters().items():
            lines.append(f"  {name}: " + (", ".join(f"{k} {v}" for k, v in row.items()) or "-"))
        stats = self.server_stats()
        lines.append(
            f"server agent {self.server} (all jobs): "
            + (", ".join(f"{k} {v}" for k, v in sorted(stats.items())) or "-")
        )
        return "\n".join(lines)

    def plan_text(self) -> str:
        from topologies.report import plan_text

        return plan_text(self.plan)

    # -- teardown --------------------------------------------------------------------------------
    def stop(self, failed: bool = False) -> list[str]:
        """Stop everything the run started and remove its work directory, except: after a failure
        (``failed``, or a job or training run that failed) the directory stays where it is, and with
        ``keep_logs`` it is moved there. ``logs_kept`` then says where the logs are."""
        workdir = self.network.workdir
        keep_here = (failed or self.failed) and not self.keep_logs
        self.faults.stop()
        self.agents.stop()
        self.control.close()
        left = self.network.stop(keep_logs=keep_here or self.keep_logs is not None)
        if workdir is not None and workdir.is_dir():
            self._keep_logs(workdir, keep_here)
        if self.logs_kept is not None:
            self.log(f"[lab] this run's logs are in {self.logs_kept}")
        if left:
            self.log("[lab] could not remove: " + ", ".join(left))
        return left

    def _keep_logs(self, workdir: Path, keep_here: bool) -> None:
        """Move the work directory to ``keep_logs`` (where asked), or leave it where it is after a failure."""
        if self.keep_logs is not None:
            try:
                shutil.copytree(workdir, self.keep_logs, dirs_exist_ok=True)
                shutil.rmtree(workdir)
                self.logs_kept = self.keep_logs
            except OSError as exc:
                self.logs_kept = workdir
                self.log(f"[lab] could not copy the logs to {self.keep_logs} ({exc.strerror or exc})")
        elif keep_here:
            self.logs_kept = workdir


# -- the launcher ----------------------------------------------------------------------------------------
def compare_line(gloo: TrainResult, ina: TrainResult) -> str:
    diff = 100 * (ina.test_accuracy - gloo.test_accuracy)
    return (
        f"same seed {ina.seed}: gloo {100 * gloo.test_accuracy:.2f} % at {gloo.ms_per_iteration:.1f} ms/iteration"
        f"{gloo.steady_text()}, ina {100 * ina.test_accuracy:.2f} % at {ina.ms_per_iteration:.1f} ms/iteration"
        f"{ina.steady_text()} "
        f"(ina/gloo {ina.ms_per_iteration / gloo.ms_per_iteration:.2f} per iteration, accuracy difference "
        f"{diff:+.2f} points)"
    )


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP end the run like Ctrl-C, so ``finally`` blocks tear the lab down."""

    def handler(signum: int, frame: object) -> NoReturn:
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def build_parser() -> argparse.ArgumentParser:
    """The launcher's options: the network, the job, what to run, the run's files."""
    ap = argparse.ArgumentParser(prog="python -m topologies.mininet_lab", description=(__doc__ or "").split("\n")[0])
    ap.add_argument("topology", nargs="?", metavar="TOPOLOGY", help="topology YAML (topologies/*.yaml)")
    _network_arguments(ap)
    _job_arguments(ap)
    _training_arguments(ap)
    ap.add_argument(
        "--keep-logs",
        metavar="DIR",
        help="copy the run's work directory (switch logs, plans, results, training logs) to DIR at exit",
    )
    ap.add_argument(
        "--clean",
        action="store_true",
        help="remove what crashed runs left behind and the work directories of earlier runs, then exit",
    )
    return ap


def _network_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--target", choices=("softswitch", "bmv2"), default="softswitch")
    add_program(
        ap,
        help=f"{PROGRAM_HELP}; on --target bmv2: a compiled BMv2 JSON (default: the same program, compiled by "
        "p4c-bm2-ss into build/bmv2/)",
    )
    ap.add_argument("--p4info", help="P4Info to push (with --device-config) to switches started without a program")
    ap.add_argument("--device-config", help="device config to push: the BMv2 JSON, or the P4 source for softswitch")
    ap.add_argument(
        "--tls",
        action="store_true",
        help="P4Runtime over TLS with client certificates (a private CA made in the run's work directory)",
    )


def _job_arguments(ap: argparse.ArgumentParser) -> None:
    add_workers(ap, default="the hosts with role worker")
    add_server(ap, several=False, default="the first host with role server")
    add_result_mode(ap, old="--results")
    ap.add_argument("--values", type=int, default=2048, help="values per worker per round")
    ap.add_argument("--rounds", type=int, default=0, help="allreduce rounds to run before the CLI / exit")
    ap.add_argument("--script", help="mininet CLI script to run (batch)")
    ap.add_argument("--batch", action="store_true", help="exit after --rounds/--script instead of the CLI")


def _training_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--train", action="store_true", help="run a training example, one process per worker host, then exit"
    )
    ap.add_argument(
        "--example",
        choices=tuple(EXAMPLES),
        default="digits",
        help="--train: digits (examples/train_digits.py) or recsys (examples/train_recsys.py, sharded embeddings)",
    )
    ap.add_argument(
        "--example-args",
        default="",
        metavar="ARGS",
        help="--train: more flags for the example, e.g. '--embeddings replicated' (recsys's baseline)",
    )
    ap.add_argument(
        "--collective",
        choices=COLLECTIVES,
        default="ina",
        help="--train: the collective the example's all_reduces go through: ina (the aggregating switches), "
        "gloo (torch.distributed's gloo over TCP) or both (gloo, then ina, same seed)",
    )
    add_deprecated(ap, "--backend", "--collective", "collective", choices=COLLECTIVES)
    ap.add_argument("--epochs", type=int, default=20, help="--train: epochs")
    ap.add_argument("--seed", type=int, default=0, help="--train: seed of the data split, shards and weights")
    ap.add_argument(
        "--train-timeout",
        type=float,
        help="--train: seconds one training run may take (default grows with epochs and workers)",
    )


def make_lab(args: argparse.Namespace) -> MininetLab:
    return MininetLab(
        args.topology,
        worker_choice(args.workers),
        args.server,
        args.target,
        args.program,
        args.values,
        p4info=args.p4info,
        device_config=args.device_config,
        plan_options=PlanOptions(result_mode=args.result_mode),
        keep_logs=args.keep_logs,
        tls=args.tls,
    )


def run_training(lab: MininetLab, args: argparse.Namespace) -> None:
    """--train: the example through the chosen collective (both: gloo, then ina, compared on one line)."""
    collectives = ("gloo", "ina") if args.collective == "both" else (args.collective,)
    extra = shlex.split(args.example_args)
    results = [lab.train(args.epochs, c, args.seed, args.train_timeout, args.example, extra) for c in collectives]
    if len(results) == 2:
        print("[lab] " + compare_line(*results))


def run(lab: MininetLab, args: argparse.Namespace) -> None:
    """What the command line asked of a started lab: rounds, training, a script, then the CLI unless batch."""
    print(lab.plan_text())
    if args.rounds:
        lab.allreduce(args.rounds)
    if args.train:
        run_training(lab, args)
    if args.script:
        LabCLI(lab, script=args.script)
    if not (args.batch or args.train):
        LabCLI(lab)


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.clean:
        return 1 if clean_stale(workdirs=True) else 0
    if not args.topology:
        ap.error("a topology file is required (or --clean)")
    if args.epochs < 1:
        ap.error("--epochs must be at least 1")
    if worker_choice(args.workers) == 0:
        ap.error("--workers 0: a job needs at least one worker")
    install_signal_handlers()
    lab = None
    failed, error = True, None
    try:
        lab = make_lab(args)
        lab.start()
        run(lab, args)
        failed = False
        return 0
    except KeyboardInterrupt:
        failed = False
        print("\n[lab] interrupted: tearing down")
        return 130
    except USER_ERRORS as exc:  # one line; anything else is a bug and shows its traceback
        error = exc
        return 1
    finally:
        if lab is not None:
            lab.stop(failed=failed)
        if error is not None:
            kept = lab.logs_kept if lab is not None else None
            print(f"error: {error}" + (f"\n(this run's logs are in {kept})" if kept else ""), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
