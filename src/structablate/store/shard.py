"""The shard: the one on-disk format of every cache, and the 32-byte keys it holds.

A shard is an immutable file holding records (key -> value bytes) of one *kind* (``bytes``,
``vectors``, ``json``, ``float64``). Its layout, little-endian, never changes within
:data:`VERSION` (caches written by earlier releases must keep being read):

* a 48-byte header: magic ``SBSTORE\\x01`` (8 bytes), version (u16), kind code (u16, see
  :data:`KINDS`), reserved (u32, 0), record count ``n`` (u64), data offset (u64), file size
  in bytes (u64), CRC-32 of the tables (u32), then the CRC-32 of those 44 bytes (u32);
* the tables: the ``n`` keys (32 bytes each, sorted ascending and unique), each value's
  length in bytes (``n`` × u32), a CRC-32 of each key followed by its value (``n`` × u32);
* the values, back to back in key order, from the data offset to the end of the file.

Invariants :meth:`Shard.load` checks (a shard that breaks one raises :class:`CorruptShard`
and is quarantined by its store): the magic and both checksums match, the file size is the one
the header states, the data offset is ``48 + 40 n``, the value lengths add up to the file
size, and the keys are in order. A record is checked against its CRC each time it is read.

Keys are 32-byte digests (:func:`digest`); :func:`key_prefixes` maps each to its first 8
bytes as a big-endian u64, which sorts like the keys and serves the stores' lookup tables.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from structablate.errors import StructablateError
from structablate.store.files import StoreError, pread_exact

FORMAT = "structablate-store"
"""The ``format`` of a store folder's ``STORE.json`` marker."""
VERSION = 1
"""The shard and marker format version this code writes and the newest it reads."""
KEY_BYTES = 32
KINDS = {"bytes": 0, "vectors": 1, "json": 2, "float64": 3}
"""Record kind -> the kind code in a shard header."""

MAGIC = b"SBSTORE\x01"
HEADER = struct.Struct("<8sHHIQQQI")  # magic, version, kind, reserved, n, data_off, size, tcrc
HEADER_SIZE = HEADER.size + 4  # + header crc
ROW_TABLE = KEY_BYTES + 8  # key, u32 length, u32 crc
READ_GAP = 64 * 1024  # rows closer than this are read with one pread


class CorruptShard(StructablateError):
    """A shard failed its checks (internal: the store quarantines it)."""


def digest(*parts: str | bytes) -> bytes:
    """A 32-byte store key: sha256 of the parts, each UTF-8 encoded, joined with NUL bytes."""
    h = hashlib.sha256()
    for i, p in enumerate(parts):
        if i:
            h.update(b"\x00")
        h.update(p.encode("utf-8") if isinstance(p, str) else p)
    return h.digest()


def key_from_hex(key: str) -> bytes:
    """The store key of a string key: a sha256 hex digest as its 32 bytes, else its digest."""
    if len(key) == 64:
        with contextlib.suppress(ValueError):
            return bytes.fromhex(key)
    return digest("llm-key", key)


def key_prefixes(keys: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each (n, 32) key as big-endian uint64 (sorts like the keys)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.ascontiguousarray(keys[:, :8]).view(">u8").ravel().astype(np.uint64)


def key_matrix(keys: Sequence[bytes]) -> np.ndarray:
    """``keys`` (32-byte digests) as an (n, 32) uint8 matrix; ValueError for another length."""
    for k in keys:
        if len(k) != KEY_BYTES:
            raise ValueError(f"store keys are {KEY_BYTES}-byte digests, got {len(k)} bytes")
    if not keys:
        return np.zeros((0, KEY_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)


def encode_shard(records: Sequence[tuple[bytes, bytes]], kind: str) -> list[bytes]:
    """The bytes of a shard holding ``records`` (sorted by key, keys unique), as chunks."""
    n = len(records)
    keys = b"".join(k for k, _ in records)
    lengths = np.fromiter((len(v) for _, v in records), dtype="<u4", count=n)
    crcs = np.fromiter((zlib.crc32(v, zlib.crc32(k)) for k, v in records), dtype="<u4", count=n)
    tables = keys + lengths.tobytes() + crcs.tobytes()
    data_off = HEADER_SIZE + len(tables)
    size = data_off + int(lengths.sum(dtype=np.uint64))
    head = HEADER.pack(MAGIC, VERSION, KINDS[kind], 0, n, data_off, size, zlib.crc32(tables))
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
            head = fh.read(HEADER_SIZE)
            if len(head) < HEADER_SIZE:
                raise CorruptShard(f"truncated: {actual} bytes, shorter than a shard header")
            magic, version, kcode, _, n, data_off, size, tcrc = HEADER.unpack_from(head)
            if magic != MAGIC:
                raise CorruptShard("not a store shard (bad magic bytes)")
            if zlib.crc32(head[:-4]) != struct.unpack_from("<I", head, HEADER.size)[0]:
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
            if data_off != HEADER_SIZE + n * ROW_TABLE:
                raise CorruptShard("inconsistent header (data offset)")
            tables = fh.read(n * ROW_TABLE)
        if len(tables) != n * ROW_TABLE or zlib.crc32(tables) != tcrc:
            raise CorruptShard("table checksum mismatch")
        keys = np.frombuffer(tables, dtype=np.uint8, count=n * KEY_BYTES).reshape(n, KEY_BYTES)
        lengths = np.frombuffer(tables, dtype="<u4", count=n, offset=n * KEY_BYTES)
        crcs = np.frombuffer(tables, dtype="<u4", count=n, offset=n * (KEY_BYTES + 4))
        shard = cls(path, keys, lengths, crcs, data_off, size)
        if int(shard.offsets[-1]) != size - data_off:
            raise CorruptShard("value lengths do not add up to the file size")
        pfx = key_prefixes(keys)
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
                while j + 1 < n and starts[j + 1] - ends[j] <= READ_GAP:
                    j += 1
                lo, hi = starts[i], ends[j]
                buf = pread_exact(fd, hi - lo, self.data_off + lo)
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
