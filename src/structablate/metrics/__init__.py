"""Retrieval measures of the study (paper, Appendices B and C), named in the ir_measures style.

========================  ==============================================================
name                      measure
========================  ==============================================================
``covNDCG@k``             coverage-nDCG (primary, :mod:`.cov_ndcg`)
``nDCG@k``                binary nDCG, ideal from the condition's own chunks (:mod:`.ndcg`)
``RR`` / ``RR@k``         reciprocal rank of the first binary-relevant chunk (:mod:`.rr`)
``R@k``                   share of gold spans covered >= 50% by the top k (:mod:`.recall`)
``TokCov@B``              gold coverage within a B-token context budget (:mod:`.tokcov`)
========================  ==============================================================

:func:`score_run` is the entry point of the workflow. Every measure also has an exact per-query
reference implementation on plain spans (:func:`score_query`), which :func:`score_run` uses for
documents whose chunks overlap and for every query when ``exact=True``. See ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from structablate.errors import StructablateError

from ._names import KINDS, Measure, parse_measure
from ._prepare import Prepared, prepare
from ._spans import RankedChunk, Span
from .cov_ndcg import cov_ndcg, cov_ndcg_fast
from .ndcg import ndcg, ndcg_fast
from .recall import recall, recall_fast
from .relevance import is_relevant, relevant_to_any
from .rr import rr, rr_fast
from .tokcov import tokcov, tokcov_fast

__all__ = [
    "KINDS",
    "DEFAULT_MEASURES",
    "NoQueriesError",
    "Measure",
    "RankedChunk",
    "cov_ndcg",
    "is_relevant",
    "ndcg",
    "parse_measure",
    "recall",
    "relevant_to_any",
    "rr",
    "score_query",
    "score_run",
    "tokcov",
]

DEFAULT_MEASURES = (
    "covNDCG@10",
    "R@50",
    "RR",
    "nDCG@10",
    "TokCov@512",
    "TokCov@1024",
    "TokCov@2048",
)
"""The study's measures (paper, Appendix J: ndcg_k 10, recall_k 50, budgets 512/1024/2048)."""


class NoQueriesError(StructablateError, ValueError):
    """:func:`score_run` was given no question: there is nothing to score (a corpus whose
    question funnel kept none is refused when it is built; this guards direct calls)."""


def score_query(
    ranked: Sequence[RankedChunk],
    doc_chunks: Sequence[Span],
    gold: Sequence[Span],
    measures: Sequence[str],
) -> dict[str, float]:
    """Exact scores of one query from plain spans.

    ``ranked``: the retrieved chunks in rank order (``on_doc=False`` for chunks of another
    document); ``doc_chunks``: all of the condition's chunks of the query's document, in document
    order; ``gold``: the query's gold spans.
    """
    ranked = list(ranked)
    out = {}
    for name in measures:
        m = parse_measure(name)
        if m.kind == "covNDCG":
            out[name] = cov_ndcg(ranked, doc_chunks, gold, m.cutoff)
        elif m.kind == "nDCG":
            out[name] = ndcg(ranked, doc_chunks, gold, m.cutoff)
        elif m.kind == "RR":
            out[name] = rr(ranked, gold, m.cutoff)
        elif m.kind == "R":
            out[name] = recall(ranked, gold, m.cutoff)
        else:
            out[name] = tokcov(ranked, gold, m.cutoff)
    return out


def _fast(p: Prepared, m: Measure) -> np.ndarray:
    if m.kind == "covNDCG":
        return cov_ndcg_fast(p, m.cutoff)
    if m.kind == "nDCG":
        return ndcg_fast(p, m.cutoff)
    if m.kind == "RR":
        return rr_fast(p, m.cutoff)
    if m.kind == "R":
        return recall_fast(p, m.cutoff)
    return tokcov_fast(p, m.cutoff)


def _query_inputs(p: Prepared, q: int) -> tuple[list[RankedChunk], list[Span], list[Span]]:
    d = int(p.q_doc[q])
    lo, hi = int(p.doc_ptr[d]), int(p.doc_ptr[d + 1])
    doc_chunks = [(int(s), int(e)) for s, e in zip(p.cs[lo:hi], p.ce[lo:hi], strict=True)]
    a, b = int(p.span_ptr[q]), int(p.span_ptr[q + 1])
    gold = [(int(s), int(e)) for s, e in zip(p.gs[a:b], p.ge[a:b], strict=True)]
    ranked = [
        RankedChunk(
            int(p.cs[c]), int(p.ce[c]), bool(p.c_doc[c] == d), int(p.ctok[c]), int(p.ptok[c])
        )
        for c in p.r_c[p.r_ptr[q] : p.r_ptr[q + 1]]
    ]
    return ranked, doc_chunks, gold


def score_run(
    run: pl.DataFrame,
    chunks: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    measures: list[str],
    *,
    exact: bool = False,
) -> pl.DataFrame:
    """Score one run of one condition, per query.

    ``run``: qid, rank (1-based; authoritative order), chunk_id (+ score, stage, unused);
    ``chunks``: the condition's chunk table; ``qrels``: qid, doc_id, start, end;
    ``queries``: qid, doc_id, qtype. Returns one row per query of ``queries`` sorted by qid with
    columns qid, doc_id, qtype and one Float64 column per measure, named as given. A query with
    no run rows scores 0 everywhere; a query without qrels raises ``ValueError``; an empty
    ``queries`` raises :class:`NoQueriesError`.

    Documents whose chunks overlap are scored with the exact interval reference; others with
    the vectorized fast path. ``exact=True`` uses the reference for every query (slow, audits).
    """
    specs = [parse_measure(m) for m in measures]
    if not queries.height:
        raise NoQueriesError(
            "score_run: the queries table is empty, so there is no question to score (the "
            "corpus's question funnel kept none: see its funnel.json)")
    if len(set(measures)) != len(measures):
        raise ValueError(f"score_run: repeated measure names in {measures}")
    p = prepare(run, chunks, qrels, queries)
    cols: dict[str, np.ndarray] = {}
    for m in specs:
        cols[m.name] = np.zeros(p.nq) if exact else _fast(p, m)
    slow = np.arange(p.nq) if exact else np.flatnonzero(p.general)
    for q in slow:
        vals = score_query(*_query_inputs(p, int(q)), measures)
        for name, v in vals.items():
            cols[name][q] = v
    return pl.DataFrame(
        {
            "qid": pl.Series(p.qids, dtype=pl.String),
            "doc_id": pl.Series(p.q_doc_id, dtype=pl.String),
            "qtype": pl.Series(p.qtypes, dtype=pl.String),
            **{name: pl.Series(name, cols[name], dtype=pl.Float64) for name in measures},
        }
    )
