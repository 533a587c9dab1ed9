"""The precision fidelity gate, judged on the study's outputs rather than on vectors.

A lower precision (float16, bfloat16, OpenVINO bf16, ...) is accepted for a run when, on the
same chunksets and questions, the study's outputs it produces differ from the float32
reference's by less than the study can see:

* every condition's mean of every metric (per cell: corpus, embedder, reranker) moves by less
  than ``fraction`` (default a tenth) of the smallest minimum detectable effect (``mde80``,
  80 % power) of that cell's and metric's contrasts in the reference (contrasts whose two
  conditions score every question alike have ``mde80`` = 0 and are left out of the minimum;
  a cell and metric without any other contrast fails, naming it), and
* no contrast's verdict changes. The verdict is the study's one decision rule
  (:func:`structablate.stats.decision.decide`, the contrasts table's ``decision`` column) in
  its words (:func:`~structablate.stats.decision.decision_words`): "yes" / "no, it hurts" for
  a difference (by the sign of ``delta``), "a real but negligible difference", "no difference
  larger than ±margin", "too small to tell", "withheld" — the words a results page prints.

Vector cosines and top-k identity are reported beside the gate (``bench/bench_embedding.py
fidelity``), never as the gate: near-ties reorder under any change of the last bits without
moving any result the study reports.

Two entry points: :func:`fidelity_gate` computes both contrast tables from two score tables
(for tests and notebooks); :func:`compare_runs` takes the tables a run already wrote (each
cell's ``scores/*.parquet`` and ``contrasts.parquet``, with the families, margins and
bootstrap the config declared), which is what ``python -m structablate.fidelity`` does:

    python -m structablate.fidelity RESULTS --embedders minilm minilm_bf16
    python -m structablate.fidelity RESULTS_FLOAT32 RESULTS_LOW --embedders minilm

The first form compares two embedders of one results folder (the same model at two precisions
under two names, so chunks and questions are shared); the second the same embedder in two
folders. Exit status 0 when the gate passes, 1 when it fails, 2 on unusable input.
"""

from __future__ import annotations

import argparse
import glob
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from structablate.results_paths import Paths
from structablate.stats import CELL, contrast_table, metric_columns
from structablate.stats.cell import long_scores
from structablate.stats.decision import ALPHA, decision_words

__all__ = ["FidelityError", "FidelityReport", "compare_runs", "fidelity_gate", "read_cells",
           "verdict"]


class FidelityError(ValueError):
    """The two runs cannot be compared (other queries, other contrasts, a missing table); the
    message names what differs."""


def verdict(decision: str | None, delta: float | None, margin: float | None = None) -> str:
    """A contrast row's verdict in the study's words: :func:`decision_words` of its
    ``decision`` (``None``, a row written before the decision column existed, is refused)."""
    if decision is None:
        raise FidelityError("a contrast row has no decision: the contrasts table was written "
                            "by an older structablate; rerun its cell_statistics job")
    return decision_words(decision, delta, margin)


@dataclass
class FidelityReport:
    """What the gate found. ``passed`` is the gate; ``mean_shifts`` one row per (cell, metric,
    condition) with ``mean_ref``, ``mean_low``, ``shift`` (absolute, metric units), ``limit``
    (``fraction`` × the smallest positive ``mde80`` of the reference's contrasts in that
    cell and metric) and ``ok``; ``verdicts`` one row per (cell, [family,] metric, contrast)
    with both verdicts (:func:`verdict`) and ``changed``; ``reasons`` every failed row in
    words."""

    passed: bool
    mean_shifts: pl.DataFrame
    verdicts: pl.DataFrame
    reasons: list[str] = field(default_factory=list)


def _cell_name(r: Mapping) -> str:
    return f"{r['corpus']}/{r['embedder']}/{r['reranker']}"


def compare_runs(reference: pl.DataFrame, lower: pl.DataFrame, ref_contrasts: pl.DataFrame,
                 low_contrasts: pl.DataFrame, *, metrics: Sequence[str] | None = None,
                 fraction: float = 0.1) -> FidelityReport:
    """The gate over what two runs wrote: their long score tables (cell columns,
    ``condition``, ``qid``, one column per metric) and their contrasts tables
    (:func:`structablate.stats.contrast_table`'s columns, ``decision`` included; a ``family``
    column, as the workflow writes, is part of a row's key).

    Raises :class:`FidelityError` when the score tables do not hold the same (cell, condition,
    qid) rows or the contrasts tables not the same rows: the gate compares like with like.
    """
    metrics = list(metrics) if metrics is not None else metric_columns(reference)
    keys = [*CELL, "condition", "qid"]
    a = reference.select(keys).sort(keys)
    b = lower.select(keys).sort(keys)
    if not a.equals(b):
        only = a.join(b, on=keys, how="anti").height, b.join(a, on=keys, how="anti").height
        raise FidelityError(
            "the two score tables do not hold the same (corpus, embedder, reranker, "
            f"condition, qid) rows: {only[0]} only in the reference, {only[1]} only in the "
            "lower precision's")
    vkeys = [*CELL, *(["family"] if "family" in ref_contrasts.columns else []), "metric",
             "contrast"]
    missing = [c for c in (*vkeys, "delta", "mde80", "decision", "margin")
               if c not in ref_contrasts.columns or c not in low_contrasts.columns]
    if missing:
        raise FidelityError(f"a contrasts table lacks the column(s) {', '.join(missing)}")
    ka = ref_contrasts.select(vkeys).sort(vkeys)
    kb = low_contrasts.select(vkeys).sort(vkeys)
    if not ka.equals(kb):
        raise FidelityError("the two contrasts tables do not hold the same (cell, family, "
                            "metric, contrast) rows: were both runs made with one config?")
    ref_c = ref_contrasts.filter(pl.col("metric").is_in(metrics))
    low_c = low_contrasts.filter(pl.col("metric").is_in(metrics))
    group = [*CELL, "condition"]

    def means(t: pl.DataFrame, name: str) -> pl.DataFrame:
        return (t.group_by(group).agg([pl.col(m).mean() for m in metrics])
                .unpivot(index=group, on=metrics, variable_name="metric", value_name=name))

    # a contrast whose conditions score every question alike has se = 0, so mde80 = 0: it
    # says nothing about what the study can detect and would make every shift fail
    mde = ref_c.group_by([*CELL, "metric"]).agg(
        pl.col("mde80").filter(pl.col("mde80") > 0).min().alias("mde80_min"))
    shifts = (means(reference, "mean_ref").join(means(lower, "mean_low"), on=[*group, "metric"])
              .join(mde, on=[*CELL, "metric"], how="left")
              .with_columns((pl.col("mean_low") - pl.col("mean_ref")).abs().alias("shift"),
                            (fraction * pl.col("mde80_min")).alias("limit"))
              .with_columns((pl.col("shift") < pl.col("limit")).fill_null(False).alias("ok"))
              .sort([*CELL, "metric", "condition"]))
    cols = [*vkeys, "delta", "decision", "margin"]
    both = ref_c.select(cols).join(low_c.select(cols), on=vkeys, suffix="_low").sort(vkeys)
    rows = []
    for r in both.iter_rows(named=True):
        v_ref = verdict(r["decision"], r["delta"], r["margin"])
        v_low = verdict(r["decision_low"], r["delta_low"], r["margin_low"])
        rows.append({**{k: r[k] for k in vkeys}, "verdict_ref": v_ref, "verdict_low": v_low,
                     "changed": v_ref != v_low})
    verdicts = pl.DataFrame(rows, schema={**{k: both.schema[k] for k in vkeys},
                                          "verdict_ref": pl.String, "verdict_low": pl.String,
                                          "changed": pl.Boolean})
    reasons = []
    for r in shifts.filter(~pl.col("ok")).iter_rows(named=True):
        limit = "no MDE (no contrast of this cell and metric with se > 0)" \
            if r["limit"] is None \
            else f"limit {r['limit']:.5f}"
        reasons.append(f"{_cell_name(r)} {r['metric']} {r['condition']}: mean moved "
                       f"{r['shift']:.5f}, {limit}")
    for r in verdicts.filter(pl.col("changed")).iter_rows(named=True):
        reasons.append(f"{_cell_name(r)} {r['metric']} {r['contrast']}: verdict "
                       f"{r['verdict_ref']!r} -> {r['verdict_low']!r}")
    if ref_c.is_empty():
        reasons.append("no contrast could be computed (no MDE to compare against)")
    return FidelityReport(passed=not reasons, mean_shifts=shifts, verdicts=verdicts,
                          reasons=reasons)


def fidelity_gate(
    reference: pl.DataFrame,
    lower: pl.DataFrame,
    *,
    contrasts: Mapping[str, tuple[str, str]] | None = None,
    metrics: Sequence[str] | None = None,
    fraction: float = 0.1,
    equivalence_margin: float | Mapping[str, float] | None = None,
    alpha: float = ALPHA,
    n_boot: int = 2000,
    seed: int = 0,
) -> FidelityReport:
    """Compare two per-query score tables of the same queries (float32 ``reference``, the
    candidate precision ``lower``): both contrast tables are computed here with one family
    (``contrasts``, default the study's :data:`structablate.study.PAPER_CONTRASTS`; those whose
    conditions are absent enter Holm with p = 1), ``equivalence_margin`` and the bootstrap's
    ``n_boot``/``seed``, then :func:`compare_runs` applies the gate."""
    metrics = list(metrics) if metrics is not None else metric_columns(reference)
    kw = {"metrics": metrics, "n_boot": n_boot, "seed": seed, "mixedlm": "none",
          "primary": None, "equivalence_margin": equivalence_margin, "alpha": alpha}
    if contrasts is not None:
        kw["contrasts"] = contrasts
    return compare_runs(reference, lower, contrast_table(reference, **kw),
                        contrast_table(lower, **kw), metrics=metrics, fraction=fraction)


def read_cells(results: Path, embedder: str, rename: str | None = None
               ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The long score table and the contrasts table of every cell of ``embedder`` in a results
    folder (the workflow's :class:`~structablate.results_paths.Paths`: each cell's
    ``scores/<condition>.parquet`` and its ``contrasts`` table), with the embedder column set
    to ``rename`` (or ``embedder``). Raises :class:`FidelityError` naming the folder or file
    that is missing."""
    results = Path(results)
    if not results.is_dir():
        raise FidelityError(f"{results}: no such results folder")
    paths = Paths(str(results))
    found: dict[tuple[str, str], list[str]] = {}
    for f in sorted(glob.glob(paths.scores("*", embedder, "*", "*"))):
        corpus, _, reranker = Path(f).relative_to(results).parts[:3]
        found.setdefault((corpus, reranker), []).append(Path(f).stem)
    if not found:
        raise FidelityError(f"{results}: no cell of embedder {embedder!r} (looked for "
                            f"{paths.scores('<corpus>', embedder, '<reranker>', '<condition>')})")
    scores, contrasts = [], []
    name = rename or embedder
    for (corpus, reranker), conditions in found.items():
        table = Path(paths.cell_table(corpus, embedder, reranker, "contrasts"))
        if not table.is_file():
            raise FidelityError(f"{table}: missing (the cell is incomplete: run its "
                                "cell_statistics job)")
        scores.append(long_scores(
            {c: pl.read_parquet(paths.scores(corpus, embedder, reranker, c))
             for c in conditions}, corpus, name, reranker))
        contrasts.append(pl.read_parquet(table).with_columns(pl.lit(name).alias("embedder")))
    return (pl.concat(scores, how="diagonal_relaxed"),
            pl.concat(contrasts, how="diagonal_relaxed"))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m structablate.fidelity",
        description="The precision fidelity gate on two runs' outputs (module docstring).")
    ap.add_argument("reference", type=Path, help="results folder of the float32 run")
    ap.add_argument("lower", type=Path, nargs="?", default=None,
                    help="results folder of the lower-precision run (default: the same folder)")
    ap.add_argument("--embedders", nargs="+", required=True, metavar="NAME",
                    help="the reference's embedder name and, if different, the lower run's")
    ap.add_argument("--fraction", type=float, default=0.1,
                    help="a mean may move by less than this share of the smallest MDE")
    ap.add_argument("--save", type=Path, default=None,
                    help="folder for mean_shifts.parquet and verdicts.parquet")
    args = ap.parse_args(argv)
    if len(args.embedders) > 2:
        ap.error("--embedders takes one or two names")
    ref_name = args.embedders[0]
    low_name = args.embedders[-1]
    lower_dir = args.lower or args.reference
    if lower_dir == args.reference and ref_name == low_name:
        ap.error("one folder needs two embedder names (--embedders REFERENCE LOWER)")
    try:
        ref_s, ref_c = read_cells(args.reference, ref_name)
        low_s, low_c = read_cells(lower_dir, low_name, rename=ref_name)
        report = compare_runs(ref_s, low_s, ref_c, low_c, fraction=args.fraction)
    except FidelityError as exc:
        print(f"fidelity: {exc}", file=sys.stderr)
        return 2
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        report.mean_shifts.write_parquet(args.save / "mean_shifts.parquet")
        report.verdicts.write_parquet(args.save / "verdicts.parquet")
    worst = report.mean_shifts.with_columns(
        (pl.col("shift") / pl.col("limit")).alias("of_limit")).sort(
        "of_limit", descending=True, nulls_last=True)
    with pl.Config(tbl_rows=12, tbl_cols=-1, tbl_width_chars=160, fmt_str_lengths=60):
        print(f"reference {args.reference} ({ref_name}) against {lower_dir} ({low_name})")
        print(f"{report.mean_shifts.height} condition means, "
              f"{int(report.mean_shifts['ok'].sum())} within {args.fraction:g} x the smallest "
              "MDE; the largest shifts against their limit:")
        print(worst.select([*CELL, "metric", "condition", "mean_ref", "mean_low", "shift",
                            "limit", "of_limit"]).head(12))
        changed = int(report.verdicts["changed"].sum())
        print(f"{report.verdicts.height} contrast verdicts, {changed} changed")
        if changed:
            print(report.verdicts.filter(pl.col("changed")))
    print("gate: " + ("pass" if report.passed else "FAIL"))
    for reason in report.reasons:
        print(f"  {reason}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
