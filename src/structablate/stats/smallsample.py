"""Inference for a contrast over few documents: a document-level sign-flip randomization test.

The document-clustered percentile bootstrap (:mod:`.bootstrap`) resamples documents; over a
few tens of them its interval is too narrow and its p too small (docs/statistics.md, the
simulation of ``bench/bench_small_sample.py``). Below :data:`~structablate.stats.power.MIN_DOCS`
documents :func:`structablate.stats.contrast_table` takes a row's p, interval and equivalence
test from this module instead.

**The test.** A contrast's estimate is the question-weighted mean of the per-question deltas,
``Δ = Σ_d S_d / Σ_d n_d`` with ``S_d`` the sum of document ``d``'s ``n_d`` deltas (the
weighting of the bootstrap: every question counts once). Under ``H0: Δ = θ`` with each
document's centred sum ``S_d − θ·n_d`` symmetric about 0 and documents independent, flipping
the sign of any set of documents' centred sums leaves the data's distribution unchanged, so
the observed ``T(θ) = Σ_d (S_d − θ·n_d)`` is one draw from the ``2^D`` equally likely
``Σ_d ε_d (S_d − θ·n_d)``, ``ε ∈ {−1, +1}^D``. The test is exact at any number of documents
under that symmetry, and asymptotically valid for a mean-zero null without it (the
randomization variance ``Σ_d (S_d − θ n_d)²`` is the variance of ``T`` under independence);
it is the restricted wild cluster bootstrap with Rademacher weights of an intercept-only model.

**Subset means.** Flipping the set ``F`` of documents gives ``T_F(θ) ≥ T(θ)`` exactly when
``θ ≥ r_F``, with ``r_F = Σ_{d∈F} S_d / Σ_{d∈F} n_d``, the question-weighted mean delta of the
documents in ``F`` (Hartigan's typical values). So with ``K`` sign vectors (the identity
included) and ``a`` of them equal to the identity (they tie with the observation whatever θ):

* one-sided ``p_≥(θ) = (a + #{F: r_F ≤ θ}) / K`` (evidence that ``Δ > θ``),
  ``p_≤(θ) = (a + #{F: r_F ≥ θ}) / K`` (evidence that ``Δ < θ``);
* two-sided ``p(θ) = min(1, 2·min(p_≥(θ), p_≤(θ)))``, the row's ``p`` at ``θ = 0``;
* the equal-tailed interval at level ``1 − 2γ`` is ``[r_(c), r_[c]]``: the ``c``-th smallest
  and ``c``-th largest subset mean, ``c`` the fewest subset means a tail needs for
  ``(a + c)/K ≥ γ``; it is exactly the set of θ that the one-sided tests at ``γ`` do not
  reject, so ``p < α`` exactly when the 95 % interval excludes 0, and the two one-sided tests
  against ``±m`` pass at ``γ`` exactly when the ``1 − 2γ`` interval lies inside ``(−m, m)``
  (up to :data:`~structablate.stats.bootstrap.ZERO_TOL` for a subset mean at exactly 0).

Every p counts the identity (the observation itself), so p is never below ``1/K``: with
``D ≤`` :data:`EXACT_MAX_DOCS` documents all ``K = 2^D`` sign vectors are enumerated (p is
exact); above, ``n_flips`` random sign vectors (each document flipped with probability ½)
drawn from ``numpy.random.default_rng(seed)`` join the identity (``K = n_flips + 1``, the
``+1`` correction of a Monte-Carlo randomization test). At 5 documents ``2^5 = 32`` vectors
give a smallest two-sided p of ``2/32``: no 5-document contrast can be significant at 0.05,
which is what 5 documents can carry.

All values are in the units of the deltas (the measure's units); p-values are probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, ZERO_TOL

EXACT_MAX_DOCS = 16
"""Up to this many documents every one of the ``2^D`` sign vectors is enumerated (65,536 at
16); above, a seeded Monte-Carlo sample of them."""

_BLOCK_ELEMS = 1 << 22  # sign-vector entries per block (~4 MiB as uint8)


@dataclass(frozen=True)
class SignFlip:
    """The randomization distribution of one document set's question-weighted mean delta.

    ``roots`` (k, m): the question-weighted mean delta ``r_F`` of each flipped subset ``F``
    (non-empty; one column per statistic, measure units); ``n_identity``: sign vectors that
    flip nothing (they tie with the observation at every θ); ``n_vectors``: ``K``, all sign
    vectors, identity included; ``exact``: all ``2^D`` enumerated; ``delta`` (m,): the
    observed question-weighted mean delta; ``n_docs``: ``D``."""

    roots: np.ndarray
    n_identity: int
    n_vectors: int
    exact: bool
    delta: np.ndarray
    n_docs: int

    @property
    def method(self) -> str:
        """``"sign-flip-exact"`` (all ``2^D`` sign vectors) or ``"sign-flip-mc"`` (seeded
        Monte Carlo): the value of the contrasts table's ``p_method``."""
        return "sign-flip-exact" if self.exact else "sign-flip-mc"

    def tail_count(self, gamma: float) -> int:
        """The fewest subset means a tail needs for ``(n_identity + c) / K ≥ gamma``
        (0 when the identity alone reaches it)."""
        need = gamma * self.n_vectors - self.n_identity
        c = max(0, math.ceil(need - 1e-9))
        while c > 0 and (self.n_identity + c - 1) / self.n_vectors >= gamma:
            c -= 1
        while (self.n_identity + c) / self.n_vectors < gamma:
            c += 1
        return c

    def p_greater(self, theta: float | np.ndarray) -> np.ndarray:
        """One-sided ``p_≥(θ)`` per column: evidence that ``Δ > θ`` (module docstring)."""
        th = np.asarray(theta, dtype=np.float64)
        return (self.n_identity + (self.roots <= th).sum(axis=0)) / self.n_vectors

    def p_less(self, theta: float | np.ndarray) -> np.ndarray:
        """One-sided ``p_≤(θ)`` per column: evidence that ``Δ < θ``."""
        th = np.asarray(theta, dtype=np.float64)
        return (self.n_identity + (self.roots >= th).sum(axis=0)) / self.n_vectors

    def p_zero(self, zero_tol: float = ZERO_TOL) -> np.ndarray:
        """Two-sided p of ``Δ = 0`` per column, ``min(1, 2·min(p_≥(0), p_≤(0)))``; a subset
        mean with ``|r_F| <= zero_tol`` counts as 0 (in both tails), as in
        :func:`~structablate.stats.bootstrap.bootstrap_p`."""
        r = self.roots
        zero = np.abs(r) <= zero_tol
        le = self.n_identity + ((r < 0) | zero).sum(axis=0)
        ge = self.n_identity + ((r > 0) | zero).sum(axis=0)
        return np.minimum(1.0, 2.0 * np.minimum(le, ge) / self.n_vectors)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed interval at ``level`` per column (``γ = (1 − level)/2`` per tail):
        the θ that neither one-sided test at ``γ`` rejects. ``±inf`` where there are too few
        sign vectors for the level (e.g. 5 documents at 95 %)."""
        c = self.tail_count((1.0 - level) / 2.0)
        m = self.roots.shape[1]
        k = self.roots.shape[0]
        if c == 0 or c > k:
            return np.full(m, -np.inf), np.full(m, np.inf)
        s = np.sort(self.roots, axis=0)
        return s[c - 1].copy(), s[k - c].copy()

    def tost(self, margin: float, family_size: int = 1, alpha: float = 0.05
             ) -> dict[str, np.ndarray]:
        """Two one-sided tests of ``|Δ| ≥ margin`` per column (``margin`` in measure units):
        ``p_tost = max(p_≥(−m), p_≤(m))``, ``p_tost_adj = min(1, family_size · p_tost)``, and
        the ``(1 − 2α / family_size)`` interval ``ci_tost_low``/``ci_tost_high``, inside
        ``(−m, m)`` exactly when ``p_tost_adj < α``."""
        p = np.maximum(self.p_greater(-margin), self.p_less(margin))
        lo, hi = self.interval(1.0 - 2.0 * alpha / family_size)
        return {"p_tost": p, "p_tost_adj": np.minimum(1.0, family_size * p),
                "ci_tost_low": lo, "ci_tost_high": hi}

    def equivalence_bound(self, family_size: int = 1, alpha: float = 0.05) -> np.ndarray:
        """The smallest margin whose TOST passes at the family's level, per column: every
        margin above ``max(ci_tost_high, −ci_tost_low)`` passes; NaN when none can (too few
        sign vectors for the level)."""
        lo, hi = self.interval(1.0 - 2.0 * alpha / family_size)
        b = np.maximum(hi, -lo)
        return np.where(np.isfinite(b), b, np.nan)


def _subsets(n_docs: int, n_flips: int, seed: int | np.random.Generator
             ) -> tuple[np.ndarray, bool]:
    """The flipped-document indicator rows (uint8, (K, D)): all ``2^D`` when ``n_docs <=``
    :data:`EXACT_MAX_DOCS`, else the identity (first row) and ``n_flips`` seeded random rows."""
    if n_docs <= EXACT_MAX_DOCS:
        codes = np.arange(1 << n_docs, dtype=np.int64)[:, None]
        return ((codes >> np.arange(n_docs)) & 1).astype(np.uint8), True
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    draws = rng.integers(0, 2, size=(n_flips, n_docs), dtype=np.uint8)
    return np.vstack([np.zeros((1, n_docs), np.uint8), draws]), False


def sign_flip(doc_sums: np.ndarray, doc_counts: np.ndarray, n_flips: int = DEFAULT_N_BOOT,
              seed: int | np.random.Generator = DEFAULT_SEED) -> SignFlip:
    """The sign-flip randomization distribution of per-document delta sums.

    ``doc_sums`` (D,) or (D, m): each document's sum of per-question deltas (measure units; m
    statistics over the same documents share the sign vectors); ``doc_counts`` (D,) or (D, m):
    its questions (per statistic where they differ;
    :func:`~structablate.stats.bootstrap.per_doc` gives both, documents sorted).
    ``n_flips``: random sign vectors above :data:`EXACT_MAX_DOCS` documents (ignored at or
    below, where all are enumerated), drawn from ``default_rng(seed)``; the same inputs and
    seed give bit-identical results. Subset means are summed with ``einsum`` (no BLAS), in
    blocks that do not change the result."""
    sums = np.asarray(doc_sums, dtype=np.float64)
    if sums.ndim == 1:
        sums = sums[:, None]
    cnts = np.asarray(doc_counts, dtype=np.float64)
    if cnts.ndim == 1:
        cnts = cnts[:, None]
    n_docs = sums.shape[0]
    if n_docs == 0:
        raise ValueError("sign_flip: no documents")
    if cnts.shape[0] != n_docs or cnts.shape[1] not in (1, sums.shape[1]):
        raise ValueError("sign_flip: doc_sums and doc_counts disagree on documents")
    if (cnts <= 0).any():
        raise ValueError("sign_flip: a document without questions")
    if n_docs > EXACT_MAX_DOCS and n_flips < 1:
        raise ValueError("sign_flip: n_flips must be positive")
    flips, exact = _subsets(n_docs, n_flips, seed)
    empty = ~flips.any(axis=1)
    keep = flips[~empty]
    roots = np.empty((keep.shape[0], sums.shape[1]))
    block = max(1, _BLOCK_ELEMS // n_docs)
    for start in range(0, keep.shape[0], block):
        f = keep[start:start + block].astype(np.float64)
        num = np.einsum("kd,dm->km", f, sums, optimize=False)
        den = np.einsum("kd,dm->km", f, cnts, optimize=False)
        roots[start:start + block] = num / den
    delta = sums.sum(axis=0) / cnts.sum(axis=0)
    return SignFlip(roots=roots, n_identity=int(empty.sum()), n_vectors=int(flips.shape[0]),
                    exact=exact, delta=delta, n_docs=n_docs)
