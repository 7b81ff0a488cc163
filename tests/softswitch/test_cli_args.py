"""Command-line parsing and one-line errors of the softswitch command (no program needed)."""

import subprocess
import sys

import pytest

from softswitch import cli


def run(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "softswitch", *args], capture_output=True, text=True, timeout=timeout)


def test_help_documents_every_flag_and_the_subcommands():
    result = run("--help")
    assert result.returncode == 0
    for flag in (
        "--device-id",
        "-i PORT@IFACE",
        "--interface",
        "--grpc-server-addr",
        "--cpu-port",
        "--log-console",
        "--thrift-port",
        "--no-p4",
        "PROGRAM",
        "127.0.0.1:9559",
        "ignored",
    ):
        assert flag in result.stdout, flag
    for sub in ("softswitch compile", "softswitch stf", "softswitch dump"):
        assert sub in result.stdout.replace("\n", " "), sub
    dump_help = run("dump", "--help").stdout
    assert "--grpc-addr" in dump_help and "{tables,counters,registers,all}" in dump_help


def test_run_arguments_have_simple_switch_grpc_meanings():
    args = cli.run_parser().parse_args(
        [
            "-i",
            "1@veth0",
            "--interface",
            "2@veth2",
            "--device-id",
            "4",
            "--cpu-port",
            "64",
            "--thrift-port",
            "9090",
            "prog.p4",
        ]
    )
    assert args.interface == [(1, "veth0"), (2, "veth2")]
    assert (args.device_id, args.cpu_port, args.thrift_port, args.program) == (4, 64, 9090, "prog.p4")
    assert args.grpc_server_addr == "127.0.0.1:9559" and not args.no_p4 and not args.log_console


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "softswitch: error: no program given (give PROGRAM, or --no-p4 to wait for one over P4Runtime)\n"),
        (["--no-p4", "x.p4"], "softswitch: error: give either PROGRAM or --no-p4, not both\n"),
        (
            ["compile", "/nonexistent.p4", "--p4runtime-files", "/tmp/x"],
            "softswitch: error: no such program file: /nonexistent.p4\n",
        ),
        (["dump", "--grpc-addr", "127.0.0.1:1"], "softswitch: error: cannot reach a P4Runtime server at 127.0.0.1:1\n"),
    ],
)
def test_errors_are_one_line(argv, message):
    result = run(*argv)
    assert (result.returncode, result.stderr, result.stdout) == (1, message, "")


def test_bad_interface_spec_is_a_usage_error():
    result = run("-i", "veth0", "--no-p4")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "softswitch: error: argument -i/--interface: bad interface spec 'veth0': expected PORT@IFACE, e.g. 1@veth0"
    )


def test_device_config_inlines_quoted_includes_once(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "a.p4").write_text('#include "b.p4"\nconst bit<8> A = 1;\n')
    (tmp_path / "inc" / "b.p4").write_text("const bit<8> B = 2;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <core.p4>\n#include "inc/a.p4"\n#include "inc/b.p4"\n')
    assert cli.inline_includes(main) == (
        "#include <core.p4>\n// begin inc/a.p4\n// begin b.p4\n"
        "const bit<8> B = 2;\n// end b.p4\nconst bit<8> A = 1;\n"
        "// end inc/a.p4\n"
    )
    main.write_text('#include "missing.p4"\n')
    with pytest.raises(cli.CliError, match=r"main.p4:1: cannot find include file 'missing.p4'"):
        cli.inline_includes(main)
