"""Fail on functions longer than ``MAX_LINES`` in the checked packages, unless allowed here with a reason.

A function made of phases separated by comments is where a newcomer gets lost and bugs hide: split it
into functions whose names say what each phase does. Length counts the lines from ``def`` to the
function's last line without its docstring (docstrings follow numpydoc and are long by rule). Run by
``make lint``; ``python scripts/function_length.py [paths...]`` checks other paths, ``--list N`` prints
every function longer than N lines.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
CHECKED = ("controller", "worker", "server", "protocol", "topologies")
GENERATED = ("_pb2.py", "_pb2_grpc.py")  # protoc's output
# "path:qualified name" -> why it stays long
ALLOWED: dict[str, str] = {
    "controller/cli.py:build_parser": "one flat list of argparse arguments, read top to bottom like the help",
    "protocol/batch.py:PacketTemplate.encode": "the wire format's fields in header order (docs/protocol.md), over a batch",
    "worker/torch_backend/compression_hooks.py:_exchange_group": "the torch backend is not reviewed for this yet",
}


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of ``tree`` with its qualified name (nested ones too)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")


def length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` (after decorators) to the end, without the docstring."""
    lines = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def measure(paths: list[Path]) -> Iterator[tuple[str, int]]:
    """("path:qualified name", length) of every function in the Python files under ``paths``."""
    for top in paths:
        for path in sorted(top.rglob("*.py")) if top.is_dir() else [top]:
            if path.name.endswith(GENERATED):
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            rel = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else str(path)
            for name, node in functions(tree):
                yield f"{rel}:{name}", length(node)


def main(argv: list[str] | None = None) -> int:
    """Print every function over the limit that is not allowed; 1 if there is one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / p for p in CHECKED])
    parser.add_argument("--list", type=int, metavar="N", help="print every function longer than N lines")
    args = parser.parse_args(argv)
    sizes = dict(measure(args.paths))
    if args.list is not None:
        for name, lines in sorted(sizes.items(), key=lambda item: -item[1]):
            if lines > args.list:
                print(f"{lines:5d} {name}")
        return 0
    too_long = [(name, lines) for name, lines in sizes.items() if lines > MAX_LINES and name not in ALLOWED]
    for name, lines in too_long:
        print(f"{name}: {lines} lines (limit {MAX_LINES}): split it into named phases or allow it in {__file__}")
    stale = [name for name in ALLOWED if name in sizes and sizes[name] <= MAX_LINES]
    if args.paths == [ROOT / p for p in CHECKED]:  # the whole check: an allowed function that is gone is stale too
        stale += [name for name in ALLOWED if name not in sizes]
    for name in stale:
        print(f"{name}: allowed to be long in {Path(__file__).name} but is not (any more): remove it there")
    return 1 if too_long or stale else 0


if __name__ == "__main__":
    sys.exit(main())
