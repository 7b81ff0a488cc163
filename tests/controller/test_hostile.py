"""The job service and inactl under hostile and careless use: idle WatchPlans cannot starve other calls,
a port in use and half-given TLS flags are refused, generated certificates carry their key usage, and
each careless command line is one line with exit 1 or 2 (docs/security.md)."""

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from controller import jobservice
from controller import jobservice_pb2 as pb
from controller import jobservice_pb2_grpc as pb_grpc
from controller.cli import main
from controller.errors import JobServiceError, TopologyError
from controller.generators import star
from controller.jobservice import JobClient, JobManager, JobServer
from controller.tls import TlsFiles, make_certificates
from controller.topology_yaml import load_topology

ROOT = Path(__file__).resolve().parents[2]
STAR = ROOT / "topologies" / "star.yaml"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def usage_error(capsys, *argv) -> str:
    """The last stderr line of an argparse usage error (exit 2)."""
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


# ---------------------------------------------------------------- the job service


def test_idle_watchers_do_not_starve_other_calls():
    manager = JobManager(star(2))
    server = JobServer(manager).start()
    try:
        job = JobClient(server.address).register(["h1", "h2"], ["h3"]).job_id
        stub = pb_grpc.JobServiceStub(grpc.insecure_channel(server.address))
        calls = [stub.WatchPlan(pb.WatchPlanRequest(job_id=job)) for _ in range(70)]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # every watch accepted or refused by the service
            if len(manager.watchers.get(job, [])) + sum(c.done() for c in calls) >= 70:
                break
            time.sleep(0.05)
        reply = stub.ListJobs(pb.ListJobsRequest(), timeout=1.0)
        assert [j.job_id for j in reply.jobs] == [job]
        refused = [c for c in calls if c.done()]
        assert len(refused) == 70 - jobservice.MAX_WATCHERS
        assert {c.code() for c in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert refused[0].details() == f"too many WatchPlan streams: this service takes {jobservice.MAX_WATCHERS}"
        for c in calls:
            c.cancel()
    finally:
        server.stop(0)


def test_a_job_service_port_in_use_is_refused():
    server = JobServer(JobManager(star(2))).start()
    try:
        with pytest.raises(JobServiceError, match=f"^address {server.address} is in use$"):
            JobServer(JobManager(star(2)), server.address)
    finally:
        server.stop(0)


# ---------------------------------------------------------------- certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (scripts/setup.sh installs it)")
    return make_certificates(tmp_path_factory.mktemp("pki"))


def _extensions(pem: str) -> str:
    return subprocess.run(["openssl", "x509", "-in", pem, "-noout", "-text"], capture_output=True, text=True).stdout


def test_generated_certificates_carry_key_usage(certs):
    server, client, ca = _extensions(certs.server_cert), _extensions(certs.client_cert), _extensions(certs.ca)
    assert "Digital Signature, Key Encipherment" in server and "TLS Web Server Authentication" in server
    assert "TLS Web Client Authentication" not in server
    assert "Digital Signature" in client and "TLS Web Client Authentication" in client
    assert "TLS Web Server Authentication" not in client
    assert "CA:TRUE" in ca and "Certificate Sign" in ca


def test_the_server_certificate_is_not_accepted_as_a_client_certificate(certs):
    server = JobServer(
        JobManager(star(2)), tls=TlsFiles(certs.server_cert, certs.server_key, certs.ca, client_auth=True)
    ).start()
    try:
        assert JobClient(server.address, timeout=5, tls=certs.client()).list() == []
        impostor = TlsFiles(cert=certs.server_cert, key=certs.server_key, ca=certs.ca)
        with pytest.raises(JobServiceError):
            JobClient(server.address, timeout=2, tls=impostor).list()
    finally:
        server.stop(0)


# ---------------------------------------------------------------- inactl


def test_a_topology_that_is_not_utf8_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: \xff\xfe\n")
    expected = f"inactl: error: topology {bad} is not UTF-8 text (byte 6 is 0xff)\n"
    assert run(capsys, "topo", "validate", bad) == (1, "", expected)
    # every loader says so, not inactl alone: the lab, the demo and the benches load topologies the same way
    with pytest.raises(TopologyError, match=r"is not UTF-8 text \(byte 6 is 0xff\)"):
        load_topology(bad)


def test_draw_to_an_unknown_picture_format_is_one_line(capsys, tmp_path):
    out = tmp_path / "x.txt"
    assert run(capsys, "topo", "draw", STAR, "-o", out) == (
        1,
        "",
        f"inactl: error: cannot draw {out}: unknown picture format '.txt' (use .png, .svg or .pdf)\n",
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", STAR, "--serve-tls-ca", "ca.pem"], "--serve-tls-ca needs --serve-tls-cert and --serve-tls-key"),
        (["serve", STAR, "--serve-tls-cert", "c.pem"], "--serve-tls-cert needs --serve-tls-key"),
        (["jobs", "--tls-ca", "ca.pem"], "TLS flags without --tls: --tls-ca (give --tls, or drop them)"),
        (
            ["install", STAR, "--tls-cert", "c.pem", "--tls-key", "k.pem"],
            "TLS flags without --tls: --tls-cert, --tls-key (give --tls, or drop them)",
        ),
        (["install", STAR, "--tls", "--tls-cert", "c.pem"], "--tls-cert needs --tls-key"),
    ],
)
def test_half_given_tls_flags_are_one_line(capsys, argv, message):
    assert run(capsys, *argv) == (1, "", f"inactl: error: {message}\n")


def test_switch_endpoints_need_a_port(capsys, tmp_path):
    assert run(capsys, "install", STAR, "--address", "s1=127.0.0.1") == (
        1,
        "",
        "inactl: error: --address 's1=127.0.0.1': expected SWITCH=HOST:PORT\n",
    )
    topo = tmp_path / "t.yaml"
    topo.write_text(STAR.read_text().replace("127.0.0.1:50001", "127.0.0.1"))
    assert "127.0.0.1:50001" in STAR.read_text()
    assert run(capsys, "install", topo) == (
        1,
        "",
        "inactl: error: switch s1's P4Runtime address '127.0.0.1' has no port (expected HOST:PORT)\n",
    )


def test_bad_listen_and_controller_addresses_are_usage_errors(capsys):
    assert usage_error(capsys, "serve", STAR, "--listen", "notanaddr") == (
        "inactl serve: error: argument --listen: expected HOST:PORT, got 'notanaddr'"
    )
    assert usage_error(capsys, "jobs", "--controller", "127.0.0.1") == (
        "inactl jobs: error: argument --controller: expected HOST:PORT, got '127.0.0.1'"
    )


def test_serve_on_a_port_in_use_is_one_line():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        address = f"127.0.0.1:{held.getsockname()[1]}"
        done = subprocess.run(
            [sys.executable, "-m", "controller.cli", "serve", str(STAR), "--listen", address],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert (done.returncode, done.stderr, done.stdout) == (1, f"inactl: error: address {address} is in use\n", "")
