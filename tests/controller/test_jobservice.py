"""The job service over gRPC on 127.0.0.1, and the generated code matching the .proto."""

import shutil
import time
from pathlib import Path

import pytest

from controller.errors import ReplanError
from controller.jobservice import JobClient, JobManager, JobServer, JobServiceError
from controller.planner import PlanOptions
from controller.topology_yaml import load_topology

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def service():
    manager = JobManager(load_topology(ROOT / "topologies" / "hetero_mesh.yaml"))
    server = JobServer(manager).start()
    client = JobClient(server.address)
    yield manager, client
    client.close()
    server.stop()


def test_register_get_list_release(service):
    manager, client = service
    workers = ["h1", "h2", "h3", "h4", "h5"]
    plan = client.register(workers, ["h6"], PlanOptions(policy="lowest_delay", pool_size=32))
    assert plan.job_id == 1 and plan.pool_size == 32 and plan.policy == "lowest_delay"
    assert [w.name for w in plan.workers] == workers
    assert client.get_plan(1) == plan and client.get_plan(1, 1) == plan
    tree = client.register(workers, ["h6"], PlanOptions(planner="multitree", trees=2, height=3.0))
    assert tree.job_id == 2 and len(tree.trees) == 2
    jobs = client.list()
    assert [(j.job_id, j.planner, j.trees) for j in jobs] == [(1, "multihop", 1), (2, "multitree", 2)]
    assert list(jobs[0].servers) == ["h6"]
    assert client.release(1) is False  # no installer attached: nothing to remove
    assert [j.job_id for j in client.list()] == [2]
    assert manager.resources.slots.used("s5") == sum(
        2 * c.pool_size for c in tree.switches if c.switch == "s5" and c.aggregates
    )


def test_errors_are_one_line(service):
    _, client = service
    with pytest.raises(JobServiceError, match="^unknown worker 'h42'"):
        client.register(["h42"], ["h6"])
    with pytest.raises(JobServiceError, match="^no job 9$"):
        client.get_plan(9)
    client.register(["h1"], ["h6"])
    with pytest.raises(JobServiceError, match="^job 1 has no plan version 3 "):
        client.get_plan(1, 3)
    with pytest.raises(JobServiceError, match="^no job 5$"):
        client.release(5)
    with pytest.raises(JobServiceError, match="^unknown policy 'greedy'"):
        client.register(["h2"], ["h6"], PlanOptions(policy="greedy"))


def test_no_service_is_named():
    client = JobClient("127.0.0.1:1", timeout=2)
    with pytest.raises(JobServiceError, match="no job service at 127.0.0.1:1"):
        client.list()


@pytest.mark.skipif(
    not (shutil.which("protoc") and shutil.which("grpc_python_plugin")),
    reason="protoc / grpc_python_plugin not installed",
)
def test_generated_code_matches_proto(tmp_path):
    from controller.protogen import generate

    for path in generate(tmp_path):
        assert path.read_text() == (ROOT / "controller" / path.name).read_text(), path.name


def test_watch_plan_streams_each_new_version_then_the_reason_a_job_cannot_go_on():
    import queue

    from worker.plan_updates import PlanFollower

    manager = JobManager(load_topology(ROOT / "topologies" / "leaf_spine.yaml"))
    server = JobServer(manager).start()
    client = JobClient(server.address)
    try:
        plan = client.register([f"h{i}" for i in range(1, 9)], ["h9"])
        got: queue.Queue = queue.Queue()
        follower = PlanFollower(client, plan.job_id, lambda p, reason: got.put((p, reason))).start()
        deadline = time.monotonic() + 10
        while not manager.watchers.get(plan.job_id) and time.monotonic() < deadline:  # the stream is open
            time.sleep(0.01)
        spine = next(c.switch for c in plan.switches if c.switch.startswith("sp"))
        manager.switch_failed(spine, "probe failed")
        second, reason = got.get(timeout=10)
        assert (second.version, reason) == (2, "")
        assert spine not in {c.switch for c in second.switches}
        assert second == manager.plan(plan.job_id)
        other = "sp2" if spine == "sp1" else "sp1"
        with pytest.raises(ReplanError):
            manager.switch_failed(other, "probe failed")
        gone, reason = got.get(timeout=10)
        assert gone is None and f"re-planning job {plan.job_id} around the failed switch {other} failed" in reason
        follower.join(timeout=10)
        assert follower.versions_seen == 2
        assert not manager.watchers[plan.job_id]  # the stream ended
    finally:
        client.close()
        server.stop()


def test_watching_an_unknown_job_is_refused(service):
    with pytest.raises(JobServiceError, match="no job 42"):
        list(service[1].watch(42))


def test_a_plan_file_carries_each_new_version_then_the_reason_a_job_cannot_go_on(tmp_path):
    """The channel of ranks that cannot reach the job service (the mininet lab's): the lab replaces the
    plan file with each version (publish_plan) or says why the job cannot go on (publish_failure); the
    follower hands the watcher the plan the file holds, each newer version once (a file replaced with a
    version it had is not a new version), then the reason, and ends."""
    import dataclasses
    import queue

    from worker.plan_updates import PlanFileWatch, PlanFollower, publish_failure, publish_plan

    manager = JobManager(load_topology(ROOT / "topologies" / "leaf_spine.yaml"))
    plan, _ = manager.register([f"h{i}" for i in range(1, 5)], ["h9"], PlanOptions())
    path = tmp_path / "job.json"
    publish_plan(path, plan)
    other_job = dataclasses.replace(plan, job_id=plan.job_id + 1, version=5)
    got: queue.Queue = queue.Queue()
    source = PlanFileWatch(path, interval=0.01)
    follower = PlanFollower(source, plan.job_id, lambda p, reason: got.put((p, reason))).start()
    try:
        assert got.get(timeout=10) == (plan, "")  # what the file holds (an agent ignores a version it has)
        publish_plan(path, other_job)  # another job's plan is not this job's version
        second = dataclasses.replace(plan, version=2)
        publish_plan(path, second)
        assert got.get(timeout=10) == (second, "")
        publish_plan(path, second)  # a new file, a version the watcher has: nothing to hand over
        publish_plan(path, plan)  # an older version: nothing either
        time.sleep(0.1)  # ten looks at the file
        publish_failure(path, "re-planning job 0 around the failed switch sp2 failed: no tree left")
        assert got.get(timeout=10) == (None, "re-planning job 0 around the failed switch sp2 failed: no tree left")
        follower.join(timeout=10)
        assert follower.versions_seen == 3 and got.empty()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json", "job.json.failed"]  # no temporaries
    finally:
        source.close()
        follower.join(timeout=10)


def test_closing_a_plan_file_watch_ends_the_follower(tmp_path):
    from worker.plan_updates import PlanFileWatch, PlanFollower

    source = PlanFileWatch(tmp_path / "none.json", interval=0.01)  # no file yet: nothing to hand over
    follower = PlanFollower(source, 0, lambda p, reason: None).start()
    source.close()
    follower.join(timeout=5)
    assert not follower._thread.is_alive() and follower.versions_seen == 0


def test_a_watcher_that_raises_keeps_neither_its_jobs_other_watchers_nor_other_jobs_from_their_new_plans():
    """One job's broken watcher (an agent pipe that died, say) must not leave the other jobs of the same
    failure on trees through the dead switch: every job is re-planned, every other watcher told, and the
    failure report names the broken watcher."""
    manager = JobManager(load_topology(ROOT / "topologies" / "leaf_spine.yaml"))
    workers = [f"h{i}" for i in range(1, 9)]
    first, _ = manager.register(workers, ["h9"], PlanOptions())
    second, _ = manager.register(workers, ["h9"], PlanOptions())
    spine = next(c.switch for c in first.switches if c.switch.startswith("sp"))
    assert spine in {c.switch for c in second.switches}
    told: list[tuple[int, int]] = []

    def broken(plan, reason):
        raise BrokenPipeError(32, "Broken pipe")

    manager.watch(first.job_id, broken)
    for job in (first, second):
        manager.watch(job.job_id, lambda plan, reason, job=job: told.append((job.job_id, plan.version)))
    with pytest.raises(ReplanError, match=rf"job {first.job_id}'s watcher failed on plan version 2: .*Broken pipe"):
        manager.switch_failed(spine, "probe failed")
    assert sorted(told) == [(first.job_id, 2), (second.job_id, 2)]
    for job in (first, second):
        assert manager.plan(job.job_id).version == 2
        assert spine not in {c.switch for c in manager.plan(job.job_id).switches}


def test_a_multi_tree_job_is_re_planned_without_its_own_reservation_in_the_way():
    """A multi-tree job reserves its trees' rates on the links; its re-plan around a failed spine must not
    count that reservation against itself (it replaces it), or no tree fits the surviving links."""
    from controller.generators import leaf_spine

    manager = JobManager(leaf_spine())
    plan, _ = manager.register([f"h{i}" for i in range(1, 9)], ["h9"], PlanOptions(planner="multitree", trees=2))
    before = dict(manager.resources.reservations[plan.job_id])
    spine = next(c.switch for c in plan.switches if c.switch.startswith("sp"))
    (second,) = manager.switch_failed(spine, "probe failed")
    assert second.version == 2 and spine not in {c.switch for c in second.switches}
    after = manager.resources.reservations[plan.job_id]
    spine_links = {link.id for link in manager.topo.links if spine in (link.a, link.b)}
    assert spine_links & set(before)  # the first trees crossed the spine
    assert after and not spine_links & set(after)  # the new trees' rates replaced the old ones
    capacity = {link.id: link.bandwidth for link in manager.topo.links}
    assert all(after[eid] <= capacity[eid] + 1e-9 for eid in after)


def test_a_failed_re_plan_keeps_the_jobs_reservation():
    """Both spines gone: no tree is left, and the job keeps what it reserved (nothing half-replaced)."""
    from controller.generators import leaf_spine

    manager = JobManager(leaf_spine())
    plan, _ = manager.register([f"h{i}" for i in range(1, 9)], ["h9"], PlanOptions(planner="multitree", trees=2))
    manager.switch_failed("sp1", "probe failed")
    kept = dict(manager.resources.reservations[plan.job_id])
    with pytest.raises(ReplanError):
        manager.switch_failed("sp2", "probe failed")
    assert manager.resources.reservations[plan.job_id] == kept
