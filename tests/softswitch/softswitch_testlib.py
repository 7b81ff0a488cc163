"""Helpers for softswitch's own tests: compile a test program, run frames, build P4 snippets."""

import os
import textwrap

import pytest

from native.build import CompilerMissing, compiler
from softswitch.compiler import BACKEND_ENV, compile_program, compile_source, lower_source
from softswitch.switch import Switch

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def skip_without_c_compiler(what: str) -> None:
    """Skips the test, saying why, on a machine without a C compiler (where softswitch runs everything on
    its Python back end): ``what`` is what needs the native back end."""
    try:
        compiler()
    except CompilerMissing as e:
        pytest.skip(f"{what} needs the native back end, built by a C compiler: {e}")


@pytest.fixture(params=["python", "native"])
def each_backend(request, monkeypatch):
    """Runs a test once per back end: compile_program/compile_source without `backend` follow
    $SOFTSWITCH_BACKEND, set here (native: skipped without a C compiler). A module imports it and marks
    its tests `pytest.mark.usefixtures("each_backend")`."""
    if request.param == "native":
        skip_without_c_compiler(f"{request.node.name} on the native back end")
    monkeypatch.setenv(BACKEND_ENV, request.param)
    return request.param


def assert_runs_on_asked_backend(path: str, what: str) -> None:
    """`path` compiles for the back end $SOFTSWITCH_BACKEND asks for (set by each_backend) without falling
    back, and a Switch built from it runs there: `what` names the construct, for the failure message."""
    backend = os.environ[BACKEND_ENV]
    prog = compile_program(path)
    assert (prog.backend, prog.fallback_reason) == (backend, None), f"{what} on the {backend} back end"
    assert Switch(prog).backend == backend


def program(name, **kw):
    return compile_program(os.path.join(PROGRAMS, name), **kw)


def switch(name, **kw):
    return Switch(program(name), **kw)


def source(text, filename="test.p4", **kw):
    return compile_source(textwrap.dedent(text), filename, **kw)


# A v1model skeleton around one ingress body: ethernet parsed, everything else given by the test.
V1_TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> etype; }}
{decls}
struct headers_t {{ ethernet_t eth; {hdr_fields} }}
struct meta_t {{ {meta_fields} }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    {parser}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    {ingress}
}}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    {egress}
}}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{
    apply {{ {deparser} }}
}}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def v1_text(
    ingress,
    decls="",
    hdr_fields="",
    meta_fields="",
    egress="apply { }",
    parser="state start { pkt.extract(hdr.eth); transition accept; }",
    deparser="pkt.emit(hdr);",
):
    """The V1_TEMPLATE program around these parts."""
    return V1_TEMPLATE.format(
        decls=decls,
        hdr_fields=hdr_fields,
        meta_fields=meta_fields,
        parser=parser,
        ingress=ingress,
        egress=egress,
        deparser=deparser,
    )


def v1(ingress, defines=None, include_dirs=(), **parts):
    """The V1_TEMPLATE program compiled (file name t.p4)."""
    return compile_source(v1_text(ingress, **parts), "t.p4", defines=defines, include_dirs=include_dirs)


def v1_ir(ingress, **parts):
    """The V1_TEMPLATE program's IR (front end only)."""
    return lower_source(v1_text(ingress, **parts), "t.p4")


def eth(dst=0x020000000002, src=0x020000000001, etype=0x88B5, payload=b""):
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + payload
