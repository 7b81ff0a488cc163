"""A bug in the mininet lab shows its traceback, after the lab tore its network down; a user error
stays one line. (inactl, the demo and the in-process server: tests/e2e/test_launcher_errors.py.)"""

import re
import shutil

from conftest import needs_mininet
from lab_helpers import root_links

ARGV = ["topologies/star.yaml", "--batch"]


def _remove_kept_logs(output: str) -> None:
    """A failed run keeps its work directory for the user; the test has read what it needs."""
    for kept in set(re.findall(r"this run's logs are in (\S+)", output)):
        shutil.rmtree(kept.rstrip(")"), ignore_errors=True)


@needs_mininet
def test_lab_shows_a_bug_in_the_job_service_as_a_traceback_and_tears_down(launcher):
    before = root_links()
    done = launcher.run("topologies.mininet_lab", ARGV, "controller.jobservice", "plan_job", "KeyError('deliberate')")
    _remove_kept_logs(done.stdout + done.stderr)
    launcher.assert_traceback(done, "KeyError: 'deliberate'")
    assert "[lab] network up" in done.stdout + done.stderr  # the bug struck with the network running
    assert {name for name in root_links() - before if name.startswith("s1-eth")} == set()


@needs_mininet
def test_lab_reports_a_controller_error_in_one_line(launcher):
    error = "PlanError('no room for job 1')"
    done = launcher.run("topologies.mininet_lab", ARGV, "controller.jobservice", "plan_job", error)
    _remove_kept_logs(done.stdout + done.stderr)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[0] == "error: no room for job 1", done.stderr
