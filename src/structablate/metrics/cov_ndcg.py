"""Coverage-nDCG@k, the primary measure (paper, Appendix B).

The gain of the chunk at rank ``i`` is the mean over the query's ``S`` gold spans of the share
of each span it newly covers::

    gain(c_i) = 1/S * sum_j |(c_i ∩ g_j) \\ covered_<i(g_j)| / |g_j|

``DCG@k = sum_{i<=k} gain(c_i) / log2(i+1)``. The ideal DCG comes from a greedy
maximum-marginal-coverage ordering of the condition's *own* chunks of the query's document (up to
``k`` chunks; each step appends the chunk with the largest current marginal gain, ties to the
earliest chunk in document order). The score is ``DCG@k / IDCG@k``, and 0 when ``IDCG@k = 0``.
Chunks of other documents gain 0. Each gold span keeps its own covered set, so overlapping gold
spans are each credited in full; overlapping chunks only earn their novel characters.

When the document's chunks do not overlap (the contract's tiling), a chunk's marginal gain
equals its static gain and the greedy ideal is the static gains sorted in descending order; the
vectorized :func:`cov_ndcg_fast` uses that. :func:`cov_ndcg` is the exact per-query reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ._spans import Coverage, RankedChunk, Span, check_spans
from .layout import BoundRun, Layout, discounts
from .registry import MeasureDef, register


def coverage_gains(ranked: Sequence[RankedChunk], gold: Sequence[Span]) -> list[float]:
    """Marginal coverage gain of every ranked chunk, in rank order."""
    check_spans(list(gold))
    covs = [Coverage(g) for g in gold]
    out = []
    for r in ranked:
        if not r.on_doc:
            out.append(0.0)
            continue
        gain = sum(
            Fraction(cov.add((r.start, r.end)), g[1] - g[0])
            for cov, g in zip(covs, gold, strict=True)
        )
        out.append(float(gain / len(gold)))
    return out


def ideal_gains(doc_chunks: Sequence[Span], gold: Sequence[Span], k: int) -> list[float]:
    """Greedy maximum-marginal-coverage gains over the condition's chunks of the document.

    Exact rational comparison; ties go to the earliest chunk in ``doc_chunks`` order (pass them
    in document order). Stops after ``k`` picks or when no chunk adds coverage.
    """
    check_spans(list(gold))
    covs = [Coverage(g) for g in gold]
    left = list(range(len(doc_chunks)))
    out: list[float] = []
    while left and len(out) < k:
        best, best_gain = -1, Fraction(0)
        for i in left:
            c = doc_chunks[i]
            gain = sum(
                Fraction(cov.new_chars(c), g[1] - g[0]) for cov, g in zip(covs, gold, strict=True)
            )
            if gain > best_gain:
                best, best_gain = i, gain
        if best < 0:
            break
        for cov in covs:
            cov.add(doc_chunks[best])
        left.remove(best)
        out.append(float(best_gain / len(gold)))
    return out


def dcg(gains: Sequence[float]) -> float:
    """``sum_i gains[i-1] / log2(i+1)``."""
    if not gains:
        return 0.0
    return float(np.dot(np.asarray(gains, dtype=np.float64), discounts(len(gains))))


def cov_ndcg(
    ranked: Sequence[RankedChunk], doc_chunks: Sequence[Span], gold: Sequence[Span], k: int
) -> float:
    """Exact coverage-nDCG@k of one query (reference implementation)."""
    ideal = dcg(ideal_gains(doc_chunks, gold, k))
    if ideal == 0.0:
        return 0.0
    return dcg(coverage_gains(list(ranked)[:k], gold)) / ideal


def ideal_dcg_fast(lay: Layout, k: int) -> np.ndarray:
    """Per query, the ideal DCG@k of the fast path: static chunk gains sorted descending."""
    pr = lay.pairs
    disc = discounts(k)
    order = np.lexsort((-pr.qc_gain_sum, pr.qc_q))
    qs, gs = pr.qc_q[order], pr.qc_gain_sum[order]
    rank0 = np.arange(len(qs)) - np.searchsorted(qs, qs, side="left")
    sel = rank0 < k
    return np.bincount(qs[sel], weights=gs[sel] * disc[rank0[sel]], minlength=lay.nq)


def cov_ndcg_fast(lay: Layout, br: BoundRun, k: int) -> np.ndarray:
    """Vectorized coverage-nDCG@k of every query (valid for non-overlapping chunk sets)."""
    pr = lay.pairs
    disc = discounts(k)
    # observed DCG: each retrieved pair contributes its coverage share at its rank
    pos = br.pair_pos
    sel = (pos >= 1) & (pos <= k)
    dcg_q = np.bincount(pr.q[sel], weights=pr.gain[sel] * disc[pos[sel] - 1], minlength=lay.nq)
    idcg_q = lay.cached(("covNDCG", k), lambda: ideal_dcg_fast(lay, k))
    # without overlaps the sorted static gains are the optimum, so the score is <= 1 exactly;
    # the clip only removes last-bit rounding of the two sums
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg_q > 0, np.minimum(dcg_q / idcg_q, 1.0), 0.0)


MEASURE = register(MeasureDef(
    kind="covNDCG",
    cutoff="required",
    cutoff_symbol="k",
    summary="coverage-nDCG (primary), ideal from the condition's own chunks",
    reference=lambda ranked, doc_chunks, gold, k: cov_ndcg(ranked, doc_chunks, gold, k),
    fast=cov_ndcg_fast,
))
