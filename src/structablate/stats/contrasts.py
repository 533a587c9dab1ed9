"""Pre-registered contrasts (paper, §5.2 and Appendix D), per cell, metric and contrast.

Input: a long table of per-query scores, one row per (cell, condition, query), with columns
``corpus, embedder, reranker, condition, qid, doc_id`` (+ ``qtype`` for per-type cuts) and one
numeric column per metric (the output of :func:`structablate.metrics.score_run` with the cell
and condition added).

For a contrast ``(a, b)`` the per-query delta is ``score_a - score_b`` over the queries present
under both conditions of the cell; ``delta`` is their unweighted mean. Holm runs over the
contrasts of one family = one (cell, metric[, by-values]).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from .bootstrap import (
    DEFAULT_SEED,
    ZERO_TOL,
    bootstrap_p,
    bootstrap_se,
    cluster_bootstrap,
    equivalence_verdict,
    per_doc,
    percentile_ci,
    tost,
)
from .columns import CELL, metric_columns
from .holm import holm
from .mixedlm import mixedlm_pvalues
from .power import design_effect, mde

DEFAULT_CONTRASTS: dict[str, tuple[str, str]] = {
    "C1": ("A3", "A1"),
    "C2": ("A3", "P"),
    "C3": ("G3", "A3"),
    "C4": ("A4", "A3"),
}
"""C1 = A3 − A1, C2 = A3 − P, C3 = G3 − A3, C4 = A4 − A3 (paper, §3.1)."""

DEFAULT_PRIMARY: dict[str, str] = {"metric": "covNDCG@10", "embedder": "strong", "reranker": "none"}
"""The pre-registered primary cell; pass the workflow's own embedder/reranker labels."""

OUTPUT_COLUMNS = [
    "corpus", "embedder", "reranker", "metric", "contrast", "cond_a", "cond_b", "n_queries",
    "n_docs", "delta", "ci_low", "ci_high", "p", "p_holm", "dz", "se", "mde80",
    "design_effect", "n_zero_delta", "p_mixedlm", "p_mixedlm_query", "primary",
]  # fmt: skip
"""``se``: the clustered bootstrap's standard error of ``delta``; ``mde80``: the minimum
detectable effect at 80% power, two-sided α = 0.05 (``2.8016 · se``); ``design_effect``:
``se² / (sd²/n)`` (:mod:`structablate.stats.power`); ``n_zero_delta``: queries whose delta is
0 (``|δ_q| <= ZERO_TOL``), i.e. that score the same under both conditions."""

EQUIVALENCE_COLUMNS = ["ci90_low", "ci90_high", "p_tost", "verdict", "margin"]


def paired(cell: pl.DataFrame, cond_a: str, cond_b: str, metrics: Sequence[str]) -> pl.DataFrame:
    """Queries scored under both conditions: qid, doc_id, and ``<metric>`` / ``<metric>__b``."""
    cols = ["qid", "doc_id", *metrics]
    a = cell.filter(pl.col("condition") == cond_a).select(cols)
    b = cell.filter(pl.col("condition") == cond_b).select(cols)
    for df, c in ((a, cond_a), (b, cond_b)):
        if df["qid"].is_duplicated().any():
            raise ValueError(f"contrasts: condition {c} scores a query twice within one cell")
    j = a.join(b, on="qid", how="inner", suffix="__b").sort("qid")
    bad = j.filter(pl.col("doc_id") != pl.col("doc_id__b"))
    if bad.height:
        raise ValueError(f"contrasts: query {bad['qid'][0]} has different doc_id per condition")
    nulls = j.select(pl.all().null_count()).sum_horizontal().item()
    if nulls:
        raise ValueError(f"contrasts: null scores in {cond_a} vs {cond_b}")
    return j


def cohen_dz(deltas: np.ndarray) -> np.ndarray:
    """``mean / sd`` (ddof = 1) per column; NaN when undefined (n < 2 or sd = 0)."""
    d = np.asarray(deltas, dtype=np.float64)
    if d.shape[0] < 2:
        return np.full(d.shape[1:], np.nan)
    sd = d.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, d.mean(axis=0) / sd, np.nan)


def contrast_table(
    scores: pl.DataFrame,
    contrasts: Mapping[str, tuple[str, str]] = DEFAULT_CONTRASTS,
    metrics: Sequence[str] | None = None,
    *,
    n_boot: int = 10_000,
    seed: int = DEFAULT_SEED,
    primary: Mapping[str, str] | None = DEFAULT_PRIMARY,
    mixedlm: str = "primary",
    by: Sequence[str] = (),
    equivalence_margin: float | None = None,
    primary_family: bool = True,
) -> pl.DataFrame:
    """The contrasts table: one row per (cell[, by-values], metric, contrast).

    Columns :data:`OUTPUT_COLUMNS` (with the ``by`` columns after ``reranker``), plus, when
    ``equivalence_margin`` is given, :data:`EQUIVALENCE_COLUMNS` ``ci90_low, ci90_high,
    p_tost, verdict, margin`` (see :func:`~structablate.stats.bootstrap.equivalence_verdict`).

    * ``n_boot`` replicates of the document-clustered bootstrap with ``seed``. Every group of
      tests over the same document set draws from a fresh ``default_rng(seed)`` with documents
      in sorted order, so results do not depend on which other cells or contrasts are run.
    * ``p_holm``: Holm over the contrasts of one (cell, by-values, metric) family.
    * ``primary``: the primary cell and metric: a row lies in it when its
      metric/embedder/reranker (and corpus, if given) equal these values and ``by`` is empty.
      Its ``primary`` column is true for the rows in it when ``primary_family`` (the
      pre-registered family); an exploratory family passes ``primary_family=False`` and is
      never primary.
    * ``mixedlm``: ``"all"``, ``"primary"`` (the rows in the primary cell and metric, of either
      family; NaN elsewhere) or ``"none"``. Each fit takes seconds on 4,303 queries.
    * A contrast whose conditions are absent from a cell is left out of that cell's family.
    """
    if mixedlm not in ("all", "primary", "none"):
        raise ValueError("mixedlm must be 'all', 'primary' or 'none'")
    metrics = list(metrics) if metrics is not None else metric_columns(scores)
    if not metrics:
        raise ValueError("contrast_table: no metric columns")
    by = list(by)
    keys = [*CELL, *by]
    missing = [
        c for c in (*keys, "condition", "qid", "doc_id", *metrics) if c not in scores.columns
    ]
    if missing:
        raise ValueError(f"contrast_table: scores lack column(s) {missing}")
    rows: list[dict] = []
    for cell_key, cell in sorted(scores.group_by(keys), key=lambda kv: tuple(map(str, kv[0]))):
        rows.extend(
            _cell_rows(
                dict(zip(keys, cell_key, strict=True)),
                cell,
                contrasts,
                metrics,
                n_boot,
                seed,
                primary,
                mixedlm,
                bool(by),
                equivalence_margin,
                primary_family,
            )
        )
    cols = [*CELL, *by, *OUTPUT_COLUMNS[3:]]
    if equivalence_margin is not None:
        cols += EQUIVALENCE_COLUMNS
    schema = {c: pl.String for c in [*CELL, *by, "metric", "contrast", "cond_a", "cond_b"]}
    schema |= {
        "n_queries": pl.Int64,
        "n_docs": pl.Int64,
        "n_zero_delta": pl.Int64,
        "primary": pl.Boolean,
        "verdict": pl.String,
    }
    schema = {c: schema.get(c, pl.Float64) for c in cols}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def _is_primary(cell: dict, metric: str, primary: Mapping[str, str] | None, cut: bool) -> bool:
    if primary is None or cut:
        return False
    want = dict(primary)
    if want.pop("metric", metric) != metric:
        return False
    return all(str(cell.get(k)) == str(v) for k, v in want.items())


def _cell_rows(cell, df, contrasts, metrics, n_boot, seed, primary, mixedlm, cut, margin,
               primary_family=True):
    conds = set(df["condition"].unique().to_list())
    tests = []  # (name, a, b, paired frame)
    for name, (a, b) in contrasts.items():
        if a in conds and b in conds:
            j = paired(df, a, b, metrics)
            if j.height:
                tests.append((name, a, b, j))
    if not tests:
        return []
    # bootstrap: tests over the same document set share one draw
    stats: dict[str, dict[str, np.ndarray]] = {}
    groups: dict[tuple, list[int]] = {}
    for i, (_, _, _, j) in enumerate(tests):
        groups.setdefault(tuple(np.unique(j["doc_id"].to_numpy())), []).append(i)
    for members in groups.values():
        deltas, docs = [], None
        for i in members:
            j = tests[i][3]
            d = np.column_stack([(j[m] - j[f"{m}__b"]).to_numpy() for m in metrics])
            _, s, c = per_doc(d, j["doc_id"].to_numpy())
            deltas.append((s, c))
            docs = s.shape[0]
        sums = np.concatenate([s for s, _ in deltas], axis=1)
        cnts = np.concatenate([np.repeat(c[:, None], len(metrics), axis=1) for _, c in deltas], 1)
        reps = cluster_bootstrap(sums, cnts, n_boot, seed)
        lo, hi = percentile_ci(reps, 0.95)
        p = bootstrap_p(reps)
        se = bootstrap_se(reps)
        extra = {}
        if margin is not None:
            lo90, hi90 = percentile_ci(reps, 0.90)
            extra = {"lo90": lo90, "hi90": hi90, "tost": tost(reps, margin)}
        for k, i in enumerate(members):
            sl = slice(k * len(metrics), (k + 1) * len(metrics))
            stats[tests[i][0]] = {
                "lo": lo[sl],
                "hi": hi[sl],
                "p": p[sl],
                "se": se[sl],
                "n_docs": docs,
                **{key: v[sl] for key, v in extra.items()},
            }
    out = []
    for mi, metric in enumerate(metrics):
        fam = []
        for name, a, b, j in tests:
            d = (j[metric] - j[f"{metric}__b"]).to_numpy()
            st = stats[name]
            in_primary_cell = _is_primary(cell, metric, primary, cut)
            is_primary = in_primary_cell and primary_family
            pm = pq = float("nan")
            if mixedlm == "all" or (mixedlm == "primary" and in_primary_cell):
                pm, pq = mixedlm_pvalues(
                    j["qid"].to_numpy(),
                    j["doc_id"].to_numpy(),
                    j[metric].to_numpy(),
                    j[f"{metric}__b"].to_numpy(),
                )
            row = {
                **cell,
                "metric": metric,
                "contrast": name,
                "cond_a": a,
                "cond_b": b,
                "n_queries": len(d),
                "n_docs": int(st["n_docs"]),
                "delta": float(d.mean()),
                "ci_low": float(st["lo"][mi]),
                "ci_high": float(st["hi"][mi]),
                "p": float(st["p"][mi]),
                "p_holm": None,
                "dz": float(cohen_dz(d[:, None])[0]),
                "se": float(st["se"][mi]),
                "mde80": mde(float(st["se"][mi])),
                "design_effect": design_effect(float(st["se"][mi]),
                                               float(d.std(ddof=1)) if len(d) > 1
                                               else float("nan"), len(d)),
                "n_zero_delta": int((np.abs(d) <= ZERO_TOL).sum()),
                "p_mixedlm": pm,
                "p_mixedlm_query": pq,
                "primary": is_primary,
            }
            if margin is not None:
                ci90 = (float(st["lo90"][mi]), float(st["hi90"][mi]))
                row |= {
                    "ci90_low": ci90[0],
                    "ci90_high": ci90[1],
                    "p_tost": float(st["tost"][mi]),
                    "verdict": equivalence_verdict(ci90, (row["ci_low"], row["ci_high"]), margin),
                    "margin": float(margin),
                }
            fam.append(row)
        for row, ph in zip(fam, holm([r["p"] for r in fam]), strict=True):
            row["p_holm"] = float(ph)
        out.extend(fam)
    return out  # ordered by metric as given, then contrast as given


def equivalence_table(
    scores: pl.DataFrame,
    contrasts: Mapping[str, tuple[str, str]] = DEFAULT_CONTRASTS,
    metrics: Sequence[str] | None = None,
    *,
    margin: float = 0.01,
    **kwargs,
) -> pl.DataFrame:
    """Equivalence (bootstrap TOST) per contrast: the contrast table's key columns with delta,
    ci_low/ci_high (95%), ci90_low/ci90_high, p_tost, verdict (``different`` if the 95% CI
    excludes 0, else ``equivalent`` if the 90% CI lies within ±margin, else ``inconclusive``)
    and margin."""
    kwargs.setdefault("mixedlm", "none")
    t = contrast_table(scores, contrasts, metrics, equivalence_margin=margin, **kwargs)
    drop = ("p_holm", "dz", "se", "mde80", "design_effect", "n_zero_delta", "p_mixedlm",
            "p_mixedlm_query")
    return t.select([c for c in t.columns if c not in drop])
