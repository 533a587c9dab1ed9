"""Embedding with sentence-transformers, batch-invariant, behind a content-addressed cache.

Batch invariance: a transformer's output for one text can change in its last bits with the
other texts of its batch (padding length and matrix shapes pick different kernels). To make a
text's vector a function of the text alone, every batch has a fixed shape: texts are bucketed
by token length rounded up to a multiple of ``length_bucket`` (capped at the model's maximum
sequence length), padded to that length, and each batch is filled to ``batch_size`` rows with
empty texts. So the same text gives byte-identical vectors whichever condition, order or cache
state it is embedded in, and the measured half stays deterministic.

The cache is an SQLite file keyed by ``sha256(model signature, text)``; a text shared by several
conditions (or by a rerun) is embedded once. SQLite's locking makes it safe for parallel jobs,
and a killed job loses only uncommitted batches.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from structablate.models import resolve_model_path


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
    """Content-addressed vector store in one SQLite file."""

    def __init__(self, path: str | Path, timeout_s: float = 600.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=timeout_s)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dim INTEGER, data BLOB)"
        )
        self._db.commit()

    @staticmethod
    def key(signature: str, text: str) -> bytes:
        return hashlib.sha256(signature.encode() + b"\x00" + text.encode()).digest()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        keys = list(keys)
        for k in range(0, len(keys), 500):
            part = keys[k : k + 500]
            marks = ",".join("?" * len(part))
            q = f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})"
            for key, dim, data in self._db.execute(q, part):
                out[key] = np.frombuffer(data, dtype=np.float32, count=dim)
        return out

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO vectors (key, dim, data) VALUES (?, ?, ?)",
            [(k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
             for k, v in items],
        )
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()


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
    found = cache.get_many(keys) if cache is not None else {}
    stats.cache_hits = len(found)
    vecs = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    missing = []
    for i, k in enumerate(keys):
        v = found.get(k)
        if v is None:
            missing.append(i)
        else:
            vecs[i] = v
    t0 = time.perf_counter()
    for c in range(0, len(missing), commit_every):
        part = missing[c : c + commit_every]
        got = embedder.encode([unique[i] for i in part], progress=progress,
                              desc=f"{desc} [{c + len(part)}/{len(missing)}]")
        vecs[part] = got
        if cache is not None:
            cache.put_many([(keys[i], got[j]) for j, i in enumerate(part)])
    stats.seconds_computing = time.perf_counter() - t0
    stats.computed = len(missing)
    return vecs[[order[t] for t in texts]], stats
