"""The one table of extern calls softswitch compiles: each back end registers its emitter of an extern
method (by the instance's kind and the method's name) or an extern function (by name) here, and
dispatches calls through it. So what one back end runs and the other does not is a difference of two
key sets (`missing`), which a test keeps empty, instead of two chains of `if name == ...` that drift.

    @EXTERNS.function("c", "mark_to_drop")
    def mark_to_drop(self, out, call, scope): ...

    emitter = EXTERNS.function_emitter("c", call.function)  # None: the back end does not compile it

An emitter is a function of the back end's extern emitter object (called as `emitter(self, ...)`); what
it is given after `self` is the back end's own convention (backend_c/externs.py, backend_python/externs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

Emitter = Callable[..., Any]
E = TypeVar("E", bound=Emitter)

BACKENDS = ("python", "c")


class ExternTable:
    """Emitters by back end of extern methods, keyed (instance kind, method), and extern functions."""

    def __init__(self) -> None:
        self._methods: dict[tuple[str, str], dict[str, Emitter]] = {}
        self._functions: dict[str, dict[str, Emitter]] = {}

    def method(self, backend: str, kind: str, *methods: str) -> Callable[[E], E]:
        """Registers the decorated function as `backend`'s emitter of `kind.method` for each method."""
        return self._register(self._methods, backend, [(kind, m) for m in methods])

    def function(self, backend: str, *names: str) -> Callable[[E], E]:
        """Registers the decorated function as `backend`'s emitter of each extern function named."""
        return self._register(self._functions, backend, list(names))

    @staticmethod
    def _register(table: dict, backend: str, keys: list) -> Callable[[E], E]:
        if backend not in BACKENDS:
            raise ValueError(f"unknown back end {backend!r} (known: {', '.join(BACKENDS)})")

        def register(emitter: E) -> E:
            for key in keys:
                emitters = table.setdefault(key, {})
                if backend in emitters and emitters[backend] is not emitter:
                    raise ValueError(f"the {backend} back end registers two emitters of extern {key}")
                emitters[backend] = emitter
            return emitter

        return register

    def method_emitter(self, backend: str, kind: str, method: str) -> Emitter | None:
        return self._methods.get((kind, method), {}).get(backend)

    def function_emitter(self, backend: str, name: str) -> Emitter | None:
        return self._functions.get(name, {}).get(backend)

    def missing(self, backend: str, reference: str) -> list[str]:
        """The externs `reference` compiles and `backend` does not ("kind.method" or a function name)."""
        methods = [f"{k}.{m}" for (k, m), e in self._methods.items() if reference in e and backend not in e]
        functions = [name for name, e in self._functions.items() if reference in e and backend not in e]
        return sorted(methods + functions)

    def names(self, backend: str) -> list[str]:
        """Every extern `backend` compiles ("kind.method" or a function name)."""
        methods = [f"{k}.{m}" for (k, m), e in self._methods.items() if backend in e]
        return sorted(methods + [name for name, e in self._functions.items() if backend in e])


EXTERNS = ExternTable()
