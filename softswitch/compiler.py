"""compile_program(): P4 source -> CompiledProgram (IR, ProgramInfo and a back end's executable code).

    P4 text -> preprocess -> parse (AST) -> lower (front end: typed, resolved IR) -> back end -> code

`lower_program`/`lower_source` stop at the IR. Back ends are registered in BACKENDS by name; each turns
an ir.Program into code whose `build(runtime)` returns the pipeline's blocks (see Backend). Results are
cached by the hash of the preprocessed source, so a program shared by many switches is compiled once.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Protocol

from . import ir
from .backend_python import PythonBackend
from .frontend.errors import P4Error
from .frontend.lower import lower
from .frontend.parser import parse
from .frontend.preprocess import Preprocessor
from .frontend.program_info import program_info
from .program import ProgramInfo


class BackendCode(Protocol):
    """What a back end produces for one program."""

    def build(self, runtime: Any) -> dict:
        """The program's blocks bound to one switch's runtime state."""
        ...


class Backend(Protocol):
    name: str

    def compile(self, program: ir.Program, source_hash: str, path: str) -> BackendCode: ...


BACKENDS: dict[str, Backend] = {"python": PythonBackend()}
DEFAULT_BACKEND = "python"

_lowered: dict[str, tuple[ir.Program, ProgramInfo]] = {}
_compiled: dict[str, CompiledProgram] = {}
_lock = threading.Lock()


class CompiledProgram:
    """One program compiled by one back end. `ir` is the front end's result, `info` what the control
    plane can address, `code` the back end's output (`python_source`/`module` for the Python one)."""

    def __init__(self, path: str, program: ir.Program, info: ProgramInfo, source_hash: str, backend: str, code):
        self.path = path
        self.ir = program
        self.info = info
        self.source_hash = source_hash
        self.backend = backend
        self.code = code

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


def _compile(toks, path: str, cache_key: str, backend: str) -> CompiledProgram:
    if backend not in BACKENDS:
        raise ValueError(f"unknown softswitch back end {backend!r} (known: {', '.join(sorted(BACKENDS))})")
    key = f"{backend}|{cache_key}"
    with _lock:
        hit = _compiled.get(key)
    if hit is not None:
        return hit
    program, info = _lower(toks, path, cache_key)
    source_hash = cache_key.split("|", 1)[0]
    try:
        code = BACKENDS[backend].compile(program, source_hash, path)
    except RecursionError:
        raise P4Error(toks[0].pos if toks else None, "program nested too deeply") from None
    compiled = CompiledProgram(path, program, info, source_hash, backend, code)
    with _lock:
        _compiled[key] = compiled
    return compiled


def _file_tokens(path, defines, include_dirs):
    toks = Preprocessor(defines, include_dirs).run_file(path)
    return toks, _tokens_hash(toks) + "|" + os.path.abspath(path)


def _text_tokens(text, filename, defines, include_dirs):
    toks = Preprocessor(defines, include_dirs).run_text(text, filename)
    return toks, _tokens_hash(toks) + "|" + filename


def compile_program(path, defines=None, include_dirs=(), backend: str = DEFAULT_BACKEND) -> CompiledProgram:
    """Compiles a P4_16 v1model program; raises P4Error ("file:line:col: error: ...") if it is wrong."""
    toks, key = _file_tokens(path, defines, include_dirs)
    return _compile(toks, path, key, backend)


def compile_source(
    text: str, filename="<string>.p4", defines=None, include_dirs=(), backend: str = DEFAULT_BACKEND
) -> CompiledProgram:
    """As compile_program, from a string (tests, tools); "x.p4" includes resolve against include_dirs."""
    toks, key = _text_tokens(text, filename, defines, include_dirs)
    return _compile(toks, filename, key, backend)


def lower_program(path, defines=None, include_dirs=()) -> ir.Program:
    """The front end only: the program's typed, resolved IR (what a back end compiles)."""
    toks, key = _file_tokens(path, defines, include_dirs)
    return _lower(toks, path, key)[0]


def lower_source(text: str, filename="<string>.p4", defines=None, include_dirs=()) -> ir.Program:
    """As lower_program, from a string."""
    toks, key = _text_tokens(text, filename, defines, include_dirs)
    return _lower(toks, filename, key)[0]
