"""A mininet switch that runs a P4 target process: softswitch or BMv2's simple_switch_grpc.

Both targets take simple_switch_grpc's command line (``-i PORT@IFACE``, ``--device-id``,
``--grpc-server-addr``, ``--cpu-port``, a program or ``--no-p4``), so one class serves both; the target
only decides the executable and where the gRPC options go (BMv2 takes them after ``--``). The switch
process runs in the root namespace on the switch's veth ends and is started in its own session, so it
is stopped by its pid and never by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mininet.node import Switch

from topologies.errors import SwitchStartError

REPO = Path(__file__).resolve().parent.parent
LOG_DIR = Path(os.environ.get("INA_LAB_LOG_DIR", "/tmp/ina-lab"))


@dataclass(frozen=True)
class Target:
    """How to run one kind of P4 switch executable."""

    name: str  # "softswitch" or "bmv2"
    command: tuple[str, ...]  # the executable (and interpreter arguments)
    grpc_after_dashes: bool  # BMv2 wants target options (gRPC address, CPU port) after "--"

    def argv(
        self,
        device_id: int,
        ports: dict[int, str],
        grpc_addr: str,
        program: str | None,
        cpu_port: int | None = None,
        log_console: bool = False,
        tls_args: tuple[str, ...] = (),
        stats_file: Path | None = None,
    ) -> list[str]:
        argv = list(self.command) + ["--device-id", str(device_id)]
        for port, intf in sorted(ports.items()):
            argv += ["-i", f"{port}@{intf}"]
        if log_console:
            argv.append("--log-console")
        if stats_file is not None and self.name == "softswitch":  # BMv2 has no such option
            argv += ["--stats-file", str(stats_file)]
        argv.append(program if program else "--no-p4")
        target_opts = ["--grpc-server-addr", grpc_addr]
        if cpu_port is not None:
            target_opts += ["--cpu-port", str(cpu_port)]
        target_opts += list(tls_args)  # simple_switch_grpc's --grpc-server-ssl flags, which softswitch takes too
        if self.grpc_after_dashes:
            return argv + ["--"] + target_opts
        return argv[:-1] + target_opts + argv[-1:]


def softswitch_target() -> Target:
    """softswitch on this interpreter, so the switches run the lab's own checkout: the venv's
    `softswitch` script names the venv's interpreter, whose checkout can be another one (a git worktree
    sharing the venv ran the main checkout's switch)."""
    return Target("softswitch", (sys.executable, "-m", "softswitch"), grpc_after_dashes=False)


def bmv2_target() -> Target:
    exe = shutil.which("simple_switch_grpc")
    if exe is None:
        raise SwitchStartError("--target bmv2: simple_switch_grpc is not installed (not on PATH)")
    return Target("bmv2", (exe,), grpc_after_dashes=True)


def resolve_target(name: str) -> Target:
    if name == "softswitch":
        return softswitch_target()
    if name == "bmv2":
        return bmv2_target()
    raise SwitchStartError(f"unknown switch target {name!r} (choose softswitch or bmv2)")


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Block until a TCP connect to host:port succeeds; fail early if proc exits."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise SwitchStartError(f"exited with status {proc.returncode} before opening {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SwitchStartError(f"gRPC port {host}:{port} did not answer within {timeout:.0f} s")
        time.sleep(0.1)


class P4Switch(Switch):  # type: ignore[misc]  # mininet is untyped
    """A mininet switch whose data plane is a P4 target process (one process per switch).

    Parameters (besides mininet's): device_id, grpc_port, target (a Target), program (path to the
    P4 source for softswitch or a BMv2 JSON; None starts with --no-p4), cpu_port, start_timeout, log_dir
    (where ``<name>.log`` goes; default $INA_LAB_LOG_DIR or /tmp/ina-lab).
    """

    def __init__(
        self,
        name,
        device_id: int,
        grpc_port: int,
        target: Target,
        program: str | None = None,
        cpu_port: int | None = None,
        start_timeout: float = 120.0,
        log_console: bool = False,
        on_process=None,
        log_dir: Path | None = None,
        tls_args: tuple[str, ...] = (),
        **params,
    ):
        Switch.__init__(self, name, **params)
        self.device_id = device_id
        self.grpc_port = grpc_port
        self.grpc_addr = f"127.0.0.1:{grpc_port}"
        self.target = target
        self.program = program
        self.cpu_port = cpu_port
        self.start_timeout = start_timeout
        self.log_console = log_console
        self.on_process = on_process  # callback(pid) so the lab can record it for teardown
        self.proc: subprocess.Popen | None = None
        self.log_dir = Path(log_dir or LOG_DIR)  # the lab gives its run's work directory
        self.log_path = self.log_dir / f"{name}.log"
        self.stats_path = self.log_dir / f"{name}.ports.json"  # softswitch writes it on SIGUSR1
        self._stats_seq = 0
        self.tls_args = tuple(tls_args)

    def ports_by_number(self) -> dict[int, str]:
        return {port: intf.name for intf, port in self.ports.items() if intf.name != "lo"}

    def start(self, controllers) -> None:
        """Launch the target process on this switch's interfaces (mininet calls this after build)."""
        for intf in self.intfList():
            if intf.name == "lo":
                continue
            prepare_interface(self, intf.name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        argv = self.target.argv(
            self.device_id,
            self.ports_by_number(),
            self.grpc_addr,
            self.program,
            self.cpu_port,
            self.log_console,
            self.tls_args,
            self.stats_path,
        )
        with open(self.log_path, "wb") as log:
            log.write((" ".join(argv) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=str(REPO),
            )
        if self.on_process:
            self.on_process(self.proc.pid)

    def wait_ready(self) -> None:
        """Wait until the gRPC server answers (separate from start so all switches boot in parallel)."""
        try:
            wait_for_port("127.0.0.1", self.grpc_port, self.start_timeout, self.proc)
        except SwitchStartError as exc:
            raise SwitchStartError(
                f"{self.name} ({self.target.name}): {exc}; log: {self.log_path}\n" + tail(self.log_path)
            ) from None

    def port_stats(self, timeout: float = 5.0) -> dict[int, dict]:
        """The switch's ports' counters now (rx, tx, tx_errors, kernel_drops: frames the kernel dropped
        before the switch read them), asked of the process with SIGUSR1; {} for a target without them
        (BMv2) or a switch that did not answer within ``timeout``."""
        if self.target.name != "softswitch" or self.proc is None or self.proc.poll() is not None:
            return {}
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = json.loads(self.stats_path.read_text())
            except (OSError, ValueError):
                data = {}
            if data.get("seq", 0) > self._stats_seq:
                self._stats_seq = data["seq"]
                return {int(k): v for k, v in data["ports"].items()}
            time.sleep(0.01)
        return {}

    def stop_process(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_process()
        super().stop(deleteIntfs)

    def describe(self) -> str:
        return f"{self.name}: {self.target.name} device {self.device_id} grpc {self.grpc_addr} ports " + ", ".join(
            f"{p}@{i}" for p, i in sorted(self.ports_by_number().items())
        )


def prepare_interface(node, intf: str) -> None:
    """Turn off offloads (a software switch reads frames before checksums are filled in) and IPv6
    (router solicitations would be noise on an INA data plane)."""
    node.cmd(f"ethtool -K {intf} tx off rx off sg off tso off gso off gro off >/dev/null 2>&1")
    node.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=1 >/dev/null 2>&1")


def stop_process(proc: subprocess.Popen | None, grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after a grace period; the process is reaped either way."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(grace)


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
