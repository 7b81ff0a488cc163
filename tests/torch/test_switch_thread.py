"""The ina backend's switch thread (worker/torch_backend/work.py): exchanges run one at a time in issue
order; one that its caller waits for at once (a synchronous all_reduce) runs on the caller's thread
when the switch thread has not taken it and nothing runs before it, while an asynchronous one runs on
the switch thread and a wait with a timeout still times out."""

import datetime
import threading

import pytest

from worker.torch_backend.work import SwitchThread


@pytest.fixture
def switch_thread():
    thread = SwitchThread(name="test-switch")
    yield thread
    thread.close()


def blocked(switch_thread: SwitchThread) -> tuple[threading.Event, object]:
    """A job that holds the switch thread until the returned event is set (already running)."""
    started, release = threading.Event(), threading.Event()

    def hold():
        started.set()
        release.wait(5)
        return []

    work = switch_thread.submit(hold, "holding")
    assert started.wait(5)
    return release, work


class LateSwitchThread(SwitchThread):
    """A switch thread that does not look at its queue until ``wake`` is set: a busy machine that has
    not scheduled it yet."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        super().__init__(name="test-late-switch")

    def _run(self) -> None:
        self.wake.wait(10)
        super()._run()


def test_a_job_waited_for_before_the_switch_thread_takes_it_runs_on_the_waiting_thread():
    thread = LateSwitchThread()
    try:
        ran_on = []
        work = thread.submit(lambda: ran_on.append(threading.current_thread()) or ["sum"], "all_reduce")
        assert work.wait() and work.result() == ["sum"]
        assert ran_on == [threading.current_thread()] and thread.waiter_runs == 1
        thread.wake.set()  # the thread now finds the job taken and skips it; later ones run as usual
        later = thread.submit(lambda: ran_on.append(threading.current_thread()) or [], "x", waiter_may_run=False)
        later.wait()
        assert ran_on[1] is thread._thread and len(ran_on) == 2
    finally:
        thread.wake.set()
        thread.close()


def test_a_job_the_switch_thread_took_is_not_run_again_by_its_waiter(switch_thread):
    ran = []
    for _ in range(50):  # whoever takes each job (the race is the machine's), it runs once
        switch_thread.submit(lambda: ran.append(1) or [], "all_reduce").wait()
    assert len(ran) == 50


def test_order_is_kept_when_a_waiter_runs_a_job(switch_thread):
    release, first = blocked(switch_thread)
    order = []
    second = switch_thread.submit(lambda: order.append("second") or [], "all_reduce")
    third = switch_thread.submit(lambda: order.append("third") or [], "all_reduce")
    # the third's waiter cannot run it while the first and second are unfinished
    waiting = threading.Thread(target=third.wait)
    waiting.start()
    threading.Event().wait(0.05)
    assert order == [] and not third.is_completed()
    release.set()
    waiting.join(5)
    second.wait()
    assert order == ["second", "third"] and first.is_completed()


def test_a_job_a_waiter_runs_holds_back_the_next_queued_one():
    thread = LateSwitchThread()
    order: list[str] = []
    queued = []

    def run_here():
        # the switch thread wakes and another thread queues a job while the waiter runs this one: the
        # switch thread must skip this job and not run the next one before this ends
        thread.wake.set()
        t = threading.Thread(target=lambda: queued.append(thread.submit(lambda: order.append("next") or [], "x")))
        t.start()
        t.join(5)
        threading.Event().wait(0.05)
        order.append("here")
        return []

    try:
        work = thread.submit(run_here, "all_reduce")
        work.wait()
        queued[0].wait()
        assert order == ["here", "next"] and thread.waiter_runs == 1
    finally:
        thread.wake.set()
        thread.close()


def test_an_asynchronous_job_waited_for_with_a_timeout_times_out_instead_of_running_here():
    thread = LateSwitchThread()  # the job is the only one and untaken: only the timeout keeps the waiter off it
    ran_on = []
    try:
        work = thread.submit(lambda: ran_on.append(threading.current_thread()) or [], "all_reduce")
        with pytest.raises(TimeoutError, match="did not complete within 0.1 s"):
            work.wait(datetime.timedelta(seconds=0.1))
        assert ran_on == [] and thread.waiter_runs == 0
        thread.wake.set()
        assert work.wait() and len(ran_on) == 1  # then it runs once, on whichever thread takes it first
    finally:
        thread.wake.set()
        thread.close()


def test_a_failed_job_raises_its_error_from_wait(switch_thread):
    def bad():
        raise OverflowError("the int32 sum overflowed")

    work = switch_thread.submit(bad, "all_reduce")
    with pytest.raises(OverflowError, match="overflowed"):
        work.wait()
    assert work.is_completed() and not work.is_success()


def test_jobs_that_waiters_may_not_run_run_on_the_switch_thread(switch_thread):
    ran_on = []
    for _ in range(10):
        switch_thread.submit(lambda: ran_on.append(threading.current_thread()) or [], "x", waiter_may_run=False).wait()
    assert set(ran_on) == {switch_thread._thread} and switch_thread.waiter_runs == 0


def test_an_interrupted_job_a_waiter_runs_fails_its_work_instead_of_leaving_it_pending():
    thread = LateSwitchThread()
    try:

        def interrupted():
            raise KeyboardInterrupt

        work = thread.submit(interrupted, "all_reduce")
        with pytest.raises(KeyboardInterrupt):
            work.wait()  # the waiter runs it (the switch thread is late), and Ctrl-C reaches the caller
        assert work.is_completed() and not work.is_success()
        with pytest.raises(RuntimeError, match="ina all_reduce was interrupted"):
            work.wait(datetime.timedelta(seconds=1))
    finally:
        thread.wake.set()
        thread.close()


def test_a_job_run_now_runs_on_the_calling_thread_without_the_switch_thread():
    thread = LateSwitchThread()  # it never looks at its queue during the test: run_now must not need it
    try:
        ran_on = []
        work = thread.run_now(lambda: ran_on.append(threading.current_thread()) or ["sum"], "all_reduce")
        assert work is not None and work.is_completed() and work.result() == ["sum"]
        assert ran_on == [threading.current_thread()] and thread.waiter_runs == 1
        assert thread._queue.empty()

        def bad():
            raise OverflowError("the int32 sum overflowed")

        failed = thread.run_now(bad, "all_reduce")
        assert failed is not None and failed.is_completed()
        with pytest.raises(OverflowError, match="overflowed"):
            failed.wait()
    finally:
        thread.wake.set()
        thread.close()


def test_a_job_run_now_behind_an_unfinished_one_is_not_run_there(switch_thread):
    release, first = blocked(switch_thread)
    ran = []
    assert switch_thread.run_now(lambda: ran.append(1) or [], "all_reduce") is None  # the caller submits it
    assert ran == []
    release.set()
    first.wait()
    work = switch_thread.run_now(lambda: ran.append(2) or [], "all_reduce")
    assert work is not None and work.is_completed() and ran == [2]


class EchoNetwork:
    """One rank's network: the sum (and maximum) of one rank's values are the values; records the threads
    that exchanged."""

    threads: list[threading.Thread] = []

    def __init__(self):
        self.agent = None

    def aggregate(self, array, op):
        EchoNetwork.threads.append(threading.current_thread())
        return array.copy()

    def close(self):
        pass


def test_a_synchronous_all_reduce_runs_on_its_callers_thread_and_an_asynchronous_one_on_the_switch_thread():
    import torch
    import torch.distributed as dist

    from worker.torch_backend.process_group import InaProcessGroup

    group = InaProcessGroup(dist.HashStore(), 0, 1, datetime.timedelta(seconds=10), EchoNetwork)
    try:
        EchoNetwork.threads.clear()
        x = torch.arange(600, dtype=torch.float32)
        sync = dist.AllreduceOptions()
        sync.asyncOp = False  # what dist.all_reduce(async_op=False) passes
        work = group.allreduce([x], sync)
        assert work.is_completed() and EchoNetwork.threads  # done before it was waited for
        assert set(EchoNetwork.threads) == {threading.current_thread()}
        assert work.wait() and torch.equal(x, torch.arange(600, dtype=torch.float32))
        EchoNetwork.threads.clear()
        coalesced = dist.AllreduceCoalescedOptions()
        coalesced.asyncOp = False  # dist.all_reduce_coalesced(async_op=False)
        a, b = torch.full((3,), 7, dtype=torch.int32), torch.full((2,), -4, dtype=torch.int32)
        work = group.allreduce_coalesced([a, b], coalesced)
        assert work.is_completed() and set(EchoNetwork.threads) == {threading.current_thread()}
        assert a.tolist() == [7, 7, 7] and b.tolist() == [-4, -4]
        EchoNetwork.threads.clear()
        work = group.allreduce([x], dist.AllreduceOptions())  # asyncOp True: DDP's buckets, async_op=True
        assert work.wait(datetime.timedelta(seconds=5))  # a wait with a timeout does not run it
        assert EchoNetwork.threads and threading.current_thread() not in EchoNetwork.threads
        assert torch.equal(x, torch.arange(600, dtype=torch.float32))
    finally:
        group.shutdown()
