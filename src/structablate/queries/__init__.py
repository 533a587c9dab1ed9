"""Synthetic queries with leakage control (paper, Appendix F): gold spans sampled by the
pipeline, LLM query writing, the ROUGE-L / n-gram leakage filter, paraphrase, balancing.

See ``docs/queries.md``.
"""

from __future__ import annotations

import polars as pl

from structablate.queries.balance import balance
from structablate.queries.config import QTYPES, QueryGenSettings
from structablate.queries.leakage import LeakageCheck, check_leakage, shared_ngrams
from structablate.queries.pipeline import QueryGenResult, generate_queries
from structablate.queries.spans import Candidate, sample_candidates, sample_document
from structablate.settings import parse

__all__ = [
    "QTYPES",
    "Candidate",
    "LeakageCheck",
    "QueryGenSettings",
    "QueryGenResult",
    "balance",
    "check_leakage",
    "generate_queries",
    "generate_queries_from_frames",
    "sample_candidates",
    "sample_document",
    "shared_ngrams",
]


def generate_queries_from_frames(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    client,
    cfg: QueryGenSettings | dict | None = None,
) -> QueryGenResult:
    """:func:`generate_queries` over the corpus tables (documents, paragraphs, gold sections)."""
    from structablate.corpus.flatten import documents_from_frames

    if not isinstance(cfg, QueryGenSettings):
        cfg = parse(QueryGenSettings, cfg)
    return generate_queries(documents_from_frames(documents, paragraphs, sections), client, cfg)
