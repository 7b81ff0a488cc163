"""What a lab run created (processes, root-namespace interfaces), kept on disk so that teardown works
after a crash, a Ctrl-C or a kill: ``python -m topologies.mininet_lab --clean`` removes exactly what a
dead run left, the way ``mn -c`` would for mininet, but by recorded pid and name, never by pattern.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

STATE_DIR = Path(os.environ.get("INA_LAB_STATE_DIR", "/run/ina-lab" if os.geteuid() == 0 else "/tmp/ina-lab-state"))


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def interface_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


class LabResources:
    """Processes and interfaces of one lab run, mirrored to ``STATE_DIR/<owner pid>.json``."""

    def __init__(self, owner_pid: int | None = None):
        self.owner_pid = owner_pid or os.getpid()
        self.processes: list[dict] = []     # {"pid", "what", "cmdline"}
        self.interfaces: list[str] = []     # root-namespace names (deleting one end removes the veth pair)
        self.sysctls: dict[str, str] = {}   # /proc/sys path -> value to restore
        self.path = STATE_DIR / f"{self.owner_pid}.json"

    # -- recording -------------------------------------------------------------------------------
    def add_process(self, pid: int, what: str) -> None:
        self.processes.append({"pid": pid, "what": what, "cmdline": _cmdline(pid) or ""})
        self.save()

    def add_interfaces(self, names) -> None:
        for name in names:
            if name not in self.interfaces:
                self.interfaces.append(name)
        self.save()

    def raise_sysctl(self, path: str, minimum: int) -> None:
        """Raise an integer kernel setting for the run's life (restored by cleanup)."""
        try:
            old = Path(path).read_text().strip()
            if int(old) >= minimum:
                return
            self.sysctls.setdefault(path, old)
            self.save()
            Path(path).write_text(str(minimum))
        except (OSError, ValueError):
            pass

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"owner_pid": self.owner_pid, "processes": self.processes,
                                   "interfaces": self.interfaces, "sysctls": self.sysctls}, indent=1))
        tmp.replace(self.path)

    @classmethod
    def load(cls, path: Path) -> "LabResources":
        data = json.loads(path.read_text())
        res = cls(data["owner_pid"])
        res.processes = data.get("processes", [])
        res.interfaces = data.get("interfaces", [])
        res.sysctls = data.get("sysctls", {})
        res.path = path
        return res

    # -- inspection ------------------------------------------------------------------------------
    def _alive(self, proc: dict) -> bool:
        now = _cmdline(proc["pid"])
        # a recycled pid runs something else: not ours
        return now is not None and (not proc["cmdline"] or now == proc["cmdline"])

    def leftovers(self) -> list[str]:
        """Recorded things that still exist, described for an error message (empty when clean)."""
        left = [f"process {p['pid']} ({p['what']})" for p in self.processes if self._alive(p)]
        left += [f"interface {name}" for name in self.interfaces if interface_exists(name)]
        return left

    # -- teardown --------------------------------------------------------------------------------
    def cleanup(self, grace: float = 2.0) -> list[str]:
        """Kill recorded processes (their process groups too), delete recorded interfaces, forget the
        state file. Returns what could not be removed."""
        alive = [p for p in self.processes if self._alive(p)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in alive:
                for kill in (os.killpg, os.kill):
                    try:
                        kill(p["pid"], sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(self._alive(p) for p in alive):
                _reap()
                time.sleep(0.05)
            alive = [p for p in alive if self._alive(p)]
            if not alive:
                break
        _reap()
        for name in self.interfaces:
            if interface_exists(name):
                subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for path, value in self.sysctls.items():
            try:
                Path(path).write_text(value)
            except OSError:
                pass
        left = self.leftovers()
        if not left:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        return left


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
    """State files whose owning process is gone (a crashed or killed run)."""
    out = []
    if not STATE_DIR.is_dir():
        return out
    for path in sorted(STATE_DIR.glob("*.json")):
        try:
            res = LabResources.load(path)
        except (OSError, ValueError, KeyError):
            continue
        if res.owner_pid != os.getpid() and _cmdline(res.owner_pid) is None:
            out.append(res)
    return out


def clean_stale(log=print) -> int:
    """Remove what dead runs left behind; returns the number of problems that remain."""
    problems = 0
    for res in stale_states():
        log(f"cleaning up after run {res.owner_pid}: {len(res.processes)} processes, "
            f"{len(res.interfaces)} interfaces recorded")
        left = res.cleanup()
        for item in left:
            log(f"  could not remove {item}")
        problems += len(left)
    return problems
