"""Code-health figures of the tree: lint findings, typed functions per part, docstring coverage.

    python scripts/code_health.py [ROOT] [--json OUT]

Prints three tables (and writes them as JSON with --json), so the figures in an issue's closing note
can be reproduced on any commit (check the commit out, run this on it):

- ruff findings: ``ruff check`` with the project's configuration (pyproject.toml), by rule, and the
  files ``ruff format`` would change;
- fully typed functions per part: every parameter but ``self``/``cls`` annotated and a return
  annotation (``__init__`` may omit it), counted over each package's non-generated modules;
- public functions of controller/ and worker/ with a docstring, with numpydoc sections as networkx
  writes them (``Parameters``, ``Returns``, ``Raises``, ``Examples`` where they apply), and with an
  ``Examples`` section.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

PARTS = ("protocol", "controller", "worker", "server", "softswitch", "topologies", "native")
DOCSTRING_PARTS = ("controller", "worker")
GENERATED = ("_pb2.py", "_pb2_grpc.py")


def _modules(root: Path, part: str) -> list[Path]:
    return sorted(p for p in (root / part).rglob("*.py") if not p.name.endswith(GENERATED))


def _functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every function and method, with whether it is public (reachable by a public name)."""
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []

    def visit(node: ast.AST, public_scope: bool, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                public = public_scope and not in_function and not child.name.startswith("_")
                found.append((child, public))
                visit(child, False, True)
            elif isinstance(child, ast.ClassDef):
                visit(child, public_scope and not in_function and not child.name.startswith("_"), in_function)
            else:
                visit(child, public_scope, in_function)

    visit(tree, True, False)
    return found


def fully_typed(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every parameter annotated (but a leading self/cls) and the return too (``__init__`` excepted)."""
    args = fn.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    if any(p.annotation is None for p in params):
        return False
    return fn.returns is not None or (fn.name == "__init__" and bool(params))


SECTIONS = ("Parameters", "Returns", "Raises", "Examples")


def sections(doc: str) -> set[str]:
    """The numpydoc section headers of a docstring (a name underlined with dashes), as networkx writes them."""
    lines = [line.strip() for line in doc.splitlines()]
    return {a for a, b in zip(lines, lines[1:], strict=False) if a in SECTIONS and b.startswith("---")}


def typed_counts(root: Path) -> dict[str, dict[str, int]]:
    out = {}
    for part in PARTS:
        total = typed = 0
        for path in _modules(root, part):
            for fn, _ in _functions(ast.parse(path.read_text(), str(path))):
                total += 1
                typed += fully_typed(fn)
        out[part] = {"functions": total, "fully_typed": typed}
    return out


def docstring_counts(root: Path) -> dict[str, dict[str, int]]:
    out = {}
    for part in DOCSTRING_PARTS:
        public = documented = with_sections = with_examples = 0
        for path in _modules(root, part):
            for fn, is_public in _functions(ast.parse(path.read_text(), str(path))):
                if not is_public:
                    continue
                public += 1
                doc = ast.get_docstring(fn)
                found = sections(doc) if doc is not None else set()
                documented += doc is not None
                with_sections += bool(found)
                with_examples += "Examples" in found
        out[part] = {
            "public_functions": public,
            "with_docstring": documented,
            "with_sections": with_sections,
            "with_examples": with_examples,
        }
    return out


def ruff_counts(root: Path, ruff: str) -> dict[str, int]:
    """Findings by rule code, with the configuration of ``root``'s pyproject.toml."""
    run = subprocess.run(
        [ruff, "check", "--exit-zero", "--output-format", "json", "."], cwd=root, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise SystemExit(f"code_health: ruff failed: {run.stderr.strip()}")
    return dict(sorted(Counter(item["code"] or "syntax" for item in json.loads(run.stdout)).items()))


def unformatted_files(root: Path, ruff: str) -> int:
    """Files ``ruff format`` would change."""
    run = subprocess.run([ruff, "format", "--check", "."], cwd=root, capture_output=True, text=True)
    found = re.search(r"(\d+) files? would be reformatted", run.stdout + run.stderr)
    return int(found.group(1)) if found else 0


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]), help="a checkout")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--ruff", default=str(Path(sys.executable).with_name("ruff")), help="the ruff executable")
    args = ap.parse_args(argv)
    root = Path(args.root)
    ruff = args.ruff if Path(args.ruff).exists() else shutil.which("ruff")
    if ruff is None:
        raise SystemExit("code_health: no ruff (make setup installs it into .venv)")
    figures = {
        "ruff": ruff_counts(root, ruff),
        "unformatted": unformatted_files(root, ruff),
        "typed": typed_counts(root),
        "docstrings": docstring_counts(root),
    }

    print(f"ruff findings: {sum(figures['ruff'].values())}, files ruff format would change: {figures['unformatted']}")
    for code, count in figures["ruff"].items():
        print(f"  {code:<8}{count:>5}")
    print("\nfully typed functions per part:")
    for part, c in figures["typed"].items():
        print(f"  {part:<12}{c['fully_typed']:>5} / {c['functions']:<5}{_percent(c['fully_typed'], c['functions']):>5}")
    print(
        "\npublic functions: with a docstring, with numpydoc sections (Parameters/Returns/Raises/Examples), with Examples:"
    )
    for part, c in figures["docstrings"].items():
        n = c["public_functions"]
        print(
            f"  {part:<12}{c['with_docstring']:>5} / {n:<5}{_percent(c['with_docstring'], n):>5}"
            f"   sections {c['with_sections']:>4}{_percent(c['with_sections'], n):>6}"
            f"   examples {c['with_examples']:>4}{_percent(c['with_examples'], n):>6}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
