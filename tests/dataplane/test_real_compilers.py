"""Every program under p4src/ compiles, unchanged, with the real compilers: p4c's BMv2 back end
(p4c-bm2-ss) for the v1model programs, p4test with the Tofino tna.p4 for the TNA one. Skipped where the
toolchain (../shared/toolchain, installed by scripts/setup.sh) is absent; results are cached under
build/p4c/ by source hash (real_compilers.py)."""

import json
import os

import pytest
from real_compilers import P4SRC, REPO, compile_cached, tofino_include, tool

V1MODEL = sorted(P4SRC.glob("*.p4"))
TNA = sorted((P4SRC / "tna").glob("*.p4"))


def test_the_lists_hold_every_program():
    assert {p.relative_to(P4SRC).as_posix() for p in V1MODEL + TNA} == {
        p.relative_to(P4SRC).as_posix() for p in P4SRC.rglob("*.p4") if "include" not in p.parts
    }
    assert V1MODEL and TNA


@pytest.mark.parametrize("program", V1MODEL, ids=lambda p: p.name)
def test_v1model_program_compiles_with_p4c_bm2_ss(program):
    p4c = tool("p4c-bm2-ss")
    if p4c is None:
        pytest.skip("p4c-bm2-ss is not installed (../shared/toolchain/install.sh, scripts/setup.sh)")
    if program.name == "ina_k1024.p4" and os.environ.get("INA_P4C_K1024") != "1":
        pytest.skip(
            "ina_k1024.p4 is ina.p4 with VALUES_PER_PACKET 1024 and takes p4c-bm2-ss about 110 s: "
            "INA_P4C_K1024=1 compiles it (ina.p4 and ina_k256.p4 compile the same source)"
        )
    json_name, p4info_name = program.stem + ".json", program.stem + ".p4info.txtpb"
    arguments = ["--arch", "v1model", "-o", json_name, "--p4runtime-files", p4info_name, "-I", str(P4SRC)]
    result = compile_cached(p4c, [*arguments, str(program)], [json_name, p4info_name])
    where = program.relative_to(REPO)
    assert result.returncode == 0, f"p4c-bm2-ss refuses {where}:\n{result.messages}"
    bmv2 = json.loads((result.outputs / json_name).read_text())
    assert [p["name"] for p in bmv2["pipelines"]] == ["ingress", "egress"]
    assert "InaIngress" in (result.outputs / p4info_name).read_text()


@pytest.mark.parametrize("program", TNA, ids=lambda p: p.name)
def test_tna_program_compiles_with_p4test_and_tofinos_tna_p4(program):
    p4test, include = tool("p4test"), tofino_include()
    if p4test is None or include is None:
        pytest.skip("p4test or the Tofino tna.p4 is not installed (../shared/toolchain/install.sh)")
    arguments = ["-D__TARGET_TOFINO__=1", "-I", str(include), "-I", str(P4SRC), str(program)]
    result = compile_cached(p4test, arguments, [])
    assert result.returncode == 0, f"p4test refuses {program.relative_to(REPO)}:\n{result.messages}"
