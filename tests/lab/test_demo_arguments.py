"""The demo refuses runs that would verify nothing or not run what was asked: one usage line, exit 2,
before any network starts."""

import pytest

from topologies.demo import main


@pytest.mark.parametrize(
    "argv, last_line",
    [
        (["--values", "-5"], "argument --values: -5 is not a positive whole number"),
        (["--values", "0"], "argument --values: 0 is not a positive whole number"),
        (["--rounds", "0"], "argument --rounds: 0 is not a positive whole number"),
        (["--rounds", "-1"], "argument --rounds: -1 is not a positive whole number"),
        (["--workers", "0"], "--workers 0: a job needs at least one worker"),
        (
            ["--target", "bmv2", "--inprocess"],
            "--inprocess runs the switches on softswitch in this process: --target bmv2 needs mininet",
        ),
    ],
)
def test_runs_that_would_verify_nothing_are_refused(capsys, argv, last_line):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out = capsys.readouterr()
    assert exit_.value.code == 2 and out.out == ""
    assert out.err.splitlines()[-1] == f"python -m topologies.demo: error: {last_line}"


def test_bmv2_without_the_lab_is_refused_not_run_on_softswitch(capsys, monkeypatch):
    """Without root or mininet the demo runs on the in-process network, which runs softswitch only: --target
    bmv2 there is an error naming why, never a softswitch run that reports success."""
    from topologies import demo

    monkeypatch.setattr(demo, "mininet_available", lambda: (False, "not root"))
    monkeypatch.setattr("topologies.mininet_lab.install_signal_handlers", lambda: None)
    assert main(["--target", "bmv2", "--quick"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "demo: error: --target bmv2 runs in the mininet lab, which needs root and mininet (not root)\n"
