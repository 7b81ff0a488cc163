"""A bug shows its traceback through inactl, the demo and the in-process network's server; a user
error stays one line. (The mininet lab's counterpart is tests/lab/test_lab_errors.py.)"""

from controller import cli

BUG = "KeyError('deliberate bug')"
BUG_LINE = "KeyError: 'deliberate bug'"


def test_inactl_shows_a_bug_in_the_planner_as_a_traceback(launcher):
    done = launcher.run("controller.cli", ["plan", "topologies/star.yaml"], "controller.cli", "plan_job", BUG)
    launcher.assert_traceback(done, BUG_LINE)
    assert "in replaced" in done.stderr  # the frame that raised is on show


def test_inactl_reports_a_controller_error_in_one_line(launcher):
    error = "PlanError('no path from h1')"
    done = launcher.run("controller.cli", ["plan", "topologies/star.yaml"], "controller.cli", "plan_job", error)
    launcher.assert_one_line(done, "inactl: error: no path from h1")


def test_inactl_reports_an_unwritable_output_in_one_line(tmp_path, capsys):
    out = tmp_path / "missing-dir" / "plan.json"
    assert cli.main(["plan", "topologies/star.yaml", "-o", str(out)]) == 1
    assert capsys.readouterr().err == f"inactl: error: cannot write {out}: No such file or directory\n"


def test_demo_shows_a_bug_in_the_planner_as_a_traceback(launcher):
    argv = ["--quick", "--inprocess", "--picture", "/dev/null"]
    done = launcher.run("topologies.demo", argv, "controller.planner", "plan_job", BUG)
    launcher.assert_traceback(done, BUG_LINE)


def test_demo_reports_a_plan_error_in_one_line(launcher):
    argv = ["--quick", "--inprocess", "--picture", "/dev/null"]
    done = launcher.run("topologies.demo", argv, "controller.planner", "plan_job", "PlanError('no room for job 1')")
    launcher.assert_one_line(done, "demo: error: no room for job 1")


def test_inprocess_server_shows_a_bug_in_the_job_service_as_a_traceback(launcher):
    argv = ["serve", "topologies/star.yaml", "--workers", "h1", "h2"]
    done = launcher.run("topologies.inprocess.__main__", argv, "controller.jobservice", "plan_job", BUG)
    launcher.assert_traceback(done, BUG_LINE)


def test_softswitch_shows_a_bug_in_the_compiler_as_a_traceback(launcher):
    argv = ["compile", "p4src/ina.p4", "--p4runtime-files", "/dev/null"]
    done = launcher.run("softswitch.cli", argv, "softswitch.compiler", "compile_program", BUG)
    launcher.assert_traceback(done, BUG_LINE)


def test_softswitch_reports_a_program_error_in_one_line(tmp_path, capsys):
    from softswitch import cli as softswitch_cli

    bad = tmp_path / "bad.p4"
    bad.write_text("header h_t { bit<8> f }\n")
    assert softswitch_cli.main(["compile", str(bad), "--p4runtime-files", str(tmp_path / "out.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"softswitch: error: {bad}:1:") and err.count("\n") == 1, err
