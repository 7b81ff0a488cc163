"""bench/cpu_time.py, the benches' one reader of CPU time: it agrees with the kernel's own clocks to the
millisecond (clock ticks would be off by up to 10 ms), counts a process's ended threads, reads another
process's threads from /proc, and says 0 for a process that is gone."""

import gzip
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import cpu_time  # noqa: E402


def spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_threads_time_is_the_schedulers():
    tid = threading.get_native_id()
    before, clock0 = cpu_time.thread_cpu_seconds(tid), time.thread_time()
    spin(0.2)
    after, clock1 = cpu_time.thread_cpu_seconds(tid), time.thread_time()
    assert after - before == pytest.approx(clock1 - clock0, abs=0.001)


def test_a_process_counts_every_thread_ended_ones_too():
    worker = threading.Thread(target=spin, args=(0.15,))
    before, clock0 = cpu_time.process_cpu_seconds(os.getpid()), time.process_time()
    worker.start()
    spin(0.15)
    worker.join()
    after, clock1 = cpu_time.process_cpu_seconds(os.getpid()), time.process_time()
    assert clock1 - clock0 >= 0.3
    assert after - before == pytest.approx(clock1 - clock0, abs=0.001)


def test_another_processes_thread_is_read_from_proc():
    program = "import time\nend = time.thread_time() + 0.2\nwhile time.thread_time() < end: pass\n"
    program += "print(time.thread_time(), flush=True)\ntime.sleep(5)"
    child = subprocess.Popen(
        [sys.executable, "-c", program],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        spent = float(child.stdout.readline())
        assert cpu_time.thread_cpu_seconds(child.pid, child.pid) == pytest.approx(spent, abs=0.02)  # a tick or two
        assert cpu_time.process_cpu_seconds(child.pid) >= spent
    finally:
        child.kill()
        child.wait()
    assert cpu_time.process_cpu_seconds(child.pid) == 0.0


def test_the_machine_and_each_cpu_are_busy_at_most_all_the_time():
    busy0, total0 = cpu_time.machine_busy()
    spin(0.05)
    busy1, total1 = cpu_time.machine_busy()
    assert 0 < busy1 - busy0 <= total1 - total0 + 1e-6
    busy, total = cpu_time.machine_busy(min(os.sched_getaffinity(0)))
    assert 0 < busy <= total
    with pytest.raises(OSError, match="no line for cpu4096"):
        cpu_time.machine_busy(4096)


def test_each_cpus_time_is_split_by_kind_and_a_spin_on_it_is_user_time():
    cpu = min(os.sched_getaffinity(0))
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # this thread spins on the CPU read, nowhere else
    try:
        before, clock0 = cpu_time.cpu_seconds_by_kind(cpu), time.thread_time()
        while time.thread_time() - clock0 < 0.3:  # spin in user code: a clock read (a system call) per ~5 ms
            for _ in range(200_000):
                pass
        after, clock1 = cpu_time.cpu_seconds_by_kind(cpu), time.thread_time()
    finally:
        os.sched_setaffinity(0, allowed)
    assert set(after) == {"user", "system", "softirq", "irq", "idle", "steal"}
    assert all(after[k] >= before[k] for k in after)
    # the spin ran on that CPU in user code (clock ticks: 10 ms each, a few lost at the ends or to interrupts)
    assert after["user"] - before["user"] >= 0.9 * (clock1 - clock0) - 0.03
    busy, total = cpu_time.machine_busy(cpu)
    assert sum(after.values()) == pytest.approx(total, abs=0.05)  # read a moment apart
    assert sum(v for k, v in after.items() if k != "idle") == pytest.approx(busy, abs=0.05)


def test_the_kernel_config_says_where_softirq_time_lands(tmp_path):
    set_, unset, plain = tmp_path / "set.gz", tmp_path / "unset.gz", tmp_path / "config"
    set_.write_bytes(gzip.compress(b"CONFIG_HZ=250\nCONFIG_IRQ_TIME_ACCOUNTING=y\n"))
    unset.write_bytes(gzip.compress(b"# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_HAVE_IRQ_TIME_ACCOUNTING=y\n"))
    plain.write_text("CONFIG_IRQ_TIME_ACCOUNTING=y\n")
    assert cpu_time.irq_time_accounting([set_]) is True
    assert cpu_time.irq_time_accounting([unset]) is False  # the HAVE_ option is not the option
    assert cpu_time.irq_time_accounting([tmp_path / "missing", plain]) is True  # the first readable one
    assert cpu_time.irq_time_accounting([tmp_path / "missing"]) is None


def test_threads_are_summed_by_name_with_the_times_they_slept():
    import ctypes

    named, go, finished, done = (threading.Event() for _ in range(4))

    def worker():
        ctypes.CDLL(None).prctl(15, b"cpu-time-probe", 0, 0, 0)  # PR_SET_NAME
        named.set()
        go.wait(10)
        spin(0.1)
        for _ in range(20):
            time.sleep(0.001)
        finished.set()
        done.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    named.wait(10)
    before = cpu_time.threads_by_name(os.getpid())["cpu-time-probe"]
    go.set()
    finished.wait(10)
    after = cpu_time.threads_by_name(os.getpid())["cpu-time-probe"]
    done.set()
    thread.join()
    assert after[0] - before[0] >= 0.09 and after[1] - before[1] >= 20
    # an ended thread leaves /proc a moment after join() returns (the kernel clears its tid, then reaps it)
    deadline = time.monotonic() + 2.0
    while "cpu-time-probe" in cpu_time.threads_by_name(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "cpu-time-probe" not in cpu_time.threads_by_name(os.getpid())
    assert cpu_time.threads_by_name(2**22 + 7) == {}  # no such process
