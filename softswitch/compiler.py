"""compile_program(): P4 source -> CompiledProgram (ProgramInfo + generated Python module), cached by the
hash of the preprocessed source so a program shared by many switches is compiled once."""

from __future__ import annotations

import hashlib
import os
import threading
import types

from .codegen import CodeGen
from .frontend.errors import P4Error
from .frontend.parser import parse
from .frontend.preprocess import Preprocessor
from .program import ProgramInfo

_cache: dict[str, CompiledProgram] = {}
_lock = threading.Lock()


class CompiledProgram:
    def __init__(self, path, info: ProgramInfo, python_source: str, source_hash: str):
        self.path = path
        self.info = info
        self.python_source = python_source
        self.source_hash = source_hash
        self.module = types.ModuleType(f"softswitch_prog_{info.name}_{source_hash[:12]}")
        self.module.__file__ = f"<softswitch:{path}>"
        code = compile(python_source, self.module.__file__, "exec")
        exec(code, self.module.__dict__)  # noqa: S102 - our own generated code

    def build(self, runtime):
        """The program's blocks bound to one switch's runtime state."""
        return self.module.build(runtime)


def _tokens_hash(toks) -> str:
    h = hashlib.sha256()
    for t in toks:
        h.update(t.text.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _compile(toks, path, cache_key) -> CompiledProgram:
    with _lock:
        hit = _cache.get(cache_key)
    if hit is not None:
        return hit
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        gen = CodeGen(parse(toks), name)
        source = gen.generate()
        if gen.rebound & gen.hoisted:
            # a statement replaces an object the code keeps in a local: generate again without that local
            gen = CodeGen(parse(toks), name, no_hoist=frozenset(gen.rebound))
            source = gen.generate()
    except RecursionError:
        raise P4Error(toks[0].pos if toks else None, "program nested too deeply") from None
    prog = CompiledProgram(path, gen.info, source, cache_key.split("|", 1)[0])
    with _lock:
        _cache[cache_key] = prog
    return prog


def compile_program(path, defines=None, include_dirs=()) -> CompiledProgram:
    """Compiles a P4_16 v1model program; raises P4Error ("file:line:col: error: ...") if it is wrong."""
    toks = Preprocessor(defines, include_dirs).run_file(path)
    return _compile(toks, path, _tokens_hash(toks) + "|" + os.path.abspath(path))


def compile_source(text: str, filename="<string>.p4", defines=None, include_dirs=()) -> CompiledProgram:
    """As compile_program, from a string (tests, tools); "x.p4" includes resolve against include_dirs."""
    toks = Preprocessor(defines, include_dirs).run_text(text, filename)
    return _compile(toks, filename, _tokens_hash(toks) + "|" + filename)
