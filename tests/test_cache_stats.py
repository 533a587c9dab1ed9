"""The bookkeeping of the embedding and reranking caches has one form (fields that say their
report keys, :func:`structablate.store.typed.report_dict`), and its reports are the ones the
hand-written ``as_dict`` methods gave before: same keys, values and order (the expected lists
below are what those methods returned for the same objects)."""

from __future__ import annotations

from structablate.embedding.cache import EmbeddingStats
from structablate.retrieval.rerank import RerankStats


def test_embedding_stats_report_as_before():
    filled = EmbeddingStats(texts=10, unique_texts=8, cache_hits=3, computed=5, truncated=2,
                            seconds_computing=1.23456,
                            extra={"seconds_tokenizing": 0.5, "cache_quarantined": ["x"]})
    assert list(filled.as_dict().items()) == [
        ("texts", 10), ("unique_texts", 8), ("cache_hits", 3), ("computed", 5),
        ("truncated", 2), ("truncation_rate", 0.2), ("seconds_computing", 1.235),
        ("texts_per_second", 4.05), ("seconds_tokenizing", 0.5), ("cache_quarantined", ["x"])]
    assert list(EmbeddingStats().as_dict().items()) == [
        ("texts", 0), ("unique_texts", 0), ("cache_hits", 0), ("computed", 0), ("truncated", 0),
        ("truncation_rate", 0.0), ("seconds_computing", 0.0), ("texts_per_second", None)]


def test_rerank_stats_report_as_before_under_their_own_names():
    filled = RerankStats(pairs=100, unique_pairs=90, cache_hits=40, scored=50, truncated=1,
                         padded_tokens=12345, seconds_scoring=2.34567, batches={64: 3, 32: 5},
                         extra={"real_tokens": 999})
    assert list(filled.as_dict().items()) == [
        ("pairs", 100), ("unique_pairs", 90), ("pairs_from_cache", 40), ("pairs_scored", 50),
        ("truncated", 1), ("padded_tokens", 12345), ("batches_per_length", {"32": 5, "64": 3}),
        ("seconds_scoring", 2.346), ("pairs_per_second", 21.32), ("real_tokens", 999)]
    assert list(RerankStats().as_dict().items()) == [
        ("pairs", 0), ("unique_pairs", 0), ("pairs_from_cache", 0), ("pairs_scored", 0),
        ("truncated", 0), ("padded_tokens", 0), ("batches_per_length", {}),
        ("seconds_scoring", 0.0), ("pairs_per_second", None)]


def test_an_extra_entry_replaces_a_reported_one_in_its_place():
    d = EmbeddingStats(texts=4, extra={"cache_hits": "n/a"}).as_dict()
    assert list(d)[:3] == ["texts", "unique_texts", "cache_hits"] and d["cache_hits"] == "n/a"
