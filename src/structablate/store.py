"""Content-addressed caches that many jobs on many nodes share safely, even over NFS.

A *store* is a folder. Nobody ever writes one shared database file: every writer (one process)
collects records in memory and commits them as an **immutable shard file** of its own, written
to a temporary name, ``fsync``-ed, and renamed into place in the same folder. A shard is either
absent or complete under its final name, so a reader — in this process or on another node —
never sees a partial record, and a writer killed with ``SIGKILL`` loses only the records it had
not yet committed (at most one batch). Readers list the folder and merge all shards.

The only primitives relied on are exclusive create (``O_EXCL``), ``link`` and ``rename``
within one folder, which NFS (v3 and v4) implements atomically on the server; there is no
``fcntl``/``flock`` locking and no file that two processes modify. Layout::

    <root>/STORE.json          format marker: {"format", "version", "kind"}
    <root>/shards/*.shard      immutable shards: <time_ns>_<host>_<pid>_<hostkey>_<token>_<seq>
    <root>/shards/.*.tmp       shards being written (a killed writer's are garbage, see gc)
    <root>/quarantine/         shards that failed their checksums, moved aside
    <root>/locks/              stage locks (StageLock), e.g. one per LLM stage

Shard format (little-endian): a 48-byte header (magic, version, kind, record count, data
offset, file size, checksum of the tables, checksum of the header), the tables (the record keys,
32 bytes each, sorted and unique; each value's length; a CRC-32 of each key + value), then the
values back to back. A shard whose header, tables or size do not check out, or whose record
fails its CRC when read, is moved to ``quarantine/`` with a warning naming both paths, and its
records count as missing, so the caller recomputes them.

Keys are 32-byte digests (see :func:`digest`). When two writers committed the same key (both
missed it at the same time), a reader takes the smallest value bytes: the choice depends only on
what is stored, never on shard names, timing or compaction. For the deterministic computations
cached here (batch-invariant embeddings, scores) the values are identical anyway.

Typed stores: :class:`VectorStore` (float32 vectors: the embedding cache), :class:`JsonStore`
(JSON records: the LLM generation cache) and :class:`ScoreStore` (one float64 per key: a
reranker score cache). :class:`StageLock` keeps two generators of one stage off one cache.

Maintenance (``python -m structablate.store --help``): ``info``, ``verify`` (reads every record),
``gc`` (removes temporary files of killed writers), ``compact`` (merges small shards) and
``import-sqlite`` (brings an SQLite cache of earlier versions into a store).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import socket
import struct
import sys
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from structablate.errors import StructablateError

log = logging.getLogger(__name__)

FORMAT = "structablate-store"
VERSION = 1
KEY_BYTES = 32
KINDS = {"bytes": 0, "vectors": 1, "json": 2, "float64": 3}

_MAGIC = b"SBSTORE\x01"
_HEADER = struct.Struct("<8sHHIQQQI")  # magic, version, kind, reserved, n, data_off, size, tcrc
_HEADER_SIZE = _HEADER.size + 4  # + header crc
_ROW_TABLE = KEY_BYTES + 8  # key, u32 length, u32 crc
_READ_GAP = 64 * 1024  # rows closer than this are read with one pread
_SQLITE_MAGIC = b"SQLite format 3\x00"


# --------------------------------------------------------------------------------------------
# settings and errors


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


@dataclass(frozen=True)
class LockSettings:
    """The stale-lock rule of :class:`StageLock`."""

    stale_after_s: float = 120.0
    """A lock whose heartbeat (the lock file's mtime) is older than this is stale (seconds).
    Keep it several heartbeats long, and above the clock skew between nodes."""
    heartbeat_s: float = 15.0
    """The holder refreshes the lock file's mtime this often (seconds)."""
    wait_s: float = 150.0
    """How long to wait for a holder before giving up (seconds). Longer than
    ``stale_after_s``, so a rerun on another node outwaits the lock of a holder that was killed
    (whose heartbeat stops) and fails only when the holder is alive; 0: fail at once."""


class StoreError(StructablateError, RuntimeError):
    """A cache folder cannot be used; the message names the path and what to do."""


class StoreUnwritable(StoreError, PermissionError):
    """The cache folder (or its parent) cannot be written."""


class CorruptShard(StructablateError):
    """A shard failed its checks (internal: the store quarantines it)."""


class StageLocked(StoreError):
    """Another live process holds the stage lock; the message names it."""

    def __init__(self, message: str, holder: dict[str, Any]):
        super().__init__(message)
        self.holder = holder


class StageLockLost(StoreError):
    """This process held the stage lock, and it was broken or taken since (a heartbeat that
    stalled longer than ``stale_after_s``, or a hand deleting the file): another process may be
    doing the same work, so the holder must stop generating."""


# --------------------------------------------------------------------------------------------
# host identity, names


def digest(*parts: str | bytes) -> bytes:
    """A 32-byte store key: sha256 of the parts, each UTF-8 encoded, joined with NUL bytes."""
    h = hashlib.sha256()
    for i, p in enumerate(parts):
        if i:
            h.update(b"\x00")
        h.update(p.encode("utf-8") if isinstance(p, str) else p)
    return h.digest()


def _hostname() -> str:
    return socket.gethostname() or "unknown-host"


def _host_identity() -> str:
    """Hostname + boot id + pid namespace: two processes with equal identities share pids."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    pidns = 0
    with contextlib.suppress(OSError):
        pidns = os.stat("/proc/self/ns/pid").st_ino
    return f"{_hostname()}|{boot}|{pidns}"


def _host_key(identity: str | None = None) -> str:
    return hashlib.sha1((identity or _host_identity()).encode()).hexdigest()[:8]


def _safe(name: str, limit: int = 48) -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "-", name)[:limit] or "x"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return False
    return True


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, chunks: Iterable[bytes | memoryview]) -> None:
    for chunk in chunks:
        view = memoryview(chunk).cast("B")
        while view:
            n = os.write(fd, view)
            view = view[n:]


def _pread_exact(fd: int, n: int, offset: int) -> bytes:
    parts = []
    while n > 0:
        b = os.pread(fd, n, offset)
        if not b:
            break
        parts.append(b)
        n -= len(b)
        offset += len(b)
    return b"".join(parts) if len(parts) != 1 else parts[0]


def _prefixes(keys: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each (n, 32) key as big-endian uint64 (sorts like the keys)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.ascontiguousarray(keys[:, :8]).view(">u8").ravel().astype(np.uint64)


def _key_matrix(keys: Sequence[bytes]) -> np.ndarray:
    for k in keys:
        if len(k) != KEY_BYTES:
            raise ValueError(f"store keys are {KEY_BYTES}-byte digests, got {len(k)} bytes")
    if not keys:
        return np.zeros((0, KEY_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)


# --------------------------------------------------------------------------------------------
# shards


def encode_shard(records: Sequence[tuple[bytes, bytes]], kind: str) -> list[bytes]:
    """The bytes of a shard holding ``records`` (sorted by key, keys unique), as chunks."""
    n = len(records)
    keys = b"".join(k for k, _ in records)
    lengths = np.fromiter((len(v) for _, v in records), dtype="<u4", count=n)
    crcs = np.fromiter((zlib.crc32(v, zlib.crc32(k)) for k, v in records), dtype="<u4", count=n)
    tables = keys + lengths.tobytes() + crcs.tobytes()
    data_off = _HEADER_SIZE + len(tables)
    size = data_off + int(lengths.sum(dtype=np.uint64))
    head = _HEADER.pack(_MAGIC, VERSION, KINDS[kind], 0, n, data_off, size, zlib.crc32(tables))
    head += struct.pack("<I", zlib.crc32(head))
    return [head, tables, *(v for _, v in records)]


class Shard:
    """A committed shard: its tables in memory, its values read on demand (CRC-checked)."""

    def __init__(self, path: Path, keys: np.ndarray, lengths: np.ndarray, crcs: np.ndarray,
                 data_off: int, size: int):
        self.path = path
        self.name = path.name
        self.keys = keys
        self.crcs = crcs
        self.offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.data_off = data_off
        self.size = size
        self._key_bytes: bytes | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def load(cls, path: Path, kind: str) -> Shard:
        """Read and check a shard's header and tables. Raises :class:`CorruptShard`."""
        with open(path, "rb") as fh:
            actual = os.fstat(fh.fileno()).st_size
            head = fh.read(_HEADER_SIZE)
            if len(head) < _HEADER_SIZE:
                raise CorruptShard(f"truncated: {actual} bytes, shorter than a shard header")
            magic, version, kcode, _, n, data_off, size, tcrc = _HEADER.unpack_from(head)
            if magic != _MAGIC:
                raise CorruptShard("not a store shard (bad magic bytes)")
            if zlib.crc32(head[:-4]) != struct.unpack_from("<I", head, _HEADER.size)[0]:
                raise CorruptShard("header checksum mismatch")
            if version > VERSION:
                raise StoreError(
                    f"{path}: shard format version {version} is newer than this structablate "
                    f"reads ({VERSION}); upgrade structablate or use another cache folder")
            if kcode != KINDS[kind]:
                names = {v: k for k, v in KINDS.items()}
                raise StoreError(
                    f"{path}: holds {names.get(kcode, kcode)!r} records, not {kind!r}: the "
                    "folder belongs to another cache; point this cache at its own folder")
            if actual != size:
                raise CorruptShard(f"truncated or extended: {actual} bytes, header says {size}")
            if data_off != _HEADER_SIZE + n * _ROW_TABLE:
                raise CorruptShard("inconsistent header (data offset)")
            tables = fh.read(n * _ROW_TABLE)
        if len(tables) != n * _ROW_TABLE or zlib.crc32(tables) != tcrc:
            raise CorruptShard("table checksum mismatch")
        keys = np.frombuffer(tables, dtype=np.uint8, count=n * KEY_BYTES).reshape(n, KEY_BYTES)
        lengths = np.frombuffer(tables, dtype="<u4", count=n, offset=n * KEY_BYTES)
        crcs = np.frombuffer(tables, dtype="<u4", count=n, offset=n * (KEY_BYTES + 4))
        shard = cls(path, keys, lengths, crcs, data_off, size)
        if int(shard.offsets[-1]) != size - data_off:
            raise CorruptShard("value lengths do not add up to the file size")
        pfx = _prefixes(keys)
        if n > 1 and not bool(np.all(pfx[1:] >= pfx[:-1])):
            raise CorruptShard("keys out of order")
        return shard

    def read(self, rows: np.ndarray) -> list[memoryview]:
        """Values of ``rows`` (ascending), CRC-checked. Raises :class:`CorruptShard`, OSError."""
        out: list[memoryview] = []
        n = len(rows)
        if n == 0:
            return out
        rows_l = rows.tolist()
        starts = self.offsets[rows].tolist()
        ends = self.offsets[rows + 1].tolist()
        crcs = self.crcs[rows].tolist()
        if self._key_bytes is None:
            self._key_bytes = self.keys.tobytes()
        kb = self._key_bytes
        crc32 = zlib.crc32
        fd = os.open(self.path, os.O_RDONLY)
        try:
            i = 0
            while i < n:
                j = i
                while j + 1 < n and starts[j + 1] - ends[j] <= _READ_GAP:
                    j += 1
                lo, hi = starts[i], ends[j]
                buf = _pread_exact(fd, hi - lo, self.data_off + lo)
                if len(buf) != hi - lo:
                    raise CorruptShard(f"truncated while reading (wanted {hi - lo} bytes at "
                                       f"{self.data_off + lo}, got {len(buf)})")
                mv = memoryview(buf)
                for r in range(i, j + 1):
                    row = rows_l[r]
                    v = mv[starts[r] - lo : ends[r] - lo]
                    kr = row * KEY_BYTES
                    if crc32(v, crc32(kb[kr : kr + KEY_BYTES])) != crcs[r]:
                        raise CorruptShard(f"record {row} fails its checksum")
                    out.append(v)
                i = j + 1
        finally:
            os.close(fd)
        return out


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
        return cls(_prefixes(shard.keys), shard.keys, np.full(n, sid, dtype=np.int32),
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


# --------------------------------------------------------------------------------------------
# the store


_OPEN_STORES: weakref.WeakSet[Store] = weakref.WeakSet()
_HELD_LOCKS: weakref.WeakSet[StageLock] = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:  # pragma: no cover - exercised by subprocess tests
    """A process that exits (normally or by an exception) commits and unlocks."""
    for store in list(_OPEN_STORES):
        with contextlib.suppress(Exception):
            store.flush()
    for lock in list(_HELD_LOCKS):
        with contextlib.suppress(Exception):
            lock.release()


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
        self._writer = (f"{_safe(_hostname())}_{self._pid}_{_host_key()}_"
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
            if head == _SQLITE_MAGIC:
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
                _write_all(fd, [json.dumps(want, sort_keys=True).encode() + b"\n"])
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
        qp = _prefixes(q)
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
            qi, sid, row = self._candidates(_key_matrix(keys))
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
                qi, _, _ = self._candidates(_key_matrix(keys))
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
                parts.append(_key_matrix(extra))
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
                _write_all(fd, [b"".join(chunks)])  # one write call, not one per record
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
        _fsync_dir(self.shards_dir)
        keys = _key_matrix([k for k, _ in records])
        lengths = np.fromiter((len(v) for _, v in records), dtype=np.uint32, count=len(records))
        head = chunks[0]
        _, _, _, _, _, data_off, size, _ = _HEADER.unpack_from(head)
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
        my_key = _host_key()
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
                size += len(merged[k]) + _ROW_TABLE
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
            _fsync_dir(self.shards_dir)
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


class VectorStore(Store):
    """float32 vectors (any length) by key: the embedding cache."""

    kind = "vectors"

    def get_vectors(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """Stored vectors (read-only float32 arrays) of the keys that have one."""
        return {k: np.frombuffer(v, dtype="<f4") for k, v in self.get_many(keys).items()}

    def put_vectors(self, items: Iterable[tuple[bytes, np.ndarray]]) -> int:
        """Buffer vectors (cast to little-endian float32); return how many were new."""
        return self.put_many((k, np.ascontiguousarray(v, dtype="<f4").tobytes())
                             for k, v in items)


class JsonStore(Store):
    """JSON records by key (stored as compact, key-sorted UTF-8 JSON): the LLM cache."""

    kind = "json"

    @staticmethod
    def encode(obj: Any) -> bytes:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")

    def get_json(self, key: bytes) -> Any | None:
        v = self.get(key)
        return None if v is None else json.loads(bytes(v))

    def put_json(self, key: bytes, obj: Any) -> bool:
        return self.put(key, self.encode(obj))


class ScoreStore(Store):
    """One float64 per key: a reranker score cache keyed by :meth:`key`."""

    kind = "float64"

    @staticmethod
    def key(model: str, precision: str, query_text: str, chunk_text: str) -> bytes:
        """The key of a (model, precision, query text, chunk text) score."""
        return digest("rerank-score-v1", model, precision, query_text, chunk_text)

    def get_scores(self, keys: Iterable[bytes]) -> dict[bytes, float]:
        return {k: struct.unpack("<d", v)[0] for k, v in self.get_many(keys).items()}

    def put_scores(self, items: Iterable[tuple[bytes, float]]) -> int:
        return self.put_many((k, struct.pack("<d", float(s))) for k, s in items)


def fill_found(found: Mapping[bytes, Any], keys: Sequence[bytes], rows: Sequence[int],
               place: Callable[[int, Any], None]) -> list[int]:
    """Hands each of ``rows`` whose key (``keys[row]``) is in ``found`` to ``place(row,
    value)``; returns the rows not found, in their order. The one cache-fill step of the
    embedding and reranking caches: look the rows up, keep what the store has."""
    still = []
    for i in rows:
        v = found.get(keys[i])
        if v is None:
            still.append(i)
        else:
            place(i, v)
    return still


# --------------------------------------------------------------------------------------------
# stage lock


class StageLock:
    """At most one live holder per lock file, across nodes; stale locks are broken.

    The lock file is created atomically, complete with its content (a temporary file linked to
    the lock name: ``link`` fails if the name exists, like ``O_EXCL``; where the filesystem has
    no hard links, ``O_EXCL`` create). It holds the holder's pid, host, start time and a random
    token. The holder touches the file every ``heartbeat_s`` from a daemon thread. A lock is
    stale when its holder runs on this host (same hostname, boot and pid namespace) and its
    pid is dead, or when its heartbeat is older than ``stale_after_s``; a stale lock is renamed
    aside (atomic: one process wins) and the acquisition retried. Otherwise :meth:`acquire`
    raises :class:`StageLocked` naming the holder.
    """

    def __init__(self, path: str | os.PathLike[str], *, settings: LockSettings | None = None,
                 label: str = "stage"):
        self.path = Path(path)
        self.settings = settings or LockSettings()
        self.label = label
        self.token: str | None = None
        self.broken: list[dict[str, Any]] = []
        """Holders of stale locks this instance broke."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    @property
    def held(self) -> bool:
        return self.token is not None

    def _content(self, token: str) -> bytes:
        now = time.time()
        info = {"pid": os.getpid(), "host": _hostname(), "host_identity": _host_identity(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                "started_ts": now, "token": token, "label": self.label,
                "argv": " ".join(sys.argv)[:300]}
        return json.dumps(info, sort_keys=True).encode() + b"\n"

    def read_holder(self) -> dict[str, Any] | None:
        """The current holder's record (``mtime`` added), ``{}`` if unreadable, None if free."""
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                raw = fh.read(65536)
        except FileNotFoundError:
            return None
        try:
            info = json.loads(raw)
            if not isinstance(info, dict):
                info = {}
        except ValueError:
            info = {}
        info["mtime"] = st.st_mtime
        return info

    def _stale_reason(self, holder: dict[str, Any]) -> str | None:
        age = time.time() - float(holder.get("mtime", 0.0))
        if holder.get("host_identity") == _host_identity() and "pid" in holder:
            pid = int(holder["pid"])
            if pid != os.getpid() and not pid_alive(pid):
                return f"its process {pid} on this host is gone"
        if age > self.settings.stale_after_s:
            return (f"no heartbeat for {age:.0f} s (more than {self.settings.stale_after_s:.0f} "
                    "s)")
        return None

    def _try_create(self, token: str) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}_{os.getpid()}_{_host_key()}_{token}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            _write_all(fd, [self._content(token)])
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                                     errno.EMLINK):
                    raise
                return self._try_create_excl(token)
            # a lost reply over NFS can make a successful link look failed: trust the count
            return os.stat(tmp).st_nlink == 2
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _try_create_excl(self, token: str) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
        try:
            _write_all(fd, [self._content(token)])
            os.fsync(fd)
        finally:
            os.close(fd)
        return True

    def _break(self, holder: dict[str, Any], reason: str) -> None:
        aside = self.path.with_name(f".{self.path.name}.stale_{secrets.token_hex(4)}.tmp")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # someone else broke or released it
        moved = self.read_holder_at(aside)
        if moved.get("token") != holder.get("token"):
            # the lock changed hands between our look and the rename: put the new one back
            with contextlib.suppress(OSError):
                os.link(aside, self.path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(aside)
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)
        self.broken.append(holder)
        log.warning("%s: broke the stale lock %s of pid %s on %s (started %s): %s", self.label,
                    self.path, holder.get("pid", "?"), holder.get("host", "?"),
                    holder.get("started", "?"), reason)

    @staticmethod
    def read_holder_at(path: Path) -> dict[str, Any]:
        try:
            return json.loads(path.read_bytes())
        except (OSError, ValueError):
            return {}

    def describe(self, holder: dict[str, Any]) -> str:
        beat = time.time() - float(holder.get("mtime", time.time()))
        return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
                f"{holder.get('started', '?')}, last heartbeat {beat:.0f} s ago")

    def acquire(self) -> StageLock:
        """Take the lock (breaking a stale one); raise :class:`StageLocked` if it is held."""
        if self.held:
            return self
        deadline = time.monotonic() + self.settings.wait_s
        token = secrets.token_hex(8)
        while True:
            try:
                ok = self._try_create(token)
            except OSError as exc:
                raise StoreUnwritable(
                    f"{self.label}: cannot create the lock {self.path} ({exc.strerror or exc}); "
                    "make its folder writable") from exc
            if ok:
                self.token = token
                self._start_heartbeat()
                _HELD_LOCKS.add(self)
                return self
            holder = self.read_holder()
            if holder is None:
                continue  # released meanwhile
            reason = self._stale_reason(holder)
            if reason is not None:
                self._break(holder, reason)
                continue
            if time.monotonic() < deadline:
                poll = min(5.0, self.settings.stale_after_s / 4, deadline - time.monotonic())
                time.sleep(max(0.05, poll))
                continue
            raise StageLocked(
                f"{self.label} is already running elsewhere: the lock {self.path} is held by "
                f"{self.describe(holder)}. Two generators would do the same work twice. Wait "
                f"for it to finish or stop it (on {holder.get('host', '?')}: kill "
                f"{holder.get('pid', '?')}); if that process no longer exists, delete "
                f"{self.path}. A lock without heartbeat for "
                f"{self.settings.stale_after_s:.0f} s is broken automatically.", holder)

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        t = threading.Thread(target=self._beat, name=f"heartbeat {self.path.name}", daemon=True)
        self._thread = t
        t.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            holder = self.read_holder()
            if holder is None or holder.get("token") != self.token:
                self.lost = True
                log.warning("%s: lost the lock %s (now %s); another process may be doing this "
                            "stage's work too", self.label, self.path,
                            "free" if holder is None else self.describe(holder))
                return
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def ensure_held(self) -> None:
        """Raise :class:`StageLockLost` unless this instance still holds its lock: the lock
        file is there with this holder's token. A holder calls it before each generation (a
        read of one small file), so when another process broke the lock — this one's
        heartbeat stalled past ``stale_after_s``, say under a frozen filesystem — this one stops
        instead of generating side by side with the new holder. The heartbeat thread's finding
        (:attr:`lost`) counts too."""
        if not self.held:
            return
        holder = self.read_holder()
        if self.lost or holder is None or holder.get("token") != self.token:
            self.lost = True
            raise StageLockLost(
                f"{self.label}: lost the lock {self.path} "
                + ("(it was deleted)" if holder is None else
                   f"(now held by {self.describe(holder)})")
                + "; stopping so that two processes do not generate the same work; the "
                "other holder (or a rerun) continues from what this one committed")

    def release(self) -> None:
        """Give the lock up (only if this instance still holds it)."""
        if not self.held:
            return
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        holder = self.read_holder()
        if holder is not None and holder.get("token") == self.token:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.token = None
        _HELD_LOCKS.discard(self)

    def __enter__(self) -> StageLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def stage_lock_name(stage: str) -> str:
    """A file name for a stage's lock (``induction`` → ``induction.lock``)."""
    return f"{_safe(stage, 120)}.lock"


# --------------------------------------------------------------------------------------------
# import of the SQLite caches of earlier versions


def import_sqlite(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> tuple[str, int]:
    """Copy an SQLite cache of earlier versions into a store folder.

    ``embeddings.sqlite`` (table ``vectors``) becomes a :class:`VectorStore`,
    ``generations.sqlite`` (table ``generations``) a :class:`JsonStore` of LLM records.
    Returns (kind, records copied). A damaged file raises :class:`StoreError` naming it.
    """
    import sqlite3

    src = Path(src)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such SQLite cache")
    try:
        con = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "vectors" in tables:
            store: Store = VectorStore(dst, label="embedding cache")
            n = 0
            rows = con.execute("SELECT key, dim, data FROM vectors")
            while batch := rows.fetchmany(4096):
                n += store.put_many((bytes(k), bytes(d)) for k, _, d in batch)
            kind = "vectors"
        elif "generations" in tables:
            store = JsonStore(dst, label="LLM cache")
            n = 0
            rows = con.execute("SELECT key, request, response FROM generations ORDER BY rowid")
            while batch := rows.fetchmany(1024):
                n += store.put_many(
                    (key_from_hex(k), JsonStore.encode({"key": k, "request": json.loads(rq),
                                                    "response": json.loads(rs)}))
                    for k, rq, rs in batch)
            kind = "json"
        else:
            raise StoreError(f"{src}: neither an embedding nor an LLM cache (tables {tables})")
        store.close()
        con.close()
        return kind, n
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{src}: the SQLite cache is damaged ({exc}); it cannot be imported. "
                         "Delete it: the new cache is refilled by the next run") from exc


def key_from_hex(key: str) -> bytes:
    """The store key of a string key: a sha256 hex digest as its 32 bytes, else its digest."""
    if len(key) == 64:
        with contextlib.suppress(ValueError):
            return bytes.fromhex(key)
    return digest("llm-key", key)


# --------------------------------------------------------------------------------------------
# command line


def _open_any(path: str, readonly: bool = False) -> Store:
    marker = Path(path) / "STORE.json"
    try:
        kind = json.loads(marker.read_text())["kind"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"{path}: not a store folder ({marker}: {exc})") from exc
    cls = {"vectors": VectorStore, "json": JsonStore, "float64": ScoreStore}.get(kind, Store)
    return cls(path, readonly=readonly)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m structablate.store",
                                 description="Inspect and maintain structablate cache folders.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, text in [("info", "count shards and records"),
                       ("verify", "read every record; move corrupt shards to quarantine/"),
                       ("gc", "remove temporary files of killed writers"),
                       ("compact", "merge small shards (run while no job writes, or any time)")]:
        sub.add_parser(name, help=text).add_argument("path")
    imp = sub.add_parser("import-sqlite", help="copy an earlier SQLite cache into a store folder")
    imp.add_argument("src")
    imp.add_argument("dst")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if args.cmd == "import-sqlite":
        kind, n = import_sqlite(args.src, args.dst)
        print(f"imported {n} {kind} records from {args.src} into {args.dst}")
        return 0
    store = _open_any(args.path, readonly=args.cmd == "info")
    if args.cmd == "info":
        paths = store.shard_paths()
        size = sum(p.stat().st_size for p in paths)
        print(json.dumps({"kind": store.kind, "shards": len(paths), "bytes": size,
                          "records": len(store)}, indent=2))
    elif args.cmd == "verify":
        print(json.dumps(store.verify(), indent=2))
    elif args.cmd == "gc":
        print(f"removed {len(store.gc())} temporary file(s)")
    elif args.cmd == "compact":
        with store.stage_lock("compact", settings=LockSettings(wait_s=0)):
            merged, written = store.compact()
        print(f"merged {merged} shards into {written}")
    store.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = [
    "CorruptShard",
    "JsonStore",
    "LockSettings",
    "ScoreStore",
    "StageLock",
    "StageLockLost",
    "StageLocked",
    "Store",
    "StoreError",
    "StoreSettings",
    "StoreUnwritable",
    "VectorStore",
    "digest",
    "import_sqlite",
    "key_from_hex",
    "pid_alive",
    "stage_lock_name",
]
