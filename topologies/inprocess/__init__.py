"""The in-process network: softswitch switches, agents and the controller in one process, joined by
modelled links on a virtual clock (or the wall clock, with attach endpoints for other processes)."""

from topologies.inprocess.fabric import AttachServer, InProcessNetwork, InProcessTransport
from topologies.inprocess.network import LinkParams, Network

__all__ = ["AttachServer", "InProcessNetwork", "InProcessTransport", "LinkParams", "Network"]
