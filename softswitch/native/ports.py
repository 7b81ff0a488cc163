"""Ports of a NativeSwitch on Linux interfaces: the interface of softswitch.ports.PortSet, with the
I/O and the pipeline in a native thread (no GIL) and one Python thread that delivers what the
pipeline sends to Python (packet-ins, digests, log lines) from the native event queue.

    ports = switch.ports()
    ports.add(1, "veth1"); ports.add(2, "veth2")
    ports.start()          # frames now flow 1 <-> 2 through the switch's program
    ports.send(2, frame)   # e.g. the outputs of a packet-out
    ports.stop()

A pipeline reload (NativeSwitch.load with another program) reopens the ports on the new program's
library: frames arriving during the swap are lost, as on a hardware switch being reprogrammed.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from softswitch.ports import PortStats
from softswitch.runtime.tna import QUEUE_CELL_BYTES

from . import library as L

__all__ = ["IoStats", "NativePortSet", "NativePortStats"]


@dataclass
class NativePortStats(PortStats):
    ring: bool = False  # frames arrive in a PACKET_MMAP ring (else recvmmsg)
    rx_blocks: bool = False  # ... only a ring of blocks (TPACKET_V3, SOFTSWITCH_IO=block)
    tx_ring: bool = False  # frames leave through a PACKET_MMAP transmit ring (else sendmmsg)
    tx_long: int = 0  # frames sent with send() because they were too long for a ring slot or the MTU
    hybrid: bool = False  # both rings, frames moved between them with the rate (SOFTSWITCH_IO=hybrid; ss_io.c)
    on_blocks: bool = False  # ... its frames go to the block ring now
    rx_switches: int = 0  # ... moves between the two rings so far
    switch_ns: int = 0  # ... and the nanoseconds the I/O thread spent in them
    block_ring: bool = False  # ... it has its block ring now (opened on a move to blocks, closed when quiet)
    block_rings: int = 0  # ... block rings it has opened so far

    def summary(self) -> str:
        """One line a user reads in the switch's log: how the port received and what it counted."""
        if self.hybrid:
            path = f"hybrid ({self.rx_switches} moves between slots and blocks, {self.block_rings} block rings opened)"
        elif self.rx_blocks:
            path = "blocks"
        else:
            path = "frame slots" if self.ring else "recvmmsg"
        return (
            f"receive {path}, rx {self.rx}, tx {self.tx}, tx errors {self.tx_errors}, kernel drops {self.kernel_drops}, "
            f"own sends skipped {self.rx_outgoing}"
        )


@dataclass
class IoStats:
    unknown_port_drops: int = 0  # outputs to a port without an interface
    batches: int = 0  # receive batches run through the pipeline
    frames_in_batches: int = 0
    events_dropped: int = 0  # packet-ins/digests/logs lost to a full event queue
    first_batch_ns: int = 0  # time.monotonic_ns() when the first batch began (since the last reset)
    last_batch_ns: int = 0  # ... and when the last batch ended
    sleeps: int = 0  # times the I/O thread found every port empty and slept in poll()


class NativePortSet:
    """All ports of one NativeSwitch (created by ``switch.ports()``)."""

    def __init__(self, switch):
        self.switch = switch
        self.ports: dict[int, str] = {}  # number -> interface
        self.io = None
        self.events = None
        self._lib = None
        self._running = False
        self._drain_thread: threading.Thread | None = None
        self.queue_depth_s = 0.0  # read the ports' qdisc lengths this often while frames flow (0: never)
        self.queue_depth_error: str | None = None  # why start() could not read them

    def read_queue_depths(self, interval_s: float) -> None:
        """Egress sees each port's real queue (its interface's root qdisc length, read over rtnetlink) as
        enq_qdepth/deq_qdepth: the I/O thread reads them before a batch runs when the last reading is
        ``interval_s`` old, and not at all while no frame arrives (src/ss_qdepth.c). Takes effect at the
        next start(); raises OSError when the kernel refuses the rtnetlink socket."""
        self.queue_depth_s = max(0.0, float(interval_s))
        with self.switch._lock:
            if self.io is not None and not self._running:
                self._apply_queue_depth()

    def _apply_queue_depth(self) -> None:
        self.queue_depth_error = None
        interval_ns = int(self.queue_depth_s * 1e9)
        if self._lib.api.ss_io_queue_depth(self.io, interval_ns, QUEUE_CELL_BYTES) != L.OK:
            raise OSError(self._lib.last_error())

    def queue_depth_readings(self) -> int:
        """How often the I/O thread has read the ports' queue depths so far."""
        out = (ctypes.c_uint64 * 2)()
        with self.switch._lock:
            if self.io is None:
                return 0
            self._lib.api.ss_io_queue_depth_stats(self.io, out)
        return out[0]

    # ---------------------------------------------------------------- set-up
    def _ensure(self):
        if self.io is None:
            lib = self.switch._lib
            self.io = lib.api.ss_io_create()
            if not self.io:
                raise OSError(lib.last_error())
            self.events = lib.api.ss_events_create()
            self._lib = lib
            lib.api.ss_io_set_switch(self.io, self.switch._sw)
            self.switch._configure()

    def add(self, number: int, iface: str) -> None:
        if not isinstance(number, int) or not 0 <= number < 512:
            raise ValueError(f"port {number!r} is outside 0..511")
        if number in self.ports:
            raise ValueError(f"port {number} is given twice ({self.ports[number]} and {iface})")
        with self.switch._lock:
            self._ensure()
            rc = self._lib.api.ss_io_add_port(self.io, number, iface.encode())
            if rc != L.OK:
                message = self._lib.last_error()
                raise PermissionError(message) if "needs root" in message else OSError(message)
        self.ports[number] = iface

    def start(self) -> None:
        if self._running or not self.ports:
            return
        with self.switch._lock:
            self._ensure()
            try:
                self._apply_queue_depth()
            except OSError as e:  # the ports still run, without the depths
                self.queue_depth_error = str(e)
            if self._lib.api.ss_io_start(self.io) != L.OK:
                raise OSError(self._lib.last_error())
            self._running = True
            self._drain_thread = threading.Thread(
                target=self._drain, args=(self._lib, self.events), name=f"{self.switch.name}-events", daemon=True
            )
            self._drain_thread.start()

    def send(self, number: int, frame: bytes) -> bool:
        """Sends one frame on a port now; False when the port has no interface or the send failed."""
        with self.switch._lock:
            if self.io is None:
                return False
            return self._lib.api.ss_io_send(self.io, number, bytes(frame), len(frame)) == L.OK

    def stop(self) -> None:
        with self.switch._lock:
            self._teardown()
            self.ports.clear()

    # ---------------------------------------------------------------- statistics
    def port_stats(self, number: int) -> NativePortStats:
        out = (ctypes.c_uint64 * 14)()
        with self.switch._lock:
            if self.io is None or self._lib.api.ss_io_port_stats(self.io, number, out) != 0:
                raise KeyError(f"no port {number}")
        return NativePortStats(
            rx=out[0],
            tx=out[1],
            tx_errors=out[2],
            rx_outgoing=out[3],
            ring=bool(out[4]),
            rx_blocks=out[4] == 2,
            kernel_drops=out[5],
            tx_ring=bool(out[6]),
            tx_long=out[7],
            hybrid=out[4] == 3,
            on_blocks=bool(out[8]),
            rx_switches=out[9],
            switch_ns=out[10],
            rx_truncated=out[11],
            block_ring=bool(out[12]),
            block_rings=out[13],
        )

    def stats(self) -> IoStats:
        out = (ctypes.c_uint64 * 6)()
        with self.switch._lock:
            if self.io is None:
                return IoStats()
            self._lib.api.ss_io_stats(self.io, out)
            dropped = self._lib.api.ss_events_dropped(self.events)
        return IoStats(out[0], out[1], out[2], dropped, out[3], out[4], out[5])

    def reset_stats(self) -> None:
        """Zeroes the batch counters and times of stats()."""
        with self.switch._lock:
            if self.io is not None:
                self._lib.api.ss_io_stats_reset(self.io)

    def pause(self, paused: bool = True) -> None:
        """Stops (or resumes) reading the ports; arriving frames wait in the rings meanwhile (a
        benchmark fills them, then times the drain)."""
        with self.switch._lock:
            if self.io is not None:
                self._lib.api.ss_io_pause(self.io, int(paused))

    # ---------------------------------------------------------------- internals
    def _teardown(self) -> None:
        """Stops the I/O thread, closes the sockets, ends the drain thread (caller holds the lock)."""
        if self.io is None:
            return
        lib, io, events = self._lib, self.io, self.events
        lib.api.ss_io_stop(io)
        lib.api.ss_events_close(events)
        if self._drain_thread is not None:
            self._drain_thread.join(timeout=5)
            self._drain_thread = None
        if self.switch._sw is not None and self.switch._lib is lib:
            lib.api.ss_switch_configure(self.switch._sw, -1, 0, 0, None)
        lib.api.ss_io_destroy(io)
        lib.api.ss_events_destroy(events)
        self.io = self.events = self._lib = None
        self._running = False
        if self.switch._sw is not None and self.switch._lib is lib:
            self.switch._configure()

    def _detach(self) -> None:
        """Before NativeSwitch.load replaces the switch: stop the I/O of the old library."""
        self._was_running = self._running
        self._teardown()

    def _attach(self) -> None:
        """After NativeSwitch.load: the same ports on the new switch (and library)."""
        ports, self.ports = dict(self.ports), {}
        for number, iface in ports.items():
            self.add(number, iface)
        if getattr(self, "_was_running", False):
            self.start()

    def _drain(self, lib, events) -> None:
        """Delivers packet-ins, digests and log lines until the queue is closed."""
        records = ctypes.c_void_p()
        switch = self.switch
        while True:
            size = lib.api.ss_events_wait(events, 500, ctypes.byref(records))
            if size < 0:
                return
            if size == 0:
                continue
            raw = ctypes.string_at(records, size)
            lib.api.ss_free(records)
            try:
                packet_ins, digests = switch._parse_records(raw, None, None)
                switch._deliver(packet_ins, digests)
            except Exception as e:  # the drain thread must survive a bad callback or record
                if switch.log:
                    switch.log(f"{switch.name}: delivering events failed: {e}")
