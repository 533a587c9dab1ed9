"""Binary nDCG@k (paper, Appendix C).

Gains are 0/1: a chunk counts 1 when it is relevant (binary rule of :mod:`.relevance`) to any
gold span of the query; chunks of other documents count 0. ``DCG@k = sum_{i<=k} rel_i /
log2(i+1)``; the ideal puts all ``R`` relevant chunks of the condition's own chunk set of the
document first, ``IDCG@k = sum_{i<=min(k,R)} 1/log2(i+1)``; the score is 0 when ``R = 0``.
This equals trec_eval/ir_measures ``nDCG@k`` with chunk-level qrels (see :mod:`.trec`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._spans import RankedChunk, Span, check_spans
from .layout import BoundRun, Layout, discounts, row_relevance
from .registry import MeasureDef, register
from .relevance import relevant_to_any


def ndcg(
    ranked: Sequence[RankedChunk], doc_chunks: Sequence[Span], gold: Sequence[Span], k: int
) -> float:
    """Binary nDCG@k of one query (reference implementation)."""
    check_spans(list(gold))
    rels = [float(r.on_doc and relevant_to_any((r.start, r.end), gold)) for r in ranked[:k]]
    n_rel = sum(relevant_to_any(c, gold) for c in doc_chunks)
    idcg = float(discounts(min(k, n_rel)).sum())
    if idcg == 0.0:
        return 0.0
    got = float(np.dot(rels, discounts(len(rels)))) if rels else 0.0
    return got / idcg


def ndcg_fast(lay: Layout, br: BoundRun, k: int) -> np.ndarray:
    """Vectorized binary nDCG@k of every query."""
    disc = discounts(k)
    sel = row_relevance(lay, br) & (br.r_pos <= k)
    dcg_q = np.bincount(br.r_q[sel], weights=disc[br.r_pos[sel] - 1], minlength=lay.nq)

    def ideal() -> np.ndarray:
        pr = lay.pairs
        n_rel = np.bincount(pr.qc_q[pr.qc_rel], minlength=lay.nq)
        cum = np.concatenate([[0.0], np.cumsum(disc)])
        return cum[np.minimum(n_rel, k)]

    idcg_q = lay.cached(("nDCG", k), ideal)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg_q > 0, dcg_q / idcg_q, 0.0)


MEASURE = register(MeasureDef(
    kind="nDCG",
    cutoff="required",
    cutoff_symbol="k",
    summary="binary nDCG, ideal from the condition's own chunks",
    reference=lambda ranked, doc_chunks, gold, k: ndcg(ranked, doc_chunks, gold, k),
    fast=ndcg_fast,
))
