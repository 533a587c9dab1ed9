"""Does a contrast change with embedder capacity? The paper reads its findings across a weak and a
strong embedder; this module tests that reading instead of eyeballing it.

For two embedders that scored the same questions (one corpus, one reranker), a contrast
``A − B`` has a per-question delta under each embedder, ``d_weak`` and ``d_strong``; their
difference ``d_strong − d_weak`` per question is the *interaction*: how much the contrast moves
when only the embedder changes. All three are averaged over questions and resampled by one
document-clustered bootstrap (:mod:`structablate.stats.bootstrap`: the same document draws for
every column, so the interval of the interaction accounts for the two deltas' correlation
through shared questions). The interaction's two-sided bootstrap p is Holm-adjusted over the
contrasts of each measure (an exploratory family: the paper pre-registers no embedder
interaction).

Units: deltas are in the measure's own units (e.g. covNDCG@10 points on a 0–1 scale);
``rel_*`` columns divide a delta by the control condition's (``B``'s) mean under the same
embedder, so levels that differ between embedders can be compared as shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_p, cluster_bootstrap, per_doc
from .bootstrap import percentile_ci as _percentile_ci
from .holm import holm

__all__ = ["COLUMNS", "LEVEL_COLUMNS", "embedder_contrasts", "embedder_levels"]

COLUMNS: dict[str, pl.DataType] = {
    "contrast": pl.String, "cond_a": pl.String, "cond_b": pl.String, "metric": pl.String,
    "weak": pl.String, "strong": pl.String, "n_queries": pl.Int64, "n_docs": pl.Int64,
    "mean_b_weak": pl.Float64, "mean_b_strong": pl.Float64,
    "delta_weak": pl.Float64, "ci_lo_weak": pl.Float64, "ci_hi_weak": pl.Float64,
    "delta_strong": pl.Float64, "ci_lo_strong": pl.Float64, "ci_hi_strong": pl.Float64,
    "rel_weak": pl.Float64, "rel_strong": pl.Float64,
    "interaction": pl.Float64, "ci_lo": pl.Float64, "ci_hi": pl.Float64,
    "p": pl.Float64, "p_holm": pl.Float64,
}
"""The table :func:`embedder_contrasts` returns, one row per (contrast, measure)."""


def _cell(scores: Mapping[str, pl.DataFrame], cond: str, metric: str, tag: str) -> pl.DataFrame:
    df = scores[cond]
    if df["qid"].is_duplicated().any():
        raise ValueError(f"embedder contrasts: condition {cond} scores a question twice")
    return df.select("qid", "doc_id", pl.col(metric).cast(pl.Float64).alias(tag))


def _same_questions(parts: Sequence[pl.DataFrame], what: str) -> pl.DataFrame:
    """``parts`` (``qid``, ``doc_id`` and one score column each) joined per question, sorted by
    ``qid``. Every part must score the same questions under the same documents: a silent
    inner join would compare different question sets, so a difference raises, naming
    ``what``."""
    qsets = [set(p["qid"].to_list()) for p in parts]
    if any(q != qsets[0] for q in qsets[1:]):
        raise ValueError(f"{what}: scored different questions")
    j = parts[0]
    for p in parts[1:]:
        j = j.join(p, on=["qid", "doc_id"], how="inner")
    if j.height != len(qsets[0]):
        raise ValueError(f"{what}: a question has a different document under another "
                         "embedder or condition")
    return j.sort("qid")


def embedder_contrasts(
    scores: Mapping[str, Mapping[str, pl.DataFrame]],
    weak: str,
    strong: str,
    contrasts: Mapping[str, tuple[str, str]],
    metrics: Sequence[str],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> pl.DataFrame:
    """The interaction table (:data:`COLUMNS`) of ``contrasts`` between embedders ``weak`` and
    ``strong``.

    ``scores[embedder][condition]`` is a per-question score table (``qid``, ``doc_id`` and one
    column per measure), as the workflow writes under ``{embedder}/{reranker}/scores/``. A
    contrast runs where both its conditions were scored under both embedders; otherwise it is
    left out (the caller says "not run"). The questions must be the same under every
    embedder and condition (they are one corpus's): a question scored under one and not the
    other raises, since a silent inner join would compare different question sets.
    """
    rows: list[dict] = []
    for name, (a, b) in contrasts.items():
        if not all(c in scores[e] for e in (weak, strong) for c in (a, b)):
            continue
        for metric in metrics:
            parts = [_cell(scores[e], c, metric, f"{c}|{e}") for e in (weak, strong)
                     for c in (a, b)]
            j = _same_questions(parts, f"embedder contrasts {name} on {metric}: the "
                                       f"conditions {a}, {b} under {weak} and {strong}")
            aw, bw = j[f"{a}|{weak}"].to_numpy(), j[f"{b}|{weak}"].to_numpy()
            as_, bs = j[f"{a}|{strong}"].to_numpy(), j[f"{b}|{strong}"].to_numpy()
            d = np.stack([aw - bw, as_ - bs, (as_ - bs) - (aw - bw)], axis=1)
            docs, sums, counts = per_doc(d, j["doc_id"].to_list())
            reps = cluster_bootstrap(sums, counts, n_boot, seed)
            lo, hi = _percentile_ci(reps, level)
            p = bootstrap_p(reps)
            means = d.mean(axis=0)
            mb_w, mb_s = float(bw.mean()), float(bs.mean())
            rows.append({
                "contrast": name, "cond_a": a, "cond_b": b, "metric": metric,
                "weak": weak, "strong": strong, "n_queries": j.height, "n_docs": len(docs),
                "mean_b_weak": mb_w, "mean_b_strong": mb_s,
                "delta_weak": float(means[0]), "ci_lo_weak": float(lo[0]),
                "ci_hi_weak": float(hi[0]),
                "delta_strong": float(means[1]), "ci_lo_strong": float(lo[1]),
                "ci_hi_strong": float(hi[1]),
                "rel_weak": float(means[0] / mb_w) if mb_w else float("nan"),
                "rel_strong": float(means[1] / mb_s) if mb_s else float("nan"),
                "interaction": float(means[2]), "ci_lo": float(lo[2]), "ci_hi": float(hi[2]),
                "p": float(p[2]), "p_holm": float("nan"),
            })
    out = pl.DataFrame(rows, schema=COLUMNS) if rows else pl.DataFrame(schema=COLUMNS)
    return _holm_per_metric(out)


LEVEL_COLUMNS: dict[str, pl.DataType] = {
    "condition": pl.String, "metric": pl.String, "weak": pl.String, "strong": pl.String,
    "n_queries": pl.Int64, "n_docs": pl.Int64, "mean_weak": pl.Float64,
    "mean_strong": pl.Float64, "difference": pl.Float64, "ci_lo": pl.Float64,
    "ci_hi": pl.Float64, "p": pl.Float64, "p_holm": pl.Float64,
}
"""The table :func:`embedder_levels` returns, one row per (condition, measure)."""


def embedder_levels(
    scores: Mapping[str, Mapping[str, pl.DataFrame]],
    weak: str,
    strong: str,
    conditions: Sequence[str],
    metrics: Sequence[str],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> pl.DataFrame:
    """Each condition's level under both embedders and the paired per-question difference
    ``strong − weak`` with a document-clustered bootstrap interval and p, Holm-adjusted over
    the conditions of each measure (:data:`LEVEL_COLUMNS`). Conditions not scored under both
    are left out; different question sets raise, as in :func:`embedder_contrasts`."""
    rows: list[dict] = []
    for cond in conditions:
        if cond not in scores[weak] or cond not in scores[strong]:
            continue
        for metric in metrics:
            w = _cell(scores[weak], cond, metric, "w")
            st = _cell(scores[strong], cond, metric, "s")
            j = _same_questions([w, st], f"embedder levels {cond} on {metric}: {weak} and "
                                         f"{strong}")
            d = j["s"].to_numpy() - j["w"].to_numpy()
            docs, sums, counts = per_doc(d, j["doc_id"].to_list())
            reps = cluster_bootstrap(sums, counts, n_boot, seed)
            lo, hi = _percentile_ci(reps, level)
            rows.append({
                "condition": cond, "metric": metric, "weak": weak, "strong": strong,
                "n_queries": j.height, "n_docs": len(docs),
                "mean_weak": float(j["w"].mean()), "mean_strong": float(j["s"].mean()),
                "difference": float(d.mean()), "ci_lo": float(lo[0]), "ci_hi": float(hi[0]),
                "p": float(bootstrap_p(reps)[0]), "p_holm": float("nan"),
            })
    out = pl.DataFrame(rows, schema=LEVEL_COLUMNS) if rows else pl.DataFrame(
        schema=LEVEL_COLUMNS)
    return _holm_per_metric(out)


def _holm_per_metric(out: pl.DataFrame) -> pl.DataFrame:
    """``p_holm``: Holm over the rows of each measure."""
    if not out.height:
        return out
    adjusted = np.empty(out.height)
    for metric in out["metric"].unique(maintain_order=True).to_list():
        idx = np.flatnonzero((out["metric"] == metric).to_numpy())
        adjusted[idx] = holm(out["p"].to_numpy()[idx])
    return out.with_columns(pl.Series("p_holm", adjusted))
