"""The identifier columns of per-query score tables, defined once.

A score table (:func:`structablate.metrics.score_run`) holds ``qid, doc_id, qtype`` and one
numeric column per measure; the statistics stack them with the cell (``corpus, embedder,
reranker``) and ``condition``. Every other numeric column is a metric.
"""

from __future__ import annotations

import polars as pl

CELL = ("corpus", "embedder", "reranker")
ID_COLUMNS = (*CELL, "condition", "qid", "doc_id", "qtype", "text")
"""Columns of a (long) score table that are never a metric."""


def metric_columns(scores: pl.DataFrame) -> list[str]:
    """Numeric columns of ``scores`` that are not identifiers (:data:`ID_COLUMNS`), in table
    order."""
    return [c for c, t in scores.schema.items() if c not in ID_COLUMNS and t.is_numeric()]
