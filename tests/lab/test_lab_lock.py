"""One mininet lab at a time: a second lab waits for the lab lock, saying who holds it (no root needed: the
lock is an flock on a file, here one of the test's own)."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from topologies import lab_lock

REPO = Path(__file__).resolve().parents[2]
HOLDER = "import sys; from topologies import lab_lock; lab_lock.acquire(print, sys.argv[1]); print('held', flush=True); sys.stdin.read()"


def _taken_elsewhere(path: str) -> bool:
    """Whether another process could not take the lock at ``path`` right now."""
    probe = "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"
    return subprocess.run([sys.executable, "-c", probe, path], capture_output=True).returncode != 0


def test_a_second_lab_waits_for_the_first_and_says_which_process_holds_the_lock(tmp_path):
    path = str(tmp_path / "lab.lock")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline() == "held\n"
        logged: list[str] = []
        second = threading.Thread(target=lab_lock.acquire, args=(logged.append, path), daemon=True)
        second.start()
        deadline = time.monotonic() + 30
        while not logged and time.monotonic() < deadline:  # until the second lab says it waits
            time.sleep(0.05)
        assert logged == [f"[lab] waiting for {path}: another lab run holds it (pid {holder.pid})"]
        assert second.is_alive()  # still waiting: the first lab runs
        holder.stdin.close()  # the first lab ends
        holder.wait(30)
        second.join(30)
        assert not second.is_alive()
        assert _taken_elsewhere(path)
    finally:
        holder.kill()
        holder.wait(30)
    lab_lock.release(path)
    assert not _taken_elsewhere(path)


def test_a_process_holding_the_lock_across_labs_does_not_wait_on_itself(tmp_path):
    path = str(tmp_path / "lab.lock")
    with lab_lock.held(print, path):  # a bench around its labs
        lab_lock.acquire(print, path)  # a lab's network starting
        lab_lock.release(path)  # and torn down
        assert _taken_elsewhere(path)  # the bench still holds it
    assert not _taken_elsewhere(path)


def test_the_lab_names_its_training_collective_and_still_takes_the_old_option_with_a_note(capsys):
    from topologies.lab_cli import parse_train_line
    from topologies.mininet_lab import build_parser

    assert build_parser().parse_args(["star.yaml", "--train"]).collective == "ina"
    assert build_parser().parse_args(["star.yaml", "--train", "--collective", "gloo"]).collective == "gloo"
    assert capsys.readouterr().err == ""
    assert build_parser().parse_args(["star.yaml", "--train", "--backend", "both"]).collective == "both"
    warning = "warning: --backend is deprecated, use --collective\n"
    assert capsys.readouterr().err == f"python -m topologies.mininet_lab: {warning}"
    assert parse_train_line("3 --backend gloo")["collective"] == "gloo"
    assert capsys.readouterr().err == f"train: {warning}"
    assert parse_train_line("3 --collective gloo --seed 2") == {
        "epochs": 3,
        "collective": "gloo",
        "seed": 2,
        "timeout": None,
        "example": "digits",
    }
