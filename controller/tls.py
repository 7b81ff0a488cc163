"""TLS and a shared token for the control plane's gRPC servers and clients (P4Runtime, job service).

Servers: ``listen(server, address, tls, what)`` adds a TLS port when given ``TlsFiles`` (certificate,
key, and a CA when clients must show certificates too), else a plaintext one, with a warning on stderr
when a plaintext server listens on an address other than loopback. Clients: ``channel(address, tls)``.
The files are PEM, as simple_switch_grpc's ``--grpc-server-ssl`` flags take them. A token (the job
service's) travels as ``authorization: Bearer <token>`` call metadata (``token_metadata``,
``presented_token``).
"""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import grpc

from controller.errors import ControllerError
from protocol.addresses import is_loopback

TOKEN_HEADER = "authorization"


class TlsError(ControllerError, ValueError):
    """A TLS file that cannot be read, or a TLS option without the files it needs."""


def _read(path: str | None, what: str) -> bytes | None:
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsError(f"cannot read the {what} {path}: {exc.strerror}") from None


@dataclass
class TlsFiles:
    """PEM files of one side of a TLS connection.

    Server: ``cert`` and ``key`` (its own), ``ca`` with ``client_auth`` to require and check client
    certificates. Client: ``ca`` (to check the server; default: the system's roots), ``cert`` and
    ``key`` when the server checks clients. ``server_name`` overrides the name checked in the server's
    certificate (a certificate for a name, reached by address)."""

    cert: str | None = None
    key: str | None = None
    ca: str | None = None
    client_auth: bool = False
    server_name: str | None = None

    def server_credentials(self) -> grpc.ServerCredentials:
        """Credentials for ``add_secure_port``.

        Raises
        ------
        TlsError
            No certificate or key, client authentication without a CA, or an unreadable file.
        """
        if not self.cert or not self.key:
            raise TlsError("a TLS server needs its certificate and its key")
        if self.client_auth and not self.ca:
            raise TlsError("client authentication needs the CA that signs the clients' certificates")
        pair = (_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))
        return grpc.ssl_server_credentials(
            [pair], root_certificates=_read(self.ca, "TLS CA"), require_client_auth=self.client_auth
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Credentials for ``secure_channel``.

        Raises
        ------
        TlsError
            A certificate without its key (or the reverse), or an unreadable file.
        """
        if bool(self.cert) != bool(self.key):
            raise TlsError("a TLS client certificate needs its key (and the key its certificate)")
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "TLS CA"),
            private_key=_read(self.key, "TLS key"),
            certificate_chain=_read(self.cert, "TLS certificate"),
        )


def address_in_use(address: str) -> bool:
    """Whether another socket listens on ``address`` (a ``host:port``; port 0 is never in use). Checked
    before gRPC binds: with SO_REUSEPORT off (``SERVER_OPTIONS``) gRPC would fail with no reason given.

    Examples
    --------
    >>> address_in_use("127.0.0.1:0")
    False
    """
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or int(port) == 0:
        return False
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of a closed one is no user
            probe.bind((host, int(port)))
    except OSError as exc:
        return exc.errno == errno.EADDRINUSE
    return False


# gRPC sets SO_REUSEPORT by default: a second server on a port in use started, and clients reached either.
SERVER_OPTIONS = [("grpc.so_reuseport", 0)]


def listen(server: grpc.Server, address: str, tls: TlsFiles | None, what: str) -> int:
    """Add ``address`` to ``server`` (made with ``SERVER_OPTIONS``), with TLS when ``tls`` is given; return
    the port (0: failed; ``address_in_use`` tells whether that was the reason).

    A plaintext server on an address other than loopback prints one warning line on stderr."""
    if address_in_use(address):
        return 0
    try:
        if tls is not None:
            return int(server.add_secure_port(address, tls.server_credentials()))
        if not is_loopback(address):
            print(
                f"warning: {what} listens on {address} without TLS: anyone who reaches it can use it "
                f"(give it a certificate and key)",
                file=sys.stderr,
            )
        return int(server.add_insecure_port(address))
    except RuntimeError:  # grpc's "failed to bind"
        return 0


# Each channel gets its own connections. gRPC otherwise shares them between channels to the same address
# in a process, with their reconnect backoff: a channel to a restarted switch (or to the next lab's switch
# on the same port) then waited out the backoff that probes of the dead one had built up, and failed.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


def channel(address: str, tls: TlsFiles | None) -> grpc.Channel:
    """A gRPC channel to ``address``: TLS when ``tls`` is given, else plaintext."""
    if tls is None:
        return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    options = [("grpc.ssl_target_name_override", tls.server_name)] if tls.server_name else []
    return grpc.secure_channel(address, tls.channel_credentials(), options=CHANNEL_OPTIONS + options)


def token_metadata(token: str | None) -> list[tuple[str, str]]:
    """The call metadata carrying ``token`` (none without one)."""
    return [(TOKEN_HEADER, f"Bearer {token}")] if token else []


def presented_token(context: grpc.ServicerContext) -> str:
    """The token a call presented (empty if none)."""
    for key, value in context.invocation_metadata() or ():
        if key == TOKEN_HEADER and value.startswith("Bearer "):
            return str(value[len("Bearer ") :])
    return ""


@dataclass
class Certificates:
    """PEM files of a small private CA: the CA, a server certificate for 127.0.0.1 and localhost, and a
    client certificate (``make_certificates``)."""

    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str

    def client(self) -> TlsFiles:
        """What a client with the client certificate uses."""
        return TlsFiles(cert=self.client_cert, key=self.client_key, ca=self.ca)


# Key usage and extended key usage of each certificate: a server certificate is no client certificate (a
# server that checks clients must not take it), nor the reverse.
CERTIFICATE_EXTENSIONS = {
    "server": "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
    "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth",
    "client": "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    "extendedKeyUsage=clientAuth",
}


def make_certificates(directory: str | Path, days: int = 2) -> Certificates:
    """A CA and a server and a client certificate signed by it, made by openssl in ``directory`` (for the
    lab and tests: loopback servers, short-lived), with key usage and extended key usage
    (``CERTIFICATE_EXTENSIONS``), checked by ``openssl verify``: each is fit for its purpose and not the other.

    Raises
    ------
    TlsError
        openssl is not installed, or failed (its message).
    """
    if shutil.which("openssl") is None:
        raise TlsError("openssl is not installed (scripts/setup.sh installs it)")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=d, capture_output=True, text=True)
        if done.returncode != 0:
            raise TlsError(f"openssl {args[0]} failed: {done.stderr.strip()[-200:]}")

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        str(days),
        "-subj",
        "/CN=ina private CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    for name, ext in CERTIFICATE_EXTENSIONS.items():
        run(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        (d / f"{name}.ext").write_text(ext + "\n")
        run(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            str(days),
            "-extfile",
            f"{name}.ext",
        )
    for name, purpose in (("server", "sslserver"), ("client", "sslclient")):  # each fit for its own use only
        run("verify", "-CAfile", "ca.pem", "-purpose", purpose, f"{name}.pem")
        other = "sslclient" if purpose == "sslserver" else "sslserver"
        wrong = subprocess.run(
            ["openssl", "verify", "-CAfile", "ca.pem", "-purpose", other, f"{name}.pem"], cwd=d, capture_output=True
        )
        if wrong.returncode == 0:
            raise TlsError(f"openssl made a {name} certificate that is also fit for {other}")
    return Certificates(*(str(d / f) for f in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")))
