"""Whether an address is loopback: the one check behind every "plaintext off loopback" warning (the
controller's and agents' gRPC servers, softswitch's P4Runtime server)."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name, an IPv4 or IPv6 address, bracketed or not) is this machine's loopback.

    Examples
    --------
    >>> is_loopback_host("localhost"), is_loopback_host("[::1]"), is_loopback_host("10.0.0.1")
    (True, True, False)
    """
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback(address: str) -> bool:
    """Whether a ``host:port`` listens on loopback only.

    Examples
    --------
    >>> is_loopback("127.0.0.1:9559"), is_loopback("localhost:1"), is_loopback("0.0.0.0:9559")
    (True, True, False)
    """
    return is_loopback_host(address.rsplit(":", 1)[0])
