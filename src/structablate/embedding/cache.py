"""Vectors behind a content-addressed cache: :class:`EmbeddingCache`, a store folder of
float32 vectors keyed by ``sha256(embedder signature, text)`` that any number of jobs on any
number of nodes share, and :func:`embed_texts`, which computes only what the cache lacks and
commits each part before the next.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from structablate.store.files import StoreError
from structablate.store.folder import StoreSettings
from structablate.store.lock import LockSettings, StageLock
from structablate.store.typed import (
    ReportDict,
    VectorStore,
    fill_found,
    per_second,
    reported,
    rounded,
    share,
)

from .embedder import Embedder


@dataclass
class EmbeddingStats(ReportDict):
    """Bookkeeping of one :func:`embed_texts` call: ``texts`` asked for, ``unique_texts`` among
    them, ``cache_hits`` (unique texts served from the cache), ``computed`` (unique texts run
    through the model), ``truncated`` (texts cut at the model's input limit),
    ``seconds_computing`` (wall seconds in the model), ``extra`` (further report entries).
    :meth:`as_dict` adds ``truncation_rate`` (truncated / texts) and ``texts_per_second``
    (computed / seconds_computing)."""

    texts: int = reported()
    unique_texts: int = reported()
    cache_hits: int = reported()
    computed: int = reported()
    truncated: int = reported(then={"truncation_rate": share("truncated", "texts")})
    seconds_computing: float = reported(
        0.0, form=rounded(3),
        then={"texts_per_second": per_second("computed", "seconds_computing")})
    extra: dict = field(default_factory=dict)



class EmbeddingCache:
    """Content-addressed float32 vectors in a store folder shared by many jobs.

    ``path`` is a folder (created if missing). Each :meth:`put_many` commits one shard at once,
    so a killed job loses at most the batch it was computing. An unwritable folder raises
    :class:`~structablate.store.files.StoreUnwritable` naming it; corrupt shards are moved to
    ``<path>/quarantine/`` with a warning and their vectors recomputed.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False,
                 settings: StoreSettings | None = None):
        self.path = Path(path)
        self.store = VectorStore(self.path, readonly=readonly, settings=settings,
                                 label="embedding cache", setting="`results:`")

    @staticmethod
    def key(signature: str, text: str) -> bytes:
        return hashlib.sha256(signature.encode() + b"\x00" + text.encode()).digest()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors (read-only float32 arrays) of the keys that have one."""
        return self.store.get_vectors(keys)

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors and commit them (one shard) before returning."""
        self.store.put_vectors(items)
        self.store.flush()

    def refresh(self) -> int:
        """Pick up vectors other jobs committed since; return the number of new shards."""
        return self.store.refresh(force=True)

    @property
    def quarantined(self) -> list[str]:
        """Corrupt shards met so far (moved aside; their vectors were recomputed)."""
        return self.store.quarantined

    def stage_lock(self, stage: str, settings: LockSettings | None = None) -> StageLock:
        """A lock that keeps a second job of ``stage`` off this cache (not yet acquired)."""
        return self.store.stage_lock(stage, settings=settings)

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        self.store.close()


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    progress: bool = True,
    desc: str = "embed",
    commit_every: int = 2048,
) -> tuple[np.ndarray, EmbeddingStats]:
    """Vectors for ``texts`` (row per text), computing only what the cache lacks.

    Each distinct text is tokenized once. The texts to compute go in parts of ``commit_every``
    (each part's vectors are committed to the cache before the next); the next part is
    tokenized in a worker thread while the current one runs through the model.
    """
    stats = EmbeddingStats(texts=len(texts))
    sig = embedder.signature
    order: dict[str, int] = {}
    for t in texts:
        order.setdefault(t, len(order))
    unique = list(order)
    stats.unique_texts = len(unique)
    keys = [EmbeddingCache.key(sig, t) for t in unique]
    vecs = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    lengths = np.zeros(len(unique), dtype=np.int64)
    missing = list(range(len(unique)))
    if cache is not None:
        missing = _fill_from_cache(cache, keys, missing, vecs, stats)
    parts = [missing[c: c + commit_every] for c in range(0, len(missing), commit_every)]
    padded0, real0 = embedder.padded_tokens, embedder.real_tokens
    tokenize_s = 0.0
    t0 = time.perf_counter()
    done = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
        ahead = pool.submit(embedder.tokenize, [unique[i] for i in parts[0]]) if parts else None
        have = set(missing)
        cached = [i for i in range(len(unique)) if i not in have]
        if cached:  # lengths only, for the truncation count
            lengths[cached] = embedder.token_lengths([unique[i] for i in cached])
        for k, part in enumerate(parts):
            tok = ahead.result()
            tokenize_s += tok.seconds
            lengths[part] = tok.lengths
            if k + 1 < len(parts):
                ahead = pool.submit(embedder.tokenize, [unique[i] for i in parts[k + 1]])
            if cache is not None and k > 0:
                # jobs running at the same time may have committed some of these meanwhile
                cache.refresh()
                still = set(_fill_from_cache(cache, keys, part, vecs, stats))
                keep = [j for j, i in enumerate(part) if i in still]
                part, tok = [part[j] for j in keep], tok.take(keep)
            done += len(part)
            if not part:
                continue
            got = embedder.encode_tokens(
                tok, progress=progress, desc=f"{desc} [{sum(map(len, parts[:k + 1]))}/"
                f"{len(missing)}]")
            vecs[part] = got
            if cache is not None:
                cache.put_many([(keys[i], got[j]) for j, i in enumerate(part)])
    stats.seconds_computing = time.perf_counter() - t0
    stats.computed = done
    counts = np.bincount([order[t] for t in texts], minlength=len(unique)) if texts else []
    stats.truncated = int(np.sum(counts * (lengths > embedder.max_seq_length))) if texts else 0
    stats.extra.update({
        "seconds_tokenizing": round(tokenize_s, 3),
        "padded_tokens": embedder.padded_tokens - padded0,
        "real_tokens": embedder.real_tokens - real0,
        "attention": embedder.attention,
    })
    if cache is not None and cache.quarantined:
        stats.extra["cache_quarantined"] = list(cache.quarantined)
    return vecs[[order[t] for t in texts]], stats


def _fill_from_cache(cache: EmbeddingCache, keys: Sequence[bytes], rows: list[int],
                     vecs: np.ndarray, stats: EmbeddingStats) -> list[int]:
    """Copy cached vectors of ``rows`` into ``vecs``; return the rows still missing."""

    def place(i: int, v: np.ndarray) -> None:
        if v.shape != (vecs.shape[1],):
            raise StoreError(
                f"embedding cache {cache.path}: a cached vector has {v.shape[0]} dimensions, "
                f"the embedder gives {vecs.shape[1]}; the cache is inconsistent: delete "
                f"{cache.path} (it only saves recomputation)")
        vecs[i] = v

    still = fill_found(cache.get_many([keys[i] for i in rows]), keys, rows, place)
    stats.cache_hits += len(rows) - len(still)
    return still
