"""The lab's switch command lines and its teardown: nothing it created survives a failed start or a
killed launcher, except a failed run's logs, kept where the error says; ``--clean`` removes work
directories of runs that are gone."""

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import needs_mininet
from lab_helpers import host_namespaces_gone, lab_interfaces, root_links, tiny_spec

from topologies.p4switch import Target

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def test_switch_command_lines_follow_simple_switch_grpc():
    soft = Target("softswitch", ("softswitch",), grpc_after_dashes=False)
    assert soft.argv(3, {2: "s1-eth2", 1: "s1-eth1"}, "127.0.0.1:50103", "p4src/ina.p4") == [
        "softswitch",
        "--device-id",
        "3",
        "-i",
        "1@s1-eth1",
        "-i",
        "2@s1-eth2",
        "--grpc-server-addr",
        "127.0.0.1:50103",
        "p4src/ina.p4",
    ]
    bmv2 = Target("bmv2", ("simple_switch_grpc",), grpc_after_dashes=True)
    assert bmv2.argv(1, {1: "s1-eth1"}, "127.0.0.1:50100", None, cpu_port=255) == [
        "simple_switch_grpc",
        "--device-id",
        "1",
        "-i",
        "1@s1-eth1",
        "--no-p4",
        "--",
        "--grpc-server-addr",
        "127.0.0.1:50100",
        "--cpu-port",
        "255",
    ]


@needs_mininet
def test_failed_switch_start_leaves_nothing_behind(tmp_path):
    from topologies.errors import SwitchStartError
    from topologies.lab_network import LabNetwork

    dying = Target("dying", (sys.executable, "-c", "import sys; sys.exit(3)"), grpc_after_dashes=False)
    lab = LabNetwork(tiny_spec(), target=dying, program="unused.p4", grpc_base=9690, log=lambda m: None)
    with pytest.raises(SwitchStartError, match=r"lt1 \(dying\): exited with status 3") as err:
        lab.start()
    assert lab.resources.leftovers() == []
    assert root_links() & lab_interfaces(lab.spec) == set()
    assert host_namespaces_gone(lab.resources)
    # the failed run's switch log stays, in its work directory, where the error says
    log = re.search(r"log: (\S+)", str(err.value)).group(1)
    try:
        assert os.path.dirname(log) == str(lab.workdir) and os.path.basename(log) == "lt1.log"
        assert "--device-id 1" in open(log).read()
    finally:
        shutil.rmtree(lab.workdir)


@needs_mininet
def test_killed_launcher_is_cleaned_up_by_the_next_run(tmp_path):
    """SIGKILL the launcher with the network up: ``--clean`` removes hosts, switches and veths."""
    script = tmp_path / "up.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {HERE!r})
        from lab_helpers import tiny_spec
        from topologies.lab_network import LabNetwork
        from topologies.p4switch import Target
        sleeper = Target("sleeper", (sys.executable, "-c",
                         "import socket, sys, time; s = socket.socket(); "
                         "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                         "s.bind(('127.0.0.1', int(sys.argv[sys.argv.index('--grpc-server-addr') + 1].split(':')[1]))); "
                         "s.listen(); time.sleep(600)"), grpc_after_dashes=False)
        lab = LabNetwork(tiny_spec(), target=sleeper, program="unused.p4", grpc_base=9695, log=print)
        lab.start()
        print("UP", lab.resources.path, flush=True)
        time.sleep(600)
    """)
    )
    # a temp directory of its own: --clean then removes no other run's work directories on this machine
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    line = proc.stdout.readline()
    while line.startswith("[lab] waiting for"):  # another lab holds the lab lock: this one starts after it
        line = proc.stdout.readline()
    assert line.startswith("UP"), line
    state_path = line.split()[1]
    from topologies.lab_state import LabResources

    res = LabResources.load(__import__("pathlib").Path(state_path))
    assert {"lt1-eth1", "lt1-eth2"} <= root_links()
    workdir = res.directories[0]
    assert os.path.dirname(workdir) == str(tmp_path)
    assert os.path.isfile(os.path.join(workdir, "lt1.log"))  # switch logs go to the run's work directory
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert res.leftovers(), "the killed run should have left its network up"
    done = subprocess.run(
        [sys.executable, "-m", "topologies.mininet_lab", "--clean"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cleaning up after run {proc.pid}" in done.stdout
    assert res.leftovers() == []
    assert root_links() & lab_interfaces(tiny_spec()) == set()
    assert host_namespaces_gone(res)
    assert not os.path.exists(workdir)


def test_clean_removes_work_directories_of_runs_that_are_gone_only(tmp_path, monkeypatch):
    """Kept logs of a failed run and directories of older runs (no pid in the name) go; a live run's
    directory stays, and older runs' directories too while another lab run is alive (whose could they be)."""
    from topologies import lab_state
    from topologies.lab_state import process_start, stale_workdirs

    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(lab_state, "STATE_DIR", state)
    work = tmp_path / "tmp"
    work.mkdir()

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "gone": f"ina-lab-{dead.pid}-ab_cd123",
            "live": f"ina-lab-{live.pid}-ab_cd123",
            "older": "ina-lab-x9y8z7w6",
            "other": "ina-lab-state",
            "file": f"ina-lab-{dead.pid}-00000000",
        }
        for key, name in names.items():
            (work / name).mkdir() if key != "file" else (work / name).write_text("")
        assert [p.name for p in stale_workdirs(str(work))] == sorted([names["gone"], names["older"]])
        # a state file of a run that is gone, although its pid is now the live process's: no run is alive
        (state / f"{live.pid}-{process_start(live.pid) - 1}.json").write_text("{}")
        assert [p.name for p in stale_workdirs(str(work))] == sorted([names["gone"], names["older"]])
        (state / f"{live.pid}-{process_start(live.pid)}.json").write_text("{}")  # a lab run that is alive
        assert [p.name for p in stale_workdirs(str(work))] == [names["gone"]]
        for path in state.iterdir():
            path.unlink()
        (state / f"{live.pid}.json").write_text("{}")  # an older version's record of a run that is alive
        assert [p.name for p in stale_workdirs(str(work))] == [names["gone"]]
    finally:
        live.kill()
        live.wait()


def test_a_reused_pid_does_not_keep_a_killed_runs_resources_or_take_a_live_runs(tmp_path, monkeypatch):
    """A run is its owner's pid and start time. A killed run's record and work directories are cleaned up
    even where a later process (this one) now has its pid; another process's live run loses nothing."""
    from topologies import lab_state
    from topologies.lab_state import LabResources, clean_stale, process_start, stale_workdirs

    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(lab_state, "STATE_DIR", state)
    monkeypatch.setattr(lab_state.tempfile, "tempdir", str(tmp_path))
    me, my_start = os.getpid(), process_start(os.getpid())
    assert my_start is not None and process_start(-1) is None
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_start = process_start(live.pid)
        killed = LabResources(me, my_start - 1)  # the run of an earlier process that had this pid
        killed_dir = killed.make_workdir()
        kept_logs = tmp_path / f"ina-lab-{me}-{my_start - 1}-kept_log"  # a failed run's logs, unrecorded
        kept_logs.mkdir()
        other = LabResources(live.pid, live_start)
        other_dir = other.make_workdir()
        assert killed_dir.name.startswith(f"ina-lab-{me}-{my_start - 1}-")

        assert [r.owner_start for r in lab_state.stale_states()] == [my_start - 1]
        assert clean_stale(log=lambda m: None) == 0  # what a lab start does before this run records anything
        assert not killed_dir.exists() and not killed.path.exists()
        assert other_dir.is_dir() and other.path.exists()
        mine = LabResources()  # this run, under the same pid and state file the killed run had
        my_dir = mine.make_workdir()
        assert mine.path != killed.path and lab_state.stale_states() == []
        assert kept_logs.is_dir()  # kept logs stay until --clean, which finds them by start time
        assert stale_workdirs(str(tmp_path)) == [kept_logs]
        assert clean_stale(log=lambda m: None, workdirs=True) == 0
        assert not kept_logs.exists() and other_dir.is_dir() and my_dir.is_dir()
    finally:
        live.kill()
        live.wait()
    assert stale_workdirs(str(tmp_path)) == [other_dir]  # its process is gone now


def test_a_cleaner_holding_a_killed_runs_record_leaves_the_record_of_a_new_run_under_its_pid(tmp_path, monkeypatch):
    """A cleaner loaded a killed run's record; meanwhile a new run under the same pid (this process) recorded
    itself: the killed run's cleanup removes the killed run's state file, not the new run's."""
    from topologies import lab_state
    from topologies.lab_state import LabResources, process_start

    monkeypatch.setattr(lab_state, "STATE_DIR", tmp_path / "state")
    monkeypatch.setattr(lab_state.tempfile, "tempdir", str(tmp_path))
    killed = LabResources(os.getpid(), process_start(os.getpid()) - 1)
    killed.make_workdir()
    [stale] = lab_state.stale_states()
    mine = LabResources()
    my_dir = mine.make_workdir()
    assert stale.cleanup() == []
    assert not killed.path.exists() and mine.path.exists() and my_dir.is_dir()
    assert LabResources.load(mine.path).directories == [str(my_dir)]
    mine.cleanup()


def _spawn_with_pid(pid: int, argv: list[str]) -> subprocess.Popen | None:
    """Start argv as process ``pid`` (the kernel hands out the pid after /proc/sys/kernel/ns_last_pid), or
    None when other processes kept taking it first."""
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as last_pid:
                last_pid.write(str(pid - 1))
        except OSError:  # not allowed in this pid namespace
            return None
        proc = subprocess.Popen(argv)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


@pytest.mark.skipif(
    not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK) or os.geteuid() != 0,
    reason="reusing a pid on purpose needs root (/proc/sys/kernel/ns_last_pid)",
)
def test_a_process_recorded_without_a_command_line_is_not_killed_once_its_pid_is_reused(tmp_path, monkeypatch):
    """A child recorded as a zombie (no command line) is known by its start time: a later process given
    its pid is neither reported as left over nor killed by the cleanup."""
    from pathlib import Path

    from topologies import lab_state
    from topologies.lab_state import LabResources

    monkeypatch.setattr(lab_state, "STATE_DIR", tmp_path / "state")
    run = LabResources()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    run.add_process(child.pid, "switch s1")
    assert run.processes[0]["cmdline"] == ""  # a zombie has no command line
    child.wait()
    later = _spawn_with_pid(child.pid, [sys.executable, "-c", "import time; time.sleep(60)"])
    if later is None:
        pytest.skip(f"could not start a process as pid {child.pid} (taken by others, or ns_last_pid refused)")
    try:
        assert run.leftovers() == []
        assert run.cleanup(grace=0.2) == []
        assert later.poll() is None
    finally:
        later.kill()
        later.wait()


@needs_mininet
def test_start_refuses_switch_port_names_that_exist_and_leaves_them_alone():
    """mininet would delete an interface of the same name: that would cut another running lab's link."""
    from topologies.lab_network import LabError, LabNetwork

    subprocess.run(["ip", "link", "add", "lt1-eth2", "type", "veth", "peer", "name", "ltpeer2"], check=True)
    try:
        lab = LabNetwork(
            tiny_spec(),
            target=Target("unused", ("false",), grpc_after_dashes=False),
            program="unused.p4",
            grpc_base=9697,
            log=lambda m: None,
        )
        with pytest.raises(
            LabError, match="interface lt1-eth2 already exists .*another lab run uses these switch names"
        ):
            lab.start()
        assert "lt1-eth2" in root_links()
        assert lab.resources.leftovers() == []
    finally:
        subprocess.run(["ip", "link", "del", "lt1-eth2"])
