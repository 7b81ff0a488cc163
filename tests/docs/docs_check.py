"""What the docs test checks, as functions of a checkout's root (so a test can run them on a broken copy).

Every check returns a list of problems, one line each, naming the page and what it refers to.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# folders of the repository whose paths the pages name in prose, code or links
TOP_FOLDERS = ("p4src", "protocol", "softswitch", "controller", "worker", "server", "topologies", "bench", "tests")
TOP_FOLDERS += ("examples", "scripts", "docs", "native")
# written by runs, not part of a checkout
GENERATED = ("bench/results/", "build/")
PATH_RE = re.compile(r"(?<![\w/.<-])((?:" + "|".join(TOP_FOLDERS) + r")/[A-Za-z0-9_./*-]*[A-Za-z0-9_*/])")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
CODE_RE = re.compile(r"```.*?```|`[^`]{1,400}`", re.S)
MODULE_RE = re.compile(r"python -m ([A-Za-z_][\w.]*)((?: [a-z][a-z_-]*(?![\w/.-]))?)")
MAKE_RE = re.compile(r"(?<![\w-])make ([a-z][\w-]*)")
CLI_RE = re.compile(r"(?<![\w-])(inactl|softswitch) ([a-z][a-z-]+)")
# a script run in a code span: after "python", or as its first word followed by flags
SCRIPT_RE = re.compile(r"(?:python |^(?=\S+ --?\w))((?:bench|examples|scripts)/[\w/]+\.py)(?![\w/.])", re.M)
# modules of other projects the pages run
EXTERNAL_MODULES = {"pytest", "pip", "torch.distributed.run", "venv"}
CLI_MODULES = {"inactl": "controller", "softswitch": "softswitch"}
RESULTS_BEGIN, RESULTS_END = "<!-- results:begin -->", "<!-- results:end -->"
DATE_RE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
HASH_RE = re.compile(r"\bgit [0-9a-f]{7,40}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def pages(root: Path) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _rel(root: Path, page: Path) -> str:
    return str(page.relative_to(root))


def _code(text: str) -> str:
    """The text of a page's code blocks and spans (where commands are), a span on one line even when the
    page wraps it."""
    parts = []
    for m in CODE_RE.finditer(text):
        code = m.group(0)
        parts.append(code.strip("`") if code.startswith("```") else " ".join(code.strip("`").split()))
    return "\n".join(parts)


def _exists(root: Path, ref: str) -> bool:
    """A path, a glob matching something, or a dotted name inside a module (``worker/options.attach_env``)."""
    if any(ref.startswith(g) for g in GENERATED):
        return True
    if any(re.fullmatch(r"[A-Z]+(\.\w+)?", part) for part in ref.split("/")):  # a placeholder: tests/x/NAME.stf
        return True
    if "*" in ref:
        return any(root.glob(ref))
    if (root / ref).exists():
        return True
    head = ref
    while "." in Path(head).name:  # a module path followed by attributes
        head = head.rsplit(".", 1)[0]
        if (root / f"{head}.py").exists() or (root / head).is_dir():
            return True
    return False


def missing_paths(root: Path) -> list[str]:
    """Every repository path a page (or a part's README) names, in prose, code or a link, that the checkout
    lacks."""
    problems = []
    for page in markdown_pages(root):
        text = page.read_text()
        refs = {m.group(1).rstrip(".") for m in PATH_RE.finditer(text)}
        for ref in sorted(refs):
            if not _exists(root, ref):
                problems.append(f"{_rel(root, page)}: names {ref}, which does not exist")
        for target in sorted({m.group(1) for m in LINK_RE.finditer(text)}):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                problems.append(f"{_rel(root, page)}: links to {target}, which does not exist")
    return problems


def make_targets(root: Path) -> set[str]:
    text = (root / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


def missing_make_targets(root: Path) -> list[str]:
    """Every ``make TARGET`` in a page's code whose target the Makefile lacks."""
    targets = make_targets(root)
    problems = []
    for page in pages(root):
        for target in sorted(set(MAKE_RE.findall(_code(page.read_text())))):
            if target not in targets:
                problems.append(f"{_rel(root, page)}: `make {target}`, but the Makefile has no target {target}")
    return problems


def commands(root: Path) -> dict[tuple[str, ...], str]:
    """The commands the pages' code runs, as the argv that asks each for its --help, with the page that
    names it first: ``python -m MODULE [SUBCOMMAND]``, ``inactl SUB``, ``softswitch SUB`` and the
    bench, example and script files."""
    found: dict[tuple[str, ...], str] = {}
    for page in pages(root):
        code = _code(page.read_text())
        for module, sub in MODULE_RE.findall(code):
            if module in EXTERNAL_MODULES:
                continue
            argv = ("-m", module, *sub.split())
            found.setdefault(argv, _rel(root, page))
        for cli, sub in CLI_RE.findall(code):
            found.setdefault(("-m", CLI_MODULES[cli], sub), _rel(root, page))
        for script in SCRIPT_RE.findall(code):
            found.setdefault((script,), _rel(root, page))
    return found


def _module_file(root: Path, module: str) -> Path | None:
    """The checkout's file of a module run with -m (a package runs its __main__), or None. Looked up in the
    checkout itself: an installed copy of the project (pip install -e) would answer for a file removed here."""
    base = root.joinpath(*module.split("."))
    for path in (base / "__main__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


@cache
def _help_ok(root: Path, argv: tuple[str, ...]) -> tuple[bool, str]:
    if argv[0] == "-m" and _module_file(root, argv[1]) is None:
        return False, f"no module {argv[1]} in the checkout"
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, *argv, "--help"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    return proc.returncode == 0 and "usage" in proc.stdout.lower(), last


def failing_commands(root: Path, only: set[tuple[str, ...]] | None = None) -> list[str]:
    """Every command of ``commands`` (or of ``only``) whose ``--help`` fails or prints no usage."""
    problems = []
    for argv, page in sorted(commands(root).items()):
        if only is not None and argv not in only:
            continue
        ok, last = _help_ok(root, argv)
        if not ok:
            shown = "python " + " ".join(argv)
            problems.append(f"{page}: `{shown}` does not run (--help: {last or 'no usage printed'})")
    return problems


def readme_results(root: Path) -> tuple[list[str], list[str]]:
    """The README's results block: its table rows and its images."""
    text = (root / "README.md").read_text()
    if RESULTS_BEGIN not in text or RESULTS_END not in text:
        return [], []
    block = text.split(RESULTS_BEGIN, 1)[1].split(RESULTS_END, 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("|")]
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", block)
    return rows, images


def readme_figures_not_in_results(root: Path) -> list[str]:
    """Every row of the README's results table and its plot must come from docs/results.md."""
    rows, images = readme_results(root)
    if not rows:
        return [f"README.md: no results table between {RESULTS_BEGIN} and {RESULTS_END}"]
    results = (root / "docs" / "results.md").read_text()
    problems = [f"README.md: results row not in docs/results.md: {row}" for row in rows if row not in results]
    for image in images:
        inside_docs = image.removeprefix("docs/")
        if f"]({inside_docs})" not in results:
            problems.append(f"README.md: the plot {image} is not docs/results.md's")
        if not (root / image).exists():
            problems.append(f"README.md: the plot {image} does not exist")
    return problems


def journal_lines(root: Path, page: Path) -> list[str]:
    """Lines of a page that carry a date, a load average or a commit hash (history belongs in git)."""
    problems = []
    for n, line in enumerate(page.read_text().splitlines(), 1):
        for what, found in (
            ("a date", DATE_RE.search(line)),
            ("a load average", re.search(r"load avg|load average", line, re.I)),
            ("a session", re.search(r"\b(?:this|same|last|that) session\b", line, re.I)),
            ("a commit hash", HASH_RE.search(line)),
        ):
            if found:
                problems.append(f"{_rel(root, page)}:{n}: {what} ({found.group(0)})")
    return problems


# -- section references ------------------------------------------------------------------------------

FENCE_RE = re.compile(r"^```.*?^```", re.S | re.M)
HEADING_RE = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.M)
ANCHOR_LINK_RE = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")
# PAGE.md, "Section" (also "A" and "B"; PAGE.md ("Section"); [text](PAGE.md), "Section")
PAGE_REF_RE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)(?:\]\([^)\s]*\))?(?:, | \()"
    r"(\"[^\"\n]{1,120}\"(?:(?:,| and| or) \"[^\"\n]{1,120}\")*)"
)
# a section of the same page: above ("Section"), "Section" below
HERE_REF_RE = re.compile(r"(?:above|below),? \(\"([^\"\n]{1,120})\"\)|\"([^\"\n]{1,120})\",? (?:above|below)\b")


def markdown_pages(root: Path) -> list[Path]:
    """Every page a reader follows references through: README.md, docs/ and the parts' READMEs."""
    readmes = sorted(p for p in root.glob("*/**/README.md") if not any(part.startswith(".") for part in p.parts))
    return [*pages(root), *(p for p in readmes if "node_modules" not in p.parts)]


def heading_text(raw: str) -> str:
    """A heading as a reader sees it: no code marks, links reduced to their text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return text.replace("`", "").replace("**", "").strip()


def github_anchor(text: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> github_anchor("Resources (Tofino 1: 12 stages, 4 stateful ALUs)")
    'resources-tofino-1-12-stages-4-stateful-alus'
    """
    return re.sub(r"[^\w\- ]", "", heading_text(text).lower()).replace(" ", "-")


def headings(page: Path) -> list[str]:
    """A page's headings, outside its code blocks."""
    return [heading_text(m.group(2)) for m in HEADING_RE.finditer(FENCE_RE.sub("", page.read_text()))]


def anchors(page: Path) -> set[str]:
    """A page's anchors as GitHub makes them (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for text in headings(page):
        base = github_anchor(text)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def names_a_section(quoted: str, page: Path) -> bool:
    """A quoted section resolves to a heading of the page: its whole text, or its text up to a
    parenthesis or a colon ("Measured" for "Measured (`bench/compression.py`)")."""
    for text in headings(page):
        short = re.split(r" \(|: ", text, maxsplit=1)[0]
        if quoted in (text, short):
            return True
    return False


def _target(root: Path, page: Path, ref: str) -> Path | None:
    for base in (page.parent, root):
        path = (base / ref).resolve()
        if path.is_file():
            return path
    return None


def broken_section_refs(root: Path) -> list[str]:
    """Every link with an #anchor and every quoted section reference ("PAGE.md, "Section"", or a
    section "above"/"below") that names no heading of its page."""
    problems = []
    for page in markdown_pages(root):
        text = FENCE_RE.sub("", page.read_text())
        prose = " ".join(text.split())  # a reference may wrap
        for target, anchor in sorted(set(ANCHOR_LINK_RE.findall(text))):
            if re.match(r"[a-z]+:", target):
                continue
            dest = page if not target else _target(root, page, target)
            if dest is not None and anchor not in anchors(dest):
                problems.append(f"{_rel(root, page)}: links to {target}#{anchor}, which is no heading there")
        for ref, quoted in PAGE_REF_RE.findall(prose):
            dest = _target(root, page, ref)
            if dest is None:
                continue  # missing_paths names a missing page
            for section in re.findall(r"\"([^\"]+)\"", quoted):
                if not names_a_section(section, dest):
                    problems.append(f'{_rel(root, page)}: refers to {ref}, "{section}", which is no heading there')
        for a, b in HERE_REF_RE.findall(prose):
            if not names_a_section(a or b, page):
                problems.append(f'{_rel(root, page)}: refers to "{a or b}", which is no heading of the page')
    return problems
