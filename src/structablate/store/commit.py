"""Writing: a writer's buffer of uncommitted records, and the commit of a shard.

A commit writes the shard's bytes (:func:`~structablate.store.shard.encode_shard`) to a
temporary name in ``shards/`` with one write call, ``fsync``-s it, renames it to its final
name and ``fsync``-s the folder, so a shard is either absent or complete under its name. A
failed commit leaves no file behind and raises :class:`StoreUnwritable` naming the shard and
what to do; the caller keeps its buffer, so a later commit can succeed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Sequence

import numpy as np

from structablate.store.files import StoreUnwritable, fsync_dir, write_new
from structablate.store.layout import Folder, temp_name
from structablate.store.shard import HEADER, KEY_BYTES, Shard, encode_shard, key_matrix


class PendingRecords:
    """The records one writer buffered and has not committed: key -> value bytes, their
    value bytes in all, and when the oldest was buffered (``time.monotonic`` seconds)."""

    def __init__(self) -> None:
        self.records: dict[bytes, bytes] = {}
        self.bytes = 0
        self.since: float | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: bytes) -> bool:
        return key in self.records

    def get(self, key: bytes) -> bytes | None:
        return self.records.get(key)

    def add(self, key: bytes, value: bytes) -> None:
        if self.since is None:
            self.since = time.monotonic()
        self.records[key] = value
        self.bytes += len(value)

    def full(self, records: int, size: int) -> bool:
        """Whether the buffer holds ``records`` records or ``size`` value bytes."""
        return len(self.records) >= records or self.bytes >= size

    def older_than(self, seconds: float) -> bool:
        """Whether the oldest buffered record is ``seconds`` old."""
        return time.monotonic() - (self.since or 0.0) >= seconds

    def sorted_records(self) -> list[tuple[bytes, bytes]]:
        """The records in key order, as a shard holds them."""
        return sorted(self.records.items())

    def clear(self) -> None:
        self.records.clear()
        self.bytes = 0
        self.since = None


def write_shard(folder: Folder, name: str, records: Sequence[tuple[bytes, bytes]]) -> Shard:
    """Commit ``records`` (sorted by key, keys unique) as the shard ``name`` of ``folder``
    (module docstring); return it as loaded, without reading it back."""
    final = folder.shards_dir / name
    tmp = folder.shards_dir / temp_name(name)
    chunks = encode_shard(records, folder.kind)
    try:
        write_new(tmp, b"".join(chunks))  # one write call, not one per record
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
        hint = (f"free space on that filesystem or point {folder.setting} elsewhere"
                if exc.errno in (errno.ENOSPC, errno.EDQUOT) else
                f"make it writable (e.g. `chmod -R u+w {folder.root}`) or point "
                f"{folder.setting} elsewhere")
        raise StoreUnwritable(
            f"{folder.label} {folder.root}: cannot write shard {final} "
            f"({exc.strerror or exc}); {hint}. {folder.what_to_do()}") from exc
    fsync_dir(folder.shards_dir)
    keys = key_matrix([k for k, _ in records])
    lengths = np.fromiter((len(v) for _, v in records), dtype=np.uint32, count=len(records))
    _, _, _, _, _, data_off, size, _ = HEADER.unpack_from(chunks[0])
    crcs = np.frombuffer(chunks[1], dtype="<u4", count=len(records),
                         offset=len(records) * (KEY_BYTES + 4))
    return Shard(final, keys, lengths, crcs, data_off, size)
