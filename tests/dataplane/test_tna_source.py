"""The TNA program's source, p4src/tna/ina_tna.p4 (docs/tofino.md), checked without a Tofino compiler.

It must preprocess against softswitch's own TNA declarations (softswitch/include/tna.p4) for every even K,
refuse an odd K, and give the tables the controller writes the same control-plane names as the v1model
program: table, key (name and match kind), action and parameter (name and width), so that
controller/installer.py addresses both programs with the same code. Running the program is for
softswitch's TNA pipeline (issue 12, part 2).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller import installer
from softswitch.frontend.errors import P4Error
from softswitch.frontend.preprocess import Preprocessor

ROOT = Path(__file__).resolve().parents[2]
TNA = ROOT / "p4src" / "tna" / "ina_tna.p4"
V1MODEL = ROOT / "p4src" / "ina.p4"


def preprocessed(path: Path, k: int | None = None) -> str:
    defines = {"VALUES_PER_PACKET": k} if k is not None else None
    return " ".join(t.text for t in Preprocessor(defines).run_file(str(path)) if t.kind != "eof")


def control_body(text: str, control: str) -> str:
    """The text of `control NAME (...) { ... }`, braces balanced."""
    start = text.index("{", re.search(rf"\bcontrol {control} \(", text).end())
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start : i + 1]
    raise AssertionError(f"control {control} is not closed")


def widths(text: str) -> dict[str, str]:
    """typedef name -> its bit type, for the typedefs the programs use as parameter types."""
    return {m.group(2): m.group(1) for m in re.finditer(r"typedef (bit < \d+ >) (\w+) ;", text)}


def table_interface(text: str, control: str, table: str) -> list[tuple[str, str]]:
    """(control-plane key name, match kind) of a table; a key's @name, if any, is its name."""
    body = control_body(text, control)
    m = re.search(rf"\btable {table} \{{ key = \{{ (.*?) \}}", body)
    assert m, f"{control}.{table} has no key"
    keys = []
    for element in m.group(1).split(" ; "):
        element = element.strip(" ;")
        if not element:
            continue
        expr, rest = element.rsplit(" : ", 1)
        kind, _, anno = rest.partition(" ")
        name = re.search(r'@ name \( "([^"]+)" \)', anno)
        keys.append((name.group(1) if name else expr.replace(" ", ""), kind))
    return keys


def action_params(text: str, control: str, action: str) -> list[tuple[str, str]]:
    """(parameter name, bit type) of an action, typedefs resolved."""
    body = control_body(text, control)
    m = re.search(rf"\baction {action} \((.*?)\) \{{", body)
    assert m, f"{control}.{action} not declared"
    types = widths(text)
    params = []
    for param in filter(None, m.group(1).strip().split(" , ")):
        *type_tokens, name = param.split(" ")
        type_text = " ".join(type_tokens)
        params.append((name, types.get(type_text, type_text)))
    return params


@pytest.mark.parametrize("k", [2, 4, 32, 64])
def test_preprocesses_against_softswitch_tna_declarations(k):
    text = preprocessed(TNA, k)
    assert "package Switch <" in text and "extern RegisterAction <" in text  # softswitch's tna.p4
    pairs = re.findall(r"lane_pair_(\d+) \. apply \( hdr \. values \. v(\d+) , hdr \. values \. v(\d+) ,", text)
    assert [(int(p), int(a), int(b)) for p, a, b in pairs] == [(i, 2 * i, 2 * i + 1) for i in range(k // 2)]


def test_odd_k_is_refused():
    with pytest.raises(P4Error, match="VALUES_PER_PACKET must be even"):
        preprocessed(TNA, 3)


INSTALLED = [  # (control, table, actions) the installer writes, from its P4 names
    (installer.T_IDENTITY, [installer.A_IDENTITY]),
    (installer.T_JOBS, [installer.A_JOB]),
    (installer.T_ROUTES, [installer.A_FORWARD]),
    (installer.T_REWRITE, [installer.A_REWRITE]),
    (installer.T_ADMISSION, [installer.A_ADMIT, installer.A_NOT_ADMITTED]),
]


@pytest.mark.parametrize("table,actions", INSTALLED, ids=[t for t, _ in INSTALLED])
def test_installed_tables_have_the_v1model_interface(table, actions):
    tna, v1 = preprocessed(TNA), preprocessed(V1MODEL)
    control, name = table.split(".")
    if name != "switch_identity":  # keyless in both
        assert table_interface(tna, control, name) == table_interface(v1, control, name)
    for action in actions:
        action_control, action_name = action.split(".")
        v1_params = action_params(v1, action_control, action_name)
        if action == installer.A_JOB:
            # the one difference: ina.p4's aggregates also says AGGREGATES_ROOT (2 bits), the TNA program's
            # 0 or 1 (it keeps the server hop; the installer reads the width: docs/tofino.md)
            assert ("aggregates", "bit < 2 >") in v1_params
            v1_params = [(n, "bit < 1 >" if n == "aggregates" else t) for n, t in v1_params]
        assert action_params(tna, action_control, action_name) == v1_params


def test_installer_key_names_exist_in_both():
    for program in (TNA, V1MODEL):
        text = preprocessed(program)
        keys = dict(table_interface(text, "InaIngress", "ina_jobs"))
        assert keys.keys() == {installer.K_JOB, installer.K_TREE}
        assert table_interface(text, "InaIngress", "ipv4_lpm") == [(installer.K_DST, "lpm")]
        assert table_interface(text, "InaEgress", "result_rewrite") == [(installer.K_EGRESS, "exact")]
        admission = dict(table_interface(text, "InaIngress", "ina_admission"))
        assert admission == {
            installer.K_JOB: "exact",
            installer.K_TREE: "exact",
            installer.K_PKT_TYPE: "exact",
            installer.K_ADMIT_HOP: "ternary",
            installer.K_INGRESS: "ternary",
        }


def test_counters_the_controller_reads():
    text = control_body(preprocessed(TNA), "InaIngress")
    for counter in (installer.C_STATS, installer.C_DROPS):
        name = counter.split(".")[1]
        assert re.search(rf"Counter < [^;]*> \( [^;]* \) {name} ;", text), counter
    # per-job statistics are spread over four counters of the same size (docs/tofino.md, "Controller")
    sizes = re.findall(r"Counter < bit < 32 > , bit < 12 > > \( (\d+) \* (\d+) ,", text)
    assert sizes == [("256", "16")] * 4
