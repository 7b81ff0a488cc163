"""The one extern table (softswitch/extern_table.py): both back ends register their emitters in it, so
what one compiles and the other does not is a difference of key sets, kept empty here."""

import pytest

import softswitch.compiler  # noqa: F401 - imports both back ends, which register their emitters
from softswitch.extern_table import EXTERNS, ExternTable


def test_both_back_ends_compile_the_same_externs():
    assert EXTERNS.missing("c", "python") == []
    assert EXTERNS.missing("python", "c") == []


def test_the_table_holds_v1model_and_tna_externs():
    names = EXTERNS.names("c")
    for extern in ("register.read", "meter.execute_meter", "clone3", "digest", "log_msg",
                   "RegisterAction.execute", "Register.write", "Hash.get", "Random.get", "Checksum.update"):  # fmt: skip
        assert extern in names
    assert EXTERNS.function_emitter("c", "no_such_extern") is None
    assert EXTERNS.method_emitter("python", "register", "no_such_method") is None


def test_a_second_emitter_of_one_extern_and_an_unknown_back_end_are_refused():
    table = ExternTable()
    table.function("c", "f")(lambda self: None)
    with pytest.raises(ValueError, match="two emitters of extern f"):
        table.function("c", "f")(lambda self: None)
    with pytest.raises(ValueError, match="unknown back end 'rust'"):
        table.method("rust", "register", "read")
    assert table.missing("python", "c") == ["f"]
