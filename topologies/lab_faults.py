"""The lab's fault handling: the controller's fault monitor on a thread of its own, and what the lab does
when it reports a switch that stopped answering P4Runtime or a link whose ports went down -- re-plan the
jobs around it (the job manager tells ``PlanHandover``, which hands the versions on) and route host-to-host
traffic around it (training ranks talk TCP through the switches).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controller.replan import FaultMonitor, PortStatus
from topologies.lab_control import LabControl
from worker.loop import RealTimeLoop

STOP_S = 30.0  # the monitor's thread ends within this at teardown


class LabFaults:
    """``start`` the fault monitor (every ``interval`` seconds; 0: none), ``stop`` it at teardown;
    ``failed`` once a re-plan went wrong."""

    def __init__(self, control: LabControl, ports: PortStatus, interval: float, log: Callable[[str], None]):
        self.control = control
        self.ports = ports  # the switch ports' state (the lab network reads it from the kernel)
        self.interval = interval
        self.log = log
        self.failed = False
        self.monitor: FaultMonitor | None = None
        self._loop: RealTimeLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """The controller's fault monitor probes the switches over P4Runtime and reads the switch ports'
        state, on an event loop of its own thread."""
        if self.interval <= 0:
            return
        assert self.control.installer is not None
        self._loop = RealTimeLoop()
        self.monitor = FaultMonitor(
            self.control.installer,
            self.control.manager().switches_in_use,
            self._switch_failed,
            self._loop,
            self.interval,
            ports=self.ports,
            on_link_failure=self._link_failed,
        )
        self._loop.call_soon_threadsafe(self.monitor.start)
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._loop is None or self.monitor is None:
            return
        self._loop.call_soon_threadsafe(self.monitor.stop)
        self._loop.stop()
        if self._thread is not None:
            self._thread.join(STOP_S)
        self._loop.close()
        self._loop = self._thread = None

    def _switch_failed(self, switch: str, reason: str) -> None:
        self.log(f"[lab] switch {switch} stopped answering P4Runtime ({reason}): re-planning its jobs")
        self._replan(self.control.manager().switch_failed, switch, reason)

    def _link_failed(self, a: str, b: str) -> None:
        self.log(f"[lab] link {a}-{b} is down (its ports): re-planning the jobs that cross it")
        self._replan(self.control.manager().link_failed, a, b)

    def _replan(self, report: Callable[..., Any], *args: str) -> None:
        """Run a failure report on the monitor's thread, then route host-to-host traffic around what died;
        what goes wrong is logged, the monitor goes on (a job that cannot be re-planned was told why: its
        ranks fail with the reason). Both under the job manager's lock: a job installed or removed meanwhile
        sees the installer's routes before or after."""
        installer = self.control.installer
        assert installer is not None
        with self.control.manager().lock:
            for step in (lambda: report(*args), lambda: installer.route_around(*self.control.dead())):
                try:
                    step()
                except Exception as exc:
                    self.failed = True
                    self.log(f"[lab] {exc}")
