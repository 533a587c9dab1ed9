"""Resolving power of a contrast: the smallest effect the observed design detects, and the
sample a user would need for the paper's effect sizes.

Everything starts from the document-clustered bootstrap's standard error ``se`` of the mean
per-query delta (:func:`~structablate.stats.bootstrap.bootstrap_se`, the standard deviation of
the replicate means), so the clustering of questions in documents is already in it.

* **Minimum detectable effect** at power ``1 − β`` for a two-sided test at level ``α``
  (normal approximation)::

      mde = (z_{1−α/2} + z_{1−β}) · se          # α = 0.05, 1 − β = 0.80:  2.8016 · se

  An effect of size ``mde`` is detected (95% CI excludes 0) in 80% of repetitions of the
  design. That is the per-contrast figure before the Holm adjustment (``mde80``); the decision
  is taken over the declared family, whose strictest step tests at ``α/m``, so the contrasts
  table also gives ``mde80_family`` at that level (``m = 4``: ``3.35 · se``) and the verdict and
  the needed samples use it.
* **Design effect** of the clustering: ``deff = se² / (sd²/n)``, with ``sd`` the standard
  deviation (ddof = 1) of the ``n`` per-query deltas: how much larger the variance of the mean
  is than if the questions were independent.
* **Needed sample.** Scaling assumption: the standard error shrinks as ``1/sqrt(D)`` with the
  number of documents ``D`` at the observed questions per document and the observed spread of
  per-document deltas (the variance of a mean of i.i.d. clusters). Then, for a target
  ``|Δ|``::

      D_needed = D · (mde / |Δ|)²,     Q_needed = D_needed · (n / D)

  and for a standardised target ``dz`` (Δ = dz · sd)::

      Q_needed = deff · ((z_{1−α/2} + z_{1−β}) / dz)²,     D_needed = Q_needed / (n / D)

  Both are rounded up. The paper's effects: ``|Δ|`` 0.010–0.033 cov-nDCG@10, ``dz`` 0.06–0.17.
* **Small-sample thresholds** (:data:`MIN_DOCS`, :data:`MIN_QUERIES`): below 30 documents the
  percentile CI of a cluster bootstrap under-covers, because it resamples too few independent
  units (a seeded null simulation, 1–7 questions per document, 400 designs each: 95% CIs
  covered 0 in 84% of designs at 5 documents, 90% at 10, 93% at 15 and 30, 94% at 60);
  below 272 questions not even independent questions detect the paper's largest standardised
  effect (dz 0.17) with 80% power: ``(2.8016 / 0.17)² = 271.6``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import polars as pl

ALPHA = 0.05
POWER = 0.80
PAPER_DELTAS: tuple[float, float] = (0.010, 0.033)
"""The paper's smallest and largest |Δ| cov-nDCG@10 among its non-null contrasts."""
PAPER_DZ: tuple[float, float] = (0.06, 0.17)
"""The paper's smallest and largest |dz| among its non-null contrasts."""


def z_sum(alpha: float = ALPHA, power: float = POWER) -> float:
    """``z_{1−α/2} + z_{power}`` (2.8016 for α = 0.05, power 0.8)."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"need 0 < alpha, power < 1 (got {alpha}, {power})")
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def mde(se, alpha: float = ALPHA, power: float = POWER):
    """Minimum detectable effect ``(z_{1−α/2} + z_power) · se``: a float for a scalar ``se``,
    an array for an array (NaN stays NaN)."""
    out = z_sum(alpha, power) * np.asarray(se, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def clustered_se(values: np.ndarray, doc_ids: Sequence) -> tuple[float, int]:
    """``(se, D)``: the document-clustered standard error of the mean of ``values``,
    ``se² = D/(D − 1) · Σ_j (S_j − n_j · x̄)² / n²`` over document sums ``S_j`` of ``n_j``
    questions (:mod:`structablate.stats.design`), and the number of documents ``D``; ``se``
    NaN below two documents."""
    values = np.asarray(values, dtype=np.float64)
    docs, inv = np.unique(np.asarray(doc_ids, dtype=object).astype(str), return_inverse=True)
    n, d = values.size, docs.size
    if d < 2 or n == 0:
        return float("nan"), int(d)
    sums = np.bincount(inv, weights=values, minlength=d)
    counts = np.bincount(inv, minlength=d).astype(np.float64)
    mean = sums.sum() / n
    resid = sums - counts * mean
    return float(math.sqrt(d / (d - 1) * float(np.dot(resid, resid)) / (n * n))), int(d)


def design_effect(se: float, sd: float, n: int) -> float:
    """``se² / (sd² / n)``; NaN when ``sd`` is 0 or undefined, or ``n < 2``."""
    if n < 2 or not math.isfinite(sd) or sd <= 0 or not math.isfinite(se):
        return float("nan")
    return se * se / (sd * sd / n)


def _ceil(x: float) -> int | None:
    return math.ceil(x - 1e-9) if math.isfinite(x) else None


def needed_for_delta(n_queries: int, n_docs: int, mde80: float, delta: float
                     ) -> tuple[int | None, int | None]:
    """(questions, documents) needed to detect ``|delta|`` with the power ``mde80`` was computed
    for, under SE ∝ 1/sqrt(documents) at the observed questions per document (module
    docstring). ``(None, None)`` when ``mde80`` is not finite or not positive (no spread: the
    design says nothing about sample size) or ``delta`` is 0."""
    if not math.isfinite(mde80) or mde80 <= 0 or delta == 0 or n_docs < 1:
        return None, None
    docs = _ceil(n_docs * (mde80 / abs(delta)) ** 2)
    if docs is None:
        return None, None
    docs = max(docs, 1)
    return _ceil(docs * n_queries / n_docs), docs


def needed_for_dz(n_queries: int, n_docs: int, deff: float, dz: float,
                  alpha: float = ALPHA, power: float = POWER) -> tuple[int | None, int | None]:
    """(questions, documents) needed to detect a standardised effect ``dz`` at the observed
    design effect ``deff`` and questions per document. ``(None, None)`` when undefined."""
    if not math.isfinite(deff) or dz == 0 or n_docs < 1 or n_queries < 1:
        return None, None
    q = _ceil(deff * (z_sum(alpha, power) / abs(dz)) ** 2)
    if q is None:
        return None, None
    q = max(q, 1)
    return q, max(1, _ceil(q * n_docs / n_queries))


MIN_DOCS = 30
"""Below this many documents the clustered bootstrap's CI and p are optimistic (module
docstring), so :func:`~structablate.stats.contrast_table` takes a row's p, interval and TOST
from the document-level sign-flip test there (:mod:`structablate.stats.smallsample`)."""
MIN_QUERIES = needed_for_dz(1, 1, 1.0, PAPER_DZ[1])[0]
"""272: questions needed to detect dz 0.17 with 80% power even if they were independent."""


def sample_warnings(n_queries: int, n_docs: int) -> list[str]:
    """Which small-sample thresholds a design falls below: ``"documents"``, ``"queries"``."""
    out = []
    if n_docs < MIN_DOCS:
        out.append("documents")
    if n_queries < MIN_QUERIES:
        out.append("queries")
    return out


def resolving_power(contrasts: pl.DataFrame, deltas: Sequence[float] = PAPER_DELTAS,
                    dzs: Sequence[float] = PAPER_DZ) -> pl.DataFrame:
    """Per contrast row: the MDE and the sample needed for each target effect, at 80% power and
    the level of the decision (two-sided ``α / family_size``, Holm's strictest step).

    ``contrasts`` needs ``n_queries, n_docs, mde80`` and, for the dz targets,
    ``design_effect`` (the contrasts table; without it the dz columns are null); with
    ``mde80_family`` and ``family_size`` (the contrasts table has both) the figures are at the
    family's level, else at α. The result keeps its key columns present among ``corpus,
    embedder, reranker, metric, contrast, cond_a, cond_b`` and adds ``mde80`` (the MDE used),
    ``alpha`` (its level), and per target ``queries_for_delta_<x>`` / ``docs_for_delta_<x>``
    and ``queries_for_dz_<x>`` / ``docs_for_dz_<x>`` (``<x>`` as written by ``f"{x:g}"``;
    null when undefined).
    """
    keys = [c for c in ("corpus", "embedder", "reranker", "metric", "contrast", "cond_a",
                        "cond_b") if c in contrasts.columns]
    need = ("n_queries", "n_docs", "mde80")
    missing = [c for c in need if c not in contrasts.columns]
    if missing:
        raise ValueError(f"resolving_power: the contrasts table lacks {missing}")
    family = "mde80_family" in contrasts.columns and "family_size" in contrasts.columns
    rows = []
    for r in contrasts.iter_rows(named=True):
        row = {k: r[k] for k in keys}
        size = int(r["family_size"]) if family and r["family_size"] else 1
        alpha = ALPHA / size
        row["mde80"] = r["mde80_family"] if family else r["mde80"]
        row["alpha"] = alpha
        for d in deltas:
            q, n = needed_for_delta(r["n_queries"], r["n_docs"], _f(row["mde80"]), d)
            row[f"queries_for_delta_{d:g}"], row[f"docs_for_delta_{d:g}"] = q, n
        for z in dzs:
            q, n = needed_for_dz(r["n_queries"], r["n_docs"], _f(r.get("design_effect")), z,
                                 alpha=alpha)
            row[f"queries_for_dz_{z:g}"], row[f"docs_for_dz_{z:g}"] = q, n
        rows.append(row)
    schema = {k: pl.String for k in keys} | {"mde80": pl.Float64, "alpha": pl.Float64}
    for d in deltas:
        schema |= {f"queries_for_delta_{d:g}": pl.Int64, f"docs_for_delta_{d:g}": pl.Int64}
    for z in dzs:
        schema |= {f"queries_for_dz_{z:g}": pl.Int64, f"docs_for_dz_{z:g}": pl.Int64}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def _f(x) -> float:
    return float("nan") if x is None else float(x)
