"""Document-clustered bootstrap (paper, Appendix D.2), vectorized.

Per-query values are grouped by document into per-document sums and counts. A replicate draws
``D`` documents with replacement (``D`` = number of documents) and its mean is
``sum(drawn sums) / sum(drawn counts)``, so every query of a drawn document enters as a bundle.

Replicates are computed in blocks: a block of ``b`` replicates draws a ``(b, D)`` matrix of
document indices from a seeded :class:`numpy.random.Generator`, turns it into a ``(b, D)``
matrix of draw counts with one ``bincount``, and multiplies it by the ``(D, m)`` per-document
sums and counts, so ``m`` statistics that share the same documents share the same draws. Row
``b`` of the draws is the ``b``-th call ``rng.integers(0, D, size=D)`` would make, and the
products run through ``einsum`` (no BLAS), so results are bit-identical whatever the block size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from tqdm import tqdm

from structablate.settings import Settings, StatisticsSettings

DEFAULT_SEED = Settings.seed
"""The seed of a bootstrap that is given none: the config's ``seed`` default."""
DEFAULT_N_BOOT = StatisticsSettings.bootstrap_iters
"""Replicates of a bootstrap that is given no count: ``statistics.bootstrap_iters``' default."""
_BLOCK_ELEMS = 1 << 22  # indices per block (~32 MiB as int64)


def per_doc(values: np.ndarray, doc_ids: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group per-query ``values`` (n,) or (n, m) by document.

    Returns ``(docs, sums, counts)``: the sorted unique documents, per-document sums (D, m) and
    per-document query counts (D,).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    docs, inv = np.unique(np.asarray(doc_ids), return_inverse=True)
    inv = inv.ravel()
    sums = (
        np.stack(
            [np.bincount(inv, weights=v[:, j], minlength=len(docs)) for j in range(v.shape[1])],
            axis=1,
        )
        if v.shape[1]
        else np.zeros((len(docs), 0))
    )
    counts = np.bincount(inv, minlength=len(docs)).astype(np.float64)
    return docs, sums, counts


def draw_blocks(
    rng: np.random.Generator, n_docs: int, n_boot: int, block_rows: int | None = None
) -> Iterator[np.ndarray]:
    """Yield ``(b, n_docs)`` blocks of document indices, ``n_boot`` rows in all."""
    if block_rows is None:
        block_rows = max(1, _BLOCK_ELEMS // max(n_docs, 1))
    done = 0
    while done < n_boot:
        b = min(block_rows, n_boot - done)
        yield rng.integers(0, n_docs, size=(b, n_docs))
        done += b


def cluster_bootstrap(
    doc_sums: np.ndarray,
    doc_counts: np.ndarray,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int | np.random.Generator = DEFAULT_SEED,
    *,
    block_rows: int | None = None,
) -> np.ndarray:
    """Replicate means of a document-clustered bootstrap.

    ``doc_sums`` (D,) or (D, m) and ``doc_counts`` (D,) or (D, m); returns (n_boot,) or
    (n_boot, m) replicate means ``(counts @ sums) / (counts @ doc_counts)``.
    """
    sums = np.asarray(doc_sums, dtype=np.float64)
    vec = sums.ndim == 1
    if vec:
        sums = sums[:, None]
    cnts = np.asarray(doc_counts, dtype=np.float64)
    n_docs = sums.shape[0]
    if n_docs == 0:
        raise ValueError("cluster_bootstrap: no documents")
    if cnts.shape[0] != n_docs:
        raise ValueError("cluster_bootstrap: doc_sums and doc_counts disagree on documents")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if cnts.ndim == 1:
        cnts = cnts[:, None]
    # statistics over the same queries share their denominators: compute each distinct once
    ucnts, which = np.unique(cnts, axis=1, return_inverse=True)
    which = np.broadcast_to(which.ravel(), (sums.shape[1],))
    out = np.empty((n_boot, sums.shape[1]))
    done = 0
    # a progress bar where stderr is a terminal or a workflow job's log (structablate.workflow)
    bar = tqdm(total=n_boot, desc=f"bootstrap ({n_docs} documents)", unit="replicate",
               disable=None)
    for idx in draw_blocks(rng, n_docs, n_boot, block_rows):
        b = idx.shape[0]
        idx += (np.arange(b, dtype=np.int64) * n_docs)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * n_docs).reshape(b, n_docs)
        counts = counts.astype(np.float64)
        # einsum without BLAS: a fixed summation order per replicate, so results are
        # bit-identical for any block size or thread count (BLAS blocks its sums by shape)
        num = np.einsum("bd,dm->bm", counts, sums, optimize=False)
        den = np.einsum("bd,dm->bm", counts, ucnts, optimize=False)
        out[done : done + b] = num / den[:, which]
        done += b
        bar.update(b)
    bar.close()
    return out[:, 0] if vec else out


def percentile_ci(reps: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over replicates (axis 0); numpy's default linear interpolation."""
    a = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(reps, [a, 100.0 - a], axis=0)
    return lo, hi


ZERO_TOL = 1e-12
"""Replicates with ``|d| <= ZERO_TOL`` are zero: they count in both tails of :func:`bootstrap_p`.

Per-query deltas of discrete measures (R@k, nDCG over few chunks) are fractions such as 1/3,
and a replicate whose exact mean is 0 comes out of floating-point sums as e.g. ``-9e-18``;
counted by its sign it would land in one tail only and make p too small (on the bundled
default by up to 0.027, on QASPER's R@50 contrasts). A genuinely nonzero replicate mean this
close to zero is practically impossible: the replicates of a real contrast spread over 1e-4 or
more."""


def bootstrap_p(reps: np.ndarray, zero_tol: float = ZERO_TOL) -> np.ndarray:
    """Two-sided ``p = 2 * min(Pr[d <= 0], Pr[d >= 0])`` over replicates, clipped to 1.

    A replicate with ``|d| <= zero_tol`` (:data:`ZERO_TOL`) counts as exactly zero, i.e. in
    both tails.
    """
    r = np.asarray(reps)
    zero = np.abs(r) <= zero_tol
    le = ((r < 0) | zero).mean(axis=0)
    ge = ((r > 0) | zero).mean(axis=0)
    return np.minimum(1.0, 2.0 * np.minimum(le, ge))


def bootstrap_se(reps: np.ndarray) -> np.ndarray:
    """Bootstrap standard error: the standard deviation (ddof = 1) of the replicates, per column
    (NaN with fewer than two replicates)."""
    r = np.asarray(reps, dtype=np.float64)
    if r.shape[0] < 2:
        return np.full(r.shape[1:], np.nan)
    return r.std(axis=0, ddof=1)


def tost(reps: np.ndarray, margin: float) -> np.ndarray:
    """Bootstrap two one-sided tests against ``±margin``: ``max(Pr[d <= -m], Pr[d >= m])``
    over replicates (axis 0). It is below ``α`` exactly when the ``(1 − 2α)`` percentile
    interval lies inside ``(−m, m)`` (up to the interpolation between replicates)."""
    r = np.asarray(reps)
    return np.maximum((r <= -margin).mean(axis=0), (r >= margin).mean(axis=0))


def tost_bound(reps: np.ndarray, family_size: int = 1, alpha: float = 0.05) -> float:
    """The smallest equivalence margin the bootstrap TOST of ``reps`` (n,) passes at the
    family's level: ``min(1, family_size · tost(reps, m)) < alpha`` holds exactly for every
    margin ``m`` larger than the returned bound (same units as the replicates). With ``c``
    the largest replicate count a tail may hold (``family_size · c / n < alpha``) and ``s``
    the sorted replicates, the bound is ``max(s[n − 1 − c], −s[c])``: the ``(c + 1)``-th
    largest replicate, or minus the ``(c + 1)``-th smallest. NaN when no margin passes (too
    few replicates for the level)."""
    s = np.sort(np.asarray(reps, dtype=np.float64).ravel())
    n = s.shape[0]
    if n == 0:
        return float("nan")
    c = int(np.floor(alpha * n / family_size))
    while c >= 0 and family_size * (c / n) >= alpha:
        c -= 1
    while c + 1 < n and family_size * ((c + 1) / n) < alpha:
        c += 1
    if c < 0 or c >= n - 1 - c:
        return float("nan")
    return float(max(s[n - 1 - c], -s[c]))
