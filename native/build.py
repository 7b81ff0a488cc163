"""Compile C sources into a shared library once, and load it with ctypes.

Both native parts of the project (softswitch's generated pipelines and the agents' batched socket I/O)
build their C code at run time with the system compiler, so a fresh clone needs no build step beyond
``scripts/setup.sh`` installing Debian's compiler. A library is cached under a key made of its sources,
the flags and the compiler's own version, so a changed program, runtime or compiler rebuilds and an
unchanged one loads in milliseconds. Parallel processes building the same library are safe: each
compiles into a private temporary file and renames it into place.

    lib = load_library("udp_batch", [Path("native/udp_batch.c")])      # ctypes.CDLL
    lib = load_library("prog", [], generated={"prog.c": source_text})   # generated code, no file on disk
    objs = build_objects("runtime", [Path("a.c"), Path("b.c")])          # object files, compiled once,
    lib = load_library("prog", objs, generated={"prog.c": text})         # linked into many libraries

Errors: :class:`CompilerMissing` when no C compiler is on PATH (callers fall back and say why),
:class:`CompileError` with the compiler's messages when the code does not compile.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "CompileError",
    "CompilerMissing",
    "NativeBuildError",
    "build_objects",
    "cache_dir",
    "compiler",
    "load_library",
]

DEFAULT_CFLAGS = ("-O2", "-fPIC", "-shared", "-std=gnu11", "-Wall", "-Wno-unused-function", "-Wno-unused-variable")
_loaded: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()


class NativeBuildError(RuntimeError):
    """A native library could not be built."""


class CompilerMissing(NativeBuildError):
    """No C compiler on PATH (``$CC``, ``cc`` or ``gcc``)."""


class CompileError(NativeBuildError):
    """The compiler rejected the sources; the message holds its output."""


def cache_dir() -> Path:
    """Where built libraries live: ``$INA_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/ina/native``, else
    ``~/.cache/ina/native``."""
    env = os.environ.get("INA_NATIVE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ina" / "native"


@functools.cache
def compiler() -> tuple[str, str]:
    """(path, version line) of the C compiler; raises CompilerMissing."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if not name:
            continue
        path = shutil.which(name)
        if path:
            try:
                out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise CompilerMissing(f"the C compiler {path} does not run: {e}") from None
            return path, (out.stdout.splitlines() or ["unknown"])[0]
    raise CompilerMissing("no C compiler found (tried $CC, cc, gcc); run scripts/setup.sh as root to install gcc")


def load_library(
    name: str,
    sources: Sequence[Path] = (),
    *,
    generated: Mapping[str, str] | None = None,
    include_dirs: Sequence[Path] = (),
    cflags: Sequence[str] = DEFAULT_CFLAGS,
    libs: Sequence[str] = (),
) -> ctypes.CDLL:
    """Build (or reuse) the shared library made of ``sources`` and ``generated`` (file name -> C text)
    and load it.

    Parameters
    ----------
    name : a short name for the library file and messages.
    sources : C files on disk; headers they include are found through ``include_dirs`` and are part
        of the cache key when they sit in one of those folders.
    generated : C sources made at run time, by file name.
    include_dirs, cflags, libs : passed to the compiler (``-I``, flags, ``-l``).

    Returns
    -------
    ctypes.CDLL, loaded once per process and key.

    Raises
    ------
    CompilerMissing, CompileError
    """
    cc, version = compiler()
    key = hashlib.sha256()
    for part in (name, cc, version, *cflags, *libs):
        key.update(part.encode() + b"\0")
    texts: dict[str, bytes] = {}
    for src in sources:
        texts[str(src)] = Path(src).read_bytes()
    for fname, text in (generated or {}).items():
        texts[fname] = text.encode()
    for inc in include_dirs:
        for header in sorted(Path(inc).glob("*.h")):
            texts[str(header)] = header.read_bytes()
    for fname in sorted(texts):
        key.update(fname.encode() + b"\0" + texts[fname] + b"\0")
    digest = key.hexdigest()[:20]
    with _lock:
        lib = _loaded.get(digest)
        if lib is not None:
            return lib
        out_dir = cache_dir()
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / f"{name}-{digest}.so"
        if not target.exists():
            _compile(cc, name, sources, generated or {}, include_dirs, cflags, libs, target)
        lib = ctypes.CDLL(str(target))
        _loaded[digest] = lib
        return lib


def build_objects(
    name: str, sources: Sequence[Path], *, include_dirs: Sequence[Path] = (), cflags: Sequence[str] = DEFAULT_CFLAGS
) -> list[Path]:
    """Compile C sources into object files once per key (sources, headers of include_dirs, flags,
    compiler version), for linking into several libraries with load_library: a library that shares a
    large part with others (softswitch's runtime under each program) then compiles only its own part.
    Returns the object files (one per source, in order). Raises CompilerMissing / CompileError."""
    cc, version = compiler()
    flags = [f for f in cflags if f != "-shared"]
    key = hashlib.sha256()
    for part in (name, cc, version, *flags):
        key.update(part.encode() + b"\0")
    texts = {str(src): Path(src).read_bytes() for src in sources}
    for inc in include_dirs:
        for header in sorted(Path(inc).glob("*.h")):
            texts[str(header)] = header.read_bytes()
    for fname in sorted(texts):
        key.update(fname.encode() + b"\0" + texts[fname] + b"\0")
    out_dir = cache_dir() / f"{name}-{key.hexdigest()[:20]}.objects"
    objects = [out_dir / (Path(src).stem + ".o") for src in sources]
    with _lock:
        if all(o.exists() for o in objects):
            return objects
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"ina-{name}-", dir=out_dir.parent) as tmp:
            procs = []
            for src in sources:
                obj = Path(tmp) / (Path(src).stem + ".o")
                cmd = [cc, *flags, *(f"-I{d}" for d in include_dirs), "-c", "-o", str(obj), str(src)]
                procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            for cmd, proc in procs:
                _, err = proc.communicate()
                if proc.returncode != 0:
                    raise CompileError(f"{name}: the C compiler failed ({' '.join(cmd)}):\n{err.strip()}")
            staged = Path(tmp) / "done"
            staged.mkdir()
            for src in sources:
                os.replace(Path(tmp) / (Path(src).stem + ".o"), staged / (Path(src).stem + ".o"))
            try:
                os.rename(staged, out_dir)  # atomic: another process may have won the race
            except OSError:
                if not all(o.exists() for o in objects):
                    raise
    return objects


def _compile(
    cc: str,
    name: str,
    sources: Iterable[Path],
    generated: Mapping[str, str],
    include_dirs: Iterable[str | Path],
    cflags: Iterable[str],
    libs: Iterable[str],
    target: Path,
) -> None:
    with tempfile.TemporaryDirectory(prefix=f"ina-{name}-") as tmp:
        files = [str(s) for s in sources]
        for fname, text in generated.items():
            path = Path(tmp) / fname
            path.write_text(text)
            files.append(str(path))
        partial = Path(tmp) / target.name
        cmd = [cc, *cflags, *(f"-I{d}" for d in include_dirs), "-o", str(partial), *files, *(f"-l{x}" for x in libs)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"{name}: the C compiler failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
        # rename is atomic within one file system: copy next to the target first
        fd, staging = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(fd)
        shutil.copyfile(partial, staging)
        os.chmod(staging, 0o755)
        os.replace(staging, target)
