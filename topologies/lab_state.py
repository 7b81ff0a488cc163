"""What a lab run created (processes, root-namespace interfaces, its work directory), kept on disk so
that teardown works after a crash, a Ctrl-C or a kill: ``python -m topologies.mininet_lab --clean``
removes exactly what a dead run left, the way ``mn -c`` would for mininet, but by recorded pid and
name, never by pattern.

A run is its owner's pid together with that process's start time: the kernel reuses pids, and a later
process with a killed run's pid must neither pass for that run (its resources would never be cleaned up,
and its state file would be overwritten) nor lose its own to the cleanup. Work directories are named
``ina-lab-<owner pid>-<owner start>-XXXXXXXX`` in the temp directory, so ``--clean`` can also remove
those of runs that are gone but were not recorded (kept after a failure, or from before work
directories were recorded), and never one of a run that is still alive.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

STATE_DIR = Path(os.environ.get("INA_LAB_STATE_DIR", "/run/ina-lab" if os.geteuid() == 0 else "/tmp/ina-lab-state"))


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When process pid started (clock ticks since boot, field 22 of /proc/<pid>/stat), or None when no
    process has that pid: with the pid, it names one process for as long as the machine is up."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    after_name = stat[stat.rindex(")") + 2 :].split()  # the name may hold spaces; fields from 3 on
    return int(after_name[22 - 3])


def run_alive(pid: int, start: int | None) -> bool:
    """Whether the run owned by (pid, start) is alive: a process with that pid exists and, where the start
    time is known (not in the records of older versions), it is the process that started then."""
    now = process_start(pid)
    return now is not None and (start is None or now == start)


def interface_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


class LabResources:
    """Processes and interfaces of one lab run, mirrored to ``STATE_DIR/<owner pid>-<owner start>.json``
    (``<owner pid>.json`` when the start is not known, as in older versions' records): a later run under a
    reused pid has a file of its own, which a cleaner holding the killed run's record cannot remove."""

    def __init__(self, owner_pid: int | None = None, owner_start: int | None = None):
        self.owner_pid = owner_pid or os.getpid()
        self.owner_start = owner_start if owner_pid else process_start(self.owner_pid)
        self.processes: list[dict] = []  # {"pid", "what", "cmdline", "start"} ("start" missing in older records)
        self.interfaces: list[str] = []  # root-namespace names (deleting one end removes the veth pair)
        self.directories: list[str] = []  # work directories (removed at teardown unless forgotten)
        self.path = STATE_DIR / state_file_name(self.owner_pid, self.owner_start)

    # -- recording -------------------------------------------------------------------------------
    def add_process(self, pid: int, what: str) -> None:
        """Record a process of the run by pid and start time (None: it had already gone), which name it alone
        whatever its command line says (empty for a zombie, or one caught mid-exec)."""
        self.processes.append({"pid": pid, "what": what, "cmdline": _cmdline(pid) or "", "start": process_start(pid)})
        self.save()

    def add_interfaces(self, names) -> None:
        for name in names:
            if name not in self.interfaces:
                self.interfaces.append(name)
        self.save()

    def make_workdir(self) -> Path:
        """A fresh work directory for this run (logs, plans, results), recorded for teardown."""
        path = tempfile.mkdtemp(prefix=workdir_prefix(self.owner_pid, self.owner_start))
        self.directories.append(path)
        self.save()
        return Path(path)

    def forget_directory(self, path) -> None:
        """Keep a directory past teardown (a failed run's logs)."""
        if str(path) in self.directories:
            self.directories.remove(str(path))
            self.save()

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "owner_pid": self.owner_pid,
                    "owner_start": self.owner_start,
                    "processes": self.processes,
                    "interfaces": self.interfaces,
                    "directories": self.directories,
                },
                indent=1,
            )
        )
        tmp.replace(self.path)

    @classmethod
    def load(cls, path: Path) -> LabResources:
        data = json.loads(path.read_text())
        res = cls(data["owner_pid"], data.get("owner_start"))
        res.processes = data.get("processes", [])
        res.interfaces = data.get("interfaces", [])
        res.directories = data.get("directories", [])
        res.path = path
        return res

    # -- inspection ------------------------------------------------------------------------------
    def _alive(self, proc: dict) -> bool:
        """Whether the recorded process still runs: the process with its pid started when it did (a recycled
        pid is another process; one recorded after it had gone is never alive). Older records without a
        start time: the pid runs the recorded command line, or any when none was recorded."""
        if "start" in proc:
            return proc["start"] is not None and process_start(proc["pid"]) == proc["start"]
        now = _cmdline(proc["pid"])
        return now is not None and (not proc["cmdline"] or now == proc["cmdline"])

    def leftovers(self) -> list[str]:
        """Recorded things that still exist, described for an error message (empty when clean)."""
        left = [f"process {p['pid']} ({p['what']})" for p in self.processes if self._alive(p)]
        left += [f"interface {name}" for name in self.interfaces if interface_exists(name)]
        left += [f"directory {path}" for path in self.directories if os.path.isdir(path)]
        return left

    # -- teardown --------------------------------------------------------------------------------
    def cleanup(self, grace: float = 2.0) -> list[str]:
        """Kill recorded processes (their process groups too), delete recorded interfaces and work
        directories, forget the state file. Returns what could not be removed."""
        self._kill_processes(grace)
        for name in self.interfaces:
            if interface_exists(name):
                subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for path in self.directories:
            shutil.rmtree(path, ignore_errors=True)
        left = self.leftovers()
        if not left:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        return left

    def _kill_processes(self, grace: float) -> None:
        """SIGTERM to the recorded processes still alive, SIGKILL to those alive ``grace`` seconds later."""
        alive = [p for p in self.processes if self._alive(p)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in alive:
                _signal(p["pid"], sig)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(self._alive(p) for p in alive):
                _reap()
                time.sleep(0.05)
            alive = [p for p in alive if self._alive(p)]
            if not alive:
                break
        _reap()


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal a process and its process group (either may be gone, or not ours)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> None:
    """Collect exited children of this process so they do not linger as zombies."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stale_states() -> list[LabResources]:
    """State files whose run is gone (a crashed or killed run), also where a later process, this one
    included, now has its pid."""
    out: list[LabResources] = []
    if not STATE_DIR.is_dir():
        return out
    for path in sorted(STATE_DIR.glob("*.json")):
        try:
            res = LabResources.load(path)
        except (OSError, ValueError, KeyError):
            continue
        if res.owner_start is None and res.owner_pid == os.getpid():
            continue  # an older version's record under this process's pid: cannot tell whose
        if not run_alive(res.owner_pid, res.owner_start):
            out.append(res)
    return out


WORKDIR_PREFIX = "ina-lab-"
# mkdtemp's 8 characters after the owner's pid and start time; older runs had no start, or no pid either
_WORKDIR_NAME = re.compile(r"ina-lab-(?:(\d+)-(?:(\d+)-)?)?[a-z0-9_]{8}$")


def state_file_name(pid: int, start: int | None) -> str:
    """The name of the state file of the run (pid, start) in STATE_DIR."""
    return f"{pid}-{start}.json" if start is not None else f"{pid}.json"


_STATE_FILE_NAME = re.compile(r"(\d+)(?:-(\d+))?\.json")


def workdir_prefix(pid: int, start: int | None) -> str:
    """The start of the name of a work directory of the run (pid, start)."""
    return f"{WORKDIR_PREFIX}{pid}-{start}-" if start is not None else f"{WORKDIR_PREFIX}{pid}-"


def _live_runs() -> set[int]:
    """Owner pids of lab runs (other than this process) that are still alive, by their state files' names
    (``<pid>-<start>.json``, or an older ``<pid>.json`` whose pid is taken)."""
    live = set()
    for path in STATE_DIR.glob("*.json") if STATE_DIR.is_dir() else ():
        m = _STATE_FILE_NAME.fullmatch(path.name)
        if not m:
            continue
        owner, start = int(m.group(1)), int(m.group(2)) if m.group(2) else None
        if owner != os.getpid() and run_alive(owner, start):
            live.add(owner)
    return live


def stale_workdirs(root: str | None = None) -> list[Path]:
    """Work directories in ``root`` (the temp directory) whose run is gone: no process has the pid in the
    name, or the one that has it started at another time than the name says (the pid was reused). A name
    without a start time is from an older version: stale when its pid is free; one without a pid either
    is stale only when no other lab run is alive to own it."""
    folder = Path(root or tempfile.gettempdir())
    others_alive = None
    out = []
    for path in sorted(folder.glob(WORKDIR_PREFIX + "*")):
        m = _WORKDIR_NAME.fullmatch(path.name)
        if not m or not path.is_dir() or path.is_symlink():
            continue
        if m.group(1):
            start = int(m.group(2)) if m.group(2) else None
            if run_alive(int(m.group(1)), start):
                continue
        else:
            if others_alive is None:
                others_alive = bool(_live_runs())
            if others_alive:
                continue
        out.append(path)
    return out


def clean_stale(log=print, workdirs: bool = False) -> int:
    """Remove what dead runs left behind (with ``workdirs``, also the work directories of runs that
    are gone, kept logs included: ``--clean``); returns the number of problems that remain."""
    problems = 0
    for res in stale_states():
        log(
            f"cleaning up after run {res.owner_pid}: {len(res.processes)} processes, "
            f"{len(res.interfaces)} interfaces recorded"
        )
        left = res.cleanup()
        for item in left:
            log(f"  could not remove {item}")
        problems += len(left)
    if workdirs:
        dirs = stale_workdirs()
        for path in dirs:
            shutil.rmtree(path, ignore_errors=True)
        gone = [p for p in dirs if not p.exists()]
        if dirs:
            log(f"removed {len(gone)} work directories of earlier runs")
        for path in dirs:
            if path.exists():
                log(f"  could not remove {path}")
                problems += 1
    return problems
