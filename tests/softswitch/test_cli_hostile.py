"""The softswitch command under careless use: secure defaults, TLS flags that cannot be half given, a port
in use, bad numbers and addresses, an unwritable stats file: each one line on stderr and exit 1 or 2,
before anything is served (docs/security.md)."""

import socket
import subprocess
import sys

import pytest

from softswitch import cli
from softswitch.p4runtime_server import DEFAULT_ADDRESS


def run(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "softswitch", *args], capture_output=True, text=True, timeout=timeout)


def test_the_default_address_is_loopback():
    assert DEFAULT_ADDRESS == "127.0.0.1:9559"
    assert cli.run_parser().parse_args(["--no-p4"]).grpc_server_addr == DEFAULT_ADDRESS
    assert "--grpc-server-insecure" in run("--help").stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--grpc-server-addr", "0.0.0.0:0"],
            "refusing to serve P4Runtime on 0.0.0.0:0 without TLS: anyone who reaches it could program the switch "
            "(give --grpc-server-ssl with a certificate and key, or --grpc-server-insecure to accept that)",
        ),
        (
            ["--grpc-server-cert", "c.pem", "--grpc-server-key", "k.pem"],
            "TLS flags without --grpc-server-ssl: "
            "--grpc-server-cert, --grpc-server-key (give --grpc-server-ssl, or drop them)",
        ),
        (
            ["--grpc-server-cacert", "ca.pem"],
            "TLS flags without --grpc-server-ssl: --grpc-server-cacert (give --grpc-server-ssl, or drop them)",
        ),
        (["--grpc-server-ssl", "--grpc-server-cert", "c.pem"], "--grpc-server-ssl needs --grpc-server-key"),
        (
            ["--grpc-server-ssl", "--grpc-server-insecure", "--grpc-server-cert", "c", "--grpc-server-key", "k"],
            "give --grpc-server-ssl or --grpc-server-insecure, not both",
        ),
        (["--stats-file", "/no/such/dir/s.json"], "--stats-file /no/such/dir/s.json: no such directory /no/such/dir"),
    ],
)
def test_refusals_are_one_line_with_exit_1(argv, message):
    result = run("--no-p4", "--grpc-server-addr", "127.0.0.1:0", *argv)
    assert (result.returncode, result.stderr, result.stdout) == (1, f"softswitch: error: {message}\n", "")


def test_a_port_in_use_is_one_line():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        address = f"127.0.0.1:{held.getsockname()[1]}"
        result = run("--no-p4", "--grpc-server-addr", address)
    assert (result.returncode, result.stderr) == (1, f"softswitch: error: address {address} is in use\n")


@pytest.mark.parametrize(
    "argv, last_line",
    [
        (["--device-id", "-3"], "argument --device-id: -3 is not a number from 0 to 18446744073709551615"),
        (["--cpu-port", "-1"], "argument --cpu-port: -1 is not a number from 0 to 511"),
        (["--grpc-server-addr", "notanaddr"], "argument --grpc-server-addr: expected HOST:PORT, got 'notanaddr'"),
        (["--grpc-server-addr", "127.0.0.1"], "argument --grpc-server-addr: expected HOST:PORT, got '127.0.0.1'"),
    ],
)
def test_bad_numbers_and_addresses_are_usage_errors(argv, last_line):
    result = run("--no-p4", *argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"softswitch: error: {last_line}"


def test_dump_needs_a_port():
    result = run("dump", "--grpc-addr", "127.0.0.1")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "softswitch dump: error: argument --grpc-addr: expected HOST:PORT, got '127.0.0.1'"
    )
