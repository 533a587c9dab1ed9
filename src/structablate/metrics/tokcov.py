"""Token-budget coverage TokCov@B (paper, Appendix C: coverage at 512/1024/2048 tokens).

Walk the ranking from rank 1 and pay for each chunk ``prefix_tokens + content_tokens`` out of
a budget of ``B`` tokens; the score is the mean over gold spans of the share of the span the
paid-for content covers. Chunks of other documents pay but cover nothing.

Budget rule for the chunk that crosses the budget (the context window truncates it): its prefix
is paid first; the tokens then left, ``rem - prefix_tokens``, buy that fraction of its content
tokens, counted as the leading ``floor(|c| * (rem - prefix_tokens) / content_tokens)`` characters
of its content (none if the prefix alone uses up the rest). The walk stops there: later chunks
get nothing even if they would fit. A chunk whose cost equals the remaining budget fits whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._spans import Coverage, RankedChunk, Span, check_spans
from .layout import BoundRun, Layout
from .registry import MeasureDef, register


def budget_lengths(
    length: np.ndarray, content_tokens: np.ndarray, prefix_tokens: np.ndarray, remaining: np.ndarray
) -> np.ndarray:
    """Characters of content each chunk contributes with ``remaining`` budget before it."""
    length, ct, pt = (
        np.asarray(a, dtype=np.int64) for a in (length, content_tokens, prefix_tokens)
    )
    rem = np.asarray(remaining, dtype=np.int64)
    full = rem >= ct + pt
    part = np.where(ct > 0, (length * np.maximum(rem - pt, 0)) // np.maximum(ct, 1), 0)
    return np.where(full, length, np.clip(part, 0, length))


def tokcov(ranked: Sequence[RankedChunk], gold: Sequence[Span], budget: int) -> float:
    """TokCov@budget of one query (reference implementation, exact interval union)."""
    check_spans(list(gold))
    covs = [Coverage(g) for g in gold]
    spent = 0
    for r in ranked:
        cost = r.prefix_tokens + r.content_tokens
        rem = budget - spent
        n = int(budget_lengths(r.end - r.start, r.content_tokens, r.prefix_tokens, rem))
        if r.on_doc and n > 0:
            for cov in covs:
                cov.add((r.start, r.start + n))
        spent += cost
        if rem < cost:  # this chunk crossed the budget: the context window ends here
            break
    return sum(cov.covered / (g[1] - g[0]) for cov, g in zip(covs, gold, strict=True)) / len(gold)


def tokens_before(lay: Layout, br: BoundRun) -> np.ndarray:
    """Per run row, the tokens (prefix + content) of the rows ranked above it in its query."""
    def compute() -> np.ndarray:
        cost = lay.ptok[br.r_c] + lay.ctok[br.r_c]
        csum = np.concatenate([[0], np.cumsum(cost)])
        return csum[:-1] - csum[br.r_ptr[br.r_q]]

    return br.cached("tokens_before", compute)


def tokcov_fast(lay: Layout, br: BoundRun, budget: int) -> np.ndarray:
    """Vectorized TokCov@budget of every query (valid for non-overlapping chunk sets)."""
    pr = lay.pairs
    m = br.pair_row >= 0
    rows, pc, sp = br.pair_row[m], pr.c[m], pr.span[m]
    # only the rows that cover gold matter: their paid-for leading characters
    n_chars = budget_lengths(lay.ce[pc] - lay.cs[pc], lay.ctok[pc], lay.ptok[pc],
                             budget - tokens_before(lay, br)[rows])
    got = np.minimum(lay.cs[pc] + n_chars, lay.ge[sp]) - np.maximum(lay.cs[pc], lay.gs[sp])
    covered = np.bincount(sp, weights=np.maximum(got, 0), minlength=len(lay.gs))
    n_spans = np.maximum(lay.n_spans, 1)
    return np.bincount(lay.span_q, weights=covered / (lay.ge - lay.gs), minlength=lay.nq) / n_spans


MEASURE = register(MeasureDef(
    kind="TokCov",
    cutoff="required",
    cutoff_symbol="B",
    summary="gold coverage within a B-token context budget (prefix tokens count)",
    reference=lambda ranked, doc_chunks, gold, budget: tokcov(ranked, gold, budget),
    fast=tokcov_fast,
))
