"""Reciprocal rank (paper, Appendix C: MRR is its mean over queries).

``RR = 1 / i`` for the first rank ``i`` whose chunk is relevant (binary rule of
:mod:`.relevance`) to any gold span; 0 when the run holds no relevant chunk. ``RR@k`` only looks
at the first ``k`` ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._spans import RankedChunk, Span, check_spans
from .layout import BoundRun, Layout, row_relevance
from .registry import MeasureDef, register
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


def rr_fast(lay: Layout, br: BoundRun, k: int | None = None) -> np.ndarray:
    """Vectorized reciprocal rank of every query."""
    rel = row_relevance(lay, br)
    if k is not None:
        rel &= br.r_pos <= k
    idx = np.flatnonzero(rel)  # rows are sorted by (query, position)
    out = np.zeros(lay.nq, dtype=np.float64)
    q, first = np.unique(br.r_q[idx], return_index=True)
    out[q] = 1.0 / br.r_pos[idx[first]]
    return out


MEASURE = register(MeasureDef(
    kind="RR",
    cutoff="optional",
    cutoff_symbol="k",
    summary="reciprocal rank of the first binary-relevant chunk (MRR is its mean)",
    reference=lambda ranked, doc_chunks, gold, k: rr(ranked, gold, k),
    fast=rr_fast,
))
