"""The paper's published numbers, in one table, for side-by-side comparisons.

Values are as printed in the paper (Kuehlkamp, Moreira & Rund 2026; PROTOCOL.md "Headline
numbers"): cov-nDCG@10 with the strong embedder (bge-large-en-v1.5) and no reranker. Keys of the
corpus level are the paper's corpora, ``"wikipedia"`` (Wikipedia-FA) and ``"qasper"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from structablate.study import PRIMARY_METRIC

PAPER_METRIC = PRIMARY_METRIC
"""The measure every number below is in: the pre-registered primary metric."""

PAPER_MEANS: dict[str, dict[str, float]] = {
    "wikipedia": {"A0": 0.362, "A1": 0.391, "A2": 0.403, "A3": 0.413, "P": 0.403, "A4": 0.381,
                  "G2": 0.417, "G3": 0.426, "G4": 0.400},
    "qasper": {"A0": 0.098, "A1": 0.114, "A2": 0.117, "A3": 0.125, "P": 0.109, "A4": 0.111,
               "G2": 0.120, "G3": 0.126, "G4": 0.111},
}
"""Table 2: per-condition mean cov-nDCG@10."""

PAPER_CONTRASTS: dict[str, dict[tuple[str, str], float]] = {
    "wikipedia": {("A3", "A1"): 0.0218, ("A3", "P"): 0.0099, ("G3", "A3"): 0.0129,
                  ("A4", "A3"): -0.0326},
    "qasper": {("A3", "A1"): 0.0115, ("A3", "P"): 0.0161, ("G3", "A3"): 0.0011,
               ("A4", "A3"): -0.0147},
}
"""Table 1: the pre-registered contrasts C1–C4 (Δ cov-nDCG@10); C3 on QASPER is not
significant, the others are Holm-significant."""

PAPER_CONTRAST_CIS: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    "wikipedia": {("A3", "A1"): (0.0052, 0.0380), ("A3", "P"): (0.0024, 0.0173),
                  ("G3", "A3"): (0.0038, 0.0228), ("A4", "A3"): (-0.0442, -0.0217)},
    "qasper": {("A3", "A1"): (0.0055, 0.0175), ("A3", "P"): (0.0114, 0.0207),
               ("G3", "A3"): (-0.0020, 0.0043), ("A4", "A3"): (-0.0192, -0.0104)},
}
"""Table 1's 95% intervals of C1–C4 (document-clustered percentile bootstrap). These are the
only intervals the paper prints for a number compared here: its per-condition means (Table 2),
and so every contrast derived from them, come without one, as do the section-recall range,
the BM25 gold-top-1 rates and the chunk-span identities."""

PAPER_SECTION_RECALL: dict[str, tuple[float, float]] = {
    "wikipedia": (0.60, 0.68), "qasper": (0.17, 0.20)}
"""Stage-1 section recall of two-stage retrieval, as a range."""

PAPER_BM25_GOLD_TOP1: dict[str, float] = {"wikipedia": 0.363, "qasper": 0.227}
"""Share of questions whose best BM25 chunk is relevant."""

PAPER_CHUNK_SPAN_IDENTITY: dict[str, float] = {"wikipedia": 0.789, "qasper": 0.758}
"""Induced structural chunk spans byte-identical to a gold span (the paper's LLM inducer)."""

PAPER_QASPER_FUNNEL: dict[str, float] = {
    "questions": 5049, "kept": 4303, "papers": 1508, "exact_share": 0.957,
    "multi_span_share": 0.439, "spans_per_question": 2.10}
"""QASPER's funnel: all questions, questions kept over papers, evidence mapped exactly,
multi-span questions and spans per question."""



@dataclass(frozen=True)
class PaperCorpus:
    """What the paper says of one of its corpora: ``label`` (its name in the paper), ``key``
    (the short name ``bm25.json``'s ``paper`` block files its figure under) and ``funnel``
    (its published question funnel, None where it publishes none)."""

    label: str
    key: str
    funnel: Mapping[str, float] | None = None


PAPER_CORPORA: dict[str, PaperCorpus] = {
    "wikipedia": PaperCorpus("Wikipedia-FA", "wikipedia_fa"),
    "qasper": PaperCorpus("QASPER", "qasper", PAPER_QASPER_FUNNEL),
}
"""The paper's corpora by the keys of the tables above: the one place that tells them apart
(no comparison on a corpus's name elsewhere)."""


def paper_contrast(corpus_kind: str, a: str, b: str) -> float | None:
    """The paper's Δ for ``a − b`` on a corpus: a published contrast, else the difference of
    its published means (rounded to the means' three decimals), else None."""
    pub = PAPER_CONTRASTS.get(corpus_kind, {})
    if (a, b) in pub:
        return pub[(a, b)]
    means = PAPER_MEANS.get(corpus_kind, {})
    if a in means and b in means:
        return round(means[a] - means[b], 3)
    return None


def paper_contrast_ci(corpus_kind: str, a: str, b: str) -> tuple[float, float] | None:
    """The paper's 95% interval of ``a − b`` on a corpus (Table 1), or None where it prints
    none (every contrast derived from the means)."""
    return PAPER_CONTRAST_CIS.get(corpus_kind, {}).get((a, b))


def se_from_ci(low: float, high: float, level: float = 0.95) -> float:
    """The standard error a ``level`` interval implies under the normal approximation:
    ``(high − low) / (2 · z_{(1+level)/2})`` (``(high − low) / 3.92`` at 95 %). An asymmetric
    (percentile) interval contributes its mean half-width."""
    if not high >= low:
        raise ValueError(f"se_from_ci: interval [{low}, {high}] is not ordered")
    return (high - low) / (2.0 * NormalDist().inv_cdf(0.5 + level / 2.0))


def difference_of_estimates(here: float, here_ci: tuple[float, float], paper: float,
                            paper_ci: tuple[float, float] | None, level: float = 0.95
                            ) -> tuple[float, float, float]:
    """``here − paper`` with its ``level`` interval, the two estimates independent (different
    runs, corpora, embedders): ``SE = sqrt(se_here² + se_paper²)``, each ``se`` from its own
    interval (:func:`se_from_ci`), and ``(d − z·SE, d + z·SE)``. With ``paper_ci`` None the
    paper's value is treated as exact (``se_paper = 0``); the interval is then this run's own
    interval shifted by the paper's value, so 0 lies in it exactly when the paper's value
    lies in this run's interval. Returns ``(difference, low, high)``."""
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    d = here - paper
    if paper_ci is None:
        return d, here_ci[0] - paper, here_ci[1] - paper
    se = math.hypot(se_from_ci(*here_ci, level), se_from_ci(*paper_ci, level))
    return d, d - z * se, d + z * se


PAPER_SIGNIFICANT: dict[str, tuple[tuple[str, str], ...]] = {
    "wikipedia": (("A3", "A1"), ("A3", "P"), ("G3", "A3"), ("A4", "A3")),
    "qasper": (("A3", "A1"), ("A3", "P"), ("A4", "A3")),
}
"""The published contrasts the paper reports as real (Holm-significant); QASPER's C3 is not."""


def paper_relative_effects() -> tuple[float, float]:
    """The smallest and largest |Δ| of the paper's real contrasts as a share of their control
    condition's published mean (``|Δ(a − b)| / mean(b)``, same corpus): (0.0246, 0.148), from
    C2 on Wikipedia-FA (0.0099 of P's 0.403) and C2 on QASPER (0.0161 of P's 0.109). The
    paper's effects on another embedder's or corpus's scale are these shares of that cell's
    control mean."""
    shares = [abs(PAPER_CONTRASTS[k][p]) / PAPER_MEANS[k][p[1]]
              for k, pairs in PAPER_SIGNIFICANT.items() for p in pairs]
    return min(shares), max(shares)
