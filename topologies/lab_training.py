"""The training examples across the lab's hosts: one ``--rank R`` process per worker host.

``digits`` is examples/train_digits.py (an MLP, DDP); ``recsys`` is examples/train_recsys.py (a
click model whose embedding tables are sharded over the ranks: all-to-all between hosts, DDP for
the dense part).

Each rank runs inside its host's namespace. torch's rendezvous (the TCP store on rank 0's host IP)
and gloo's TCP connections are plain IPv4 between hosts, so they cross the P4 switches on their
``ipv4_lpm`` routes like any other traffic; with ``--backend ina`` the DDP all_reduces go, over
kernel UDP on the host's address, through the aggregating switches of the job whose plan file the
launcher wrote (INA_PLAN: the hosts' namespaces have no route to the controller in the root
namespace, but they share its file system). The launcher replaces that file with each new version when
the controller re-plans the job, and each rank's agent follows it (worker.plan_updates.PlanFileWatch).

``run_ranks`` starts the processes, streams rank 0's progress, waits with a deadline and returns
rank 0's summary; any failure is a ``TrainError`` naming the host and quoting its last output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from topologies.errors import TrainError
from topologies.p4switch import stop_process
from worker.stacks import STACKS_SIGNAL_ENV

REPO = Path(__file__).resolve().parents[1]
# an ina rank writes every thread's stack to its log on this signal (worker/stacks.py)
STACKS_SIGNAL = signal.SIGUSR1
STACKS_WAIT_S = 1.0  # for the dump to reach the log
EXAMPLES = {"digits": REPO / "examples" / "train_digits.py", "recsys": REPO / "examples" / "train_recsys.py"}
BACKENDS = ("ina", "gloo")
# figures of the recsys example's summary shown after its line (fraction or bytes per worker and iteration)
RECSYS_FIGURES = (
    "test_auc",
    "teacher_accuracy",
    "teacher_auc",
    "alltoall_bytes_per_iteration",
    "dense_allreduce_bytes_per_iteration",
    "replicated_table_bytes_per_iteration",
)


@dataclass
class RankHost:
    """Where one rank runs: the host's name, its IP and its data-plane interface."""

    name: str
    ip: str
    intf: str


@dataclass
class TrainResult:
    backend: str
    workers: int
    epochs: int
    seed: int
    test_accuracy: float
    ms_per_iteration: float
    iterations: int
    ranks_in_sync: bool
    elapsed: float  # wall clock of the whole run, start-up included
    switch_counters: dict[str, dict[str, int]] = field(default_factory=dict)  # ina: this run's counts
    job_id: int | None = None
    notes: list[str] = field(default_factory=list)  # ranks that failed after training had finished
    example: str = "digits"
    figures: dict[str, float] = field(default_factory=dict)  # recsys: RECSYS_FIGURES
    # ina: the round trips rank 0's agent sent (InaProcessGroup.switch_counts): "agreements" (MAX rounds),
    # "value_rounds" (SUM rounds), and the "chunks" (packets of K values, first sends) they took
    switch_rounds: dict[str, int] = field(default_factory=dict)
    # digits: the mean over epochs 2.. (None for one epoch or another example): the steady state
    ms_after_first_epoch: float | None = None

    def steady_text(self) -> str:
        """' (X after the first epoch)' when the run measured it, else ''."""
        if self.ms_after_first_epoch is None:
            return ""
        return f" ({self.ms_after_first_epoch:.1f} after the first epoch)"

    def summary_line(self) -> str:
        what = self.backend if self.example == "digits" else f"{self.example} {self.backend}"
        line = (
            f"train {what}: {self.workers} workers, {self.epochs} epochs, seed {self.seed}: "
            f"test accuracy {100 * self.test_accuracy:.2f} %, {self.ms_per_iteration:.1f} ms/iteration "
            f"over {self.iterations} iterations{self.steady_text()}, parameters identical on all ranks: {self.ranks_in_sync} "
            f"(run took {self.elapsed:.0f} s)"
        )
        if self.switch_rounds and self.iterations:
            trips = (self.switch_rounds["agreements"] + self.switch_rounds["value_rounds"]) / self.iterations
            line += f"; {trips:.2f} switch round trips per iteration"
        f = self.figures
        if self.example == "recsys" and f:
            line += (
                f"; teacher accuracy {100 * f['teacher_accuracy']:.2f} %, AUC {f['test_auc']:.4f} "
                f"(teacher {f['teacher_auc']:.4f}); per worker and iteration: "
            )
            if f["alltoall_bytes_per_iteration"]:
                line += (
                    f"all-to-all {f['alltoall_bytes_per_iteration'] / 1e3:.1f} KB, dense all_reduce "
                    f"{f['dense_allreduce_bytes_per_iteration'] / 1e3:.1f} KB, replicated tables would all-reduce "
                    f"{f['replicated_table_bytes_per_iteration'] / 1e3:.1f} KB"
                )
            else:  # the replicated baseline (--embeddings replicated): tables and dense part in DDP
                line += f"all_reduce {f['dense_allreduce_bytes_per_iteration'] / 1e3:.1f} KB (tables replicated)"
        return line


def default_timeout(epochs: int, workers: int) -> float:
    """Generous but bounded: start-up of every torch process on 2 cores, then per-epoch time with
    Python softswitches forwarding every packet."""
    return 240.0 + 15.0 * epochs * max(1, workers // 2)


def rank_env(host: RankHost, plan_path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INA_", "MASTER_", "GLOO_"))}
    env.update(
        PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME=host.intf
    )  # gloo would otherwise pick the root's hostname address
    if plan_path:
        env.update(INA_PLAN=plan_path, INA_TRANSPORT="udp", INA_HOST=host.name)
        env[STACKS_SIGNAL_ENV] = STACKS_SIGNAL.name.removeprefix("SIG")  # the deadline's stack dump (_wait)
    return env


def rank_argv(
    backend: str,
    rank: int,
    world: int,
    master: RankHost,
    port: int,
    epochs: int,
    seed: int,
    host: RankHost,
    summary: Path | None,
    example: str = "digits",
    example_args: Sequence[str] = (),
) -> list[str]:
    argv = [
        sys.executable,
        str(EXAMPLES[example]),
        "--backend",
        backend,
        "--rank",
        str(rank),
        "--world-size",
        str(world),
        "--master-addr",
        master.ip,
        "--master-port",
        str(port),
        "--epochs",
        str(epochs),
        "--seed",
        str(seed),
    ]
    if backend == "ina":
        argv += ["--transport", "udp", "--host", host.name]
    if summary is not None:
        argv += ["--json", str(summary)]
    return argv + list(example_args)


class _Rank:
    def __init__(self, rank: int, host: RankHost, proc, log_path: Path):
        self.rank, self.host, self.proc, self.log_path = rank, host, proc, log_path
        self.shown = 0  # bytes of the log already streamed
        self.ended_at: float | None = None

    @property
    def label(self) -> str:
        return f"{self.host.name} (rank {self.rank})"

    def tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "    (no output)"
        last = [line for line in text.splitlines() if line.strip() and not _is_noise(line)][-lines:]
        return "\n".join("    " + line for line in last) or "    (no output)"

    def new_output(self) -> list[str]:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.shown)
                data = f.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self.shown += len(complete)
        return complete.decode(errors="replace").splitlines()


def run_ranks(
    network,
    hosts: list[RankHost],
    backend: str,
    epochs: int,
    seed: int,
    workdir: Path,
    *,
    plan_path: str | None = None,
    port: int = 29500,
    timeout: float | None = None,
    log=print,
    grace: float = 20.0,
    example: str = "digits",
    example_args: Sequence[str] = (),
) -> TrainResult:
    """Train ``example`` with one process per host (``hosts`` in rank order) and return rank 0's summary;
    ``example_args`` go to the example's command line (e.g. ``--embeddings replicated`` for recsys)."""
    _check_run(backend, plan_path, epochs, example)
    timeout = timeout or default_timeout(epochs, len(hosts))
    run_dir = Path(workdir) / (
        f"train-{backend}-{port}" if example == "digits" else f"train-{example}-{backend}-{port}"
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = run_dir / "summary.json"
    ranks: list[_Rank] = []
    start = time.monotonic()
    try:
        for rank, host in enumerate(hosts):
            argv = rank_argv(
                backend, rank, len(hosts), hosts[0], port, epochs, seed, host, summary if rank == 0 else None,
                example, example_args,
            )  # fmt: skip
            ranks.append(_start_rank(network, rank, host, argv, run_dir, rank_env(host, plan_path)))
        late = _wait(ranks, summary, start + timeout, timeout, grace, log, stacks=backend == "ina")
    finally:
        for r in ranks:
            stop_process(r.proc)
    _stream(ranks[0], log)
    result = _result(ranks[0], summary, backend, example, time.monotonic() - start)
    for r, what in late:
        result.notes.append(f"{r.label} {what} after training had finished on every rank; its last output:\n{r.tail()}")
        log("[lab] note: " + result.notes[-1])
    return result


def _check_run(backend: str, plan_path: str | None, epochs: int, example: str) -> None:
    """Refuse a run that cannot start, in one line, before any process does."""
    if example not in EXAMPLES:
        raise TrainError(f"unknown example {example!r} (choose {' or '.join(EXAMPLES)})")
    if backend not in BACKENDS:
        raise TrainError(f"unknown backend {backend!r} (choose {' or '.join(BACKENDS)})")
    if backend == "ina" and not plan_path:
        raise TrainError("the ina backend needs the job's plan file")
    if epochs < 1:
        raise TrainError(f"epochs must be at least 1, got {epochs}")


def _start_rank(network, rank: int, host: RankHost, argv: list[str], run_dir: Path, env: dict[str, str]) -> _Rank:
    """One rank's process in its host, its output into ``rank<R>-<host>.log`` of the run's directory."""
    log_path = run_dir / f"rank{rank}-{host.name}.log"
    proc = start_rank_process(network, host, argv, f"training rank {rank} on {host.name}", log_path, env)
    return _Rank(rank, host, proc, log_path)


def start_rank_process(
    network, host: RankHost, argv: list[str], what: str, log_path: Path, env: dict[str, str]
) -> subprocess.Popen:
    """A rank's process in its host's namespace (``what`` it is, recorded for teardown), in the repository,
    its output (both streams) into ``log_path``, with no input."""
    with open(log_path, "wb") as out:
        return network.popen(
            host.name,
            argv,
            what,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
        )


def _result(first: _Rank, summary: Path, backend: str, example: str, elapsed: float) -> TrainResult:
    """The run's result from rank 0's summary (``first``: rank 0, whose output a missing summary quotes)."""
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError):
        raise TrainError(
            f"{first.label} exited without writing its summary; its last output:\n{first.tail()}"
        ) from None
    return TrainResult(
        backend,
        data["workers"],
        data["epochs"],
        data["seed"],
        data["test_accuracy"],
        data["ms_per_iteration"],
        data["iterations"],
        data["ranks_in_sync"],
        elapsed,
        example=example,
        figures={k: data[k] for k in RECSYS_FIGURES if k in data},
        switch_rounds=dict(data.get("ina_rounds", {})),
        ms_after_first_epoch=data.get("ms_per_iteration_after_first_epoch"),
    )


# c10d warns once per connection that the hosts' addresses have no DNS name (the lab has no DNS);
# the line stays in the rank's log but is not worth showing
_NOISE = ("The hostname of the client socket cannot be retrieved",)


def _is_noise(line: str) -> bool:
    return any(n in line for n in _NOISE)


def _stream(rank: _Rank, log) -> None:
    """Show a rank's new complete output lines, prefixed with its host."""
    for line in rank.new_output():
        if not _is_noise(line):
            log(f"[{rank.host.name}] {line}")


def _wait(
    ranks: list[_Rank], summary: Path, deadline: float, timeout: float, grace: float, log, stacks: bool = False
) -> list[tuple[_Rank, str]]:
    """Until every rank has exited. The first rank to fail is the cause (the others then lose their
    peers): after it, the rest get ``grace`` seconds before the run is stopped. Rank 0 writes the
    summary only after an all_gather of every rank's parameters, so a rank failing once it exists
    failed on the way out (torch/gloo teardown), with training done: such ranks, and ranks still
    running ``grace`` seconds after the summary (stopped by the caller), are returned, not raised.
    ``stacks``: the ranks dump their stacks on STACKS_SIGNAL; the deadline's error shows those of the
    ranks still running."""
    watch = _Watch(ranks, summary)
    while True:
        now = time.monotonic()
        watch.poll(now)
        _stream(ranks[0], log)
        running = [r for r in ranks if r.ended_at is None]
        failed = watch.failed
        if failed is not None and failed.ended_at is not None and (not running or now > failed.ended_at + grace):
            raise TrainError(
                f"training failed on {failed.label}: exit status {failed.proc.returncode}; "
                f"its last output:\n{failed.tail()}"
            )
        if not running:
            return watch.late
        if failed is None and watch.finished_at is not None and now > watch.finished_at + grace:
            return watch.late + [(r, f"had not exited {grace:.0f} s later (stopped)") for r in running]
        if now > deadline:
            raise TrainError(_deadline_message(running, timeout, stacks))
        time.sleep(0.25)


class _Watch:
    """What the ranks did so far: when rank 0's summary appeared, the first rank that failed before it
    (the cause), the ranks that failed after it (late: training was done)."""

    def __init__(self, ranks: list[_Rank], summary: Path):
        self.ranks, self.summary = ranks, summary
        self.failed: _Rank | None = None
        self.late: list[tuple[_Rank, str]] = []
        self.finished_at: float | None = None

    def poll(self, now: float) -> None:
        if self.finished_at is None and self.summary.exists():
            self.finished_at = now
        for r in self.ranks:
            if r.ended_at is None and r.proc.poll() is not None:
                r.ended_at = now
                self._ended(r)

    def _ended(self, r: _Rank) -> None:
        if r.proc.returncode == 0:
            return
        if self.finished_at is not None:
            self.late.append((r, f"exited with status {r.proc.returncode}"))
        elif self.failed is None:
            self.failed = r


def _deadline_message(running: list[_Rank], timeout: float, stacks: bool) -> str:
    slow = running[0]
    return (
        f"training did not finish within {timeout:.0f} s: still running on "
        f"{', '.join(r.label for r in running)}; last output of {slow.host.name}:\n"
        f"{slow.tail()}" + (_stacks(running) if stacks else "")
    )


def _stacks(running: list[_Rank]) -> str:
    """Every thread's stack of each rank in ``running``, as each wrote it to its log on STACKS_SIGNAL."""
    sizes = {}
    for r in running:
        try:
            sizes[r.rank] = r.log_path.stat().st_size
            os.kill(r.proc.pid, STACKS_SIGNAL)
        except OSError:
            pass
    time.sleep(STACKS_WAIT_S)
    text = ""
    for r in running:
        try:
            with open(r.log_path, "rb") as f:
                f.seek(sizes.get(r.rank, 0))
                dump = f.read().decode(errors="replace").strip()
        except OSError:
            dump = ""
        if not dump and r.proc.poll() == -STACKS_SIGNAL:  # no handler yet: the signal's default action
            dump = f"(no stack dump: {STACKS_SIGNAL.name} ended it before the ina backend, which writes it, was loaded)"
        dump = "\n".join("    " + line for line in dump.splitlines()) or "    (no stack dump)"
        text += f"\nstacks of {r.label}:\n{dump}"
    return text
