"""docs/cli.md's vocabulary is the commands' own: every option of its table exists in every command it
lists, means one thing (one destination) there, and every old spelling is a hidden alias that warns and
stores what the new spelling stores."""

from __future__ import annotations

import argparse

import cli_check as check
import pytest

from controller.cli_options import DeprecatedAlias

ROWS = check.vocabulary()
CASES = [(row.idea, option, command) for row in ROWS for option in row.options for command in row.commands]
OLD = [(row.options[0], old, command) for row in ROWS for old, commands in row.old.items() for command in commands]


def test_the_table_is_read():
    ideas = {option for row in ROWS for option in row.options}
    assert {"--workers", "--server", "--result-mode", "--program", "--pool-size", "TOPOLOGY"} <= ideas
    assert ("--result-mode", "--results", "demo") in OLD
    assert ("--result-mode", "--results", "lab") in OLD


@pytest.mark.parametrize("idea, option, command", CASES, ids=[f"{c}:{o}" for _, o, c in CASES])
def test_every_option_exists_in_every_command_listed(idea, option, command):
    action = check.action_of(check.parser_of(command), option)
    assert action is not None, f"{command} has no {option} ({idea})"
    assert not isinstance(action, DeprecatedAlias), f"{command}: {option} is only an old spelling"


@pytest.mark.parametrize("row", [r for r in ROWS if len(r.commands) > 1], ids=lambda r: r.options[0])
def test_an_option_stores_the_same_thing_everywhere(row):
    for option in row.options:
        if option.isupper():
            continue
        dests = {check.action_of(check.parser_of(c), option).dest for c in row.commands}
        assert len(dests) == 1, (option, dests)


@pytest.mark.parametrize("new, old, command", OLD, ids=[f"{c}:{o}" for _, o, c in OLD])
def test_an_old_spelling_warns_and_does_what_the_new_one_does(capsys, new, old, command):
    parser = check.parser_of(command)
    alias, primary = check.action_of(parser, old), check.action_of(parser, new)
    assert isinstance(alias, DeprecatedAlias) and alias.help == argparse.SUPPRESS
    assert alias.dest == primary.dest
    value = (primary.choices and sorted(primary.choices)[0]) or "3"
    args = parser.parse_known_args([old, value])[0]
    assert getattr(args, primary.dest) == parser.parse_known_args([new, value])[0].__dict__[primary.dest]
    assert capsys.readouterr().err.strip().endswith(f"warning: {old} is deprecated, use {new}")


def test_no_command_offers_an_old_spelling_as_its_own():
    """An old spelling is only ever an alias: a command that shows it in --help has reused it for
    something else, which the table would then contradict."""
    old = {o for row in ROWS for o in row.old}
    commands = {c for row in ROWS for c in row.commands}
    for command in sorted(commands):
        for action in check.parser_of(command)._actions:
            for option in set(action.option_strings) & old:
                assert isinstance(action, DeprecatedAlias), f"{command}: {option} is an option of its own"


def test_lanes_is_a_shorthand_for_program():
    parser = check.parser_of("bench/allreduce_netns.py")
    assert parser.parse_known_args(["--lanes", "64", "1024"])[0].program == ["v1model", "v1model-k1024"]
