"""The packet replication engine's configuration: multicast groups and clone sessions."""

from __future__ import annotations


class PRE:
    def __init__(self):
        self.groups: dict[int, list[tuple[int, int]]] = {}
        self.sessions: dict[int, tuple[list[tuple[int, int]], int]] = {}

    @staticmethod
    def _replicas(what, ident, replicas):
        out = []
        for r in replicas:
            try:
                port, rid = r
            except (TypeError, ValueError):
                raise ValueError(f"{what} {ident}: replica {r!r} is not a (port, rid) pair") from None
            if not isinstance(port, int) or not 0 <= port < 512:
                raise ValueError(f"{what} {ident}: port {port!r} is outside 0..511")
            if not isinstance(rid, int) or not 0 <= rid < 65536:
                raise ValueError(f"{what} {ident}: replica id {rid!r} is outside 0..65535")
            out.append((port, rid))
        return out

    @classmethod
    def check_group(cls, gid, replicas):
        """The replicas of a valid multicast group as [(port, rid)]; ValueError names what is wrong."""
        if not isinstance(gid, int) or not 1 <= gid < 65536:
            raise ValueError(f"multicast group id {gid!r} is outside 1..65535")
        return cls._replicas("multicast group", gid, replicas)

    @classmethod
    def check_session(cls, sid, replicas, truncate):
        """The replicas of a valid clone session as [(port, rid)]; ValueError names what is wrong."""
        if not isinstance(sid, int) or not 0 <= sid < (1 << 32):
            raise ValueError(f"clone session id {sid!r} is outside 0..2^32-1")
        if not isinstance(truncate, int) or truncate < 0:
            raise ValueError(f"clone session {sid}: truncate length {truncate!r} must be >= 0")
        return cls._replicas("clone session", sid, replicas)

    @staticmethod
    def missing_group(gid):
        return KeyError(f"multicast group {gid} does not exist")

    @staticmethod
    def missing_session(sid):
        return KeyError(f"clone session {sid} does not exist")

    def set_group(self, gid, replicas):
        self.groups[gid] = self.check_group(gid, replicas)

    def delete_group(self, gid):
        if gid not in self.groups:
            raise self.missing_group(gid)
        del self.groups[gid]

    def set_session(self, sid, replicas, truncate=0):
        self.sessions[sid] = (self.check_session(sid, replicas, truncate), truncate)

    def delete_session(self, sid):
        if sid not in self.sessions:
            raise self.missing_session(sid)
        del self.sessions[sid]
