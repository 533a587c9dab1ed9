"""Span recall R@k (paper, Appendix C: recall@50).

The fraction of the query's gold spans that the union of the top-``k`` chunks covers by at
least 50% (``2·covered >= |g|``, exact). Chunks of other documents cover nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._spans import Coverage, RankedChunk, Span, check_spans
from .layout import BoundRun, Layout
from .registry import MeasureDef, register


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


def recall_fast(lay: Layout, br: BoundRun, k: int) -> np.ndarray:
    """Vectorized R@k of every query (valid for non-overlapping chunk sets)."""
    pr = lay.pairs
    sel = (br.pair_pos >= 1) & (br.pair_pos <= k)
    covered = np.bincount(pr.span[sel], weights=pr.ov[sel], minlength=len(lay.gs))
    hit = 2 * covered >= (lay.ge - lay.gs)
    n_spans = np.maximum(lay.n_spans, 1)
    return np.bincount(lay.span_q, weights=hit, minlength=lay.nq) / n_spans


MEASURE = register(MeasureDef(
    kind="R",
    cutoff="required",
    cutoff_symbol="k",
    summary="share of gold spans covered at least 50% by the union of the top k",
    reference=lambda ranked, doc_chunks, gold, k: recall(ranked, gold, k),
    fast=recall_fast,
))
