"""softswitch finds P4 objects by name with protocol/p4names.py's one rule, everywhere a name is given:
the Switch's control API, the P4Info index its P4Runtime server uses, a table's actions and the STF
runner's tables, keys, actions and counters. The full name first; then a short name, a suffix of the
full name starting after a dot, that only one object has; a short name several share is an error naming
them. Run on the TNA program, whose 32 lane pairs share their short names (`lanes`, `lane_op`) and whose
ingress and egress both have a `mark_congested` action."""

from pathlib import Path

import pytest

from protocol.p4names import P4NameError
from softswitch import p4info as p4i
from softswitch.program import ActionInfo, ActionRef, TableInfo
from softswitch.runtime.tables import InvalidEntry, TableState
from softswitch.stf import StfError, run_stf
from softswitch.switch import Switch

TNA_P4 = Path(__file__).resolve().parents[2] / "p4src" / "tna" / "ina_tna.p4"


def test_switch_takes_a_dotted_short_name_and_refuses_a_shared_one(ina_tna_program):
    sw = Switch(ina_tna_program)
    sw.register("lane_pair_3.lanes").write(5, 77)
    assert sw.register("InaIngress.lane_pair_3.lanes").read(5) == 77
    with pytest.raises(P4NameError, match=r"register name 'lanes' is ambiguous: InaIngress.lane_pair_0.lanes, ") as e:
        sw.register("lanes")
    assert len(e.value.candidates) == 32
    with pytest.raises(P4NameError, match="no register named 'pair_3.lanes'"):  # a suffix, but not after a dot
        sw.register("pair_3.lanes")


def test_p4info_index_answers_full_short_and_alias_names(ina_tna_program):
    index = p4i.P4InfoIndex(p4i.build_p4info(ina_tna_program.info))
    assert index.named("tables", "lane_pair_5.lane_op").preamble.name == "InaIngress.lane_pair_5.lane_op"
    for table in index.p4info.tables:  # P4Info's aliases are short names
        assert index.named("tables", table.preamble.alias) is table
    assert index.named("tables", "no_such_table") is None
    with pytest.raises(P4NameError, match="mark_congested' is ambiguous: InaEgress.mark_congested, InaIngress.mark"):
        index.named("actions", "mark_congested")


def test_a_tables_actions_follow_the_rule():
    info = TableInfo(
        name="Ingress.t",
        keys=(),
        actions=(ActionRef("Ingress.a.set"), ActionRef("Ingress.b.set"), ActionRef("NoAction")),
        default_action="NoAction",
    )
    table = TableState(info, [ActionInfo("Ingress.a.set"), ActionInfo("Ingress.b.set"), ActionInfo("NoAction")])
    assert table.check_default("b.set", {}) == ("Ingress.b.set", ())
    with pytest.raises(InvalidEntry, match="table Ingress.t: action name 'set' is ambiguous: Ingress.a.set, Ingress.b"):
        table.check_default("set", {})
    with pytest.raises(InvalidEntry, match="action 'a' is not one of its actions"):
        table.check_default("a", {})


@pytest.fixture
def stf(tmp_path, ina_tna_program):
    def run(text: str):
        path = tmp_path / "names.stf"
        path.write_text(text)
        return run_stf(TNA_P4, path, switch=Switch(ina_tna_program))

    return run


def test_stf_names_tables_actions_and_counters_by_short_name(stf):
    """A short table, key and action name install the entry (a job known: no UNKNOWN_JOB drop counted)."""
    result = stf(
        "setdefault switch_identity set_switch_id(switch_id:1)\n"
        "add ina_jobs ina.job_id:7 ina.tree_id:0 set_job(job_index:1, slot_base:0, pool_size:4, max_fan_in:2,"
        " aggregates:1, result_group:0)\n"
        "check_counter drop_stats(4) packets == 0\n"
    )
    assert result.ok, str(result)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("setdefault lane_op NoAction()", "table name 'lane_op' is ambiguous: InaIngress.lane_pair_0.lane_op, "),
        ("add ina_jobs job_id:7 tree_id:0 nope()", "table InaIngress.ina_jobs: no action named 'nope'"),
        ("add ina_jobs id:7 tree_id:0 unknown_job()", "table InaIngress.ina_jobs: no key named 'id'"),
        ("check_counter stats(0) packets == 0", "no counter named 'stats'"),
    ],
)
def test_stf_refuses_a_shared_or_unknown_short_name(stf, line, message):
    with pytest.raises(StfError, match=message):
        stf(line + "\n")
