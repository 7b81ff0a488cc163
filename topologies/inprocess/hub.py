"""A switchless IP hub on an event loop: hosts exchange UDP payloads directly.

Agents' own behaviour (windows, retransmission, duplicates, the server's bitmap, dead peers) is
tested on it without switches: every worker's hop list is just the server's terminal entry, so the
server completes every sum. Loss, duplication and delay are seeded and per delivery.
"""

from __future__ import annotations

import random

from protocol.constants import INA_UDP_PORT
from worker.loop import EventLoop
from worker.transport import Transport


class Hub:
    def __init__(
        self,
        loop: EventLoop,
        *,
        delay_s: float = 1e-4,
        loss: float = 0.0,
        duplicate: float = 0.0,
        jitter_s: float = 0.0,
        seed: int = 0,
    ):
        self.loop = loop
        self.delay_s, self.loss, self.duplicate, self.jitter_s = delay_s, loss, duplicate, jitter_s
        self.rng = random.Random(seed)
        self.hosts: dict[str, HubTransport] = {}
        self.delivered = 0
        self.lost = 0

    def transport(self, ip: str) -> HubTransport:
        t = HubTransport(self, ip)
        self.hosts[ip] = t
        return t

    def carry(self, payload: bytes, src_ip: str, dst_ip: str, port: int) -> None:
        dst = self.hosts.get(dst_ip)
        copies = 2 if self.duplicate and self.rng.random() < self.duplicate else 1
        for _ in range(copies):
            if dst is None or not dst.alive or (self.loss and self.rng.random() < self.loss):
                self.lost += 1
                continue
            delay = self.delay_s + (self.rng.uniform(0, self.jitter_s) if self.jitter_s else 0.0)
            self.delivered += 1
            self.loop.call_later(delay, dst._deliver, port, payload, src_ip)


class HubTransport(Transport):
    def __init__(self, hub: Hub, ip: str):
        super().__init__()
        self.hub = hub
        self.loop = hub.loop
        self.ip = ip
        self.alive = True

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        if not self.alive:
            return
        self.sent_packets += 1
        self.sent_bytes += len(payload)
        self.hub.carry(payload, self.ip, dst_ip, port)

    def _deliver(self, port: int, payload: bytes, src_ip: str, ecn: int | None = None) -> None:
        if self.alive:
            super()._deliver(port, payload, src_ip, ecn)
