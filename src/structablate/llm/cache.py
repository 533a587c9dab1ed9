"""A persistent, content-addressed cache of LLM generations.

Every generation the study makes goes through this cache, keyed by what determines the output
and nothing else: the model id, the messages, the sampling parameters (temperature, top-p,
token limit, seed, stop strings) and the output schema. The backend is *not* part of the key,
so a generation recorded with vLLM replays under llama.cpp or an OpenAI-compatible server.

Two on-disk stores, chosen by the file suffix:

* ``*.jsonl`` — append-only JSON lines, one record per generation, each appended with a single
  ``write`` under an exclusive ``flock`` and followed by ``fsync``. The reader is tolerant: a
  line cut short by a killed process (no trailing newline, or invalid JSON) is skipped, so a
  crash loses at most the record in flight. Diff-friendly: the recorded caches shipped under
  ``resources/llm/`` use it.
* anything else (``*.sqlite``) — SQLite in WAL mode with ``synchronous=FULL``; each put is its
  own transaction, so a killed writer loses at most the uncommitted row. Safe for several
  processes at once (busy timeout).

A record holds the key, the request (for provenance) and the response text plus metadata.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """Compact, key-sorted JSON: the byte string that is hashed into a cache key."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(request: dict[str, Any]) -> str:
    """The sha256 hex digest of a request's canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class CacheMiss(KeyError):
    """A replay-only client met a request that is not in its cache."""

    def __init__(self, key: str, request: dict[str, Any] | None = None, path: str = ""):
        self.key = key
        self.request = request
        model = (request or {}).get("model", "?")
        where = f" in {path}" if path else ""
        super().__init__(
            f"LLM cache miss{where}: key {key} (model {model!r}) is not recorded and the client "
            "is in replay mode"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class GenerationCache:
    """Interface of both stores: ``get``, ``put``, ``__contains__``, ``__len__``, ``items``."""

    path: Path

    def get(self, key: str) -> dict[str, Any] | None:  # pragma: no cover - interface
        raise NotImplementedError

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        raise NotImplementedError  # pragma: no cover - interface

    def keys(self) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self.keys())

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for k in self.keys():
            rec = self.get(k)
            if rec is not None:
                yield k, rec

    def close(self) -> None:
        pass


class JsonlCache(GenerationCache):
    """Append-only JSON-lines store with a tolerant reader (see module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.Lock()
        self._index: dict[str, dict[str, Any]] = {}
        self._offset = 0
        self.skipped_lines = 0
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._refresh()

    def _refresh(self) -> None:
        """Read records appended since the last read (by this or another process)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        if not data:
            return
        consumed = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # a record still being written, or cut short by a crash
            consumed += len(line)
            try:
                rec = json.loads(line)
                self._index[rec["key"]] = rec
            except (ValueError, KeyError, TypeError):
                self.skipped_lines += 1
        self._offset += consumed

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            rec = self._index.get(key)
            if rec is None:
                self._refresh()
                rec = self._index.get(key)
            return rec

    def keys(self) -> list[str]:
        with self._lock:
            self._refresh()
            return list(self._index)

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self.readonly:
            raise PermissionError(f"{self.path}: cache opened read-only")
        rec = {"key": key, "request": request, "response": response}
        line = (canonical_json(rec) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    # A torn tail left by a killed writer would swallow this record's first
                    # line break; start on a fresh line so only the torn record is lost.
                    size = os.fstat(fd).st_size
                    if size:
                        with open(self.path, "rb") as fh:
                            fh.seek(size - 1)
                            if fh.read(1) != b"\n":
                                line = b"\n" + line
                    view = memoryview(line)
                    while view:
                        n = os.write(fd, view)
                        view = view[n:]
                    os.fsync(fd)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
            self._index[key] = rec


class SqliteCache(GenerationCache):
    """SQLite store in WAL mode (see module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self._local = threading.local()
        if readonly:
            if not self.path.exists():
                raise FileNotFoundError(f"{self.path}: no such LLM cache")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(self._connect()) as con, con:
                con.execute(
                    "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, "
                    "request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
                )

    def _connect(self) -> sqlite3.Connection:
        if self.readonly:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60)
        else:
            con = sqlite3.connect(self.path, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
        con.execute("PRAGMA busy_timeout=60000")
        return con

    @property
    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = self._connect()
        return con

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._con.execute(
            "SELECT request, response FROM generations WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return {"key": key, "request": json.loads(row[0]), "response": json.loads(row[1])}

    def keys(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT key FROM generations ORDER BY rowid")]

    def __len__(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self.readonly:
            raise PermissionError(f"{self.path}: cache opened read-only")
        con = self._con
        with con:
            con.execute(
                "INSERT OR REPLACE INTO generations (key, request, response, created) "
                "VALUES (?, ?, ?, ?)",
                (key, canonical_json(request), canonical_json(response), time.time()),
            )

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None


def open_cache(path: str | os.PathLike[str], *, readonly: bool = False) -> GenerationCache:
    """Open (creating unless ``readonly``) the store at ``path``: JSONL for ``*.jsonl``."""
    p = Path(path)
    if p.suffix == ".jsonl":
        return JsonlCache(p, readonly=readonly)
    return SqliteCache(p, readonly=readonly)


def copy_cache(src: GenerationCache, dst: GenerationCache, keys: list[str] | None = None) -> int:
    """Copy records (all, or ``keys``) from ``src`` to ``dst``; return how many were copied.

    Used to export the generations a run needed into a small recorded JSONL cache.
    """
    n = 0
    for k in keys if keys is not None else src.keys():
        rec = src.get(k)
        if rec is None:
            raise CacheMiss(k, path=str(src.path))
        if k not in dst:
            dst.put(k, rec["request"], rec["response"])
            n += 1
    return n
