"""The function-length check of `make lint` (scripts/function_length.py)."""

import importlib.util

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("function_length", REPO / "scripts" / "function_length.py")
function_length = importlib.util.module_from_spec(spec)
spec.loader.exec_module(function_length)


def _function(name: str, code_lines: int, docstring_lines: int = 0) -> str:
    doc = ['    """' + "\n" * max(docstring_lines - 1, 0) + '    """'] if docstring_lines else []
    body = [f"    x{i} = {i}" for i in range(code_lines - 1)]
    return "\n".join([f"def {name}():", *doc, *body]) + "\n"


def test_the_checked_packages_meet_the_limit():
    assert function_length.main([]) == 0


def test_a_long_function_is_named_and_its_docstring_does_not_count(tmp_path, capsys):
    source = tmp_path / "mod.py"
    source.write_text(_function("long_one", 81) + _function("documented", 80, docstring_lines=40))
    assert function_length.main([str(source)]) == 1
    out = capsys.readouterr().out
    assert f"{source}:long_one: 81 lines (limit 80)" in out
    assert "documented" not in out


def test_an_allowed_function_that_got_short_must_leave_the_list(tmp_path, capsys, monkeypatch):
    source = tmp_path / "mod.py"
    source.write_text(_function("short_now", 10))
    monkeypatch.setitem(function_length.ALLOWED, f"{source}:short_now", "was long")
    assert function_length.main([str(source)]) == 1
    assert "allowed to be long" in capsys.readouterr().out


@pytest.mark.parametrize("lines", [80, 81])
def test_the_limit_is_inclusive(tmp_path, lines):
    source = tmp_path / "mod.py"
    source.write_text(_function("f", lines))
    assert function_length.main([str(source)]) == (1 if lines > 80 else 0)
