"""The store: a folder of immutable shards mapping 32-byte keys to byte values.

Nobody ever writes one shared database file. Each :class:`Store` instance is one writer: it
buffers records in memory and commits them as a shard file of its own (written under a
temporary name, ``fsync``-ed, renamed into place in the same folder), so a shard is either
absent or complete, and a writer killed with ``SIGKILL`` loses only what it had not committed
(bounded by :class:`StoreSettings`). Readers list the folder and merge every shard; a miss lists
it again (at most every ``rescan_s`` seconds) for shards other writers committed meanwhile.
Layout::

    <root>/STORE.json          format marker: {"format", "version", "kind"}
    <root>/shards/*.shard      immutable shards: <time_ns>_<host>_<pid>_<hostkey>_<token>_<seq>
    <root>/shards/.*.tmp       shards being written (a killed writer's are garbage, see gc)
    <root>/quarantine/         shards that failed their checksums, moved aside
    <root>/locks/              stage locks (:mod:`structablate.store.lock`)

Invariants: a key stored twice (two writers missed it at the same time) reads as its smallest
value bytes, whatever the shard names, timing or compaction; a shard that fails its checks is
moved to ``quarantine/`` with a warning naming both paths, and its records count as missing
(the caller recomputes them); compaction commits the merged shards before deleting their
sources, so a concurrent reader always finds every record. The only filesystem primitives
relied on are exclusive create, ``link`` and ``rename`` within one folder (atomic on NFS v3
and v4); the shard bytes are :mod:`structablate.store.shard`'s.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import re
import secrets
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from structablate.store.files import (
    StoreError,
    StoreUnwritable,
    fsync_dir,
    host_key,
    hostname,
    pid_alive,
    safe_name,
    write_all,
)
from structablate.store.lock import LockSettings, StageLock, StageLocked, stage_lock_name
from structablate.store.shard import (
    FORMAT,
    HEADER,
    KEY_BYTES,
    ROW_TABLE,
    VERSION,
    CorruptShard,
    Shard,
    encode_shard,
    key_matrix,
    key_prefixes,
)

log = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first bytes of an SQLite file: the caches of earlier versions (see :meth:`Store._open`)."""


@dataclass(frozen=True)
class StoreSettings:
    """When a writer commits its buffered records, and how garbage is collected.

    A writer commits a shard when it holds ``flush_records`` records or ``flush_bytes`` bytes,
    or when its oldest uncommitted record is ``flush_s`` seconds old (checked on each put), on
    an explicit ``flush()``, on ``close()`` and at interpreter exit. A job killed with SIGKILL
    loses at most what it had not committed.
    """

    flush_records: int = 4096
    """Commit a shard once this many records are buffered (count)."""
    flush_bytes: int = 64 * 1024 * 1024
    """Commit a shard once the buffered values reach this many bytes."""
    flush_s: float = 10.0
    """Commit once the oldest buffered record is this old (seconds): bounds the loss on a kill."""
    rescan_s: float = 30.0
    """A miss lists the folder again for shards of other writers at most this often (seconds)."""
    tmp_max_age_s: float = 3600.0
    """Temporary files older than this (seconds) are garbage whoever wrote them."""
    merge_own_min_shards: int = 8
    """On close, a writer that committed at least this many small shards merges them into one."""
    compact_min_shards: int = 64
    """On close, a writer that sees at least this many small shards in the folder (e.g. left by
    killed jobs) merges all of them, unless another process is compacting."""
    merge_small_bytes: int = 1024 * 1024
    """A shard below this size (bytes) counts as small for merging and compaction (embedding
    shards of 2,048 vectors are larger and stay as they are)."""


@dataclass
class _Segment:
    """A sorted lookup table over some shards: prefix, full key, shard id, row."""

    pfx: np.ndarray
    keys: np.ndarray
    sid: np.ndarray
    row: np.ndarray

    @classmethod
    def of_shard(cls, sid: int, shard: Shard) -> _Segment:
        n = len(shard)
        return cls(key_prefixes(shard.keys), shard.keys, np.full(n, sid, dtype=np.int32),
                   np.arange(n, dtype=np.int32))

    @classmethod
    def merge(cls, segs: Sequence[_Segment], live: np.ndarray) -> _Segment:
        pfx = np.concatenate([s.pfx for s in segs])
        keys = np.concatenate([s.keys for s in segs])
        sid = np.concatenate([s.sid for s in segs])
        row = np.concatenate([s.row for s in segs])
        keep = live[sid]
        order = np.argsort(pfx[keep], kind="stable")
        return cls(pfx[keep][order], keys[keep][order], sid[keep][order], row[keep][order])


_OPEN_STORES: weakref.WeakSet[Store] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:  # pragma: no cover - exercised by subprocess tests
    """A process that exits (normally or by an exception) commits what its stores buffer
    (before :mod:`structablate.store.lock` releases its locks: that hook was registered
    first, so it runs last)."""
    for store in list(_OPEN_STORES):
        with contextlib.suppress(Exception):
            store.flush()


class Store:
    """A folder of immutable shards mapping 32-byte keys to byte values (module docstring).

    ``label`` names the cache in messages (e.g. ``"embedding cache"``), ``setting`` the
    configuration that chooses its folder (e.g. ``"llm.cache"``). Thread-safe; one
    instance per process and folder is the intended use (each instance is its own writer).
    """

    kind = "bytes"

    def __init__(self, root: str | os.PathLike[str], *, readonly: bool = False,
                 settings: StoreSettings | None = None, label: str = "cache",
                 setting: str = "the cache setting"):
        self.root = Path(root)
        self.label = label
        self.setting = setting
        self.readonly = readonly
        self.settings = settings or StoreSettings()
        self.shards_dir = self.root / "shards"
        self.quarantine_dir = self.root / "quarantine"
        self.locks_dir = self.root / "locks"
        self.quarantined: list[str] = []
        """Paths of shards this instance found corrupt (moved to ``quarantine/`` if possible)."""
        self._mutex = threading.RLock()
        self._shards: list[Shard | None] = []
        self._by_name: dict[str, int] = {}
        self._live = np.zeros(0, dtype=bool)
        self._segments: list[_Segment] = []
        self._pending: dict[bytes, bytes] = {}
        self._pending_bytes = 0
        self._pending_since: float | None = None
        self._written: set[bytes] = set()
        self._own: list[str] = []
        self._last_scan = 0.0
        self._pid = -1
        self._writer = ""
        self._seq = 0
        self._new_writer_id()
        self._closed = False
        self._open()
        self.refresh(force=True)
        if not readonly:
            self.gc()
            _OPEN_STORES.add(self)

    def _new_writer_id(self) -> None:
        """Shard names carry host, pid and a random token: unique per writing process."""
        self._pid = os.getpid()
        self._writer = (f"{safe_name(hostname())}_{self._pid}_{host_key()}_"
                        f"{secrets.token_hex(4)}")
        self._seq = 0

    # -- opening -------------------------------------------------------------------------------

    def _what_to_do(self) -> str:
        return (f"The {self.label} only saves recomputation: deleting or moving {self.root} is "
                "safe (it is rebuilt).")

    def _open(self) -> None:
        root = self.root
        if root.exists() and not root.is_dir():
            with open(root, "rb") as fh:
                head = fh.read(16)
            if head == SQLITE_MAGIC:
                raise StoreError(
                    f"{self.label} {root} is an SQLite file of an earlier structablate; caches "
                    "are now folders of shards (safe on network filesystems). Import it with "
                    f"`python -m structablate.store import-sqlite {root} <new folder>` and point "
                    f"{self.setting} at the new folder, or delete it. {self._what_to_do()}")
            raise StoreError(f"{self.label} {root} is a file, not a cache folder: point "
                             f"{self.setting} at a folder (created if missing)")
        if root.is_dir() and not (root / "STORE.json").exists():
            foreign = sorted(e.name for e in os.scandir(root) if not e.name.startswith(".")
                             and e.name not in ("shards", "quarantine", "locks"))
            if foreign:
                raise StoreError(
                    f"{self.label} {root} is a folder with other files ({', '.join(foreign[:3])}"
                    f"{', ...' if len(foreign) > 3 else ''}), not a cache: point {self.setting} "
                    "at an empty or new folder")
        if self.readonly:
            if not root.is_dir():
                raise FileNotFoundError(f"{self.label} {root} does not exist")
            self._check_marker(create=False)
            return
        try:
            self.shards_dir.mkdir(parents=True, exist_ok=True)
            self._check_marker(create=True)
            self._probe()
        except StoreError:
            raise
        except OSError as exc:
            bad = Path(exc.filename or root)
            while not bad.exists() and bad != bad.parent:
                bad = bad.parent
            if bad.is_file():
                bad = bad.parent
            raise StoreUnwritable(
                f"{self.label} {root} is not writable ({exc.strerror or exc}: "
                f"{exc.filename or root}). Make {bad} writable for this user (e.g. `chmod -R "
                f"u+w {bad}`), or point {self.setting} at a writable folder. "
                f"{self._what_to_do()}") from exc

    def _check_marker(self, *, create: bool) -> None:
        marker = self.root / "STORE.json"
        want = {"format": FORMAT, "version": VERSION, "kind": self.kind}
        if create and not marker.exists():
            tmp = self.root / f".STORE.json.{self._writer}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                write_all(fd, [json.dumps(want, sort_keys=True).encode() + b"\n"])
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, marker)
            except FileExistsError:
                pass
            except OSError:  # no hard links on this filesystem: a rename is as good here
                os.replace(tmp, marker)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        try:
            have = json.loads(marker.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if create:
                raise
            return  # a read-only view of a folder without marker: shards say their kind
        except ValueError as exc:
            raise StoreError(f"{marker}: unreadable store marker ({exc}). "
                             f"{self._what_to_do()}") from exc
        if not isinstance(have, dict):
            raise StoreError(f"{marker}: not a store marker. {self._what_to_do()}")
        if have.get("format") != FORMAT:
            raise StoreError(f"{self.root} is not a structablate cache folder ({marker} says "
                             f"{have.get('format')!r}); point the {self.label} elsewhere")
        if have.get("kind") != self.kind:
            raise StoreError(
                f"{self.root} holds a {have.get('kind')!r} cache, not the {self.label} "
                f"({self.kind!r}): give each cache its own folder")
        if int(have.get("version", 0)) > VERSION:
            raise StoreError(f"{self.root}: store version {have.get('version')} is newer than "
                             f"this structablate reads ({VERSION}); upgrade, or use another folder")

    def _probe(self) -> None:
        probe = self.shards_dir / f".probe_{self._writer}.tmp"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(fd)
        os.unlink(probe)

    # -- index ---------------------------------------------------------------------------------

    def refresh(self, *, force: bool = True) -> int:
        """Pick up shards committed by other writers; return how many were new.

        Without ``force``, lists the folder only if the last listing is ``rescan_s`` old.
        """
        with self._mutex:
            now = time.monotonic()
            if not force and now - self._last_scan < self.settings.rescan_s:
                return 0
            self._last_scan = now
            try:
                names = sorted(e.name for e in os.scandir(self.shards_dir)
                               if e.name.endswith(".shard") and not e.name.startswith("."))
            except FileNotFoundError:
                names = []
            present = set(names)
            for name, sid in self._by_name.items():
                if name not in present and self._live[sid]:
                    self._drop(sid)
            added = 0
            for name in names:
                if name in self._by_name:
                    continue
                shard = self._load(self.shards_dir / name)
                if shard is not None:
                    self._add(shard, merge=False)
                    added += 1
            if len(self._segments) > 16:
                self._segments = [_Segment.merge(self._segments, self._live)]
            return added

    def _load(self, path: Path) -> Shard | None:
        for attempt in range(2):
            try:
                return Shard.load(path, self.kind)
            except FileNotFoundError:
                return None  # compacted or quarantined by another process meanwhile
            except CorruptShard as exc:
                if attempt == 0:
                    time.sleep(0.2)  # a network filesystem may lag; look once more
                    continue
                self._quarantine(path, str(exc))
        return None

    def _add(self, shard: Shard, *, merge: bool = True) -> None:
        sid = len(self._shards)
        self._shards.append(shard)
        self._by_name[shard.name] = sid
        self._live = np.append(self._live, True)
        self._segments.append(_Segment.of_shard(sid, shard))
        if merge and len(self._segments) > 16:
            self._segments = [_Segment.merge(self._segments, self._live)]

    def _drop(self, sid: int) -> None:
        self._live[sid] = False
        self._shards[sid] = None

    def _quarantine(self, path: Path, reason: str) -> None:
        self.quarantined.append(str(path))
        sid = self._by_name.get(path.name)
        if sid is not None:
            shard = self._shards[sid]
            if shard is not None and path.name in self._own:  # ours: let puts store them again
                self._written.difference_update(k.tobytes() for k in shard.keys)
            self._drop(sid)
        else:
            self._by_name[path.name] = len(self._shards)
            self._shards.append(None)
            self._live = np.append(self._live, False)
        if self.readonly:
            log.warning("%s %s: shard %s is corrupt (%s); its records are ignored. Delete it "
                        "(rm %s) or run `python -m structablate.store verify %s` with write "
                        "access", self.label, self.root, path, reason, path, self.root)
            return
        dest = self.quarantine_dir / path.name
        try:
            self.quarantine_dir.mkdir(exist_ok=True)
            if dest.exists():
                dest = dest.with_name(f"{path.name}.{secrets.token_hex(4)}")
            os.rename(path, dest)
        except FileNotFoundError:
            log.warning("%s: shard %s is corrupt (%s); another process already moved it aside",
                        self.label, path, reason)
        except OSError as exc:
            log.warning("%s: shard %s is corrupt (%s) and could not be moved aside (%s); its "
                        "records are ignored and recomputed. Delete it by hand: rm %s",
                        self.label, path, reason, exc, path)
        else:
            log.warning("%s: shard %s is corrupt (%s); moved it to %s, its records will be "
                        "recomputed", self.label, path, reason, dest)

    def _candidates(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query index, shard id, row) of every live stored copy of the query keys ``q``."""
        qi_parts, sid_parts, row_parts = [], [], []
        qp = key_prefixes(q)
        for seg in self._segments:
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
        keep = self._live[sid]
        return qi[keep], sid[keep], row[keep]

    def _candidates_small(self, keys: Sequence[bytes]) -> list[tuple[int, int, int]]:
        """:meth:`_candidates` for a few keys, without per-call numpy overhead."""
        out = []
        for i, k in enumerate(keys):
            p = np.uint64(int.from_bytes(k[:8], "big"))
            for seg in self._segments:
                pf = seg.pfx
                j = int(pf.searchsorted(p))
                while j < len(pf) and pf[j] == p:
                    if seg.keys[j].tobytes() == k and self._live[seg.sid[j]]:
                        out.append((i, int(seg.sid[j]), int(seg.row[j])))
                    j += 1
        return out

    def _lookup(self, keys: Sequence[bytes]) -> tuple[dict[bytes, memoryview], list[bytes]]:
        """Values of stored ``keys``; and the keys to retry after a refresh (shard vanished)."""
        groups: list[tuple[int, np.ndarray, np.ndarray]] = []  # (shard id, rows, query idx)
        if len(keys) <= 16:
            by_sid: dict[int, list[tuple[int, int]]] = {}
            for i, s, r in self._candidates_small(keys):
                by_sid.setdefault(s, []).append((r, i))
            for s, pairs in by_sid.items():
                pairs.sort()
                groups.append((s, np.array([r for r, _ in pairs], dtype=np.int64),
                               np.array([i for _, i in pairs], dtype=np.int64)))
        else:
            qi, sid, row = self._candidates(key_matrix(keys))
            order = np.lexsort((row, sid))
            qi, sid, row = qi[order], sid[order], row[order]
            bounds = np.nonzero(np.diff(sid))[0] + 1
            for part in np.split(np.arange(len(sid)), bounds):
                if len(part):
                    groups.append((int(sid[part[0]]), row[part], qi[part]))
        found: dict[bytes, memoryview] = {}
        retry: set[int] = set()
        for s, rows, qis in groups:
            shard = self._shards[s]
            if shard is None:
                retry.update(int(i) for i in qis)
                continue
            try:
                values = shard.read(rows)
            except CorruptShard as exc:
                self._quarantine(shard.path, str(exc))
                retry.update(int(i) for i in qis)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ESTALE):
                    raise StoreError(f"{self.label}: cannot read {shard.path} "
                                     f"({exc.strerror or exc})") from exc
                self._drop(s)  # compacted away by another process: look again
                retry.update(int(i) for i in qis)
                continue
            for i, v in zip(qis.tolist(), values, strict=True):
                k = keys[i]
                prev = found.get(k)
                if prev is None or bytes(v) < bytes(prev):
                    found[k] = v
        return found, [keys[i] for i in sorted(retry) if keys[i] not in found]

    # -- reading -------------------------------------------------------------------------------

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, bytes | memoryview]:
        """The stored value of each key that has one (misses are absent from the result).

        A miss lists the folder again (at most every ``rescan_s`` seconds) for shards that
        other writers committed meanwhile.
        """
        with self._mutex:
            out: dict[bytes, bytes | memoryview] = {}
            rest: list[bytes] = []
            seen: set[bytes] = set()
            for k in keys:
                if k in seen:
                    continue
                seen.add(k)
                v = self._pending.get(k)
                if v is None:
                    rest.append(k)
                else:
                    out[k] = v
            rescanned = False
            for _ in range(4):
                if not rest:
                    break
                found, retry = self._lookup(rest)
                out.update(found)
                missing = [k for k in rest if k not in found]
                if retry:
                    self.refresh(force=True)
                    rescanned = True
                    rest = missing
                    continue
                if missing and not rescanned and self.refresh(force=False):
                    rescanned = True
                    rest = missing
                    continue
                break
            return out

    def get(self, key: bytes) -> bytes | memoryview | None:
        """The stored value of ``key``, or None."""
        return self.get_many([key]).get(key)

    def contains_many(self, keys: Sequence[bytes]) -> np.ndarray:
        """Whether each key is stored (committed by anyone this instance knows of, or pending)."""
        with self._mutex:
            keys = list(keys)
            mask = np.zeros(len(keys), dtype=bool)
            if keys:
                qi, _, _ = self._candidates(key_matrix(keys))
                mask[qi] = True
                for i, k in enumerate(keys):
                    if not mask[i] and (k in self._pending or k in self._written):
                        mask[i] = True
            return mask

    def __contains__(self, key: bytes) -> bool:
        return bool(self.contains_many([key])[0])

    def keys(self) -> list[bytes]:
        """Every distinct key committed (as known to this instance) or pending, sorted."""
        with self._mutex:
            parts = [s.keys[self._live[s.sid]] for s in self._segments]
            extra = [k for k in self._pending if k not in self._written]
            if extra:
                parts.append(key_matrix(extra))
            if not parts:
                return []
            allk = np.ascontiguousarray(np.concatenate(parts))
            uniq = np.unique(allk.view(np.dtype((np.void, KEY_BYTES))).ravel())
            return [bytes(u) for u in uniq]

    def __len__(self) -> int:
        return len(self.keys())

    def items(self, batch: int = 4096) -> Iterator[tuple[bytes, bytes | memoryview]]:
        """Every (key, value), in key order."""
        keys = self.keys()
        for b in range(0, len(keys), batch):
            part = keys[b : b + batch]
            got = self.get_many(part)
            for k in part:
                if k in got:
                    yield k, got[k]

    def shard_paths(self) -> list[Path]:
        """The committed shards this instance knows of."""
        with self._mutex:
            return [s.path for s in self._shards if s is not None]

    # -- writing -------------------------------------------------------------------------------

    def put_many(self, items: Iterable[tuple[bytes, bytes]]) -> int:
        """Buffer records whose keys are not stored yet; return how many were new.

        Committed (as one shard) by the flush policy of :class:`StoreSettings`.
        """
        if self.readonly:
            raise PermissionError(f"{self.label} {self.root} is opened read-only")
        with self._mutex:
            if self._closed:
                raise StoreError(f"{self.label} {self.root} is closed")
            items = [(k, bytes(v)) for k, v in items]
            known = self.contains_many([k for k, _ in items])
            added = 0
            s = self.settings
            for (k, v), hit in zip(items, known, strict=True):
                if hit or k in self._pending:
                    continue
                if self._pending_since is None:
                    self._pending_since = time.monotonic()
                self._pending[k] = v
                self._pending_bytes += len(v)
                added += 1
                if (len(self._pending) >= s.flush_records
                        or self._pending_bytes >= s.flush_bytes):
                    self.flush()  # bounded shards, however large the call
            self._maybe_flush()
            return added

    def put(self, key: bytes, value: bytes) -> bool:
        """Buffer one record (see :meth:`put_many`); return whether it was new."""
        return self.put_many([(key, value)]) == 1

    def _maybe_flush(self) -> None:
        s = self.settings
        if not self._pending:
            return
        if (len(self._pending) >= s.flush_records or self._pending_bytes >= s.flush_bytes
                or time.monotonic() - (self._pending_since or 0.0) >= s.flush_s):
            self.flush()

    def flush(self) -> Path | None:
        """Commit the buffered records as one shard; return its path (None if nothing to do)."""
        with self._mutex:
            if not self._pending:
                return None
            records = sorted(self._pending.items())
            path = self._commit(records)
            self._written.update(self._pending)
            self._pending.clear()
            self._pending_bytes = 0
            self._pending_since = None
            return path

    def _commit(self, records: Sequence[tuple[bytes, bytes]]) -> Path:
        if os.getpid() != self._pid:  # a forked child: never reuse the parent's shard names
            self._new_writer_id()
        self._seq += 1
        name = f"{time.time_ns():019d}_{self._writer}_{self._seq:06d}.shard"
        final = self.shards_dir / name
        tmp = self.shards_dir / f".{name}.tmp"
        chunks = encode_shard(records, self.kind)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                write_all(fd, [b"".join(chunks)])  # one write call, not one per record
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.rename(tmp, final)
            except FileNotFoundError:
                # NFS may retry a rename whose reply was lost and report ENOENT for a rename
                # that happened: the shard is there under its final name
                if tmp.exists() or not final.exists():
                    raise
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            hint = (f"free space on that filesystem or point {self.setting} elsewhere"
                    if exc.errno in (errno.ENOSPC, errno.EDQUOT) else
                    f"make it writable (e.g. `chmod -R u+w {self.root}`) or point "
                    f"{self.setting} elsewhere")
            raise StoreUnwritable(
                f"{self.label} {self.root}: cannot write shard {final} ({exc.strerror or exc}); "
                f"{hint}. {self._what_to_do()}") from exc
        fsync_dir(self.shards_dir)
        keys = key_matrix([k for k, _ in records])
        lengths = np.fromiter((len(v) for _, v in records), dtype=np.uint32, count=len(records))
        head = chunks[0]
        _, _, _, _, _, data_off, size, _ = HEADER.unpack_from(head)
        crcs = np.frombuffer(chunks[1], dtype="<u4", count=len(records),
                             offset=len(records) * (KEY_BYTES + 4))
        self._add(Shard(final, keys, lengths, crcs, data_off, size))
        self._own.append(name)
        return final

    # -- maintenance ---------------------------------------------------------------------------

    def gc(self) -> list[Path]:
        """Remove temporary files of writers that are gone; return what was removed.

        A temporary file is garbage when its writer's process is dead on this host (same
        hostname, boot and pid namespace) or when it is older than ``tmp_max_age_s``.
        """
        removed: list[Path] = []
        if self.readonly:
            return removed
        my_key = host_key()
        now = time.time()
        for folder in (self.shards_dir, self.locks_dir, self.root):
            try:
                entries = list(os.scandir(folder))
            except FileNotFoundError:
                continue
            for e in entries:
                if not (e.name.startswith(".") and e.name.endswith(".tmp")):
                    continue
                try:
                    age = now - e.stat(follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    continue
                dead = False
                m = re.search(r"_(\d+)_([0-9a-f]{8})_[0-9a-f]{8}", e.name)
                if m and m.group(2) == my_key and int(m.group(1)) != os.getpid():
                    dead = not pid_alive(int(m.group(1)))
                if dead or age > self.settings.tmp_max_age_s:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(e.path)
                        removed.append(Path(e.path))
        if removed:
            log.info("%s %s: removed %d temporary file(s) of killed writers", self.label,
                     self.root, len(removed))
        return removed

    def verify(self) -> dict[str, Any]:
        """Read every record of every shard; quarantine what fails. Returns a summary."""
        with self._mutex:
            self.refresh(force=True)
            checked = records = 0
            for shard in list(self._shards):
                if shard is None:
                    continue
                try:
                    shard.read(np.arange(len(shard)))
                except CorruptShard as exc:
                    self._quarantine(shard.path, str(exc))
                    continue
                except FileNotFoundError:
                    continue
                checked += 1
                records += len(shard)
            return {"shards_ok": checked, "records": records,
                    "quarantined": list(self.quarantined)}

    def compact(self, *, names: Sequence[str] | None = None,
                target_bytes: int = 256 * 1024 * 1024) -> tuple[int, int]:
        """Merge small shards (or the named ones) into shards of up to ``target_bytes``.

        The merged shards are committed before the sources are deleted, so a concurrent reader
        always finds every record (a reader whose shard vanished lists the folder again).
        Returns (shards merged, shards written).
        """
        if self.readonly:
            raise PermissionError(f"{self.label} {self.root} is opened read-only")
        with self._mutex:
            self.flush()
            self.refresh(force=True)
            chosen = [s for s in self._shards if s is not None and (
                s.name in names if names is not None
                else s.size < self.settings.merge_small_bytes)]
            if len(chosen) < 2:
                return 0, 0
            merged: dict[bytes, bytes] = {}
            sources: list[Shard] = []
            for shard in chosen:
                try:
                    values = shard.read(np.arange(len(shard)))
                except CorruptShard as exc:
                    self._quarantine(shard.path, str(exc))
                    continue
                except FileNotFoundError:
                    continue
                sources.append(shard)
                for row, v in enumerate(values):
                    k = shard.keys[row].tobytes()
                    prev = merged.get(k)
                    if prev is None or bytes(v) < prev:
                        merged[k] = bytes(v)
            if len(sources) < 2:
                return 0, 0
            written = 0
            batch: list[tuple[bytes, bytes]] = []
            size = 0
            for k in sorted(merged):
                batch.append((k, merged[k]))
                size += len(merged[k]) + ROW_TABLE
                if size >= target_bytes:
                    self._commit(batch)
                    written += 1
                    batch, size = [], 0
            if batch:
                self._commit(batch)
                written += 1
            for shard in sources:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(shard.path)
                self._drop(self._by_name[shard.name])
            fsync_dir(self.shards_dir)
            self._segments = [_Segment.merge(self._segments, self._live)]
            return len(sources), written

    def _merge_on_close(self) -> None:
        small = self.settings.merge_small_bytes
        self.refresh(force=True)
        every = [sh.name for sh in self._shards if sh is not None and sh.size < small]
        if len(every) >= self.settings.compact_min_shards:
            lock = self.stage_lock("compact", settings=LockSettings(wait_s=0))
            try:
                lock.acquire()
            except StageLocked:
                return  # someone else is compacting
            try:
                self.compact(names=every)
            finally:
                lock.release()
            return
        own = [n for n in self._own if (sid := self._by_name.get(n)) is not None
               and (sh := self._shards[sid]) is not None and sh.size < small]
        if len(own) >= self.settings.merge_own_min_shards:
            self.compact(names=own)

    def stage_lock(self, stage: str, *, settings: LockSettings | None = None) -> StageLock:
        """The (not yet acquired) :class:`StageLock` of ``stage`` in this store's ``locks/``.

        For a job that must not run twice at once on this cache, e.g.
        ``with cache.stage_lock("embed/qasper/bge-small/G3"): ...``.
        """
        return StageLock(self.locks_dir / stage_lock_name(stage), settings=settings,
                         label=f"{stage!r} on the {self.label} {self.root}")

    def close(self) -> None:
        """Commit what is buffered; merge this writer's own small shards if there are many."""
        with self._mutex:
            if self._closed:
                return
            if not self.readonly:
                self.flush()
                try:
                    self._merge_on_close()
                except (StoreError, OSError) as exc:  # all is committed; merging is optional
                    log.warning("%s %s: merging small shards failed (%s)", self.label,
                                self.root, exc)
            self._closed = True
            _OPEN_STORES.discard(self)

    def __del__(self) -> None:
        # a store dropped without close() still commits what it holds (best effort)
        if getattr(self, "_pending", None) and not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):
                self.flush()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
