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
reranking code share, and :func:`reported` with :func:`report_dict` the one form of their
bookkeeping (``EmbeddingStats``, ``RerankStats``): a dataclass whose fields say their report
keys.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Reported:
    """How a bookkeeping field enters its report (:func:`reported`)."""

    key: str | None
    form: Callable[[Any], Any] | None
    then: tuple[tuple[str, Callable[[Any], Any]], ...]


def reported(default: Any = 0, *, key: str | None = None,
             form: Callable[[Any], Any] | None = None,
             then: Mapping[str, Callable[[Any], Any]] | None = None,
             default_factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field of a bookkeeping class, with its entry in :func:`report_dict`: under
    ``key`` (the field's own name when None), its value passed through ``form`` (as it is when
    None), followed by the entries of ``then``, each key's value a function of the whole
    bookkeeping object (a rate, a share)."""
    meta = {"reported": Reported(key, form, tuple((then or {}).items()))}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def report_dict(stats: Any) -> dict[str, Any]:
    """The report of a bookkeeping dataclass: each :func:`reported` field in the order the
    class declares it, with its ``then`` entries after it, then the items of its ``extra``
    mapping (a key already reported takes the extra value in its place)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(stats):
        how = f.metadata.get("reported")
        if how is None:
            continue
        value = getattr(stats, f.name)
        out[how.key or f.name] = value if how.form is None else how.form(value)
        for k, fn in how.then:
            out[k] = fn(stats)
    out.update(getattr(stats, "extra", {}))
    return out


class ReportDict:
    """Mixin of a bookkeeping dataclass: :meth:`as_dict` is its report (:func:`report_dict`,
    generated from its :func:`reported` fields), never written by hand."""

    def as_dict(self) -> dict[str, Any]:
        """The report: each :func:`reported` field under its key, its ``then`` entries after
        it, then ``extra`` (:func:`report_dict`)."""
        return report_dict(self)


def rounded(digits: int) -> Callable[[float], float]:
    """A ``form`` rounding to ``digits`` decimals (seconds to the millisecond: 3)."""
    return lambda x: round(x, digits)


def per_second(done: str, seconds: str) -> Callable[[Any], float | None]:
    """A ``then`` entry: field ``done`` (a count) per second of field ``seconds``, to two
    decimals; None when no second was spent."""
    def rate(stats: Any) -> float | None:
        s = getattr(stats, seconds)
        return round(getattr(stats, done) / s, 2) if s else None
    return rate


def share(part: str, whole: str) -> Callable[[Any], float]:
    """A ``then`` entry: field ``part`` over field ``whole`` (0.0 when ``whole`` is 0)."""
    def fraction(stats: Any) -> float:
        w = getattr(stats, whole)
        return getattr(stats, part) / w if w else 0.0
    return fraction
