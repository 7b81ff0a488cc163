"""The ``softswitch`` command: a v1model switch with simple_switch_grpc's flags, plus tools.

    softswitch [--device-id N] [-i PORT@IFACE ...] [--grpc-server-addr ADDR] [--cpu-port N]
               [--grpc-server-ssl --grpc-server-cert PEM --grpc-server-key PEM | --grpc-server-insecure]
               [--log-console] [--thrift-port N] [--backend native|python] [--stats-file PATH]
               (--no-p4 | PROGRAM)
    softswitch compile PROGRAM [--p4runtime-files OUT.p4info.txtpb] [--device-config OUT.p4] [--emit-c OUT.c]
    softswitch stf [--backend native|python] PROGRAM TEST.stf
    softswitch dump --grpc-addr ADDR [--device-id N] [tables|counters|registers|all]

Back ends: "native" (the default where a C compiler is present: the program compiled to C, port I/O
and the pipeline in native threads) or "python"; $SOFTSWITCH_BACKEND sets the default. A program the
native back end cannot run runs on Python, with one line on stderr saying why.

``--stats-file PATH``: on SIGUSR1 (and when it stops) the switch writes its ports' counters there as
JSON, ``{"seq": N, "ports": {"PORT": {"iface", "rx", "tx", "tx_errors", "kernel_drops", "rx_truncated",
"rx_outgoing"}}}`` (``rx_outgoing``: frames the host itself sent on the interface, seen and skipped)
(``seq`` counts the writes, so a reader that signalled knows when its answer is there): the frames the
kernel dropped at a port (full receive ring or socket buffer) are not visible from outside the process.

The P4Runtime server listens on loopback (127.0.0.1:9559) unless told otherwise; another address needs
TLS (``--grpc-server-ssl``) or ``--grpc-server-insecure``, which accepts that anyone who reaches it can
program the switch (docs/security.md).

Errors are one line on stderr (``softswitch: error: ...``) with exit status 1, or 2 for a malformed
argument (after argparse's usage line).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading

from softswitch.errors import SwitchError
from softswitch.p4runtime_server import DEFAULT_ADDRESS
from softswitch.ports import parse_port_spec
from softswitch.qdisc_depth import DEFAULT_INTERVAL_S as DEFAULT_QDEPTH_INTERVAL_S
from softswitch.qdisc_depth import QdiscDepthPoller

SUBCOMMANDS = ("compile", "stf", "dump")
PROG = "softswitch"
BACKEND_CHOICES = ("native", "python")
MAX_DEVICE_ID = 2**64 - 1  # P4Runtime's device_id is a uint64
MAX_PORT = 511  # v1model's and TNA's ports are 9 bits
TLS_FILE_FLAGS = ("--grpc-server-cert", "--grpc-server-key", "--grpc-server-cacert", "--grpc-server-with-client-auth")


class CliError(SwitchError):
    """A user-facing failure: printed as one line, exit status 1."""


# ---------------------------------------------------------------- argument parsing


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run a P4_16 v1model program as a software switch (a drop-in for simple_switch_grpc): "
        "ports on Linux interfaces, a P4Runtime gRPC server.",
        epilog="other commands: 'softswitch compile PROGRAM --p4runtime-files OUT' writes P4Info; "
        "'softswitch stf PROGRAM TEST.stf' runs an STF packet test; "
        "'softswitch dump --grpc-addr ADDR' prints a running switch's tables, counters and registers. "
        "Use 'softswitch COMMAND --help' for their options.",
    )
    p.add_argument(
        "program", nargs="?", metavar="PROGRAM", help="the P4_16 source file to run (v1model); omit it with --no-p4"
    )
    p.add_argument(
        "--no-p4",
        action="store_true",
        help="start without a program and wait for a P4Runtime SetForwardingPipelineConfig "
        "(its p4_device_config is the program's source text)",
    )
    p.add_argument(
        "-i",
        "--interface",
        action="append",
        default=[],
        metavar="PORT@IFACE",
        type=_port_spec,
        help="attach switch port PORT to Linux interface IFACE (repeatable)",
    )
    p.add_argument("--device-id", type=_device_id, default=0, metavar="N", help="the P4Runtime device id (default 0)")
    p.add_argument(
        "--grpc-server-addr",
        default=DEFAULT_ADDRESS,
        type=_endpoint,
        metavar="HOST:PORT",
        help=f"address the P4Runtime server listens on (default {DEFAULT_ADDRESS}, loopback only; port 0 picks "
        "one); another address needs --grpc-server-ssl or --grpc-server-insecure",
    )
    p.add_argument(
        "--grpc-server-ssl", action="store_true", help="serve P4Runtime over TLS (needs --grpc-server-cert/-key)"
    )
    p.add_argument(
        "--grpc-server-insecure",
        action="store_true",
        help="allow plaintext P4Runtime on an address other than loopback: anyone who reaches it can become "
        "primary (the highest election id wins) and program the switch; for isolated test networks only",
    )
    p.add_argument("--grpc-server-cert", metavar="PEM", help="the P4Runtime server's TLS certificate")
    p.add_argument("--grpc-server-key", metavar="PEM", help="the P4Runtime server's TLS private key")
    p.add_argument(
        "--grpc-server-cacert", metavar="PEM", help="CA of the clients' certificates (client authentication)"
    )
    p.add_argument(
        "--grpc-server-with-client-auth",
        action="store_true",
        help="require and check the clients' TLS certificates (needs --grpc-server-cacert)",
    )
    p.add_argument(
        "--cpu-port",
        type=_port_number,
        default=None,
        metavar="N",
        help="the port connected to the controller: packets the program sends there become "
        "P4Runtime packet-ins, packet-outs are injected there (default: none)",
    )
    p.add_argument("--log-console", action="store_true", help="log switch events to stderr")
    p.add_argument(
        "-L",
        "--log-level",
        default="info",
        choices=["debug", "info", "warn", "error", "off"],
        help="log level with --log-console (default info)",
    )
    p.add_argument(
        "--thrift-port",
        type=int,
        default=None,
        metavar="N",
        help="accepted for compatibility with simple_switch_grpc and ignored: softswitch has no "
        "Thrift server (use P4Runtime)",
    )
    p.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="extra #include search directory for programs (also used for pipelines set over P4Runtime)",
    )
    p.add_argument(
        "--stats-file",
        metavar="PATH",
        help="on SIGUSR1 and at exit, write the ports' counters (kernel drops included) to PATH as JSON",
    )
    p.add_argument(
        "--queue-depth-ms",
        type=float,
        default=DEFAULT_QDEPTH_INTERVAL_S * 1e3,
        metavar="MS",
        help="read the ports' qdisc lengths at most this often (native: before a batch of frames, none while "
        "idle; Python: a polling thread): egress sees them as standard_metadata.enq_qdepth/"
        f"deq_qdepth (0: never, depths stay 0; default {DEFAULT_QDEPTH_INTERVAL_S * 1e3:g})",
    )
    _backend_option(p)
    return p


def _backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default=None,
        help="run the program compiled to C (native: the default where a C compiler is present; port I/O and "
        "the pipeline in native threads) or on the Python runtime; default: $SOFTSWITCH_BACKEND, else native",
    )


def compile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} compile", description="Compile a P4_16 v1model program and write its P4Info."
    )
    p.add_argument("program", metavar="PROGRAM", nargs="?", help="the P4_16 source file")
    p.add_argument(
        "--dump-ir",
        metavar="PASS",
        nargs="?",
        const="",
        help="print the program's IR after the front end pass PASS and stop; without PASS, list the passes",
    )
    p.add_argument("--list-passes", action="store_true", help="list the front end's passes, in order, and stop")
    p.add_argument(
        "--p4runtime-files",
        metavar="OUT",
        help="where to write the P4Info as text protobuf (like p4c's --p4runtime-files x.p4info.txtpb)",
    )
    p.add_argument(
        "--device-config",
        metavar="OUT",
        help="also write the P4Runtime device config for softswitch (the program source with "
        'its #include "..." files inlined), to pass as p4_device_config / '
        "p4runtime-shell's bin file",
    )
    p.add_argument(
        "--emit-c",
        metavar="OUT",
        help="also write the C the native back end generates for the program (to read it; the switch builds "
        "its own copy)",
    )
    p.add_argument(
        "-I", "--include-dir", action="append", default=[], metavar="DIR", help="extra #include search directory"
    )
    return p


def stf_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{PROG} stf", description="Run an STF packet test on a P4 program.")
    p.add_argument("program", metavar="PROGRAM", help="the P4_16 source file")
    p.add_argument("stf", metavar="TEST.stf", help="the STF file")
    p.add_argument(
        "-I", "--include-dir", action="append", default=[], metavar="DIR", help="extra #include search directory"
    )
    _backend_option(p)
    return p


def dump_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} dump",
        description="Print a running switch's tables, counters and registers by name "
        "(a read-only P4Runtime client: it needs no primary role).",
    )
    p.add_argument(
        "--grpc-addr", required=True, type=_endpoint, metavar="HOST:PORT", help="the switch's P4Runtime address"
    )
    p.add_argument("--device-id", type=_device_id, default=0, metavar="N", help="the P4Runtime device id (default 0)")
    p.add_argument(
        "what",
        nargs="?",
        default="all",
        choices=["tables", "counters", "registers", "all"],
        help="what to print (default all)",
    )
    return p


def _bounded_int(text: str, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= high:
        raise argparse.ArgumentTypeError(f"{text} is not a number from 0 to {high}")
    return value


def _device_id(text: str) -> int:
    return _bounded_int(text, MAX_DEVICE_ID)


def _port_number(text: str) -> int:
    return _bounded_int(text, MAX_PORT)


def _endpoint(text: str) -> str:
    """A HOST:PORT (IPv6 in brackets): without a port, gRPC would pick one or dial its default."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535 or (":" in host and not host.startswith("[")):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return text


def _port_spec(text):
    try:
        return parse_port_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


# ---------------------------------------------------------------- commands


def _compile(path, include_dirs=(), backend=None):
    if not os.path.isfile(path):
        raise CliError(f"no such program file: {path}")
    from softswitch.compiler import compile_program

    try:
        return compile_program(path, include_dirs=tuple(include_dirs), backend=backend)
    except SwitchError as e:  # P4Error carries "file:line:col: error: ..."; anything else is a bug
        raise CliError(str(e)) from None


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*$')


def inline_includes(path, include_dirs=(), seen=None) -> str:
    """The program text with its ``#include "file"`` lines replaced by the files' text (recursively,
    each file once), so the P4Runtime device config is self-contained. ``<...>`` includes (core.p4,
    v1model.p4) stay: every softswitch has them."""
    seen = set() if seen is None else seen
    out = []
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        for lineno, line in enumerate(f, start=1):
            match = _QUOTED_INCLUDE.match(line)
            if not match:
                out.append(line)
                continue
            name = match.group(1)
            found = next(
                (os.path.join(d, name) for d in (base, *include_dirs) if os.path.isfile(os.path.join(d, name))), None
            )
            if found is None:
                raise CliError(f"{path}:{lineno}: cannot find include file {name!r}")
            found = os.path.realpath(found)
            if found not in seen:
                seen.add(found)
                out.append(f"// begin {name}\n{inline_includes(found, include_dirs, seen)}// end {name}\n")
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def device_config_of(program, path, include_dirs=()) -> bytes:
    """The P4Runtime device config for a program: its source with quoted includes inlined."""
    return inline_includes(path, include_dirs).encode()


def cmd_compile(args) -> int:
    from softswitch.p4info import build_p4info, write_text

    if args.list_passes or args.dump_ir == "":
        from softswitch.frontend.pass_manager import front_end

        for p in front_end().passes:
            print(f"{p.name:24} {p.summary}")
        return 0
    if args.program is None:
        raise CliError("no program given")
    if args.dump_ir:
        from softswitch.compiler import dump_ir

        sys.stdout.write(dump_ir(args.program, args.dump_ir, include_dirs=args.include_dir))
        return 0
    if not (args.p4runtime_files or args.device_config or args.emit_c):
        raise CliError("nothing to write: give --p4runtime-files, --device-config, --emit-c or --dump-ir")
    program = _compile(args.program, args.include_dir, backend="python")
    c_source = None
    if args.emit_c:
        from softswitch.backend_c import Unsupported, generate_c

        try:
            c_source = generate_c(program.ir)
        except Unsupported as e:
            raise CliError(f"the C back end does not support {e.what} at {e.position}") from None
    try:
        if args.p4runtime_files:
            write_text(build_p4info(program.info), args.p4runtime_files)
        if args.device_config:
            with open(args.device_config, "wb") as f:
                f.write(device_config_of(program, args.program, args.include_dir))
        if c_source is not None:
            with open(args.emit_c, "w") as f:
                f.write(c_source)
    except OSError as e:
        raise CliError(f"cannot write output: {e}") from None
    return 0


def cmd_stf(args) -> int:
    from softswitch.stf import StfError, StfRunner, parse_stf
    from softswitch.switch import Switch

    try:
        with open(args.stf) as f:
            commands = parse_stf(f.read(), args.stf)
    except OSError as e:
        raise CliError(f"cannot read {args.stf}: {e.strerror}") from None
    except StfError as e:
        raise CliError(str(e)) from None
    program = _compile(args.program, args.include_dir, args.backend)
    try:
        result = StfRunner(Switch(program, name="stf"), args.stf).run(commands)
    except StfError as e:
        raise CliError(str(e)) from None
    print(result)
    return 0 if result.ok else 1


def cmd_dump(args) -> int:
    from softswitch.dump import dump

    return dump(args.grpc_addr, args.device_id, args.what, sys.stdout)


def check_tls_flags(args) -> None:
    """An incomplete or contradictory set of TLS flags is an error naming what is missing: a certificate
    given without --grpc-server-ssl would otherwise be ignored, and the switch served in plaintext."""
    given = [
        flag
        for flag, value in zip(
            TLS_FILE_FLAGS,
            (args.grpc_server_cert, args.grpc_server_key, args.grpc_server_cacert, args.grpc_server_with_client_auth),
            strict=True,
        )
        if value
    ]
    if args.grpc_server_ssl and args.grpc_server_insecure:
        raise CliError("give --grpc-server-ssl or --grpc-server-insecure, not both")
    if given and not args.grpc_server_ssl:
        raise CliError(
            f"TLS flags without --grpc-server-ssl: {', '.join(given)} (give --grpc-server-ssl, or drop them)"
        )
    if args.grpc_server_ssl:
        missing = [
            f
            for f, v in (("--grpc-server-cert", args.grpc_server_cert), ("--grpc-server-key", args.grpc_server_key))
            if not v
        ]
        if missing:
            raise CliError(f"--grpc-server-ssl needs {' and '.join(missing)}")
        if args.grpc_server_with_client_auth and not args.grpc_server_cacert:
            raise CliError(
                "--grpc-server-with-client-auth needs --grpc-server-cacert (the CA of the clients' certificates)"
            )


def check_stats_file(path: str) -> None:
    """The --stats-file's directory must exist and be writable now, not when the switch stops."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CliError(f"--stats-file {path}: no such directory {directory}")
    if not os.access(directory, os.W_OK):
        raise CliError(f"--stats-file {path}: cannot write in {directory}")


def cmd_run(args) -> int:
    if args.no_p4 and args.program:
        raise CliError("give either PROGRAM or --no-p4, not both")
    if not args.no_p4 and not args.program:
        raise CliError("no program given (give PROGRAM, or --no-p4 to wait for one over P4Runtime)")
    check_tls_flags(args)
    if args.stats_file:
        check_stats_file(args.stats_file)
    from softswitch.p4runtime_server import port_in_use

    in_use = port_in_use(args.grpc_server_addr)  # now, not after the program's compile
    if in_use is not None:
        raise CliError(str(in_use))
    from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService, server_credentials
    from softswitch.switch import Switch

    log = logging.getLogger("softswitch")
    if args.log_console and args.log_level != "off":
        logging.basicConfig(
            stream=sys.stderr,
            format="%(asctime)s %(name)s %(levelname)s: %(message)s",
            level={"warn": "WARNING"}.get(args.log_level, args.log_level.upper()),
        )
    else:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="softswitch: %(message)s")
    if args.thrift_port is not None:
        print(
            f"softswitch: --thrift-port {args.thrift_port} ignored: softswitch has no Thrift server (use P4Runtime)",
            file=sys.stderr,
        )

    include_dirs = list(args.include_dir)
    name = f"device{args.device_id}"
    ports = DevicePorts(args.interface, args.queue_depth_ms / 1e3 if args.interface else 0.0)

    def make_switch(program):
        switch = Switch(
            program, device_id=args.device_id, cpu_port=args.cpu_port, name=name, log=log if args.log_console else None
        )
        ports.attach(switch)
        return switch

    switch, device_config = None, b""
    try:
        if args.program:
            include_dirs.append(os.path.dirname(os.path.abspath(args.program)))
            program = _compile(args.program, args.include_dir, args.backend)
            switch = make_switch(program)
            device_config = device_config_of(program, args.program, args.include_dir)
        service = P4RuntimeService(
            switch,
            device_id=args.device_id,
            cpu_port=args.cpu_port,
            include_dirs=include_dirs,
            device_config=device_config,
            make_switch=make_switch,
            transmit=ports.send,
            backend=args.backend,
        )
        ports.service = service
        credentials = None
        if args.grpc_server_ssl:
            credentials = server_credentials(
                args.grpc_server_cert, args.grpc_server_key, args.grpc_server_cacert, args.grpc_server_with_client_auth
            )
        server = P4RuntimeServer(
            service, args.grpc_server_addr, credentials=credentials, allow_plaintext=args.grpc_server_insecure
        )
    except (OSError, ValueError, RuntimeError) as e:
        ports.stop()
        raise CliError(str(e)) from None

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.stats_file:
        stats_writes = [0]

        def write_stats(*_):
            stats_writes[0] += 1
            write_port_stats(args.stats_file, stats_writes[0], ports.stats())

        signal.signal(signal.SIGUSR1, write_stats)
    server.start()
    ports.start()
    if args.program:
        state = f"running {args.program} on the {switch.backend} back end"
    else:
        state = "waiting for a pipeline (--no-p4)"
    print(
        f"softswitch: device {args.device_id}, P4Runtime on {server.address}, {len(args.interface)} port(s), {state}",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.5):
        pass
    if args.stats_file:
        write_stats()
    for line in ports.summary():
        print(f"softswitch: {line}", file=sys.stderr, flush=True)
    ports.stop()
    server.stop()
    print("softswitch: stopped", file=sys.stderr, flush=True)
    return 0


class DevicePorts:
    """The device's ports on Linux interfaces, for whichever switch runs now: a NativeSwitch's native
    I/O thread (frames never reach Python), or a Python PortSet handing frames to the P4Runtime
    service, which runs the Switch and transmits its outputs. A new pipeline on another back end moves
    the interfaces over (frames arriving meanwhile are lost, as on a switch being reprogrammed).

    Egress sees each port's real queue (its root qdisc's length) every ``queue_depth_s`` (0: never): a
    native switch's I/O thread reads the lengths itself before it runs a batch, so an idle switch reads
    nothing; a Python switch has a poller thread (softswitch/qdisc_depth.py)."""

    def __init__(self, interfaces, queue_depth_s: float = 0.0):
        self.interfaces = list(interfaces)
        self.queue_depth_s = queue_depth_s
        self.service = None
        self.current = None  # NativePortSet or PortSet
        self.switch = None
        self.started = False
        self.depth_poller: QdiscDepthPoller | None = None  # a Python switch's

    def attach(self, switch) -> None:
        if self.switch is switch:
            return
        if self.current is not None:
            self.current.stop()
            self.current = None
        self._stop_poller()
        self.switch = switch
        if getattr(switch, "backend", "python") == "native":
            ports = switch.ports()
            ports.read_queue_depths(self.queue_depth_s)  # by its I/O thread, from start() on
        else:
            from softswitch.ports import PortSet

            ports = PortSet(handler=lambda port, frame: self.service.process(port, frame))
        for number, iface in self.interfaces:
            ports.add(number, iface)
        self.current = ports
        if self.started:
            self._start_current()

    def start(self) -> None:
        self.started = True
        if self.current is not None:
            self._start_current()

    def _start_current(self) -> None:
        self.current.start()
        error = getattr(self.current, "queue_depth_error", None)  # a native switch's I/O thread reads them
        if error:
            print(f"softswitch: queue depths not read ({error}): enq_qdepth stays 0", file=sys.stderr, flush=True)
        if self.queue_depth_s > 0 and getattr(self.switch, "backend", "python") != "native":
            try:
                self.depth_poller = QdiscDepthPoller(self.interfaces, lambda: self.switch, self.queue_depth_s)
                self.depth_poller.start()
            except OSError as e:
                print(f"softswitch: queue depths not read ({e}): enq_qdepth stays 0", file=sys.stderr, flush=True)

    def _stop_poller(self) -> None:
        if self.depth_poller is not None:
            self.depth_poller.stop()
            self.depth_poller = None

    def send(self, port: int, frame: bytes):
        if self.current is not None:
            return self.current.send(port, frame)
        return False

    def summary(self) -> list[str]:
        """Per port of a native switch, its receive path and counters (for the log at exit: which path
        ran, and how often a hybrid port moved); nothing for Python ports."""
        if self.switch is None or getattr(self.switch, "backend", "python") != "native" or self.current is None:
            return []
        return [f"port {n} ({iface}): {self.current.port_stats(n).summary()}" for n, iface in self.interfaces]

    def stats(self) -> dict[int, dict]:
        """Every port's counters now (none before a pipeline is loaded)."""
        out: dict[int, dict] = {}
        if self.current is None:
            return out
        for number, iface in self.interfaces:
            try:
                st = self.current.port_stats(number)
            except KeyError:
                continue
            out[number] = {
                "iface": iface,
                "rx": st.rx,
                "tx": st.tx,
                "tx_errors": st.tx_errors,
                "kernel_drops": st.kernel_drops,
                "rx_truncated": st.rx_truncated,
                "rx_outgoing": st.rx_outgoing,
            }
        return out

    def stop(self) -> None:
        self._stop_poller()
        if self.current is not None:
            self.current.stop()
            self.current = None


def write_port_stats(path: str, seq: int, ports: dict[int, dict]) -> None:
    """The --stats-file: written whole to a temporary file, then renamed, so a reader never sees half."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"seq": seq, "ports": {str(k): v for k, v in ports.items()}}, f)
    os.replace(tmp, path)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        parser = {"compile": compile_parser, "stf": stf_parser, "dump": dump_parser}[argv[0]]()
        command = {"compile": cmd_compile, "stf": cmd_stf, "dump": cmd_dump}[argv[0]]
        args = parser.parse_args(argv[1:])
    else:
        parser = run_parser()
        command = cmd_run
        args = parser.parse_args(argv)
    try:
        return command(args)
    except SwitchError as e:  # one line; anything else is a bug and shows its traceback
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
