"""Per-condition statistics of one cell: means, their clustered-bootstrap CIs, and stage-1
section recall of the two-stage conditions (paper, Appendix D.2 and §6.4).

* :func:`condition_means` — unweighted per-condition means of every metric.
* :func:`condition_mean_cis` — the same means with document-clustered bootstrap percentile CIs.
* :func:`section_recall_cis` — the share of queries whose stage 1 kept a gold-bearing section,
  with its clustered-bootstrap CI and the backfill counts.

Every condition draws from a fresh ``default_rng(seed)``, so a condition's interval does not
depend on which other conditions ran.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, cluster_bootstrap, per_doc, percentile_ci
from .columns import metric_columns

MEANS_SCHEMA = {"condition": pl.String, "measure": pl.String, "mean": pl.Float64,
                "n_queries": pl.Int64, "n_docs": pl.Int64}
CIS_SCHEMA = {"condition": pl.String, "measure": pl.String, "mean": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "n_queries": pl.Int64,
              "n_docs": pl.Int64}
SECTION_RECALL_SCHEMA = {"condition": pl.String, "n_queries": pl.Int64, "n_docs": pl.Int64,
                         "section_recall": pl.Float64, "ci_low": pl.Float64,
                         "ci_high": pl.Float64, "mean_backfill": pl.Float64,
                         "share_backfilled": pl.Float64}


def condition_means(scores: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Long table ``condition, measure, mean, n_queries, n_docs`` (conditions in the given
    order, measures in table order); ``scores``: condition -> per-query score table. The mean
    is unweighted over the table's queries (NaN for an empty table)."""
    rows: dict[str, list] = {k: [] for k in MEANS_SCHEMA}
    for cond, df in scores.items():
        for m in metric_columns(df):
            rows["condition"].append(cond)
            rows["measure"].append(m)
            rows["mean"].append(float(df[m].mean()) if df.height else float("nan"))
            rows["n_queries"].append(df.height)
            rows["n_docs"].append(df["doc_id"].n_unique())
    return pl.DataFrame(rows, schema=MEANS_SCHEMA)


def condition_mean_cis(
    scores: Mapping[str, pl.DataFrame],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> pl.DataFrame:
    """Per-condition means with document-clustered bootstrap percentile CIs.

    ``scores``: condition -> per-query score table (qid, doc_id, qtype, one column per metric).
    Columns: condition, measure, mean, ci_low, ci_high, n_queries, n_docs.
    """
    rows: dict[str, list] = {k: [] for k in CIS_SCHEMA}
    for cond, df in scores.items():
        measures = metric_columns(df)
        if not df.height or not measures:
            continue
        values = df.select(measures).to_numpy().astype(np.float64)
        docs, sums, counts = per_doc(values, df["doc_id"].to_numpy())
        reps = cluster_bootstrap(sums, counts, n_boot, seed)
        lo, hi = percentile_ci(reps, level)
        means = values.mean(axis=0)
        for j, m in enumerate(measures):
            rows["condition"].append(cond)
            rows["measure"].append(m)
            rows["mean"].append(float(means[j]))
            rows["ci_low"].append(float(np.atleast_1d(lo)[j]))
            rows["ci_high"].append(float(np.atleast_1d(hi)[j]))
            rows["n_queries"].append(df.height)
            rows["n_docs"].append(len(docs))
    return pl.DataFrame(rows, schema=CIS_SCHEMA)


def section_recall_cis(
    runs: Mapping[str, pl.DataFrame],
    queries: pl.DataFrame,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> pl.DataFrame:
    """Stage-1 section recall per two-stage condition, with a clustered-bootstrap CI.

    ``runs``: condition -> run table carrying per-query ``section_recall`` (bool) and
    ``n_backfill`` repeated on each row (:func:`structablate.retrieval.runs`). Queries whose
    recall is null (no gold evidence) are left out. Columns: condition, n_queries, n_docs,
    section_recall, ci_low, ci_high, mean_backfill, share_backfilled.
    """
    rows = []
    for cond, run in runs.items():
        if "section_recall" not in run.columns:
            raise ValueError(f"section_recall_cis: run of {cond} has no section_recall column")
        per_q = (run.group_by("qid", maintain_order=True)
                 .agg(pl.col("section_recall").first(), pl.col("n_backfill").first())
                 .filter(pl.col("section_recall").is_not_null())
                 .join(queries.select("qid", "doc_id"), on="qid", how="inner")
                 .sort("qid"))
        if not per_q.height:
            continue
        rec = per_q["section_recall"].cast(pl.Float64).to_numpy()
        docs, sums, counts = per_doc(rec, per_q["doc_id"].to_numpy())
        reps = cluster_bootstrap(sums[:, 0], counts, n_boot, seed)
        lo, hi = percentile_ci(reps, 0.95)
        nb = per_q["n_backfill"].cast(pl.Float64)
        rows.append({"condition": cond, "n_queries": per_q.height, "n_docs": len(docs),
                     "section_recall": float(rec.mean()), "ci_low": float(lo),
                     "ci_high": float(hi), "mean_backfill": float(nb.mean()),
                     "share_backfilled": float((nb > 0).mean())})
    return (pl.DataFrame(rows, schema=SECTION_RECALL_SCHEMA) if rows
            else pl.DataFrame(schema=SECTION_RECALL_SCHEMA))
