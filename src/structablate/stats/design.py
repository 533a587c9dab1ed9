"""The design step: from a pilot's (or a previous run's) per-question scores, the smallest
effect each pre-registered contrast and each embedder × condition interaction can detect at
the current number of questions and documents, and the questions needed for a stated one.

Everything is analytic (no bootstrap), so it runs in seconds on any results folder; the
formulas (docs/statistics.md, "Designing a run"):

* per question ``i`` of document ``j`` a value ``x_ij``: a contrast's delta ``a − b``, or an
  interaction's ``(a − b)_strong − (a − b)_weak``; ``n`` questions over ``D`` documents,
  document sums ``S_j`` over ``n_j`` questions, estimate ``x̄ = Σ S_j / n``;
* **document-clustered standard error** (the linearised ratio estimator the document
  bootstrap approximates)::

      se² = D / (D − 1) · Σ_j (S_j − n_j · x̄)² / n²

  With ``m`` questions in every document this is ``var(per-document means, ddof 1) / D``;
* **design effect** ``deff = se² / (sd² / n)`` (``sd``: ddof 1 over the ``n`` values): how much
  the clustering inflates the variance of an independent-question design;
* **minimum detectable effect** at two-sided level ``α`` and power ``1 − β``::

      MDE = (z_{1−α/2} + z_{1−β}) · se            (α 0.05, power 0.8: 2.8016 · se)

* **power at a stated effect** ``δ``: ``Φ(|δ|/se − z_{1−α/2}) + Φ(−|δ|/se − z_{1−α/2})``;
* **questions needed for a stated MDE** ``δ``: the standard error shrinks as ``1/sqrt(D)`` at
  the observed questions per document and spread of document sums, so
  ``D* = ceil(D · (MDE / δ)²)`` documents and ``n* = ceil(D* · n / D)`` questions
  (:func:`structablate.stats.power.needed_for_delta`); equivalently
  ``n* ≈ deff · ((z_{1−α/2} + z_{1−β}) · sd / δ)²``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl

from .power import ALPHA, POWER, clustered_se, needed_for_delta, z_sum

__all__ = ["COLUMNS", "clustered_se", "design_markdown", "design_table", "main",
           "power_at", "read_cells"]

COLUMNS: dict[str, pl.DataType] = {
    "kind": pl.String, "contrast": pl.String, "cond_a": pl.String, "cond_b": pl.String,
    "family": pl.String, "embedder": pl.String, "metric": pl.String, "n_queries": pl.Int64,
    "n_docs": pl.Int64, "estimate": pl.Float64, "sd": pl.Float64, "se": pl.Float64,
    "design_effect": pl.Float64, "mde": pl.Float64, "control_mean": pl.Float64,
    "target": pl.Float64, "power_at_target": pl.Float64, "queries_needed": pl.Int64,
    "docs_needed": pl.Int64,
}
"""The table :func:`design_table` returns: one row per contrast and embedder
(``kind`` ``contrast``) and per contrast and embedder pair (``interaction``, ``embedder``
``strong − weak``). ``control_mean``: ``cond_b``'s mean (for an interaction, the mean of the
two embedders'); ``target``: the stated MDE the ``*_needed`` columns are for."""


def power_at(delta: float, se: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided level-``alpha`` z-test to detect a true effect ``delta`` when the
    estimate's standard error is ``se``; NaN when ``se`` is not positive and finite."""
    if not math.isfinite(se) or se <= 0:
        return float("nan")
    nd, z = NormalDist(), NormalDist().inv_cdf(1 - alpha / 2)
    return nd.cdf(abs(delta) / se - z) + nd.cdf(-abs(delta) / se - z)


def _values(scores: Mapping[str, pl.DataFrame], a: str, b: str, metric: str) -> pl.DataFrame:
    """``qid, doc_id, a, b`` of the questions scored under both conditions, sorted by qid."""
    pa = scores[a].select("qid", "doc_id", pl.col(metric).cast(pl.Float64).alias("a"))
    pb = scores[b].select("qid", "doc_id", pl.col(metric).cast(pl.Float64).alias("b"))
    return pa.join(pb, on=["qid", "doc_id"], how="inner").sort("qid")


def _row(kind: str, name: str, a: str, b: str, family: str, embedder: str, metric: str,
         x: np.ndarray, docs: Sequence, control: float, target: float | None,
         alpha: float, power: float) -> dict:
    se, d = clustered_se(x, docs)
    n = int(x.size)
    sd = float(np.std(x, ddof=1)) if n > 1 else float("nan")
    mde = z_sum(alpha, power) * se if math.isfinite(se) else float("nan")
    deff = se * se / (sd * sd / n) if n > 1 and sd > 0 and math.isfinite(se) else float("nan")
    q, dn = (needed_for_delta(n, d, mde, target) if target is not None and math.isfinite(mde)
             else (None, None))
    return {"kind": kind, "contrast": name, "cond_a": a, "cond_b": b, "family": family,
            "embedder": embedder, "metric": metric, "n_queries": n, "n_docs": d,
            "estimate": float(x.mean()) if n else float("nan"), "sd": sd, "se": se,
            "design_effect": deff, "mde": mde, "control_mean": control,
            "target": target, "power_at_target":
                power_at(target, se, alpha) if target is not None else None,
            "queries_needed": q, "docs_needed": dn}


def design_table(
    scores: Mapping[str, Mapping[str, pl.DataFrame]],
    contrasts: Mapping[str, tuple[str, str, str]],
    metrics: Sequence[str],
    *,
    target: float | None = None,
    relative: float | None = None,
    targets: Mapping[str, float] | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
) -> pl.DataFrame:
    """The design table (:data:`COLUMNS`).

    ``scores[embedder][condition]``: per-question score tables (``qid``, ``doc_id``, one
    column per measure) of one corpus and reranker; ``contrasts``: name -> ``(a, b, family)``
    (family: the contrast table's, ``pre-registered`` or ``exploratory``). Every contrast whose
    two conditions were scored gets a ``contrast`` row per embedder; with two or more
    embedders, each pair ``(weak, strong)`` in the mapping's order gets an ``interaction``
    row per contrast scored under both. The stated MDE of a row is ``targets[name]`` when
    given, else ``target`` (absolute, in the measure's units), else ``relative`` times the
    row's ``control_mean``; without any, the ``*_needed`` and ``power_at_target`` columns are
    null."""
    targets = dict(targets or {})
    embedders = list(scores)
    rows: list[dict] = []

    def stated(name: str, control: float) -> float | None:
        if name in targets:
            return float(targets[name])
        if target is not None:
            return float(target)
        if relative is not None and math.isfinite(control):
            return float(relative) * abs(control)
        return None

    for name, (a, b, family) in contrasts.items():
        for metric in metrics:
            ran = [e for e in embedders if a in scores[e] and b in scores[e]]
            for e in ran:
                j = _values(scores[e], a, b, metric)
                x = (j["a"] - j["b"]).to_numpy()
                control = float(j["b"].mean()) if j.height else float("nan")
                rows.append(_row("contrast", name, a, b, family, e, metric, x,
                                 j["doc_id"].to_list(), control, stated(name, control),
                                 alpha, power))
            for i, weak in enumerate(ran):
                for strong in ran[i + 1:]:
                    jw, js = _values(scores[weak], a, b, metric), _values(scores[strong], a, b,
                                                                           metric)
                    j = jw.join(js, on=["qid", "doc_id"], how="inner", suffix="_s").sort("qid")
                    x = ((j["a_s"] - j["b_s"]) - (j["a"] - j["b"])).to_numpy()
                    control = (float((j["b"].mean() + j["b_s"].mean()) / 2) if j.height
                               else float("nan"))
                    rows.append(_row("interaction", name, a, b, family,
                                     f"{strong} − {weak}", metric, x, j["doc_id"].to_list(),
                                     control, stated(name, control), alpha, power))
    return pl.DataFrame(rows, schema=COLUMNS) if rows else pl.DataFrame(schema=COLUMNS)


def read_cells(results: str | Path, corpus: str | None = None, reranker: str | None = None
               ) -> tuple[str, str, dict[str, dict[str, pl.DataFrame]],
                          dict[str, tuple[str, str, str]]]:
    """``(corpus, reranker, scores, contrasts)`` of a results folder (or the tables a results
    page ships): every embedder's ``<corpus>/<embedder>/<reranker>/scores/*.parquet`` and the
    contrasts its ``contrasts.parquet`` declares (name -> ``(a, b, family)``, the union over
    embedders in their order). ``corpus``/``reranker`` may be left out when the folder holds
    one; ``ValueError`` naming the folder when it holds none or several."""
    results = Path(results)
    cells = sorted({p.relative_to(results).parts[:3]
                    for p in results.glob("*/*/*/scores/*.parquet")})
    cells = [c for c in cells if (corpus is None or c[0] == corpus)
             and (reranker is None or c[2] == reranker)]
    if not cells:
        raise ValueError(f"{results}: no per-question score tables "
                         "(<corpus>/<embedder>/<reranker>/scores/<condition>.parquet)")
    pairs = sorted({(c[0], c[2]) for c in cells})
    if len(pairs) > 1:
        raise ValueError(f"{results}: several corpus/reranker pairs ({pairs}); name one with "
                         "--corpus and --reranker")
    corpus, reranker = pairs[0]
    scores: dict[str, dict[str, pl.DataFrame]] = {}
    contrasts: dict[str, tuple[str, str, str]] = {}
    for _, emb, _ in cells:
        cell = results / corpus / emb / reranker
        scores[emb] = {p.stem: pl.read_parquet(p) for p in sorted(cell.glob("scores/*.parquet"))}
        ct = cell / "contrasts.parquet"
        if ct.exists():
            df = pl.read_parquet(ct)
            fam = df["family"] if "family" in df.columns else pl.Series([""] * df.height)
            for name, a, b, f in zip(df["contrast"], df["cond_a"], df["cond_b"], fam,
                                     strict=True):
                contrasts.setdefault(name, (a, b, f or ""))
    return corpus, reranker, scores, contrasts


def _f(x, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    s = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return s.replace("-", "−")


def _i(x) -> str:
    return "—" if x is None else f"{int(x):,}"


def design_markdown(table: pl.DataFrame, *, source: str, alpha: float = ALPHA,
                    power: float = POWER) -> str:
    """``design.md``: the design table as Markdown, one table per kind, with the formulas'
    one-line summary and where the scores came from."""
    out = [f"# Design: what `{source}` can detect, and what a stated effect needs", "",
           f"Two-sided α {alpha:g}, power {power:g}, document-clustered standard error "
           "(docs/statistics.md, \"Designing a run\"): MDE = (z(1−α/2) + z(power)) · se; "
           "needed = the questions and documents at which the MDE equals the stated effect, "
           "at the observed questions per document.", ""]
    heads = {"contrast": "Contrasts (per embedder)",
             "interaction": "Embedder × condition interactions (Δ under the second − Δ under "
                            "the first, per question)"}
    for kind, head in heads.items():
        sub = table.filter(pl.col("kind") == kind)
        if not sub.height:
            continue
        out += [f"## {head}", "",
                "| contrast | family | embedder | measure | questions / docs | estimate | se | "
                "design effect | MDE | MDE / control | stated effect | power at it | "
                "questions needed | docs needed |",
                "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                "---: | ---: | ---: |"]
        for r in sub.iter_rows(named=True):
            share = (r["mde"] / abs(r["control_mean"]) if r["control_mean"]
                     and math.isfinite(r["mde"]) else None)
            out.append(
                f"| {r['contrast']}: {r['cond_a']} − {r['cond_b']} | {r['family'] or '—'} | "
                f"{r['embedder']} | {r['metric']} | {_i(r['n_queries'])} / {_i(r['n_docs'])} | "
                f"{_f(r['estimate'], sign=True)} | {_f(r['se'])} | {_f(r['design_effect'], 2)}"
                f" | ±{_f(r['mde'])} | "
                f"{'—' if share is None else f'{100 * share:.1f} %'} | "
                f"{_f(r['target'], sign=True) if r['target'] is not None else '—'} | "
                f"{_f(r['power_at_target'], 2)} | {_i(r['queries_needed'])} | "
                f"{_i(r['docs_needed'])} |")
        out.append("")
    return "\n".join(out)


def _targets(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for it in items:
        name, sep, val = it.partition("=")
        try:
            out[name] = float(val)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise SystemExit(f"--target {it!r}: write CONTRAST=VALUE (e.g. G4-G3=-0.01)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m structablate.stats.design RESULTS [--mde X | --relative R] [--target
    NAME=X ...] [--metric M ...] [--out design.md] [--table design.parquet]``."""
    ap = argparse.ArgumentParser(
        prog="python -m structablate.stats.design",
        description="Minimum detectable effects of a pilot's contrasts and embedder "
                    "interactions, and the questions a stated effect needs.")
    ap.add_argument("results", help="a results folder, or the tables a results page ships")
    ap.add_argument("--corpus")
    ap.add_argument("--reranker")
    ap.add_argument("--metric", action="append",
                    help="measure (repeatable; default covNDCG@10)")
    ap.add_argument("--mde", type=float, help="the stated effect, in the measure's units")
    ap.add_argument("--relative", type=float,
                    help="the stated effect as a share of each row's control mean")
    ap.add_argument("--target", action="append", default=[], metavar="CONTRAST=VALUE",
                    help="a stated effect for one contrast (and its interactions)")
    ap.add_argument("--alpha", type=float, default=ALPHA)
    ap.add_argument("--power", type=float, default=POWER)
    ap.add_argument("--out", help="write the Markdown here (default: stdout)")
    ap.add_argument("--table", help="also write the table as Parquet")
    a = ap.parse_args(argv)
    try:
        corpus, reranker, scores, contrasts = read_cells(a.results, a.corpus, a.reranker)
        table = design_table(scores, contrasts, a.metric or ["covNDCG@10"], target=a.mde,
                             relative=a.relative, targets=_targets(a.target), alpha=a.alpha,
                             power=a.power)
    except (ValueError, KeyError, OSError, pl.exceptions.PolarsError) as e:
        print(f"design: {e}", file=sys.stderr)
        return 2
    text = design_markdown(table, source=f"{a.results} ({corpus}, {reranker})", alpha=a.alpha,
                           power=a.power)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    if a.table:
        from structablate.io import write_parquet
        write_parquet(table, a.table)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
