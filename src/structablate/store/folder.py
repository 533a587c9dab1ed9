"""The store: a folder of immutable shards mapping 32-byte keys to byte values.

Nobody ever writes one shared database file. Each :class:`Store` instance is one writer: it
buffers records in memory and commits them as a shard file of its own (written under a
temporary name, ``fsync``-ed, renamed into place in the same folder), so a shard is either
absent or complete, and a writer killed with ``SIGKILL`` loses only what it had not committed
(bounded by :class:`StoreSettings`). Readers list the folder and merge every shard; a miss lists
it again (at most every ``rescan_s`` seconds) for shards other writers committed meanwhile.
The folder's layout is :mod:`structablate.store.layout`'s.

Invariants: a key stored twice (two writers missed it at the same time) reads as its smallest
value bytes, whatever the shard names, timing or compaction; a shard that fails its checks is
moved to ``quarantine/`` with a warning naming both paths, and its records count as missing
(the caller recomputes them); compaction commits the merged shards before deleting their
sources, so a concurrent reader always finds every record. The only filesystem primitives
relied on are exclusive create, ``link`` and ``rename`` within one folder (atomic on NFS v3
and v4); the shard bytes are :mod:`structablate.store.shard`'s.

:class:`Store` is the one entry point and keeps these invariants; each concern's mechanics is
a module of its own: :mod:`~structablate.store.layout` (the folder, its marker and file names,
the checks on opening), :mod:`~structablate.store.index` (the committed shards known and the
key lookup), :mod:`~structablate.store.commit` (the write buffer and the commit of a shard),
:mod:`~structablate.store.maintenance` (garbage, quarantine, verification, compaction).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from structablate.store.commit import PendingRecords, write_shard
from structablate.store.files import StoreError, fsync_dir
from structablate.store.index import ShardIndex
from structablate.store.layout import Folder, new_writer_id, shard_name
from structablate.store.lock import LockSettings, StageLock, StageLocked, stage_lock_name
from structablate.store.maintenance import (
    batches,
    check_shards,
    merge_records,
    move_aside,
    remove_garbage,
)
from structablate.store.shard import CorruptShard, Shard, key_matrix

log = logging.getLogger(__name__)


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
    ``folder`` is its :class:`~structablate.store.layout.Folder`.
    """

    kind = "bytes"

    def __init__(self, root: str | os.PathLike[str], *, readonly: bool = False,
                 settings: StoreSettings | None = None, label: str = "cache",
                 setting: str = "the cache setting"):
        self.folder = Folder(Path(root), self.kind, label, setting)
        self.root = self.folder.root
        self.label = label
        self.setting = setting
        self.readonly = readonly
        self.settings = settings or StoreSettings()
        self.shards_dir = self.folder.shards_dir
        self.quarantine_dir = self.folder.quarantine_dir
        self.locks_dir = self.folder.locks_dir
        self.quarantined: list[str] = []
        """Paths of shards this instance found corrupt (moved to ``quarantine/`` if possible)."""
        self._mutex = threading.RLock()
        self._index = ShardIndex()
        self._pending = PendingRecords()
        self._written: set[bytes] = set()
        """Keys this instance committed (a lookup finds them without listing the folder)."""
        self._own: list[str] = []
        """File names of the shards this instance committed."""
        self._last_scan = 0.0
        self._pid = -1
        self._writer = ""
        self._seq = 0
        self._new_writer_id()
        self._closed = False
        self.folder.open(readonly=readonly, writer=self._writer)
        self.refresh(force=True)
        if not readonly:
            self.gc()
            _OPEN_STORES.add(self)

    def _new_writer_id(self) -> None:
        """Shard names carry host, pid and a random token: unique per writing process."""
        self._pid = os.getpid()
        self._writer = new_writer_id()
        self._seq = 0

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
            names = self.folder.shard_names()
            present = set(names)
            index = self._index
            for name, sid in index.by_name.items():
                if name not in present and index.live[sid]:
                    index.drop(sid)
            added = 0
            for name in names:
                if name in index.by_name:
                    continue
                shard = self._load(self.shards_dir / name)
                if shard is not None:
                    index.add(shard, merge=False)
                    added += 1
            index.merge_segments()
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

    def _quarantine(self, path: Path, reason: str) -> None:
        """Count the shard at ``path`` as corrupt: out of the index (its records are missing)
        and moved aside (:func:`~structablate.store.maintenance.move_aside`)."""
        self.quarantined.append(str(path))
        sid = self._index.by_name.get(path.name)
        if sid is not None:
            shard = self._index.shards[sid]
            if shard is not None and path.name in self._own:  # ours: let puts store them again
                self._written.difference_update(k.tobytes() for k in shard.keys)
            self._index.drop(sid)
        else:
            self._index.add_dead(path.name)
        move_aside(self.folder, path, reason, readonly=self.readonly)

    # -- reading -------------------------------------------------------------------------------

    def _lookup(self, keys: Sequence[bytes]) -> tuple[dict[bytes, memoryview], list[bytes]]:
        """Values of stored ``keys``; and the keys to retry after a refresh (shard vanished)."""
        found: dict[bytes, memoryview] = {}
        retry: set[int] = set()
        for s, rows, qis in self._index.locate(keys):
            shard = self._index.shards[s]
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
                self._index.drop(s)  # compacted away by another process: look again
                retry.update(int(i) for i in qis)
                continue
            for i, v in zip(qis.tolist(), values, strict=True):
                k = keys[i]
                prev = found.get(k)
                if prev is None or bytes(v) < bytes(prev):
                    found[k] = v
        return found, [keys[i] for i in sorted(retry) if keys[i] not in found]

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
                qi, _, _ = self._index.candidates(key_matrix(keys))
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
            return self._index.distinct_keys(
                [k for k in self._pending.records if k not in self._written])

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
            return [s.path for s in self._index.live_shards()]

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
                self._pending.add(k, v)
                added += 1
                if self._pending.full(s.flush_records, s.flush_bytes):
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
        if (self._pending.full(s.flush_records, s.flush_bytes)
                or self._pending.older_than(s.flush_s)):
            self.flush()

    def flush(self) -> Path | None:
        """Commit the buffered records as one shard; return its path (None if nothing to do)."""
        with self._mutex:
            if not self._pending:
                return None
            path = self._commit(self._pending.sorted_records())
            self._written.update(self._pending.records)
            self._pending.clear()
            return path

    def _commit(self, records: Sequence[tuple[bytes, bytes]]) -> Path:
        """Write ``records`` (sorted, keys unique) as a shard of this writer and index it."""
        if os.getpid() != self._pid:  # a forked child: never reuse the parent's shard names
            self._new_writer_id()
        self._seq += 1
        name = shard_name(self._writer, self._seq)
        shard = write_shard(self.folder, name, records)
        self._index.add(shard)
        self._own.append(name)
        return shard.path

    # -- maintenance ---------------------------------------------------------------------------

    def gc(self) -> list[Path]:
        """Remove temporary files of writers that are gone; return what was removed.

        A temporary file is garbage when its writer's process is dead on this host (same
        hostname, boot and pid namespace) or when it is older than ``tmp_max_age_s``.
        """
        if self.readonly:
            return []
        return remove_garbage(self.folder, self.settings.tmp_max_age_s)

    def verify(self) -> dict[str, Any]:
        """Read every record of every shard; quarantine what fails. Returns a summary."""
        with self._mutex:
            self.refresh(force=True)
            checked, records = check_shards(self._index.live_shards(), self._quarantine)
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
            chosen = [s for s in self._index.live_shards() if (
                s.name in names if names is not None
                else s.size < self.settings.merge_small_bytes)]
            if len(chosen) < 2:
                return 0, 0
            merged, sources = merge_records(chosen, self._quarantine)
            if len(sources) < 2:
                return 0, 0
            written = 0
            for batch in batches(merged, target_bytes):
                self._commit(batch)
                written += 1
            for shard in sources:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(shard.path)
                self._index.drop(self._index.by_name[shard.name])
            fsync_dir(self.shards_dir)
            self._index.merge_segments(force=True)
            return len(sources), written

    def _merge_on_close(self) -> None:
        small = self.settings.merge_small_bytes
        self.refresh(force=True)
        every = [sh.name for sh in self._index.live_shards() if sh.size < small]
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
        own = [n for n in self._own if (sid := self._index.by_name.get(n)) is not None
               and (sh := self._index.shards[sid]) is not None and sh.size < small]
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
