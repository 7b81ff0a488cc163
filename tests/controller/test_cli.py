"""inactl: output, exit codes, one-line errors without tracebacks."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.jobservice import JobClient, JobManager, JobServer
from controller.plan import JobPlan
from controller.topology_yaml import load_topology

ROOT = Path(__file__).resolve().parents[2]
TOPO = ROOT / "topologies"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_topo_validate_and_show(capsys):
    code, out, _ = run(capsys, "topo", "validate", TOPO / "star.yaml")
    assert code == 0 and out.strip().endswith("ok (5 hosts, 1 switches, 5 links)")
    code, out, _ = run(capsys, "topo", "show", TOPO / "hetero_mesh.yaml")
    assert (
        code == 0 and "s5       device 5     slots 256" in out and "7   s1:5 - s5:1  400 Mbit/s 5 ms loss 0.1%" in out
    )


def test_topo_errors_are_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((TOPO / "star.yaml").read_text().replace("'s1:2'", "'s1:1'"))
    code, out, err = run(capsys, "topo", "validate", bad)
    assert code == 1 and err == "inactl: error: port 1 of s1 used twice (links 0 and 1)\n"
    code, _, err = run(capsys, "topo", "validate", tmp_path / "nope.yaml")
    assert code == 1 and err.startswith("inactl: error: cannot read topology") and err.count("\n") == 1


def test_plan_table_and_json(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", TOPO / "star.yaml", "--workers", "h1,h2", "h3", "--server", "h5")
    assert code == 0
    assert "h2 (rank 1)  s1[agg 3/#1 ->5] > h5[1/#0]" in out
    code, out, _ = run(capsys, "plan", TOPO / "hetero_mesh.yaml", "--trees", "2", "--height", "3", "--json")
    plan = JobPlan.from_json(out)
    assert plan.planner == "multitree" and len(plan.trees) == 2
    code, out, _ = run(
        capsys, "plan", TOPO / "star.yaml", "--workers", "h1", "h2", "--server", "h5", "--aggregation", "none"
    )
    assert code == 0 and "h2 (rank 1)  s1[->5] > h5[2/#1]" in out
    # a count picks the first N worker hosts, as in every command's --workers (docs/cli.md)
    code, out, _ = run(capsys, "plan", TOPO / "leaf_spine.yaml", "--workers", "3", "--json")
    assert [w.name for w in JobPlan.from_json(out).workers] == ["h1", "h2", "h3"]
    dest = tmp_path / "p.json"
    code, out, _ = run(capsys, "plan", TOPO / "leaf_spine.yaml", "--json", "-o", dest)
    assert code == 0 and JobPlan.from_json(dest.read_text()).servers[1].name == "h10"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["plan", TOPO / "star.yaml", "--workers", "h1", "h9", "--server", "h5"], "unknown worker 'h9'"),
        (["plan", TOPO / "fat_tree_k4.yaml", "--workers", "h1"], "no server: give --server"),
        (["plan", TOPO / "star.yaml", "--trees", "2", "--min-bw", "5000"], "no tree spans all 5 hosts"),
        (["plan", TOPO / "star.yaml", "--pool-size", "0"], "pool_size 0 outside"),
        (["plan", TOPO / "leaf_spine.yaml", "--workers", "9"], "--workers 9: the topology has 8 worker hosts"),
        (["plan", TOPO / "leaf_spine.yaml", "--workers", "0"], "--workers 0: a job needs at least one worker"),
        (["install", TOPO / "star.yaml", "--p4info", "x"], "give both --p4info and --device-config"),
        (["jobs", "--controller", "127.0.0.1:1", "--timeout", "2"], "no job service at 127.0.0.1:1"),
        (["jobs", "show", "--controller", "127.0.0.1:1"], "jobs show needs a job id"),
    ],
)
def test_errors(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 1 and message in err and err.count("\n") == 1 and err.startswith("inactl: error: ")


def test_help_and_usage_errors_from_a_real_process():
    for argv in (["--help"], ["plan", "--help"], ["topo", "--help"], ["counters", "--help"]):
        done = subprocess.run([sys.executable, "-m", "controller", *argv], capture_output=True, text=True)
        assert done.returncode == 0 and "usage: inactl" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "controller", "plan", str(TOPO / "star.yaml"), "--policy", "x"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "invalid choice: 'x'" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "controller", "topo", "validate", "/nonexistent.yaml"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr


def test_draw_writes_png(capsys, tmp_path):
    out = tmp_path / "t.png"
    code, text, _ = run(capsys, "topo", "draw", TOPO / "leaf_spine.yaml", "-o", out)
    assert code == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_jobs_against_a_running_service(capsys):
    server = JobServer(JobManager(load_topology(TOPO / "star.yaml"))).start()
    try:
        JobClient(server.address).register(["h1", "h2"], ["h5"])
        code, out, _ = run(capsys, "jobs", "--controller", server.address)
        assert code == 0 and out == "job 1 v1 multihop: 2 workers -> h5, 1 tree(s), 0 warning(s)\n"
        code, out, _ = run(capsys, "jobs", "show", "1", "--controller", server.address, "--json")
        assert json.loads(out)["job_id"] == 1
        code, out, _ = run(capsys, "jobs", "release", "1", "--controller", server.address)
        assert code == 0 and out == "job 1 released\n"
        code, _, err = run(capsys, "jobs", "release", "1", "--controller", server.address)
        assert code == 1 and err == "inactl: error: no job 1\n"
    finally:
        server.stop()
