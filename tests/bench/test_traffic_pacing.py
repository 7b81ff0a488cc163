"""The bench's traffic generator (bench/native_io_traffic.c) at a set rate: on either send path it
pushes at most one batch (64 frames) per due point, so a paced run offers frames in small batches as
the option says (the transmit ring once pushed up to 256 at a time)."""

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 to create a veth pair"
)


@pytest.fixture
def veth():
    """A veth pair, both ends up; yields the end to send on."""
    tag = os.getpid() % 100000
    a, b = f"tpace{tag}a", f"tpace{tag}b"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    try:
        for name in (a, b):
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield a
    finally:
        subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


@pytest.mark.parametrize("mode", ["ring", "sendmmsg"])
def test_a_paced_sender_pushes_at_most_one_batch_per_due_point(veth, mode):
    from native.build import CompilerMissing, compiler

    try:
        compiler()
    except CompilerMissing as e:
        pytest.skip(str(e))
    sys.path.insert(0, str(ROOT / "bench"))
    import softswitch_pps

    frame = bytes.fromhex("ffffffffffff020000000a010800") + bytes(100)
    rate, seconds = 1000.0, 0.05  # 50 frames due; the second batch would be due at 64 ms
    result: dict = {}

    def send() -> None:  # in its own thread: the generator names its thread "bench-sender"
        result.update(softswitch_pps.role_send(veth, [frame], 20, 0, 1, seconds, mode=mode, rate=rate))

    thread = threading.Thread(target=send)
    thread.start()
    thread.join()
    sent = result
    assert sent["sender_path"] == mode
    assert 1 <= sent["sent"] <= 64, sent
