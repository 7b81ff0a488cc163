"""Training in the mininet lab follows re-plans: examples/train_digits.py with the ina backend on
leaf-spine (4 ranks on h1..h4, the server on h9: the job's tree aggregates on a spine). The spine is
killed after rank 0's first epoch; nobody tells the controller. Its fault monitor notices, re-plans the
training job on the other spine and routes host traffic around the dead one; the lab replaces the ranks'
plan file (INA_PLAN) with the new version and each rank's agent, which watches it, moves its chunks.
Training completes with the accuracy of an unfailed run: the switches' sums are exact integers whichever
tree adds them, so the same seed gives the same parameters."""

import os

from conftest import needs_mininet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet

EPOCHS = 12  # 10 steps each with 4 ranks (a few tenths of a second): the spine dies after the first
TRAIN_TIMEOUT_S = 120.0  # each run takes about 20 s on either back end; well inside pytest's 300 s, so a stall
# ends in the lab's TrainError (which names the ranks still running and their last output), not pytest's kill


def test_a_spine_killed_mid_training_is_planned_around_and_training_completes():
    from topologies.mininet_lab import MininetLab

    lines: list[str] = []
    killed: list[str] = []
    lab = None
    armed = False  # the first run is the unfailed one

    def log(line: str) -> None:
        lines.append(line)
        if lab is not None and armed and not killed and line.startswith("[h1] epoch   1"):
            (job,) = [p for p in lab.control.manager().list() if p.job_id not in (lab.plan.job_id, lab.ps_plan.job_id)]
            (spine,) = {c.switch for c in job.switches if c.switch.startswith("sp") and c.aggregates}
            killed.append(spine)
            lab.kill_switch(spine)

    lab = MininetLab(os.path.join(REPO, "topologies", "leaf_spine.yaml"), 4, log=log, monitor_interval=0.2)
    try:
        lab.start()
        clean = lab.train(EPOCHS, "ina", seed=0, timeout=TRAIN_TIMEOUT_S)
        armed = True
        try:
            failed = lab.train(EPOCHS, "ina", seed=0, timeout=TRAIN_TIMEOUT_S)
        except BaseException:
            # the lab's lines (plan versions, kills, epochs) live only here: show them with the failure
            print("\n".join(lines[-80:]))
            raise
        assert killed, "\n".join(lines[-30:])
        (spine,) = killed
        other = "sp2" if spine == "sp1" else "sp1"
        assert lab.faults.monitor.failed.keys() == {spine}
        # the kill and the new plan came before rank 0's last epoch: the ranks moved in the middle of training
        replanned = f"[lab] training job {failed.job_id} runs on plan version 2"
        second_run = lines[max(i for i, line in enumerate(lines) if line.startswith("[h1] epoch   1")) :]
        moved = next(i for i, line in enumerate(second_run) if line.startswith(replanned))
        last_epoch = next(i for i, line in enumerate(second_run) if line.startswith(f"[h1] epoch {EPOCHS:3d}"))
        assert moved < last_epoch, "\n".join(second_run)
        # every step completed, the ranks agree and learned exactly what the unfailed run learned
        assert failed.iterations == clean.iterations == EPOCHS * ((1797 - 449) // 4 // 32)
        assert failed.ranks_in_sync and clean.ranks_in_sync
        assert failed.test_accuracy == clean.test_accuracy
        # after the kill, the other spine aggregated the training job's chunks in the data plane
        assert failed.switch_counters[other].get("grad_completed", 0) > 0, failed.switch_counters
        assert spine not in failed.switch_counters  # dead: not read
    finally:
        lab.stop()


def test_with_no_spine_left_the_ranks_fail_with_the_controllers_reason(tmp_path):
    """The second spine dies once the ranks moved to it: no tree is left, the controller says why, the lab
    writes it next to the plan file and every rank's collective fails with it, long before INA_TIMEOUT."""
    import threading
    import time

    import pytest

    from topologies.errors import TrainError
    from topologies.mininet_lab import MininetLab

    lines: list[str] = []
    killed: list[tuple[str, float]] = []
    lab = None

    def kill(spine: str) -> None:
        killed.append((spine, time.monotonic()))
        threading.Thread(target=lab.kill_switch, args=(spine,)).start()  # not on the monitor's thread

    def log(line: str) -> None:
        lines.append(line)
        if lab is None:
            return
        if not killed and line.startswith("[h1] epoch   1"):
            kill("sp1")  # the tree's spine (leaf-spine's first, as the first test found)
        elif len(killed) == 1 and line.startswith("[lab] training job") and "runs on plan version 2" in line:
            kill("sp2")

    # a failed run keeps its work directory in /tmp unless told where the logs go: keep them in tmp_path, so
    # no directory of this process is left for the other lab tests' teardown checks
    lab = MininetLab(
        os.path.join(REPO, "topologies", "leaf_spine.yaml"), 4, log=log, monitor_interval=0.2, keep_logs=str(tmp_path)
    )
    try:
        lab.start()
        with pytest.raises(TrainError) as error:
            lab.train(EPOCHS, "ina", seed=0)
        assert [spine for spine, _ in killed] == ["sp1", "sp2"], "\n".join(lines[-30:])
        assert time.monotonic() - killed[1][1] < 40  # INA_TIMEOUT is 60 s, the lab's grace 20 s
        assert "around the failed switch sp2 failed" in str(error.value), str(error.value)
    finally:
        workdir = lab.network.workdir
        lab.stop()
    assert workdir is not None and not workdir.exists()  # the logs moved to tmp_path
    assert (tmp_path / "plan.json").is_file()
