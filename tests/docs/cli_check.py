"""The command lines docs/cli.md names, as argparse parsers, and its vocabulary table as data.

The parsers are the commands' own objects: inactl's ``build_parser``, softswitch's, the demo's, the
mininet lab's and the in-process network's ``build_parser``, and for a bench script the parser its ``main`` builds (caught
when it parses, before it runs anything)."""

from __future__ import annotations

import argparse
import re
import runpy
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI_PAGE = REPO / "docs" / "cli.md"


@dataclass
class Row:
    idea: str
    options: list[str]  # option strings; an all-caps word is a positional argument's metavar
    commands: list[str]
    old: dict[str, list[str]]  # old spelling -> the commands that still accept it


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def vocabulary(page: Path = CLI_PAGE) -> list[Row]:
    """The rows of the page's table (the one whose header starts with ``| Idea | Option |``)."""
    rows, inside = [], False
    for line in page.read_text().splitlines():
        if line.startswith("| Idea | Option |"):
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("|"):
            break
        if line.startswith("| ---"):
            continue
        idea, option, commands, old = _cells(line)
        options = [span.split()[0] for span in re.findall(r"`([^`]+)`", option)]
        rows.append(
            Row(
                idea,
                list(dict.fromkeys(options)),
                re.findall(r"`([^`]+)`", commands),
                {name: re.findall(r"`([^`]+)`", where) for name, where in re.findall(r"`(--[\w-]+)` \(([^)]*)\)", old)},
            )
        )
    return rows


class _Caught(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def _script_parser(path: Path) -> argparse.ArgumentParser:
    """The parser a bench script's main builds: its first parse is stopped before it returns."""
    original = argparse.ArgumentParser.parse_known_args

    def stop(self, args=None, namespace=None):
        raise _Caught(self)

    argparse.ArgumentParser.parse_known_args = stop  # type: ignore[method-assign]
    saved_argv = sys.argv
    sys.argv = [str(path)]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except _Caught as caught:
        return caught.parser
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
        sys.argv = saved_argv
    raise AssertionError(f"{path} parsed no arguments")


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(name)


@cache
def parser_of(command: str) -> argparse.ArgumentParser:
    """The parser of a command as docs/cli.md names it: ``inactl plan``, ``serve``, ``demo``, ``lab``,
    ``softswitch``, ``softswitch compile``, ``bench/NAME.py``."""
    words = command.split()
    if words[0] == "inactl":
        from controller.cli import build_parser

        return _subparser(build_parser(), words[1])
    if command == "serve":
        from topologies.inprocess.__main__ import build_parser as inprocess_parser

        return _subparser(inprocess_parser(), "serve")
    if command == "demo":
        from topologies.demo import build_parser as demo_parser

        return demo_parser()
    if command == "lab":
        from topologies.mininet_lab import build_parser as lab_parser

        return lab_parser()
    if words[0] == "softswitch":
        from softswitch import cli

        sub = words[1] if len(words) > 1 else "run"
        return {"run": cli.run_parser, "compile": cli.compile_parser, "stf": cli.stf_parser, "dump": cli.dump_parser}[
            sub
        ]()
    if command.startswith("bench/") and command.endswith(".py"):
        return _script_parser(REPO / command)
    raise KeyError(f"docs/cli.md names {command!r}, which this check does not know")


def action_of(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    """The action behind an option string, or behind a positional argument shown as ``option``."""
    for action in parser._actions:
        if option in action.option_strings:
            return action
        if not action.option_strings and option.isupper() and action.metavar == option:
            return action
    return None
