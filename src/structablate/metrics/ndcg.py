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

from ._prepare import Prepared, discounts
from ._spans import RankedChunk, Span, check_spans
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


def row_relevance(p: Prepared) -> np.ndarray:
    """Binary relevance of every run row (fast-path queries)."""
    pr = p.pairs
    out = np.zeros(len(p.r_q), dtype=bool)
    out[pr.row[(pr.row >= 0) & pr.rel]] = True
    return out


def ndcg_fast(p: Prepared, k: int) -> np.ndarray:
    """Vectorized binary nDCG@k of every query."""
    disc = discounts(k)
    sel = row_relevance(p) & (p.r_pos <= k)
    dcg_q = np.bincount(p.r_q[sel], weights=disc[p.r_pos[sel] - 1], minlength=p.nq)
    pr = p.pairs
    n_rel = np.bincount(pr.qc_q[pr.qc_rel], minlength=p.nq)
    cum = np.concatenate([[0.0], np.cumsum(disc)])
    idcg_q = cum[np.minimum(n_rel, k)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg_q > 0, dcg_q / idcg_q, 0.0)
