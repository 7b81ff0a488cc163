"""CPU time of processes, threads and the machine, for the benches' CPU figures (one reader for all).

Processes and threads: the scheduler's own figure, the nanoseconds they have run on a CPU. For a
process, its CPU-time clock (clock_gettime on the clock id clock_getcpuclockid(3) gives: every thread,
ended ones too, up to the moment of the call); for a thread of this process, its thread clock. Where
the kernel refuses a clock (a thread of another process), the first field of
/proc/<pid>/task/<tid>/schedstat, which is the same figure as of the thread's last scheduler tick; where
that is missing too, user + system time from /proc/.../stat, which counts in clock ticks (10 ms each: a
short run on a busy machine can read 0 there).
"""

from __future__ import annotations

import gzip
import os
import platform
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_CPUCLOCK_SCHED = 2  # Linux's CPU-time clock ids: ~id << 3 | clock kind | 4 for one thread (posix-timers.h)
_CPUCLOCK_PERTHREAD = 4


def _cpu_clock(task_id: int, thread: bool) -> int:
    return ((~task_id) << 3) | _CPUCLOCK_SCHED | (_CPUCLOCK_PERTHREAD if thread else 0)


def task_cpu_seconds(task: Path) -> float:
    """CPU time of one thread as /proc reads it; `task` is its directory (/proc/<pid>/task/<tid>).
    Raises OSError once the thread is gone."""
    try:
        return int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        if not task.exists():
            raise
    fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14 and 15 of stat)


def thread_cpu_seconds(tid: int, pid: int | str = "self") -> float:
    """CPU time of thread `tid` of process `pid` (this process by default) so far."""
    if pid in ("self", os.getpid()):
        try:
            return time.clock_gettime(_cpu_clock(tid, thread=True))
        except OSError:
            pass
    return task_cpu_seconds(Path(f"/proc/{pid}/task/{tid}"))


def process_cpu_seconds(pid: int) -> float:
    """CPU time of every thread of process `pid` so far (ended threads included where the kernel
    gives the process clock; else the threads alive now); 0.0 once the process is gone."""
    try:
        return time.clock_gettime(_cpu_clock(pid, thread=False))
    except OSError:
        pass
    total = 0.0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += task_cpu_seconds(task)
        except OSError:
            continue  # the thread ended after the listing
    return total


def process_kernel_seconds(pid: int) -> float:
    """System (kernel) time of every thread of process `pid` so far, ended threads included, from
    /proc/<pid>/stat (clock ticks: read it over runs of a second or more); 0.0 once the process is gone.
    It holds the system calls the process made and the softirq work the kernel ran while the process was
    on the CPU (without IRQ_TIME_ACCOUNTING, a receive softirq is charged to whoever it interrupted)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return int(fields[12]) / CLOCK_TICKS  # stime, field 15 of stat


def _stat_ticks(name: str) -> list[int]:
    """user nice system idle iowait irq softirq steal of one /proc/stat line, in clock ticks; guest and
    guest_nice (fields 9-10) are already inside user and nice, so they are left out."""
    for line in Path("/proc/stat").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return [int(v) for v in fields[1:9]]
    raise OSError(f"/proc/stat has no line for {name}")


def machine_busy(cpu: int | None = None) -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, or of one CPU (/proc/stat; busy includes
    interrupts and softirqs, not idle or iowait; steal counts as busy): the share it was busy between
    two readings is (busy1 - busy0) / (total1 - total0)."""
    values = _stat_ticks("cpu" if cpu is None else f"cpu{cpu}")
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values) - idle) / CLOCK_TICKS, sum(values) / CLOCK_TICKS


def cpu_seconds_by_kind(cpu: int) -> dict[str, float]:
    """Seconds CPU `cpu` has spent so far in user code (nice included), the kernel for tasks (system),
    softirqs, hard interrupts, idle (iowait included) and stolen by the hypervisor (/proc/stat). Without
    IRQ_TIME_ACCOUNTING a softirq's ticks count here as softirq and also in the CPU time of the task it
    interrupted."""
    user, nice, system, idle, iowait, irq, softirq, steal = _stat_ticks(f"cpu{cpu}")
    kinds = {"user": user + nice, "system": system, "softirq": softirq, "irq": irq, "idle": idle + iowait}
    return {kind: ticks / CLOCK_TICKS for kind, ticks in {**kinds, "steal": steal}.items()}


def irq_time_accounting(configs: list[Path] | None = None) -> bool | None:
    """Whether the kernel was built with CONFIG_IRQ_TIME_ACCOUNTING (the first readable of `configs`,
    gzipped or not; by default /proc/config.gz, then /boot/config-<release>); None where none says. It
    decides where softirq time lands: without it, a softirq's time counts in the CPU time of the task it
    interrupted (scheduler runtime and ticks both), and on an idle CPU in no task's; with it, in no
    task's at all (ksoftirqd's threads apart)."""
    defaults = [Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")]
    for path in defaults if configs is None else configs:
        try:
            raw = path.read_bytes()
            text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode(errors="replace")
        except OSError:
            continue
        return "\nCONFIG_IRQ_TIME_ACCOUNTING=y" in f"\n{text}"
    return None


def ksoftirqd_seconds() -> float:
    """CPU seconds of the kernel's softirq threads (ksoftirqd/N) so far: softirq work the kernel put off
    to them (a busy CPU, or more than its budget at once) instead of running it where it was raised."""
    total = 0.0
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith("ksoftirqd/"):
                total += process_cpu_seconds(int(comm.parent.name))
        except OSError:
            continue
    return total


def threads_by_name(pid: int) -> dict[str, tuple[float, int]]:
    """Per thread name of process `pid` (its live threads): CPU seconds so far and voluntary context
    switches (times a thread went to sleep), summed over the threads of that name; {} once it is gone."""
    out: dict[str, tuple[float, int]] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
            cpu = task_cpu_seconds(task)
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended after the listing
        sleeps = int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0])
        seconds, count = out.get(name, (0.0, 0))
        out[name] = (seconds + cpu, count + sleeps)
    return out


def softnet_counts() -> list[tuple[int, int]]:
    """Per CPU, the frames the kernel's backlog took and dropped (/proc/net/softnet_stat): the lab's one
    reader, ``topologies.lab_drops.softnet_counts``, imported when called, so that importing this module
    imports none of the agents' packages (bench/agent_pps runs the agents of another commit: its roles
    import them from that commit's copy, which a package already imported from here would shadow)."""
    from topologies.lab_drops import softnet_counts as read

    return read()
