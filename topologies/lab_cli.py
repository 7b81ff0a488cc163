"""mininet's CLI with the lab's commands added: ``allreduce``, ``baseline``, ``gloo``, ``counters``, ``plan``,
``train`` and ``kill`` (mininet's own ``link A B down`` and the rest stay). A command's user error prints
one line and the run goes on; its logs are then kept at exit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mininet.cli import CLI

from controller.cli_options import add_deprecated
from topologies.errors import USER_ERRORS, LabError
from topologies.lab_training import BACKENDS, EXAMPLES

if TYPE_CHECKING:
    from topologies.mininet_lab import MininetLab

TRAIN_USAGE = "train [EPOCHS] [--collective ina|gloo] [--seed S] [--timeout SECONDS] [--example digits|recsys]"


def rounds_values(line: str) -> tuple[int, int | None]:
    """``[ROUNDS] [VALUES]`` -> (rounds, values or None: the lab's)."""
    parts = line.split()
    try:
        return (int(parts[0]) if parts else 1), (int(parts[1]) if len(parts) > 1 else None)
    except ValueError:
        raise LabError(f"expected [ROUNDS] [VALUES] as whole numbers, got {line!r}") from None


def _train_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="train", add_help=False, exit_on_error=False)
    ap.add_argument("epochs", nargs="?", type=int, default=20)
    ap.add_argument("--collective", default="ina")
    add_deprecated(ap, "--backend", "--collective", "collective")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--example", default="digits")
    return ap


def parse_train_line(line: str) -> dict[str, Any]:
    """``[EPOCHS] [--collective ina|gloo] [--seed S] [--timeout SECONDS] [--example digits|recsys]`` -> keyword
    arguments of MininetLab.train (``--backend``: the deprecated name of ``--collective``, with a one-line warning)."""
    try:
        ns, extra = _train_parser().parse_known_args(line.split())
    except argparse.ArgumentError as exc:
        raise LabError(f"train: {exc}") from None
    if extra:
        raise LabError(f"train: unexpected {' '.join(extra)} (usage: {TRAIN_USAGE})")
    if ns.collective not in BACKENDS:
        raise LabError(f"train: unknown collective {ns.collective!r} (choose {' or '.join(BACKENDS)})")
    if ns.example not in EXAMPLES:
        raise LabError(f"train: unknown example {ns.example!r} (choose {' or '.join(EXAMPLES)})")
    if ns.epochs < 1:
        raise LabError(f"train: epochs must be at least 1, got {ns.epochs}")
    return vars(ns)


def logs_hint(lab: MininetLab) -> str:
    """For an error in the CLI: the run goes on; its logs are kept when it ends."""
    if not lab.failed:
        return ""
    return f"\n(this run's logs, in {lab.workdir}, are kept at exit" + (
        f" in {lab.keep_logs})" if lab.keep_logs else ")"
    )


class LabCLI(CLI):  # type: ignore[misc]  # mininet is untyped
    """The lab's commands on mininet's CLI; ``LabCLI(lab)`` runs it (``script``: its commands, then return)."""

    prompt = "ina> "

    def __init__(self, lab: MininetLab, script: str | None = None):
        self.lab = lab  # before CLI.__init__, which runs the command loop
        super().__init__(lab.network.net, stdin=sys.stdin, script=script)

    def _run(self, command: Callable[[], object]) -> None:
        """Run a command; a user error prints one line (with where the logs are kept, once the run failed)."""
        try:
            command()
        except USER_ERRORS as exc:
            print(f"error: {exc}{logs_hint(self.lab)}")

    def do_allreduce(self, line: str) -> None:
        """allreduce [ROUNDS] [VALUES]: run allreduce rounds through the switches and check the sums"""
        self._run(lambda: self.lab.allreduce(*rounds_values(line)))

    def do_baseline(self, line: str) -> None:
        """baseline [ROUNDS] [VALUES]: the same rounds through the parameter-server baseline"""
        self._run(lambda: self.lab.allreduce(*rounds_values(line), mode="ps"))

    def do_gloo(self, line: str) -> None:
        """gloo [ROUNDS] [VALUES]: the same rounds through torch.distributed's gloo between the worker hosts"""
        self._run(lambda: self.lab.allreduce(*rounds_values(line), mode="gloo"))

    def do_counters(self, line: str) -> None:
        """counters: bytes each link carried (both directions), switch and server agent counters"""
        print(self.lab.counters_text())

    def do_train(self, line: str) -> None:
        """train [EPOCHS] [--collective ina|gloo] [--seed S] [--example digits|recsys]: a training example,
        one process per worker host"""
        self._run(lambda: self.lab.train(**parse_train_line(line)))

    def do_plan(self, line: str) -> None:
        """plan: which switches aggregate, their fan-in, each worker's path"""
        print(self.lab.plan_text())

    def do_kill(self, line: str) -> None:
        """kill SWITCH: kill a switch's process, as a crash (the controller notices and re-plans the
        jobs on it; mininet's own 'link A B down' takes a link down, which it notices too)"""
        self._run(lambda: self.lab.kill_switch(line.strip()))
