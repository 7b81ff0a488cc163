"""Shared test helpers: skip markers for tests that need root, network namespaces or mininet."""

import os
import shutil

import pytest

IS_ROOT = os.geteuid() == 0
HAS_IP = shutil.which("ip") is not None


def _has_mininet() -> bool:
    try:
        import mininet.net  # noqa: F401
    except Exception:
        return False
    return shutil.which("mnexec") is not None


needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (network namespaces / raw sockets)")
needs_netns = pytest.mark.skipif(not (IS_ROOT and HAS_IP), reason="needs root and iproute2 for network namespaces")
needs_mininet = pytest.mark.skipif(not (IS_ROOT and _has_mininet()), reason="needs root and Debian's mininet")
