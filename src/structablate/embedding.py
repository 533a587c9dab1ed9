"""Embedding with sentence-transformers, batch-invariant, behind a content-addressed cache.

Batch invariance: a transformer's output for one text can change in its last bits with the
other texts of its batch (padding length and matrix shapes pick different kernels). To make a
text's vector a function of the text alone, every batch has a fixed shape: texts are bucketed
by token length rounded up to a multiple of ``length_bucket`` (capped at the model's maximum
sequence length), padded to that length, and each batch is filled to ``batch_size`` rows with
empty texts. So the same text gives byte-identical vectors whichever condition, order or cache
state it is embedded in, and the measured half stays deterministic.

The cache is a folder of immutable shards (:mod:`structablate.store`) keyed by
``sha256(model signature, text)``; a text shared by several conditions (or by a rerun) is
embedded once. Every job commits its own shards (temp file, fsync, atomic rename), so any number
of jobs on any number of nodes share one cache over NFS, and a killed job loses only the batch
it had not committed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from structablate.models import resolve_model_path
from structablate.store import LockSettings, StageLock, StoreError, StoreSettings, VectorStore


@dataclass(frozen=True)
class EmbedderConfig:
    """How an embedder is loaded and run."""

    model: str
    query_instruction: str = ""
    batch_size: int = 32
    length_bucket: int = 32
    max_seq_length: int | None = None
    device: str = "cpu"
    normalize: bool = True

    def signature(self) -> str:
        """What a cached vector depends on besides the text."""
        return (
            f"{self.model}|len={self.max_seq_length}|bucket={self.length_bucket}|"
            f"batch={self.batch_size}|norm={int(self.normalize)}"
        )


class Embedder:
    """A sentence-transformers model run with fixed batch shapes (see module docstring)."""

    def __init__(self, cfg: EmbedderConfig):
        import torch
        from sentence_transformers import SentenceTransformer

        self.cfg = cfg
        self._torch = torch
        self.model = SentenceTransformer(resolve_model_path(cfg.model), device=cfg.device)
        if cfg.max_seq_length is not None:
            self.model.max_seq_length = cfg.max_seq_length
        self.model.eval()
        self.max_seq_length = int(self.model.max_seq_length)
        self.dim = int(self.model.get_embedding_dimension())
        self.tokenizer = self.model.tokenizer

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts including the model's special tokens, without truncation."""
        enc = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def encode(self, texts: Sequence[str], progress: bool = False, desc: str = "embed"
               ) -> np.ndarray:
        """float32 vectors (L2-normalised if configured), row ``i`` for ``texts[i]``."""
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        lengths = self.token_lengths(texts)
        b = self.cfg.length_bucket
        buckets: dict[int, list[int]] = {}
        for i, length in enumerate(lengths):
            padded = min(self.max_seq_length, -(-length // b) * b)
            buckets.setdefault(padded, []).append(i)
        bs = self.cfg.batch_size
        total_batches = sum(-(-len(v) // bs) for v in buckets.values())
        bar = tqdm(total=total_batches, desc=desc, disable=not progress, unit="batch")
        torch = self._torch
        for padded in sorted(buckets):
            idx = buckets[padded]
            for k in range(0, len(idx), bs):
                rows = idx[k : k + bs]
                batch = [texts[i] for i in rows] + [""] * (bs - len(rows))
                feats = self.tokenizer(
                    batch, padding="max_length", truncation=True, max_length=padded,
                    return_tensors="pt",
                )
                feats = {key: v.to(self.cfg.device) for key, v in feats.items()}
                with torch.inference_mode():
                    emb = self.model.forward(feats)["sentence_embedding"].float()
                    if self.cfg.normalize:
                        emb = torch.nn.functional.normalize(emb, p=2, dim=-1)
                out[rows] = emb[: len(rows)].cpu().numpy()
                bar.update(1)
        bar.close()
        return out


@dataclass
class EmbeddingStats:
    """Bookkeeping of one :func:`embed_texts` call."""

    texts: int = 0
    unique_texts: int = 0
    cache_hits: int = 0
    computed: int = 0
    truncated: int = 0
    seconds_computing: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {
            "texts": self.texts,
            "unique_texts": self.unique_texts,
            "cache_hits": self.cache_hits,
            "computed": self.computed,
            "truncated": self.truncated,
            "truncation_rate": self.truncated / self.texts if self.texts else 0.0,
            "seconds_computing": round(self.seconds_computing, 3),
            "texts_per_second": (
                round(self.computed / self.seconds_computing, 2) if self.seconds_computing else None
            ),
        }
        d.update(self.extra)
        return d


class EmbeddingCache:
    """Content-addressed float32 vectors in a store folder shared by many jobs.

    ``path`` is a folder (created if missing). Each :meth:`put_many` commits one shard at once,
    so a killed job loses at most the batch it was computing. An unwritable folder raises
    :class:`~structablate.store.StoreUnwritable` naming it; corrupt shards are moved to
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
    """Vectors for ``texts`` (row per text), computing only what the cache lacks."""
    stats = EmbeddingStats(texts=len(texts))
    sig = embedder.cfg.signature()
    order: dict[str, int] = {}
    for t in texts:
        order.setdefault(t, len(order))
    unique = list(order)
    stats.unique_texts = len(unique)
    lengths = embedder.token_lengths(texts) if texts else []
    stats.truncated = sum(n > embedder.max_seq_length for n in lengths)
    keys = [EmbeddingCache.key(sig, t) for t in unique]
    vecs = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    missing = list(range(len(unique)))
    if cache is not None:
        missing = _fill_from_cache(cache, keys, missing, vecs, stats)
    t0 = time.perf_counter()
    done = 0
    for c in range(0, len(missing), commit_every):
        part = missing[c : c + commit_every]
        if cache is not None and c > 0:
            # jobs running at the same time may have committed some of these meanwhile
            cache.refresh()
            part = _fill_from_cache(cache, keys, part, vecs, stats)
        done += len(part)
        if not part:
            continue
        got = embedder.encode([unique[i] for i in part], progress=progress,
                              desc=f"{desc} [{c + len(part)}/{len(missing)}]")
        vecs[part] = got
        if cache is not None:
            cache.put_many([(keys[i], got[j]) for j, i in enumerate(part)])
    stats.seconds_computing = time.perf_counter() - t0
    stats.computed = done
    if cache is not None and cache.quarantined:
        stats.extra["cache_quarantined"] = list(cache.quarantined)
    return vecs[[order[t] for t in texts]], stats


def _fill_from_cache(cache: EmbeddingCache, keys: Sequence[bytes], rows: list[int],
                     vecs: np.ndarray, stats: EmbeddingStats) -> list[int]:
    """Copy cached vectors of ``rows`` into ``vecs``; return the rows still missing."""
    found = cache.get_many([keys[i] for i in rows])
    still = []
    for i in rows:
        v = found.get(keys[i])
        if v is None:
            still.append(i)
        elif v.shape != (vecs.shape[1],):
            raise StoreError(
                f"embedding cache {cache.path}: a cached vector has {v.shape[0]} dimensions, "
                f"the embedder gives {vecs.shape[1]}; the cache is inconsistent: delete "
                f"{cache.path} (it only saves recomputation)")
        else:
            vecs[i] = v
    stats.cache_hits += len(rows) - len(still)
    return still
