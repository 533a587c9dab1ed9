"""The store folder on disk: its marker, its subfolders, the names of its files, and the checks
a store makes when it opens a folder.

Layout (format :data:`~structablate.store.shard.VERSION`; a folder written by any release of
that version reads the same)::

    <root>/STORE.json          format marker: {"format", "version", "kind"} as key-sorted JSON
                               and a newline
    <root>/shards/*.shard      immutable shards: <time_ns>_<writer id>_<seq>.shard
    <root>/shards/.*.tmp       shards being written (a killed writer's are garbage)
    <root>/quarantine/         shards that failed their checks, moved aside
    <root>/locks/              stage locks (:mod:`structablate.store.lock`)

A *writer id* is ``<host>_<pid>_<host key>_<token>`` (:func:`new_writer_id`): host name made
safe for a file name, process id, the 8-hex-digit :func:`~structablate.store.files.host_key`
and 8 random hex digits, so no two writing processes ever choose the same shard name. A shard
name starts with the commit time in nanoseconds since the epoch (19 digits) and ends with the
writer's commit count (6 digits, from 1). Every temporary file (a shard being written, the
marker being created, the writability probe, a lock being taken) carries ``_<pid>_<host key>_``
followed by 8 or more hex digits, which :func:`temp_writer` reads back for garbage collection.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from structablate.store.files import (
    StoreError,
    StoreUnwritable,
    host_key,
    hostname,
    safe_name,
    write_new,
)
from structablate.store.shard import FORMAT, VERSION

MARKER = "STORE.json"
"""The format marker's file name, in the store's root."""
SUBFOLDERS = ("shards", "quarantine", "locks")
"""The store's own subfolders: committed shards, quarantined shards, stage locks."""
SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of an SQLite file: the caches of earlier versions (refused on opening)."""

_TEMP_WRITER = re.compile(r"_(\d+)_([0-9a-f]{8})_[0-9a-f]{8}")


def new_writer_id() -> str:
    """A fresh writer id for this process (module docstring): host, pid, host key, token."""
    return f"{safe_name(hostname())}_{os.getpid()}_{host_key()}_{secrets.token_hex(4)}"


def shard_name(writer: str, seq: int) -> str:
    """The file name of a writer's ``seq``-th shard (from 1), stamped with the time now."""
    return f"{time.time_ns():019d}_{writer}_{seq:06d}.shard"


def temp_name(name: str) -> str:
    """The temporary name a file ``name`` is written under before its rename."""
    return f".{name}.tmp"


def is_temp(name: str) -> bool:
    """Whether ``name`` is a temporary file of a store or lock writer."""
    return name.startswith(".") and name.endswith(".tmp")


def temp_writer(name: str) -> tuple[int, str] | None:
    """(pid, host key) of the process that wrote the temporary file ``name``, None when its
    name does not say."""
    m = _TEMP_WRITER.search(name)
    return (int(m.group(1)), m.group(2)) if m else None


@dataclass(frozen=True)
class Folder:
    """One store folder: where its parts are, and the checks of :meth:`open`.

    ``kind`` is the record kind its shards hold (:data:`~structablate.store.shard.KINDS`),
    ``label`` names the cache in messages (``"embedding cache"``), ``setting`` the
    configuration key that chooses the folder (``"llm.cache"``).
    """

    root: Path
    kind: str
    label: str
    setting: str

    @property
    def shards_dir(self) -> Path:
        return self.root / "shards"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / "quarantine"

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    def what_to_do(self) -> str:
        """The advice every refusal ends with: the cache can always be rebuilt."""
        return (f"The {self.label} only saves recomputation: deleting or moving {self.root} is "
                "safe (it is rebuilt).")

    def shard_names(self) -> list[str]:
        """The committed shards' file names, sorted (none when ``shards/`` is missing)."""
        try:
            return sorted(e.name for e in os.scandir(self.shards_dir)
                          if e.name.endswith(".shard") and not e.name.startswith("."))
        except FileNotFoundError:
            return []

    def open(self, *, readonly: bool, writer: str) -> None:
        """Check that the folder can be this store, and create it when writing.

        Refuses (:class:`StoreError`) an SQLite file of an earlier version, any other file, a
        folder holding files of something else, or a marker of another format, kind or a newer
        version; a read-only open of a missing folder raises FileNotFoundError. For writing,
        creates ``shards/`` and the marker and probes that ``shards/`` takes a new file
        (:class:`StoreUnwritable` naming the folder to make writable otherwise).
        """
        root = self.root
        if root.exists() and not root.is_dir():
            with open(root, "rb") as fh:
                head = fh.read(16)
            if head == SQLITE_MAGIC:
                raise StoreError(
                    f"{self.label} {root} is an SQLite file of an earlier structablate; caches "
                    "are now folders of shards (safe on network filesystems). Import it with "
                    f"`python -m structablate.store import-sqlite {root} <new folder>` and point "
                    f"{self.setting} at the new folder, or delete it. {self.what_to_do()}")
            raise StoreError(f"{self.label} {root} is a file, not a cache folder: point "
                             f"{self.setting} at a folder (created if missing)")
        if root.is_dir() and not (root / MARKER).exists():
            foreign = sorted(e.name for e in os.scandir(root) if not e.name.startswith(".")
                             and e.name not in SUBFOLDERS)
            if foreign:
                raise StoreError(
                    f"{self.label} {root} is a folder with other files ({', '.join(foreign[:3])}"
                    f"{', ...' if len(foreign) > 3 else ''}), not a cache: point {self.setting} "
                    "at an empty or new folder")
        if readonly:
            if not root.is_dir():
                raise FileNotFoundError(f"{self.label} {root} does not exist")
            self.check_marker(create=False, writer=writer)
            return
        try:
            self.shards_dir.mkdir(parents=True, exist_ok=True)
            self.check_marker(create=True, writer=writer)
            self._probe(writer)
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
                f"{self.what_to_do()}") from exc

    def check_marker(self, *, create: bool, writer: str) -> None:
        """Read the marker (writing it first when ``create`` and missing, atomically: a
        temporary file linked to its name, so two writers never both create it) and refuse
        another format, another kind or a newer version."""
        marker = self.root / MARKER
        want = {"format": FORMAT, "version": VERSION, "kind": self.kind}
        if create and not marker.exists():
            tmp = self.root / f".{MARKER}.{writer}.tmp"
            write_new(tmp, json.dumps(want, sort_keys=True).encode() + b"\n")
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
                             f"{self.what_to_do()}") from exc
        if not isinstance(have, dict):
            raise StoreError(f"{marker}: not a store marker. {self.what_to_do()}")
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

    def _probe(self, writer: str) -> None:
        probe = self.shards_dir / f".probe_{writer}.tmp"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(fd)
        os.unlink(probe)
