"""Shared test helpers: skip markers for tests that need root, network namespaces or mininet; launchers run with a bug."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

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

REPO = Path(__file__).resolve().parents[1]
INA_P4 = REPO / "p4src" / "ina.p4"
INA_K256_P4 = REPO / "p4src" / "ina_k256.p4"
INA_K344_P4 = REPO / "p4src" / "ina_k344.p4"
INA_K1024_P4 = REPO / "p4src" / "ina_k1024.p4"
INA_TNA_P4 = REPO / "p4src" / "tna" / "ina_tna.p4"


@pytest.fixture(scope="session")
def ina_program():
    """p4src/ina.p4 compiled by softswitch, once per session."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_P4))


@pytest.fixture(params=["v1model", "tna"])
def program(request) -> str:
    """The aggregation program the switches run, for tests that run on both: "v1model" (p4src/ina.p4) or
    "tna" (p4src/tna/ina_tna.p4)."""
    return request.param


@pytest.fixture(scope="session")
def ina_tna_program():
    """p4src/tna/ina_tna.p4 (the Tofino program) compiled by softswitch, once per session."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_TNA_P4))


@pytest.fixture(scope="session")
def ina_program_k4():
    """The same program built with -DVALUES_PER_PACKET=4 (the size of the golden vectors)."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_P4), defines={"VALUES_PER_PACKET": "4"})


@pytest.fixture(scope="session")
def ina_program_k256():
    """p4src/ina_k256.p4 (ina.p4 with K = 256 values per packet) compiled by softswitch, once per session."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_K256_P4))


@pytest.fixture(scope="session")
def ina_program_k344():
    """p4src/ina_k344.p4 (ina.p4 with K = 344 values per packet, the default at a 1500-byte MTU) compiled by
    softswitch, once per session."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_K344_P4))


@pytest.fixture(scope="session")
def ina_program_k1024():
    """p4src/ina_k1024.p4 (ina.p4 with K = 1024 values per packet) compiled by softswitch, once per session."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_K1024_P4))


def _golden_module():
    """tests/protocol/ina_golden.py, loaded by path (tests/protocol is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ina_golden", REPO / "tests" / "protocol" / "ina_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def golden_vectors() -> dict[str, dict]:
    """The valid vectors of tests/protocol/golden_vectors.json by name (as tests/protocol/ina_golden.py loads them)."""
    return {v["name"]: v for v in _golden_module().VALID}


@pytest.fixture(scope="session")
def golden_invalid_vectors() -> dict[str, dict]:
    """The invalid vectors of tests/protocol/golden_vectors.json by name."""
    return {v["name"]: v for v in _golden_module().INVALID}


class LauncherRun:
    """Runs a launcher's ``main`` in a fresh interpreter with one function replaced, as a bug would.

    The launchers print the parts' user-facing errors (``topologies.errors.USER_ERRORS``) as one line
    and let anything else show its traceback; these helpers read which one a run did.
    """

    def run(
        self, main_module: str, argv: list[str], target: str, attribute: str, error: str, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        """Replace ``target.attribute`` by a function raising ``error`` (an expression; the
        controller's errors are in scope), then ``sys.exit(main_module.main(argv))``."""
        code = "\n".join(
            [
                "import importlib, sys",
                "from controller.errors import *",
                f"target = importlib.import_module({target!r})",
                "def replaced(*args, **kwargs):",
                f"    raise {error}",
                f"setattr(target, {attribute!r}, replaced)",
                f"from {main_module} import main",
                f"sys.exit(main({argv!r}))",
            ]
        )
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    @staticmethod
    def assert_traceback(done: subprocess.CompletedProcess, last_line: str) -> None:
        """The run ended on an uncaught exception: status 1, a traceback ending in ``last_line``."""
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback (most recent call last):" in done.stderr, done.stderr
        assert done.stderr.strip().splitlines()[-1] == last_line, done.stderr

    @staticmethod
    def assert_one_line(done: subprocess.CompletedProcess, line: str) -> None:
        """A user error: status 1, exactly this one line on stderr, no traceback."""
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [line], done.stderr


@pytest.fixture
def launcher() -> LauncherRun:
    """Run a launcher with a deliberate bug (see ``LauncherRun``)."""
    return LauncherRun()
