"""Maintenance of a store folder: garbage collection, quarantine, checking and merging shards.

* :func:`remove_garbage` deletes temporary files of writers that are gone;
* :func:`move_aside` moves a shard that failed its checks to ``quarantine/`` (or says how to
  delete it), with a warning naming both paths;
* :func:`check_shards` reads every record of some shards (what ``verify`` does);
* :func:`merge_records` and :func:`batches` are the two halves of compaction: the records of
  some shards merged (a key stored twice keeps its smallest value bytes, the rule every
  lookup follows too), then cut into shards of a target size.

The store (:class:`~structablate.store.folder.Store`) decides when each runs and keeps its
index in step; these functions touch only files and the shards handed to them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from structablate.store.files import host_key, pid_alive
from structablate.store.layout import Folder, is_temp, temp_writer
from structablate.store.shard import ROW_TABLE, CorruptShard, Shard

log = logging.getLogger(__name__)

OnCorrupt = Callable[[Path, str], None]
"""What to do with a shard that failed its checks: called with its path and the reason."""


def remove_garbage(folder: Folder, tmp_max_age_s: float) -> list[Path]:
    """Remove temporary files of writers that are gone; return what was removed.

    A temporary file (in ``shards/``, ``locks/`` or the root) is garbage when its writer's
    process is dead on this host (same hostname, boot and pid namespace) or when it is older
    than ``tmp_max_age_s`` seconds, whoever wrote it.
    """
    removed: list[Path] = []
    my_key = host_key()
    now = time.time()
    for where in (folder.shards_dir, folder.locks_dir, folder.root):
        try:
            entries = list(os.scandir(where))
        except FileNotFoundError:
            continue
        for e in entries:
            if not is_temp(e.name):
                continue
            try:
                age = now - e.stat(follow_symlinks=False).st_mtime
            except FileNotFoundError:
                continue
            dead = False
            writer = temp_writer(e.name)
            if writer is not None and writer[1] == my_key and writer[0] != os.getpid():
                dead = not pid_alive(writer[0])
            if dead or age > tmp_max_age_s:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(e.path)
                    removed.append(Path(e.path))
    if removed:
        log.info("%s %s: removed %d temporary file(s) of killed writers", folder.label,
                 folder.root, len(removed))
    return removed


def move_aside(folder: Folder, path: Path, reason: str, *, readonly: bool) -> None:
    """Move the corrupt shard ``path`` to ``quarantine/`` (a random suffix when the name is
    taken there), warning with both paths; read-only, only warn with how to delete it."""
    if readonly:
        log.warning("%s %s: shard %s is corrupt (%s); its records are ignored. Delete it "
                    "(rm %s) or run `python -m structablate.store verify %s` with write "
                    "access", folder.label, folder.root, path, reason, path, folder.root)
        return
    dest = folder.quarantine_dir / path.name
    try:
        folder.quarantine_dir.mkdir(exist_ok=True)
        if dest.exists():
            dest = dest.with_name(f"{path.name}.{secrets.token_hex(4)}")
        os.rename(path, dest)
    except FileNotFoundError:
        log.warning("%s: shard %s is corrupt (%s); another process already moved it aside",
                    folder.label, path, reason)
    except OSError as exc:
        log.warning("%s: shard %s is corrupt (%s) and could not be moved aside (%s); its "
                    "records are ignored and recomputed. Delete it by hand: rm %s",
                    folder.label, path, reason, exc, path)
    else:
        log.warning("%s: shard %s is corrupt (%s); moved it to %s, its records will be "
                    "recomputed", folder.label, path, reason, dest)


def check_shards(shards: Iterable[Shard], on_corrupt: OnCorrupt) -> tuple[int, int]:
    """Read every record of ``shards``, handing a shard that fails to ``on_corrupt``; return
    (shards whose records all passed their checks, records in them). A shard gone meanwhile
    counts as neither."""
    checked = records = 0
    for shard in shards:
        try:
            shard.read(np.arange(len(shard)))
        except CorruptShard as exc:
            on_corrupt(shard.path, str(exc))
            continue
        except FileNotFoundError:
            continue
        checked += 1
        records += len(shard)
    return checked, records


def merge_records(shards: Iterable[Shard],
                  on_corrupt: OnCorrupt) -> tuple[dict[bytes, bytes], list[Shard]]:
    """Every record of ``shards`` (a key stored twice keeps its smallest value bytes), and the
    shards they came from: a shard that fails its checks goes to ``on_corrupt`` and one gone
    meanwhile is left out, both from the records and from the sources."""
    merged: dict[bytes, bytes] = {}
    sources: list[Shard] = []
    for shard in shards:
        try:
            values = shard.read(np.arange(len(shard)))
        except CorruptShard as exc:
            on_corrupt(shard.path, str(exc))
            continue
        except FileNotFoundError:
            continue
        sources.append(shard)
        for row, v in enumerate(values):
            k = shard.keys[row].tobytes()
            prev = merged.get(k)
            if prev is None or bytes(v) < prev:
                merged[k] = bytes(v)
    return merged, sources


def batches(records: dict[bytes, bytes],
            target_bytes: int) -> Iterator[list[tuple[bytes, bytes]]]:
    """``records`` in key order, cut into runs of shards: a run ends once its values and row
    tables (:data:`~structablate.store.shard.ROW_TABLE` bytes a record) reach
    ``target_bytes``; the last run holds the rest."""
    batch: list[tuple[bytes, bytes]] = []
    size = 0
    for k in sorted(records):
        batch.append((k, records[k]))
        size += len(records[k]) + ROW_TABLE
        if size >= target_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
