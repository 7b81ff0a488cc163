"""The native build cache: compiles once, reloads by key, names the compiler's complaint."""

import ctypes

import pytest

from native import build


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """An empty build cache; the tests that build skip, with the reason, on a machine without a C compiler."""
    try:
        build.compiler()
    except build.CompilerMissing as e:
        pytest.skip(f"building needs a C compiler: {e}")
    monkeypatch.setenv("INA_NATIVE_CACHE", str(tmp_path))
    return tmp_path


def test_builds_loads_and_reuses_by_content(cache):
    src = "int add3(int a) { return a + 3; }\n"
    lib = build.load_library("t_add", generated={"add.c": src})
    lib.add3.restype = ctypes.c_int
    assert lib.add3(4) == 7
    built = sorted(p.name for p in cache.glob("*.so"))
    assert len(built) == 1 and built[0].startswith("t_add-")
    assert build.load_library("t_add", generated={"add.c": src}) is lib
    other = build.load_library("t_add", generated={"add.c": src.replace("a + 3", "a + 5")})
    other.add3.restype = ctypes.c_int
    assert other.add3(4) == 9
    assert len(list(cache.glob("*.so"))) == 2


def test_compile_error_quotes_the_compiler(cache):
    with pytest.raises(build.CompileError, match=r"(?s)t_bad: the C compiler failed.*undeclared"):
        build.load_library("t_bad", generated={"bad.c": "int f(void) { return nope; }\n"})


def test_missing_compiler_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("PATH", "/nonexistent")
    build.compiler.cache_clear()
    try:
        with pytest.raises(build.CompilerMissing, match="no C compiler found"):
            build.compiler()
    finally:
        build.compiler.cache_clear()
