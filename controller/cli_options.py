"""The options the project's command lines share: one spelling, one meaning and one help text each.

``inactl``, ``python -m topologies.inprocess serve``, the demo and the benches add these options from
here, so ``--workers``, ``--server``, ``--result-mode``, ``--program`` and ``--pool-size`` mean the
same in every command (docs/cli.md is the table). An old spelling keeps working for one release as a
hidden alias that prints a one-line warning naming the new one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from controller.options import DEFAULT_POOL_SIZE, DEFAULT_RESULT_MODE, RESULT_MODES

PROGRAM_HELP = (
    "the switches' program: v1model (p4src/ina.p4, K = 64 values per packet), v1model-k256 (p4src/ina_k256.p4), "
    "v1model-k344 (p4src/ina_k344.p4), v1model-k1024 (p4src/ina_k1024.p4, jumbo links), "
    "tna (p4src/tna/ina_tna.p4, softswitch only) or a path; "
    "default: the largest K the topology's links carry (v1model-k344 at a 1500-byte MTU)"
)


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: stores what the new one would and warns, on one line, which replaces it.

    Hidden from --help, so the help shows one spelling per idea."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        replacement: str,
        convert: Callable[[Any], Any] | None = None,
        **kw: Any,
    ) -> None:
        kw.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kw)
        self.replacement, self.convert = replacement, convert

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog}: warning: {option_string} is deprecated, use {self.replacement}", file=sys.stderr)
        setattr(namespace, self.dest, self.convert(values) if self.convert else values)


def add_deprecated(p: argparse.ArgumentParser | Any, old: str, replacement: str, dest: str, **kw: Any) -> None:
    """``old`` as a hidden alias of the option ``replacement`` (which stores into ``dest``)."""
    p.add_argument(old, dest=dest, action=DeprecatedAlias, replacement=replacement, default=argparse.SUPPRESS, **kw)


def add_workers(p: argparse.ArgumentParser | Any, default: str = "the topology's worker hosts") -> None:
    """``--workers HOST [HOST ...] | N``: the job's worker hosts in rank order, or a count N."""
    p.add_argument(
        "--workers",
        nargs="+",
        metavar="HOST",
        help=f"the job's worker hosts in rank order (words or comma-separated), or a count N: the first N "
        f"worker hosts (default: {default})",
    )


def worker_choice(values: Sequence[str] | None) -> list[str] | int | None:
    """What ``--workers`` asked for: host names, a count, or None (the default).

    >>> worker_choice(["h1,h2", "h3"]), worker_choice(["4"]), worker_choice(None)
    (['h1', 'h2', 'h3'], 4, None)
    """
    names = [n for v in values or () for n in v.split(",") if n]
    if not names:
        return None
    if len(names) == 1 and names[0].isdigit():
        return int(names[0])
    return names


def pick_workers(choice: list[str] | int | None, candidates: Sequence[str], error: type[Exception]) -> list[str]:
    """The worker hosts ``choice`` names: its names, the first N ``candidates`` for a count, all of them for None.

    ``error`` is the calling part's user error, raised with a one-line message when the count is too large."""
    if choice is None:
        return list(candidates)
    if isinstance(choice, int):
        if choice < 1:
            raise error(f"--workers {choice}: a job needs at least one worker")
        if choice > len(candidates):
            raise error(f"--workers {choice}: the topology has {len(candidates)} worker hosts")
        return list(candidates[:choice])
    return list(choice)


def add_server(
    p: argparse.ArgumentParser | Any, several: bool = True, default: str = "the hosts with role server"
) -> None:
    """``--server HOST [HOST ...]`` (``--servers`` too): the aggregation server(s); ``several=False`` for one."""
    p.add_argument(
        "--server",
        "--servers",
        dest="server",
        nargs="+" if several else None,
        metavar="HOST",
        help=f"aggregation server host{'(s)' if several else ''} (default: {default})",
    )


def add_result_mode(p: argparse.ArgumentParser | Any, old: str | None = None) -> None:
    """``--result-mode {unicast,multicast}``; ``old`` a deprecated spelling still accepted."""
    p.add_argument(
        "--result-mode",
        default=DEFAULT_RESULT_MODE,
        choices=RESULT_MODES,
        help=f"how sums come back: one multicast down the tree or one unicast per worker along its reverse path "
        f"(default {DEFAULT_RESULT_MODE})",
    )
    if old:
        add_deprecated(p, old, "--result-mode", "result_mode", choices=RESULT_MODES)


def add_program(p: argparse.ArgumentParser | Any, help: str = PROGRAM_HELP, **kw: Any) -> None:
    """``--program NAME|PATH``: what the switches run."""
    p.add_argument("--program", metavar="NAME|PATH", help=help, **kw)


def add_pool_size(
    p: argparse.ArgumentParser | Any, default: int | None = DEFAULT_POOL_SIZE, old: str | None = None
) -> None:
    """``--pool-size N``: chunks a worker keeps in flight per tree (each aggregating switch holds 2 N slots)."""
    shown = f"default {default}" if default is not None else "default: the planner's"
    p.add_argument(
        "--pool-size",
        type=int,
        default=default,
        metavar="N",
        help=f"chunks in flight per job and tree; an aggregating switch gives the job 2 N slots, two shadow "
        f"sets of N ({shown})",
    )
    if old:
        add_deprecated(p, old, "--pool-size", "pool_size", type=int)


def lanes_program(text: str) -> str:
    """``--lanes K``: the v1model build of p4src/ina.p4 that carries K values per packet.

    >>> lanes_program("256")
    'v1model-k256'
    """
    from controller.programs import V1MODEL_BUILDS

    if not text.isdigit() or int(text) not in V1MODEL_BUILDS:
        raise argparse.ArgumentTypeError(f"{text}: K must be one of {', '.join(map(str, sorted(V1MODEL_BUILDS)))}")
    return V1MODEL_BUILDS[int(text)]


def add_lanes_shorthand(p: argparse.ArgumentParser | Any, several: bool = False) -> None:
    """``--lanes K``: a shorthand for ``--program`` naming the v1model build by its K (64, 256 or 1024)."""
    p.add_argument(
        "--lanes",
        dest="program",
        type=lanes_program,
        nargs="+" if several else None,
        metavar="K",
        help="shorthand for --program by values per packet: 64 (v1model), 256 (v1model-k256), 344 (v1model-k344), 1024 (v1model-k1024)",
    )
