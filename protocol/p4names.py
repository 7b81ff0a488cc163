"""Finding a P4 object (table, action, counter, register, key...) by its full or short name: one rule for
the controller and softswitch (its Switch, P4Info index, table entries and STF runner).

A P4Info names objects by their full names (``InaIngress.ina_jobs``); people and scripts use a short
name, a suffix of the full name that starts at a dot (``ina_jobs``, or ``lane_pair_0.lanes`` for
``InaIngress.lane_pair_0.lanes``), as p4runtime-shell and p4c's STF driver allow; P4Info's own aliases
are such suffixes. The full name always wins; a short name is accepted when exactly one object's name
ends with it, and a short name several objects share is an error naming them, never a silent pick of one.
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


def is_short_name_of(name: str, full: str) -> bool:
    """Whether ``name`` is ``full`` without one or more of its leading dotted parts.

    Examples
    --------
    >>> is_short_name_of("lane_pair_0.lanes", "InaIngress.lane_pair_0.lanes"), is_short_name_of("jobs", "ina_jobs")
    (True, False)
    """
    return full.endswith("." + name)


def find_named(by_name: Mapping[str, _Named], name: str, kind: str) -> _Named:
    """The object called ``name`` (its full name, or a short name only one object's name ends with) in
    ``by_name`` (full name -> object).

    Parameters
    ----------
    by_name : Mapping
        Full name -> object.
    name : str
        A full name, or a suffix of one that starts after a dot.
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
    >>> names = {"Ingress.t": 1, "Ingress.c": 2, "Egress.c": 3, "Ingress.p.c": 4}
    >>> find_named(names, "t", "table"), find_named(names, "Egress.c", "counter"), find_named(names, "p.c", "counter")
    (1, 3, 4)
    >>> find_named(names, "c", "counter")
    Traceback (most recent call last):
    ...
    protocol.p4names.P4NameError: "counter name 'c' is ambiguous: Egress.c, Ingress.c, Ingress.p.c"
    """
    if name in by_name:
        return by_name[name]
    matches = sorted(full for full in by_name if is_short_name_of(name, full))
    if len(matches) == 1:
        return by_name[matches[0]]
    raise P4NameError(kind, name, matches, sorted(by_name))
