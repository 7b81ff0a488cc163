"""pyproject.toml's mypy sections: a module named strict is checked with strict's flags.

mypy lets a wildcard section's explicit ``disallow_untyped_defs = false`` (and the like) win over a named
section's ``strict = true``, so a strict module under such a wildcard must set those flags by name, or an
unannotated function in it passes ``make lint``."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
STRICT_FLAGS = (
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "disallow_untyped_calls",
    "disallow_any_generics",
    "warn_return_any",
)


def _covers(pattern: str, module: str) -> bool:
    """A section pattern (``a.*`` or ``a.b``) applies to ``module`` (itself possibly ``a.b.*``)."""
    name = module.removesuffix(".*")
    if pattern.endswith(".*"):
        return name == pattern[:-2] or name.startswith(pattern[:-1])
    return name == pattern


def _modules(section: dict) -> list[str]:
    module = section["module"]
    return [module] if isinstance(module, str) else list(module)


def test_every_strict_module_keeps_the_flags_a_wildcard_turns_off():
    sections = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"]["overrides"]
    loosening = [(s, [f for f in STRICT_FLAGS if s.get(f) is False]) for s in sections]
    missing = []
    for strict in (s for s in sections if s.get("strict")):
        for module in _modules(strict):
            for section, flags in loosening:
                if section is strict or not any(_covers(p, module) for p in _modules(section)):
                    continue
                missing += [f"{module}: {flag}" for flag in flags if strict.get(flag) is not True]
    assert not missing, "strict modules a wildcard section loosens (set these flags by name):\n" + "\n".join(missing)
