"""The typed stores: what the caches put in a :class:`~structablate.store.folder.Store`.

* :class:`VectorStore` (kind ``vectors``) — the embedding cache: float32 vectors of any
  length, stored as little-endian float32 bytes;
* :class:`JsonStore` (kind ``json``) — the LLM generation cache: JSON records, stored as
  compact UTF-8 JSON with sorted keys (one byte string per value, so equal records are equal
  bytes);
* :class:`ScoreStore` (kind ``float64``) — the reranker score cache: one little-endian
  float64 per (model, precision, query text, chunk text) key.

The kind is written into every shard header and the folder's marker, so a folder of one kind
is never read as another. :func:`fill_found` is the one cache-fill step the embedding and
reranking code share.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from structablate.store.folder import Store
from structablate.store.shard import digest


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
