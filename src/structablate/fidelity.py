"""The precision fidelity gate, judged on the study's outputs rather than on vectors.

A lower precision (float16, bfloat16, OpenVINO bf16, ...) is accepted for a run when, on the
same chunksets and questions, the per-query score table it produces differs from the
float32 reference's by less than the study can see:

* every condition's mean of every metric (per cell: corpus, embedder, reranker) moves by less
  than ``fraction`` (default a tenth) of the smallest minimum detectable effect (``mde80``,
  80 % power) of that cell's and metric's contrasts in the reference, and
* no contrast's verdict changes, where the verdict is the sign of ``delta`` when
  ``p_holm < alpha`` and "not significant" otherwise.

Vector cosines and top-k identity are reported beside the gate (``bench/bench_embedding.py
fidelity``), never as the gate: near-ties reorder under any change of the last bits without
moving any result the study reports.

Uses only :func:`structablate.stats.contrast_table`'s public columns ``delta``, ``mde80`` and
``p_holm``, and the long score table of :mod:`structablate.metrics` (cell columns,
``condition``, ``qid``, ``doc_id``, one column per metric).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from structablate.stats import CELL, contrast_table, metric_columns

__all__ = ["FidelityReport", "fidelity_gate", "verdict_word"]


def verdict_word(delta: float, p_holm: float, alpha: float = 0.05) -> str:
    """``"higher"``/``"lower"`` (cond_a against cond_b) when ``p_holm < alpha``, else
    ``"not significant"`` (also for NaN p-values)."""
    if p_holm == p_holm and p_holm < alpha:  # NaN compares false
        return "higher" if delta > 0 else "lower"
    return "not significant"


@dataclass
class FidelityReport:
    """What :func:`fidelity_gate` found. ``passed`` is the gate; ``mean_shifts`` one row per
    (cell, metric, condition) with ``mean_ref``, ``mean_low``, ``shift`` (absolute, metric
    units), ``limit`` (``fraction`` × the smallest ``mde80``) and ``ok``; ``verdicts`` one row
    per (cell, metric, contrast) with both verdicts and ``changed``."""

    passed: bool
    mean_shifts: pl.DataFrame
    verdicts: pl.DataFrame
    reasons: list[str] = field(default_factory=list)


def fidelity_gate(
    reference: pl.DataFrame,
    lower: pl.DataFrame,
    *,
    contrasts: Mapping[str, tuple[str, str]] | None = None,
    metrics: Sequence[str] | None = None,
    fraction: float = 0.1,
    alpha: float = 0.05,
    n_boot: int = 2000,
    seed: int = 0,
) -> FidelityReport:
    """Compare two per-query score tables of the same queries (float32 ``reference``, the
    candidate precision ``lower``); see the module docstring for the rule.

    Both tables must hold the same (cell, condition, qid) rows; ``contrasts`` default to the
    study's (:data:`structablate.study.PAPER_CONTRASTS`); contrasts whose
    conditions are absent are skipped. Raises ``ValueError`` naming what differs when the
    tables do not cover the same queries.
    """
    metrics = list(metrics) if metrics is not None else metric_columns(reference)
    keys = [*CELL, "condition", "qid"]
    a = reference.select(keys).sort(keys)
    b = lower.select(keys).sort(keys)
    if not a.equals(b):
        raise ValueError("fidelity_gate: the two score tables do not hold the same (corpus, "
                         "embedder, reranker, condition, qid) rows")
    kw = {"metrics": metrics, "n_boot": n_boot, "seed": seed, "mixedlm": "none",
          "primary": None}
    if contrasts is not None:
        kw["contrasts"] = contrasts
    ref_c = contrast_table(reference, **kw)
    low_c = contrast_table(lower, **kw)
    group = [*CELL, "condition"]
    means = (reference.group_by(group).agg([pl.col(m).mean() for m in metrics])
             .unpivot(index=group, on=metrics, variable_name="metric", value_name="mean_ref")
             .join(lower.group_by(group).agg([pl.col(m).mean() for m in metrics])
                   .unpivot(index=group, on=metrics, variable_name="metric",
                            value_name="mean_low"), on=[*group, "metric"]))
    mde = ref_c.group_by([*CELL, "metric"]).agg(pl.col("mde80").min().alias("mde80_min"))
    shifts = (means.join(mde, on=[*CELL, "metric"], how="left")
              .with_columns((pl.col("mean_low") - pl.col("mean_ref")).abs().alias("shift"),
                            (fraction * pl.col("mde80_min")).alias("limit"))
              .with_columns((pl.col("shift") < pl.col("limit")).fill_null(False).alias("ok"))
              .sort([*CELL, "metric", "condition"]))
    vkeys = [*CELL, "metric", "contrast"]
    both = ref_c.select([*vkeys, "delta", "p_holm"]).join(
        low_c.select([*vkeys, "delta", "p_holm"]), on=vkeys, suffix="_low")
    rows = []
    for r in both.iter_rows(named=True):
        v_ref = verdict_word(r["delta"], r["p_holm"], alpha)
        v_low = verdict_word(r["delta_low"], r["p_holm_low"], alpha)
        rows.append({**{k: r[k] for k in vkeys}, "verdict_ref": v_ref, "verdict_low": v_low,
                     "changed": v_ref != v_low})
    verdicts = pl.DataFrame(rows, schema={**{k: both.schema[k] for k in vkeys},
                                          "verdict_ref": pl.String, "verdict_low": pl.String,
                                          "changed": pl.Boolean})
    reasons = []
    bad = shifts.filter(~pl.col("ok"))
    for r in bad.iter_rows(named=True):
        reasons.append(f"{r['corpus']}/{r['embedder']}/{r['reranker']} {r['metric']} "
                       f"{r['condition']}: mean moved {r['shift']:.5f}, limit {r['limit']}")
    for r in verdicts.filter(pl.col("changed")).iter_rows(named=True):
        reasons.append(f"{r['corpus']}/{r['embedder']}/{r['reranker']} {r['metric']} "
                       f"{r['contrast']}: verdict {r['verdict_ref']} -> {r['verdict_low']}")
    if ref_c.is_empty():
        reasons.append("no contrast could be computed (no MDE to compare against)")
    return FidelityReport(passed=not reasons, mean_shifts=shifts, verdicts=verdicts,
                          reasons=reasons)
