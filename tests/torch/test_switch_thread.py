"""The ina backend's switch thread (worker/torch_backend/work.py): exchanges run one at a time in issue
order, and a small one runs on its caller's thread only when nothing is queued or running."""

import threading

import pytest

from worker.torch_backend.work import SwitchThread


@pytest.fixture
def switch_thread():
    thread = SwitchThread(name="test-switch")
    yield thread
    thread.close()


def test_an_exchange_on_an_idle_thread_runs_on_the_callers_thread_and_completes_at_once(switch_thread):
    ran_on = []
    work = switch_thread.run_inline(lambda: ran_on.append(threading.current_thread()) or ["done"], "all_reduce")
    assert work is not None and work.is_completed() and work.is_success()
    assert ran_on == [threading.current_thread()]
    assert work.result() == ["done"]
    assert switch_thread.inline_runs == 1


def test_while_a_queued_exchange_runs_nothing_runs_inline_and_order_is_kept(switch_thread):
    started, release, order = threading.Event(), threading.Event(), []

    def slow():
        started.set()
        release.wait(5)
        order.append("queued first")
        return []

    first = switch_thread.submit(slow, "all_reduce")
    assert started.wait(5)
    assert switch_thread.run_inline(lambda: order.append("inline") or [], "all_reduce") is None
    second = switch_thread.submit(lambda: order.append("queued second") or [], "all_reduce")
    release.set()
    first.wait()
    second.wait()
    assert order == ["queued first", "queued second"]
    # the thread is idle again: the next one runs inline
    assert switch_thread.run_inline(lambda: order.append("inline") or [], "all_reduce") is not None
    assert order[-1] == "inline"


def test_an_inline_exchange_that_fails_raises_its_error_from_wait(switch_thread):
    def bad():
        raise OverflowError("the int32 sum overflowed")

    work = switch_thread.run_inline(bad, "all_reduce")
    assert work is not None and work.is_completed() and not work.is_success()
    with pytest.raises(OverflowError, match="overflowed"):
        work.wait()


def test_a_job_queued_while_an_inline_one_runs_waits_for_it(switch_thread):
    inside, order = threading.Event(), []
    queued: list = []

    def inline_job():
        inside.set()
        # another thread queues an exchange while this one runs: it must not start before this ends
        t = threading.Thread(
            target=lambda: queued.append(switch_thread.submit(lambda: order.append("queued") or [], "x"))
        )
        t.start()
        t.join(5)
        threading.Event().wait(0.05)  # the switch thread would run it meanwhile if nothing held it
        order.append("inline")
        return []

    assert switch_thread.run_inline(inline_job, "all_reduce") is not None
    queued[0].wait(5)
    assert order == ["inline", "queued"]


def test_a_closed_thread_runs_nothing_inline():
    thread = SwitchThread(name="test-closed")
    assert thread.close()
    assert thread.run_inline(lambda: [], "all_reduce") is None
    with pytest.raises(RuntimeError, match="destroyed"):
        thread.submit(lambda: [], "all_reduce")
