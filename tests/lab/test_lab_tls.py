"""The lab with P4Runtime over TLS (--tls): the switches start with simple_switch_grpc's TLS flags and
require client certificates, the controller installs over TLS, allreduce sums are exact, and a plaintext
client is refused."""

import os

import pytest
from conftest import needs_mininet
from lab_helpers import assert_lab_torn_down

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = needs_mininet


def test_star_over_tls_installs_and_sums_and_refuses_plaintext():
    from controller.errors import P4RuntimeError
    from controller.p4rt import SwitchConnection
    from topologies.mininet_lab import MininetLab

    lab = MininetLab(os.path.join(REPO, "topologies", "star.yaml"), 2, values=256, log=lambda m: None, tls=True)
    try:
        lab.start()
        assert [r.verified for r in lab.allreduce(1, 256)] == [True]
        (switch,) = lab.network.net.switches
        assert "--grpc-server-ssl" in switch.log_path.read_text().splitlines()[0]
        address = lab.network.grpc_addresses()[switch.name]
        with pytest.raises(P4RuntimeError, match="no P4Runtime server"):
            SwitchConnection(address, switch.device_id, timeout=2, name=switch.name).open()
    finally:
        left = lab.stop()
    assert_lab_torn_down(lab, left)
