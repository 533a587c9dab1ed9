"""Span recall R@k (paper, Appendix C: recall@50).

The fraction of the query's gold spans that the union of the top-``k`` chunks covers by at
least 50% (``2·covered >= |g|``, exact). Chunks of other documents cover nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._prepare import Prepared
from ._spans import Coverage, RankedChunk, Span, check_spans


def recall(ranked: Sequence[RankedChunk], gold: Sequence[Span], k: int) -> float:
    """R@k of one query (reference implementation, exact interval union)."""
    check_spans(list(gold))
    hits = 0
    for g in gold:
        cov = Coverage(g)
        for r in list(ranked)[:k]:
            if r.on_doc:
                cov.add((r.start, r.end))
        hits += 2 * cov.covered >= g[1] - g[0]
    return hits / len(gold)


def recall_fast(p: Prepared, k: int) -> np.ndarray:
    """Vectorized R@k of every query (valid for non-overlapping chunk sets)."""
    pr = p.pairs
    m = pr.row >= 0
    sel = p.r_pos[pr.row[m]] <= k
    covered = np.bincount(pr.span[m][sel], weights=pr.ov[m][sel], minlength=len(p.gs))
    hit = 2 * covered >= (p.ge - p.gs)
    n_spans = np.maximum(p.n_spans, 1)
    return np.bincount(p.span_q, weights=hit, minlength=p.nq) / n_spans
