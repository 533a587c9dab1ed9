"""A persistent, content-addressed cache of LLM generations.

Every generation the study makes goes through this cache, keyed by what determines the output
and nothing else: the model id, the messages, the sampling parameters (temperature, top-p,
token limit, seed, stop strings) and the output schema. The backend is *not* part of the key,
so a generation recorded with vLLM replays under llama.cpp or an OpenAI-compatible server.

Two on-disk forms, chosen by the path:

* ``*.jsonl`` — append-only JSON lines, one record per generation, each appended with a single
  ``write`` under an exclusive ``flock`` and followed by ``fsync``. The reader is tolerant: a
  line cut short by a killed process (no trailing newline, or invalid JSON) is skipped, so a
  crash loses at most the record in flight. Diff-friendly: the recorded caches shipped under
  ``resources/llm/`` use it. Meant for one writer on a local disk (recording).
* anything else — a folder (e.g. ``results/llm/generations``): a
  :class:`~structablate.store.typed.JsonStore` of immutable, checksummed shards. Each process
  commits its own shards (temp file, ``fsync``, atomic rename), so any number of jobs on any
  number of nodes share it over NFS without locks on the data; a killed job loses at most the
  records it had not committed (``StoreSettings.flush_s``, 10 s by default). SQLite files of
  earlier versions are refused with the command that imports them.

A record holds the key, the request (for provenance) and the response text plus metadata.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from structablate.errors import StructablateError
from structablate.mechanisms import LLM_STAGE_JOBS
from structablate.store.folder import StoreSettings
from structablate.store.lock import stage_lock_name
from structablate.store.shard import key_from_hex
from structablate.store.typed import JsonStore


def canonical_json(obj: Any) -> str:
    """Compact, key-sorted JSON: the byte string that is hashed into a cache key."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(request: dict[str, Any]) -> str:
    """The sha256 hex digest of a request's canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class CacheMiss(StructablateError, KeyError):
    """A replay-only client met a request that is not in its cache.

    The message says what to do: a recording holds only the prompts it was made from (the
    bundled ones cover the bundled corpora), so the way out is a stage that needs no LLM or a
    stage that generates. ``stage`` (the client's stage: ``induction``, ``contexts/<corpus>``,
    ``queries/<corpus>``; None: unknown) picks the keys named.
    """

    def __init__(self, key: str, request: dict[str, Any] | None = None, path: str = "",
                 stage: str | None = None):
        self.key = key
        self.request = request
        self.stage = stage
        model = (request or {}).get("model", "?")
        where = f" in {path}" if path else ""
        super().__init__(
            f"LLM cache miss{where}: key {key} (model {model!r}) is not recorded and the client "
            "is in replay mode. A recording replays only the prompts it was made from (the "
            "bundled recordings in resources/llm/ cover the bundled corpora only), so a new "
            "corpus or a changed prompt setting misses. " + replay_hint(stage)
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


_GENERATE = "{mode: cached, cache: null}`"


def replay_hint(stage: str | None) -> str:
    """What to set when a replayed stage misses: its LLM-free alternative and the keys that
    make it generate instead (docs/byo.md, "Run it on your corpus"), from each stage's
    :class:`~structablate.mechanisms.StageJob`. ``stage`` as :class:`CacheMiss` takes it
    (``queries/<corpus>`` for a per-corpus stage); None names every stage."""
    kind, _, corpus = (stage or "").partition("/")
    chosen = [kind] if kind in LLM_STAGE_JOBS else list(LLM_STAGE_JOBS)
    hints = []
    for name in chosen:
        job = LLM_STAGE_JOBS[name]
        where = corpus or "<name>"
        hints.append(f"{(job.hint_label or job.label).format(corpus=repr(where))}: "
                     f"{job.without_llm.format(corpus=where)}, or generate with "
                     f"`{job.key(where)}: " + _GENERATE + ".")
    return ("To go on, for " + " For ".join(hints) + " Generated answers are recorded under "
            "<results>/cache/llm; the llama.cpp backend needs `pip install -e '.[llamacpp]'`. "
            "See docs/byo.md (Run it on your corpus).")


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

    def flush(self) -> None:
        """Make every put durable and visible to other processes (a no-op where puts are)."""

    def refresh(self) -> None:
        """See what other processes committed since this cache was opened or last looked."""

    def lock_path(self, stage: str) -> Path:
        """Where the :class:`~structablate.store.lock.StageLock` of ``stage`` on this cache
        lives."""
        return self.path.with_name(f"{self.path.name}.{stage_lock_name(stage)}")

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

    def refresh(self) -> None:
        with self._lock:
            self._refresh()

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


class StoreCache(GenerationCache):
    """A folder of immutable shards shared safely by many jobs (:mod:`structablate.store`).

    Records are buffered and committed as one shard at the latest ``StoreSettings.flush_s``
    (10 s) after they exist, on :meth:`flush` (the client flushes after each batch and each
    ``generate_many``), :meth:`close` and at exit; a job killed with SIGKILL loses at most that
    much generation. Other processes see a record once it is committed.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False,
                 settings: StoreSettings | None = None):
        self.path = Path(path)
        self.readonly = readonly
        self.store = JsonStore(self.path, readonly=readonly, settings=settings,
                               label="LLM cache", setting="llm.cache")

    def get(self, key: str) -> dict[str, Any] | None:
        value = self.store.get(key_from_hex(key))
        if value is None:
            return None
        rec = json.loads(bytes(value))
        return rec if rec.get("key") == key else None

    def keys(self) -> list[str]:
        return [json.loads(bytes(v))["key"] for _, v in self.store.items()]

    def __len__(self) -> int:
        return len(self.store)

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self.readonly:
            raise PermissionError(f"{self.path}: cache opened read-only")
        rec = {"key": key, "request": request, "response": response}
        self.store.put(key_from_hex(key), canonical_json(rec).encode("utf-8"))

    def flush(self) -> None:
        self.store.flush()

    def refresh(self) -> None:
        self.store.refresh()

    def lock_path(self, stage: str) -> Path:
        return self.store.locks_dir / stage_lock_name(stage)

    def close(self) -> None:
        self.store.close()


def open_cache(path: str | os.PathLike[str], *, readonly: bool = False,
               settings: StoreSettings | None = None) -> GenerationCache:
    """Open (creating unless ``readonly``) the cache at ``path``.

    ``*.jsonl``: a :class:`JsonlCache` (the recordings under ``resources/llm/``); anything else
    is a folder: a :class:`StoreCache`. An SQLite file of earlier versions at ``path`` raises
    :class:`~structablate.store.files.StoreError` saying how to import or delete it.
    """
    p = Path(path)
    if p.suffix == ".jsonl":
        return JsonlCache(p, readonly=readonly)
    return StoreCache(p, readonly=readonly, settings=settings)


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
