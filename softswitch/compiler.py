"""compile_program(): P4 source -> CompiledProgram (IR, ProgramInfo and a back end's executable code).

    P4 text -> preprocess -> parse (AST) -> lower (front end: typed, resolved IR) -> back end -> code

`lower_program`/`lower_source` stop at the IR. Back ends are registered in BACKENDS by name: "python"
(the reference: a generated Python module run by softswitch.runtime) and "native" (C run by
softswitch.native). Results are cached by the hash of the preprocessed source, so a program shared by
many switches is compiled once.

Which back end: the `backend` argument, else $SOFTSWITCH_BACKEND, else "native". A program the native
back end cannot run (no C compiler, or a construct the C back end does not compile) runs on the Python
back end instead, and softswitch says so in one line on stderr with the reason (`prog.fallback_reason`).
`Switch(prog)` then gives the matching switch class.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from typing import Any, Protocol

from native.build import CompileError, NativeBuildError

from . import ir
from .backend_c import NativeBackend, Unsupported
from .backend_python import PythonBackend
from .errors import SwitchError
from .frontend.errors import P4Error
from .frontend.lower import lower
from .frontend.parser import parse
from .frontend.preprocess import Preprocessor
from .frontend.program_info import program_info
from .ir.printer import program_text
from .program import ProgramInfo


class BackendCode(Protocol):
    """What a back end produces for one program."""

    def build(self, runtime: Any) -> dict:
        """The program's blocks bound to one switch's runtime state."""
        ...


class Backend(Protocol):
    name: str

    def compile(self, program: ir.Program, source_hash: str, path: str) -> BackendCode: ...


BACKENDS: dict[str, Backend] = {"python": PythonBackend(), "native": NativeBackend()}
BACKEND_ENV = "SOFTSWITCH_BACKEND"

_lowered: dict[str, tuple[ir.Program, ProgramInfo]] = {}
_compiled: dict[str, CompiledProgram] = {}
_announced: set[str] = set()
_lock = threading.Lock()


def default_backend() -> str:
    """$SOFTSWITCH_BACKEND ("native" or "python"), else "native" (which falls back to Python where it
    cannot run, saying why)."""
    name = os.environ.get(BACKEND_ENV, "").strip() or "native"
    if name not in BACKENDS:
        raise UnknownBackend(
            f"{BACKEND_ENV}={name!r} is not a softswitch back end (known: {', '.join(sorted(BACKENDS))})"
        )
    return name


class UnknownBackend(SwitchError, ValueError):
    """A back end name that is neither "native" nor "python"."""


class BackendUnavailable(SwitchError, RuntimeError):
    """A back end cannot compile this program (the message says why)."""


class CompiledProgram:
    """One program compiled by one back end. `ir` is the front end's result, `info` what the control
    plane can address, `code` the back end's output (`python_source`/`module` for the Python one)."""

    def __init__(
        self,
        path: str,
        program: ir.Program,
        info: ProgramInfo,
        source_hash: str,
        backend: str,
        code,
        cache_key: str = "",
        fallback_reason: str | None = None,
    ):
        self.path = path
        self.ir = program
        self.info = info
        self.source_hash = source_hash
        self.backend = backend
        self.code = code
        self.cache_key = cache_key
        self.fallback_reason = fallback_reason  # why the native back end was not used (None: it was, or not asked)

    @property
    def c_source(self) -> str | None:
        """The generated C (native back end; None for others)."""
        return getattr(self.code, "c_source", None)

    def for_backend(self, backend: str) -> CompiledProgram:
        """The same program compiled by another back end (from the same IR); raises BackendUnavailable
        when that back end cannot compile it."""
        if backend == self.backend:
            return self
        return _compile_lowered(self.ir, self.info, self.path, self.cache_key, backend, fallback=False)

    @property
    def python_source(self) -> str | None:
        """The generated Python module's source (Python back end; None for others)."""
        return getattr(self.code, "source", None)

    @property
    def module(self):
        return getattr(self.code, "module", None)

    def build(self, runtime):
        """The program's blocks bound to one switch's runtime state."""
        return self.code.build(runtime)


def _tokens_hash(toks) -> str:
    h = hashlib.sha256()
    for t in toks:
        h.update(t.text.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _lower(toks, path: str, cache_key: str) -> tuple[ir.Program, ProgramInfo]:
    with _lock:
        hit = _lowered.get(cache_key)
    if hit is not None:
        return hit
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        program = lower(parse(toks), name)
    except RecursionError:
        raise P4Error(toks[0].pos if toks else None, "program nested too deeply") from None
    result = (program, program_info(program))
    with _lock:
        _lowered[cache_key] = result
    return result


def _compile(toks, path: str, cache_key: str, backend: str | None) -> CompiledProgram:
    backend = backend or default_backend()
    if backend not in BACKENDS:
        raise UnknownBackend(f"unknown softswitch back end {backend!r} (known: {', '.join(sorted(BACKENDS))})")
    key = f"{backend}|{cache_key}"
    with _lock:
        hit = _compiled.get(key)
    if hit is not None:
        return hit
    program, info = _lower(toks, path, cache_key)
    try:
        return _compile_lowered(program, info, path, cache_key, backend, fallback=True)
    except RecursionError:
        raise P4Error(toks[0].pos if toks else None, "program nested too deeply") from None


def _compile_lowered(
    program: ir.Program, info: ProgramInfo, path: str, cache_key: str, backend: str, fallback: bool
) -> CompiledProgram:
    """The lowered program compiled by `backend`; the native back end falls back to Python (when
    `fallback`) with a one-line notice, else raises BackendUnavailable."""
    key = f"{backend}|{cache_key}"
    with _lock:
        hit = _compiled.get(key)
    if hit is not None:
        return hit
    source_hash = cache_key.split("|", 1)[0]
    reason = None
    try:
        code = BACKENDS[backend].compile(program, source_hash, path)
        used = backend
    except (Unsupported, NativeBuildError) as e:
        reason = _native_failure(e)
        if not fallback:
            raise BackendUnavailable(f"{program.name} cannot run on the {backend} back end: {reason}") from None
        _announce(f"softswitch: {program.name} runs on the Python back end: {reason}")
        code = BACKENDS["python"].compile(program, source_hash, path)
        used = "python"
    compiled = CompiledProgram(path, program, info, source_hash, used, code, cache_key, reason)
    with _lock:
        _compiled[key] = compiled
    return compiled


def _native_failure(e: Exception) -> str:
    """One line saying why the native back end could not be used."""
    if isinstance(e, Unsupported):
        where = f" at {e.position}" if e.position is not None else ""
        return f"the C back end does not support {e.what}{where}"
    if isinstance(e, CompileError):
        errors = [line for line in str(e).splitlines() if "error" in line]
        first = errors[1] if len(errors) > 1 else (errors[0] if errors else str(e))
        return f"the C compiler rejected the generated code ({first.strip()})"
    return str(e)


def _announce(message: str) -> None:
    with _lock:
        if message in _announced:
            return
        _announced.add(message)
    print(message, file=sys.stderr, flush=True)


def _file_tokens(path, defines, include_dirs):
    toks = Preprocessor(defines, include_dirs).run_file(path)
    return toks, _tokens_hash(toks) + "|" + os.path.abspath(path)


def _text_tokens(text, filename, defines, include_dirs, confined=False):
    toks = Preprocessor(defines, include_dirs, confined).run_text(text, filename)
    return toks, _tokens_hash(toks) + "|" + filename


def compile_program(path, defines=None, include_dirs=(), backend: str | None = None) -> CompiledProgram:
    """Compiles a P4_16 v1model program; raises P4Error ("file:line:col: error: ...") if it is wrong.
    `backend`: "native" or "python" (None: default_backend())."""
    toks, key = _file_tokens(path, defines, include_dirs)
    return _compile(toks, path, key, backend)


def compile_source(
    text: str,
    filename="<string>.p4",
    defines=None,
    include_dirs=(),
    backend: str | None = None,
    confined_includes: bool = False,
) -> CompiledProgram:
    """As compile_program, from a string (tests, tools); "x.p4" includes resolve against include_dirs.
    ``confined_includes``: text from someone else (frontend.preprocess.Preprocessor's ``confined``)."""
    toks, key = _text_tokens(text, filename, defines, include_dirs, confined_includes)
    return _compile(toks, filename, key, backend)


def lower_program(path, defines=None, include_dirs=()) -> ir.Program:
    """The front end only: the program's typed, resolved IR (what a back end compiles)."""
    toks, key = _file_tokens(path, defines, include_dirs)
    return _lower(toks, path, key)[0]


def dump_ir(path, after: str, defines=None, include_dirs=()) -> str:
    """The program's IR as text (ir/printer.py) after the front end pass named `after` (the passes:
    frontend.pass_manager.front_end().names()); before the IR exists, the names the program declared."""
    toks, _ = _file_tokens(path, defines, include_dirs)
    name = os.path.splitext(os.path.basename(path))[0]
    texts: list[str] = []

    def dump(pass_name: str, compilation) -> None:
        header = f"// softswitch IR after pass {pass_name}\n"
        if compilation.program is None:
            names = ", ".join(sorted(compilation.context.global_scope.names))
            texts.append(f"{header}// no IR yet; declared: {names}\n")
        else:
            texts.append(header + program_text(compilation.program))

    lower(parse(toks), name, dump_after=after, dump=dump)
    return texts[0]


def lower_source(text: str, filename="<string>.p4", defines=None, include_dirs=()) -> ir.Program:
    """As lower_program, from a string."""
    toks, key = _text_tokens(text, filename, defines, include_dirs)
    return _lower(toks, filename, key)[0]
