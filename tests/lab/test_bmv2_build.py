"""--target bmv2 without --device-config compiles the default program with p4c-bm2-ss, or says what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from topologies import bmv2_build
from topologies.errors import LabError

REPO = Path(__file__).resolve().parents[2]
STAR = str(REPO / "topologies" / "star_100m.yaml")


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


def test_a_p4_source_named_for_bmv2_is_compiled_and_pushed_not_handed_to_the_switch(monkeypatch, tmp_path):
    """simple_switch_grpc loads only a compiled JSON: a --program naming a P4 source (a build such as
    v1model-k256, or a path) is compiled like the default and pushed over P4Runtime, the switch started
    with --no-p4; a JSON is left to the switch."""
    from topologies import mininet_lab, p4switch

    monkeypatch.setattr(p4switch.shutil, "which", lambda name: f"/usr/bin/{name}")  # nothing starts here
    asked = []

    def fake_compiled(program):
        asked.append(program)
        return tmp_path / "prog.json", tmp_path / "prog.p4info.txtpb"

    monkeypatch.setattr(bmv2_build, "compiled", fake_compiled)
    lab = mininet_lab.MininetLab(STAR, 2, target="bmv2", program="v1model-k256", log=lambda m: None)
    lab._compile_for_bmv2()
    assert asked == [str(REPO / "p4src" / "ina_k256.p4")] and lab.network.program is None
    assert (lab.device_config, lab.p4info) == (str(tmp_path / "prog.json"), str(tmp_path / "prog.p4info.txtpb"))
    compiled_json = tmp_path / "mine.json"
    given = mininet_lab.MininetLab(STAR, 2, target="bmv2", program=str(compiled_json), log=lambda m: None)
    given._compile_for_bmv2()
    assert asked == [str(REPO / "p4src" / "ina_k256.p4")] and given.network.program == str(compiled_json)
