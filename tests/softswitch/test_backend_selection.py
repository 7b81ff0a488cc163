"""Which back end runs a program: native by default, $SOFTSWITCH_BACKEND and --backend choose, and a
program the native back end cannot run falls back to Python with one line on stderr saying why (no C
compiler; a construct the C back end does not compile, named with file:line)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from softswitch_testlib import eth, skip_without_c_compiler, v1_text

from softswitch.compiler import compile_source, default_backend
from softswitch.switch import Switch

ROOT = Path(__file__).resolve().parents[2]
ROUTER = ROOT / "tests" / "softswitch" / "programs" / "ipv4_router.p4"
ROUTER_STF = ROOT / "tests" / "softswitch" / "stf" / "l2l3.stf"
L2L3 = ROOT / "tests" / "softswitch" / "stf" / "l2l3.p4"


def softswitch(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "softswitch", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_the_default_is_native_and_the_environment_chooses(monkeypatch):
    monkeypatch.delenv("SOFTSWITCH_BACKEND", raising=False)
    assert default_backend() == "native"
    monkeypatch.setenv("SOFTSWITCH_BACKEND", "python")
    assert default_backend() == "python"
    monkeypatch.setenv("SOFTSWITCH_BACKEND", "fpga")
    with pytest.raises(ValueError, match="SOFTSWITCH_BACKEND='fpga' is not a softswitch back end"):
        default_backend()


@pytest.mark.parametrize("backend", ["python", "native"])
def test_each_back_end_gives_its_switch_class(backend):
    if backend == "native":
        skip_without_c_compiler("the native switch class")
    text = v1_text("apply { sm.egress_spec = 3; }")
    prog = compile_source(text, "choose.p4", backend=backend)
    sw = Switch(prog)
    assert prog.backend == backend and sw.backend == backend
    assert sw.process(1, eth(payload=b"x")) == [(3, eth(payload=b"x"))]


def test_an_unsupported_construct_falls_back_to_python_naming_it(capfd):
    # a 256-bit field: the C back end holds values of up to 128 bits; the first code using it is the extract
    text = v1_text(
        "apply { sm.egress_spec = 2; hdr.wide.v = hdr.wide.v + 1; }",
        decls="header wide_t { bit<256> v; }",
        hdr_fields="wide_t wide;",
        parser="state start { pkt.extract(hdr.eth); pkt.extract(hdr.wide); transition accept; }",
    )
    prog = compile_source(text, "wide_fields.p4", backend="native")
    assert prog.backend == "python"
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if "Python back end" in line]
    assert lines == [
        "softswitch: wide_fields runs on the Python back end: the C back end does not support a 256-bit value "
        "(the C back end handles up to 128 bits) at wide_fields.p4:9:41"
    ], err
    assert prog.fallback_reason.startswith("the C back end does not support a 256-bit value")
    frame = eth(payload=(2**256 - 1).to_bytes(32, "big"))
    assert Switch(prog).process(0, frame) == [(2, eth(payload=bytes(32)))]


def test_without_a_c_compiler_softswitch_says_so_and_runs_on_python(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path), CC="", INA_NATIVE_CACHE=str(tmp_path / "cache"))
    env.pop("SOFTSWITCH_BACKEND", None)
    result = softswitch("stf", str(L2L3), str(ROUTER_STF), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "softswitch: l2l3 runs on the Python back end: no C compiler found (tried $CC, cc, gcc); "
        "run scripts/setup.sh as root to install gcc"
    )
    assert result.stdout.startswith("PASS: 4 packet(s) sent, 5 expectation(s) met")


def test_backend_flag_and_emitted_c(tmp_path):
    skip_without_c_compiler("--backend native")
    out = tmp_path / "router.c"
    result = softswitch("compile", str(ROUTER), "--emit-c", str(out))
    assert result.returncode == 0, result.stderr
    c = out.read_text()
    assert "const ss_program ss_program_descriptor" in c and "static int table_MyIngress_ipv4_lpm(" in c
    for backend in ("python", "native"):
        result = softswitch("stf", "--backend", backend, str(L2L3), str(ROUTER_STF))
        assert result.returncode == 0 and "Python back end" not in result.stderr, result.stderr
    result = softswitch("stf", "--backend", "fpga", str(L2L3), str(ROUTER_STF))
    assert result.returncode == 2 and "invalid choice: 'fpga'" in result.stderr


def test_switch_is_the_base_of_both_implementations_chosen_by_switch_class():
    """Switch(prog) constructs switch_class(prog): PythonSwitch or NativeSwitch, both Switch instances,
    each initialised once, with the same malformed-frame checks from the base class."""
    from softswitch.native.switch import NativeSwitch
    from softswitch.switch import PythonSwitch, switch_class

    source = """#include <core.p4>
#include <v1model.p4>
struct h_t { } struct m_t { }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) { state start { transition accept; } }
control N(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 2; } }
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in h_t h) { apply { } }
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""
    expected = {"python": PythonSwitch, "native": NativeSwitch}
    for backend in ("python", "native"):
        if backend == "native":
            skip_without_c_compiler("the native switch")
        prog = compile_source(source, "factory.p4", backend=backend)
        assert switch_class(prog) is expected[backend]
        sw = Switch(prog, name="f")
        assert type(sw) is expected[backend] and isinstance(sw, Switch) and sw.backend == backend
        assert sw.process(3, b"\x01\x02") == [(2, b"\x01\x02")]
        assert sw.process(512, b"x") == [] and sw.process(1, None) == []
        assert (sw.stats["received"], sw.stats["malformed"]) == (1, 2)
