"""Reciprocal rank (paper, Appendix C: MRR is its mean over queries).

``RR = 1 / i`` for the first rank ``i`` whose chunk is relevant (binary rule of
:mod:`.relevance`) to any gold span; 0 when the run holds no relevant chunk. ``RR@k`` only looks
at the first ``k`` ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._prepare import Prepared
from ._spans import RankedChunk, Span, check_spans
from .ndcg import row_relevance
from .relevance import relevant_to_any


def rr(ranked: Sequence[RankedChunk], gold: Sequence[Span], k: int | None = None) -> float:
    """Reciprocal rank of one query (reference implementation)."""
    check_spans(list(gold))
    for i, r in enumerate(ranked, start=1):
        if k is not None and i > k:
            break
        if r.on_doc and relevant_to_any((r.start, r.end), gold):
            return 1.0 / i
    return 0.0


def rr_fast(p: Prepared, k: int | None = None) -> np.ndarray:
    """Vectorized reciprocal rank of every query."""
    rel = row_relevance(p)
    if k is not None:
        rel &= p.r_pos <= k
    idx = np.flatnonzero(rel)  # rows are sorted by (query, position)
    out = np.zeros(p.nq, dtype=np.float64)
    q, first = np.unique(p.r_q[idx], return_index=True)
    out[q] = 1.0 / p.r_pos[idx[first]]
    return out
