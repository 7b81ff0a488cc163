"""Finding a P4 object (table, action, counter, register...) by its full or short name: one rule for the
controller and softswitch.

A P4Info names objects by their full names (``InaIngress.ina_jobs``); people and scripts use the short
name (``ina_jobs``), as p4runtime-shell allows. The full name always wins; a short name is accepted when
exactly one object has it, and a short name two objects share is an error naming both, never a silent
pick of one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

_Named = TypeVar("_Named")


class P4NameError(KeyError):
    """No object, or more than one, answers to a name (a ``KeyError``: what a failed lookup raises).

    ``candidates`` holds the full names a short name matched (empty: none matched)."""

    def __init__(self, kind: str, name: str, candidates: list[str], known: list[str]):
        self.kind, self.name, self.candidates = kind, name, candidates
        if candidates:
            message = f"{kind} name {name!r} is ambiguous: {', '.join(candidates)}"
        else:
            message = f"no {kind} named {name!r} (known: {', '.join(known) or 'none'})"
        super().__init__(message)


def short_name(full: str) -> str:
    """The last part of a P4 object's full name.

    Examples
    --------
    >>> short_name("InaIngress.ina_jobs"), short_name("NoAction")
    ('ina_jobs', 'NoAction')
    """
    return full.rsplit(".", 1)[-1]


def find_named(by_name: Mapping[str, _Named], name: str, kind: str) -> _Named:
    """The object called ``name`` (full, or a short name only one object has) in ``by_name`` (full name ->
    object).

    Parameters
    ----------
    by_name : Mapping
        Full name -> object.
    name : str
        A full or short name.
    kind : str
        What the objects are ("table", "action"...), for the error.

    Returns
    -------
    The object.

    Raises
    ------
    P4NameError
        No object has that name, or several have that short name (the message names them).

    Examples
    --------
    >>> names = {"Ingress.t": 1, "Ingress.c": 2, "Egress.c": 3}
    >>> find_named(names, "t", "table"), find_named(names, "Egress.c", "counter")
    (1, 3)
    >>> find_named(names, "c", "counter")
    Traceback (most recent call last):
    ...
    protocol.p4names.P4NameError: "counter name 'c' is ambiguous: Egress.c, Ingress.c"
    """
    if name in by_name:
        return by_name[name]
    matches = sorted(full for full in by_name if short_name(full) == name)
    if len(matches) == 1:
        return by_name[matches[0]]
    raise P4NameError(kind, name, matches, sorted(by_name))
