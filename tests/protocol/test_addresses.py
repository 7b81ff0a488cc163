"""The loopback check behind the plaintext warnings of every gRPC server."""

import pytest

from protocol.addresses import is_loopback, is_loopback_host


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:9559", True),
        ("127.5.0.1:9559", True),
        ("localhost:1", True),
        ("[::1]:9559", True),
        ("0.0.0.0:9559", False),
        ("[::]:9559", False),
        ("10.0.0.1:50051", False),
        ("switch1.example:9559", False),
    ],
)
def test_is_loopback(address, loopback):
    assert is_loopback(address) is loopback
    assert is_loopback_host(address.rsplit(":", 1)[0]) is loopback
