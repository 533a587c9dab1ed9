"""The in-memory index of a store: the committed shards it knows and where each key is.

A :class:`ShardIndex` numbers every shard a store has seen by a *shard id* (0, 1, …, in the
order seen; a shard gone or quarantined keeps its id, marked dead) and keeps sorted lookup
tables (:class:`Segment`) from each key's 8-byte prefix
(:func:`~structablate.store.shard.key_prefixes`) to its shard id and row (the record's index
in its shard, from 0). Each shard added brings a segment of its own; past
:data:`MAX_SEGMENTS` they are merged into one, dead shards' rows left out. Lookups answer
only live shards. Nothing here touches the disk: reading values is the shards' own
(:meth:`~structablate.store.shard.Shard.read`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from structablate.store.shard import KEY_BYTES, Shard, key_matrix, key_prefixes

MAX_SEGMENTS = 16
"""More segments than this are merged into one (a lookup searches each segment)."""
SMALL_LOOKUP = 16
"""A lookup of at most this many keys searches key by key (no per-call numpy overhead)."""


@dataclass
class Segment:
    """A lookup table over some shards, sorted by ``pfx``: each entry's key prefix (uint64),
    full key (32 bytes), shard id and row."""

    pfx: np.ndarray
    keys: np.ndarray
    sid: np.ndarray
    row: np.ndarray

    @classmethod
    def of_shard(cls, sid: int, shard: Shard) -> Segment:
        """The table of one shard (its keys are sorted already)."""
        n = len(shard)
        return cls(key_prefixes(shard.keys), shard.keys, np.full(n, sid, dtype=np.int32),
                   np.arange(n, dtype=np.int32))

    @classmethod
    def merge(cls, segs: Sequence[Segment], live: np.ndarray) -> Segment:
        """One table of ``segs``' entries whose shard is ``live`` (stable in prefix order)."""
        pfx = np.concatenate([s.pfx for s in segs])
        keys = np.concatenate([s.keys for s in segs])
        sid = np.concatenate([s.sid for s in segs])
        row = np.concatenate([s.row for s in segs])
        keep = live[sid]
        order = np.argsort(pfx[keep], kind="stable")
        return cls(pfx[keep][order], keys[keep][order], sid[keep][order], row[keep][order])


class ShardIndex:
    """The shards one store knows (by shard id and by file name) and its lookup tables."""

    def __init__(self) -> None:
        self.shards: list[Shard | None] = []
        """Shard id -> the shard, None once dead (deleted, compacted away, quarantined)."""
        self.by_name: dict[str, int] = {}
        """Shard file name -> shard id, dead ones included."""
        self.live = np.zeros(0, dtype=bool)
        """Shard id -> whether the shard is live."""
        self.segments: list[Segment] = []

    def add(self, shard: Shard, *, merge: bool = True) -> int:
        """Index a committed shard; return its shard id. With ``merge``, segments past
        :data:`MAX_SEGMENTS` are merged at once (else by the caller's
        :meth:`merge_segments`)."""
        sid = len(self.shards)
        self.shards.append(shard)
        self.by_name[shard.name] = sid
        self.live = np.append(self.live, True)
        self.segments.append(Segment.of_shard(sid, shard))
        if merge:
            self.merge_segments()
        return sid

    def add_dead(self, name: str) -> None:
        """Record the shard file ``name`` as dead without having read it (a shard that failed
        its checks on loading), so that a later listing does not load it again."""
        self.by_name[name] = len(self.shards)
        self.shards.append(None)
        self.live = np.append(self.live, False)

    def drop(self, sid: int) -> None:
        """Mark shard ``sid`` dead: lookups no longer answer its rows."""
        self.live[sid] = False
        self.shards[sid] = None

    def merge_segments(self, *, force: bool = False) -> None:
        """Merge the segments into one when there are more than :data:`MAX_SEGMENTS` (always
        with ``force``, which needs at least one segment)."""
        if force or len(self.segments) > MAX_SEGMENTS:
            self.segments = [Segment.merge(self.segments, self.live)]

    def live_shards(self) -> list[Shard]:
        """The live shards, by shard id."""
        return [s for s in self.shards if s is not None]

    def live_keys(self) -> list[np.ndarray]:
        """Each segment's keys of live shards, (n, 32) uint8 (a key may repeat)."""
        return [s.keys[self.live[s.sid]] for s in self.segments]

    def candidates(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query index, shard id, row) of every live stored copy of the (n, 32) query keys
        ``q``, as int64 arrays."""
        qi_parts, sid_parts, row_parts = [], [], []
        qp = key_prefixes(q)
        for seg in self.segments:
            if len(seg.pfx) == 0:
                continue
            lo = np.searchsorted(seg.pfx, qp, "left")
            hi = np.searchsorted(seg.pfx, qp, "right")
            cnt = hi - lo
            one = np.nonzero(cnt == 1)[0]
            if len(one):
                pos = lo[one]
                eq = np.all(seg.keys[pos] == q[one], axis=1)
                qi_parts.append(one[eq])
                sid_parts.append(seg.sid[pos[eq]])
                row_parts.append(seg.row[pos[eq]])
            for i in np.nonzero(cnt > 1)[0]:  # equal 8-byte prefixes: compare whole keys
                j = lo[i] + np.nonzero(np.all(seg.keys[lo[i] : hi[i]] == q[i], axis=1))[0]
                qi_parts.append(np.full(len(j), i))
                sid_parts.append(seg.sid[j])
                row_parts.append(seg.row[j])
        if not qi_parts:
            z = np.zeros(0, dtype=np.int64)
            return z, z, z
        qi = np.concatenate(qi_parts).astype(np.int64)
        sid = np.concatenate(sid_parts).astype(np.int64)
        row = np.concatenate(row_parts).astype(np.int64)
        keep = self.live[sid]
        return qi[keep], sid[keep], row[keep]

    def candidates_small(self, keys: Sequence[bytes]) -> list[tuple[int, int, int]]:
        """:meth:`candidates` for a few keys, without per-call numpy overhead."""
        out = []
        for i, k in enumerate(keys):
            p = np.uint64(int.from_bytes(k[:8], "big"))
            for seg in self.segments:
                pf = seg.pfx
                j = int(pf.searchsorted(p))
                while j < len(pf) and pf[j] == p:
                    if seg.keys[j].tobytes() == k and self.live[seg.sid[j]]:
                        out.append((i, int(seg.sid[j]), int(seg.row[j])))
                    j += 1
        return out

    def locate(self, keys: Sequence[bytes]) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Every live stored copy of ``keys``, grouped by shard: (shard id, rows ascending,
        the index in ``keys`` each row answers), int64 arrays."""
        groups: list[tuple[int, np.ndarray, np.ndarray]] = []
        if len(keys) <= SMALL_LOOKUP:
            by_sid: dict[int, list[tuple[int, int]]] = {}
            for i, s, r in self.candidates_small(keys):
                by_sid.setdefault(s, []).append((r, i))
            for s, pairs in by_sid.items():
                pairs.sort()
                groups.append((s, np.array([r for r, _ in pairs], dtype=np.int64),
                               np.array([i for _, i in pairs], dtype=np.int64)))
            return groups
        qi, sid, row = self.candidates(key_matrix(keys))
        order = np.lexsort((row, sid))
        qi, sid, row = qi[order], sid[order], row[order]
        bounds = np.nonzero(np.diff(sid))[0] + 1
        for part in np.split(np.arange(len(sid)), bounds):
            if len(part):
                groups.append((int(sid[part[0]]), row[part], qi[part]))
        return groups

    def distinct_keys(self, extra: Sequence[bytes] = ()) -> list[bytes]:
        """Every distinct key of the live shards and ``extra``, sorted."""
        parts = self.live_keys()
        if extra:
            parts.append(key_matrix(list(extra)))
        if not parts:
            return []
        allk = np.ascontiguousarray(np.concatenate(parts))
        uniq = np.unique(allk.view(np.dtype((np.void, KEY_BYTES))).ravel())
        return [bytes(u) for u in uniq]
