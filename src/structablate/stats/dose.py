"""Exploratory breadcrumb-depth dose-response (paper, §6.6).

Regress the score on the injected heading-path depth (A2 = 0, A3-d1 = 1, A3-d2 = 2, A3 = 3;
:data:`structablate.study.DOSE_LADDER`, derived from the conditions' breadcrumb depths)
within query: over the queries scored under every rung, the per-query least-squares slope is
``b_q = sum_d (x_d - mean x) * y_qd / sum_d (x_d - mean x)^2``, and the reported slope is their
unweighted mean. Because every query has the same design, this equals the pooled OLS slope with
a fixed effect per query (paired within query). Uncertainty: the same document-clustered
bootstrap over the per-query slopes (95% percentile CI, two-sided bootstrap p).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structablate.study import DOSE_LADDER

from .bootstrap import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    bootstrap_p,
    cluster_bootstrap,
    per_doc,
    percentile_ci,
)
from .columns import CELL, metric_columns


def per_query_slopes(y: np.ndarray, x: Sequence[float]) -> np.ndarray:
    """Least-squares slope of each row of ``y`` (n, k) on the k depths ``x``."""
    xc = np.asarray(x, dtype=np.float64) - np.mean(x)
    return np.asarray(y, dtype=np.float64) @ xc / (xc @ xc)


def dose_response(
    scores: pl.DataFrame,
    depths: Mapping[str, float] = DOSE_LADDER,
    metrics: Sequence[str] | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    by: Sequence[str] = (),
) -> pl.DataFrame:
    """Columns: corpus, embedder, reranker[, by], metric, n_queries, n_docs, slope, ci_low,
    ci_high, p. Cells lacking a rung are skipped."""
    if len(set(depths.values())) < 2:
        raise ValueError("dose_response needs at least two distinct depths")
    metrics = list(metrics) if metrics is not None else metric_columns(scores)
    keys = [*CELL, *by]
    conds = list(depths)
    rows = []
    for cell_key, cell in sorted(scores.group_by(keys), key=lambda kv: tuple(map(str, kv[0]))):
        cell = cell.filter(pl.col("condition").is_in(conds))
        if set(cell["condition"].unique().to_list()) != set(conds):
            continue
        if cell.select(pl.struct("condition", "qid").is_duplicated().any()).item():
            raise ValueError("dose_response: a query is scored twice under one condition")
        complete = cell.group_by("qid").agg(pl.len().alias("_n")).filter(pl.col("_n") == len(conds))
        cell = cell.join(complete.select("qid"), on="qid").sort("qid")
        if not cell.height:
            continue
        docs = cell.filter(pl.col("condition") == conds[0])["doc_id"].to_numpy()
        slopes = []
        for m in metrics:
            wide = cell.pivot(on="condition", index="qid", values=m).sort("qid")
            slopes.append(per_query_slopes(wide.select(conds).to_numpy(), list(depths.values())))
        b = np.column_stack(slopes)
        _, s, c = per_doc(b, docs)
        reps = cluster_bootstrap(s, np.repeat(c[:, None], len(metrics), 1), n_boot, seed)
        lo, hi = percentile_ci(reps)
        p = bootstrap_p(reps)
        for k, m in enumerate(metrics):
            rows.append(
                {
                    **dict(zip(keys, cell_key, strict=True)),
                    "metric": m,
                    "n_queries": len(b),
                    "n_docs": s.shape[0],
                    "slope": float(b[:, k].mean()),
                    "ci_low": float(lo[k]),
                    "ci_high": float(hi[k]),
                    "p": float(p[k]),
                }
            )
    schema = {
        **{k: pl.String for k in keys},
        "metric": pl.String,
        "n_queries": pl.Int64,
        "n_docs": pl.Int64,
        "slope": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "p": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
