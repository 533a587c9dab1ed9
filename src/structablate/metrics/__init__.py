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

Each measure is declared once, in its module, in the registry (:mod:`.registry`:
:func:`parse_measure`, :func:`measure_pattern`, :data:`MEASURES`).

Entry points: :func:`score_run` scores one run; :func:`score_runs` scores many runs of one
corpus in one process, laying each chunkset out once (:func:`prepare_layout`) and reusing it
for every run that reads the chunkset. Every measure also has an exact per-query reference
implementation on plain spans (:func:`score_query`), used for documents whose chunks overlap
and for every query when ``exact=True``. See ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structablate.errors import StructablateError

# importing a measure module registers its measure (covNDCG, nDCG, R, RR, TokCov)
from ._spans import RankedChunk, Span
from .cov_ndcg import cov_ndcg
from .layout import BoundRun, Layout, bind_run, prepare_layout, prepare_queries
from .ndcg import ndcg
from .recall import recall
from .registry import MEASURES, Measure, MeasureDef, measure_forms, measure_pattern, parse_measure
from .relevance import is_relevant, relevant_to_any
from .rr import rr
from .tokcov import tokcov

__all__ = [
    "KINDS",
    "DEFAULT_MEASURES",
    "MEASURES",
    "Layout",
    "NoQueriesError",
    "Measure",
    "MeasureDef",
    "RankedChunk",
    "cov_ndcg",
    "is_relevant",
    "measure_forms",
    "measure_pattern",
    "ndcg",
    "parse_measure",
    "prepare_layout",
    "recall",
    "relevant_to_any",
    "rr",
    "score_layout",
    "score_query",
    "score_run",
    "score_runs",
    "tokcov",
]

KINDS = tuple(MEASURES)
"""The registered measure kinds."""

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


def _specs(measures: Sequence[str], n_queries: int) -> list[Measure]:
    specs = [parse_measure(m) for m in measures]
    if not n_queries:
        raise NoQueriesError(
            "score_run: the queries table is empty, so there is no question to score (the "
            "corpus's question funnel kept none: see its funnel.json)")
    if len(set(measures)) != len(measures):
        raise ValueError(f"score_run: repeated measure names in {list(measures)}")
    return specs


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
        out[name] = m.definition.reference(ranked, doc_chunks, gold, m.cutoff)
    return out


def _query_inputs(
    lay: Layout, br: BoundRun, q: int
) -> tuple[list[RankedChunk], list[Span], list[Span]]:
    d = int(lay.q_doc[q])
    lo, hi = int(lay.doc_ptr[d]), int(lay.doc_ptr[d + 1])
    doc_chunks = [(int(s), int(e)) for s, e in zip(lay.cs[lo:hi], lay.ce[lo:hi], strict=True)]
    a, b = int(lay.span_ptr[q]), int(lay.span_ptr[q + 1])
    gold = [(int(s), int(e)) for s, e in zip(lay.gs[a:b], lay.ge[a:b], strict=True)]
    ranked = [
        RankedChunk(int(lay.cs[c]), int(lay.ce[c]), bool(lay.c_doc[c] == d), int(lay.ctok[c]),
                    int(lay.ptok[c]))
        for c in br.r_c[br.r_ptr[q] : br.r_ptr[q + 1]]
    ]
    return ranked, doc_chunks, gold


def score_layout(
    run: pl.DataFrame, layout: Layout, measures: Sequence[str], *, exact: bool = False
) -> pl.DataFrame:
    """Score one run against a prepared :class:`Layout` (see :func:`score_run`)."""
    specs = _specs(measures, layout.nq)
    br = bind_run(run, layout)
    cols: dict[str, np.ndarray] = {}
    for m in specs:
        cols[m.name] = (np.zeros(layout.nq) if exact
                        else m.definition.fast(layout, br, m.cutoff))
    slow = np.arange(layout.nq) if exact else np.flatnonzero(layout.general)
    for q in slow:
        vals = score_query(*_query_inputs(layout, br, int(q)), measures)
        for name, v in vals.items():
            cols[name][q] = v
    return pl.DataFrame(
        {
            "qid": pl.Series(layout.qids, dtype=pl.String),
            "doc_id": pl.Series(layout.q_doc_id, dtype=pl.String),
            "qtype": pl.Series(layout.qtypes, dtype=pl.String),
            **{name: pl.Series(name, cols[name], dtype=pl.Float64) for name in measures},
        }
    )


def score_run(
    run: pl.DataFrame,
    chunks: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    measures: Sequence[str],
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
    _specs(measures, queries.height)
    return score_layout(run, prepare_layout(chunks, qrels, queries), measures, exact=exact)


def score_runs(
    runs: Mapping[str, pl.DataFrame],
    chunks_by_condition: Mapping[str, pl.DataFrame],
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    measures: Sequence[str],
    *,
    exact: bool = False,
) -> dict[str, pl.DataFrame]:
    """Score many runs of one corpus in one process: ``{key: scores}`` in the order of ``runs``,
    each exactly what :func:`score_run` returns for that run.

    ``runs`` maps a key (a condition, or e.g. ``"minilm/none/A3"`` for a whole corpus) to its
    run; ``chunks_by_condition`` maps the same keys to the chunk table the run reads. Keys whose
    chunk tables are the *same object* share one layout (read each chunkset once and map every
    condition and cell that reads it to that frame: A3 and A4, G3 and G4, every embedder and
    reranker); queries and qrels are validated once for all.
    """
    _specs(measures, queries.height)
    missing = [k for k in runs if k not in chunks_by_condition]
    if missing:
        raise ValueError(f"score_runs: no chunk table for {missing}")
    qt = prepare_queries(qrels, queries)
    layouts: dict[int, Layout] = {}
    out: dict[str, pl.DataFrame] = {}
    for key, run in runs.items():
        chunks = chunks_by_condition[key]
        lay = layouts.get(id(chunks))
        if lay is None:
            lay = layouts[id(chunks)] = prepare_layout(chunks, query_tables=qt)
        try:
            out[key] = score_layout(run, lay, measures, exact=exact)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from exc
    return out
