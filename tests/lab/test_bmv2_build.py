"""--target bmv2 without --device-config compiles the default program with p4c-bm2-ss, or says what is missing."""

from __future__ import annotations

import pytest

from topologies import bmv2_build
from topologies.errors import LabError


def test_without_p4c_the_error_says_what_to_give(monkeypatch):
    monkeypatch.setattr(bmv2_build, "p4c_bm2_ss", lambda: None)
    with pytest.raises(LabError, match=r"give --p4info and --device-config, or put p4c-bm2-ss on PATH .* ina_k256\.p4"):
        bmv2_build.compiled("v1model-k256")


def test_a_refused_program_names_it_and_quotes_the_compiler(monkeypatch, tmp_path):
    monkeypatch.setattr(bmv2_build, "CACHE", tmp_path)
    if bmv2_build.p4c_bm2_ss() is None:
        pytest.skip("p4c-bm2-ss is not installed (../shared/toolchain/install.sh)")
    bad = tmp_path / "broken.p4"
    bad.write_text("control c() { apply { undeclared(); } }\n")
    with pytest.raises(LabError, match=r"p4c-bm2-ss refused broken\.p4: .*undeclared"):
        bmv2_build.compiled(str(bad))
    assert not list(tmp_path.glob("*.json"))  # nothing half-written is taken for a compiled program


def test_the_cache_key_follows_every_p4_file(monkeypatch, tmp_path):
    (tmp_path / "a.p4").write_text("// one\n")
    monkeypatch.setattr(bmv2_build, "P4SRC", tmp_path)
    first = bmv2_build.source_key(tmp_path / "a.p4")
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "b.p4").write_text("// two\n")
    assert bmv2_build.source_key(tmp_path / "a.p4") != first
