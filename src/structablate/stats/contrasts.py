"""Pre-registered contrasts (paper, §5.2 and Appendix D), per cell, metric and contrast.

Input: a long table of per-query scores, one row per (cell, condition, query), with columns
``corpus, embedder, reranker, condition, qid, doc_id`` (+ ``qtype`` for per-type cuts) and one
numeric column per metric (the output of :func:`structablate.metrics.score_run` with the cell
and condition added).

For a contrast ``(a, b)`` the per-query delta is ``score_a - score_b`` over the queries present
under both conditions of the cell; ``delta`` is their unweighted mean. Holm runs over the
contrasts the config declares for one family, in one (cell, metric[, by-values]); a declared
contrast that did not run there enters the adjustment with p = 1. What each row lets us say is
decided by :mod:`structablate.stats.decision`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structablate.study import PAPER_CONTRASTS, PRIMARY_METRIC

from .bootstrap import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    ZERO_TOL,
    bootstrap_p,
    bootstrap_se,
    cluster_bootstrap,
    per_doc,
    percentile_ci,
    tost,
    tost_bound,
)
from .columns import CELL, metric_columns
from .decision import ALPHA, MIN_BOOTSTRAP_DOCS, row_decision
from .holm import holm
from .mixedlm import mixedlm_pvalues, mixedlm_slope
from .power import MIN_DOCS, clustered_se, design_effect, mde
from .smallsample import SignFlip, sign_flip

OUTPUT_COLUMNS = [
    "corpus", "embedder", "reranker", "metric", "contrast", "cond_a", "cond_b", "n_queries",
    "n_docs", "delta", "mean_b", "ci_low", "ci_high", "p", "p_method", "p_holm", "dz", "se",
    "mde80", "mde80_family", "design_effect", "n_zero_delta", "p_mixedlm", "p_mixedlm_query",
    "p_mixedlm_slope", "mixedlm_disagrees", "mixedlm_disagreeing", "primary", "family_size",
    "family_missing", "withheld", "margin", "margin_relative", "p_tost", "p_tost_adj",
    "ci_tost_low", "ci_tost_high", "equivalence_bound", "decision",
]  # fmt: skip
"""``se``: the clustered bootstrap's standard error of ``delta``; ``mde80``: the minimum
detectable effect at 80% power, two-sided α = 0.05 (``2.8016 · se``); ``mde80_family``: the
same at the level of the decision, two-sided ``α / family_size`` (Holm's strictest step, e.g.
``3.3537 · se`` for a family of four); ``design_effect``: ``se² / (sd²/n)``
(:mod:`structablate.stats.power`); ``n_zero_delta``: queries whose delta is 0
(``|δ_q| <= ZERO_TOL``), i.e. that score the same under both conditions.

``p_method``: where ``p``, ``ci_low``/``ci_high`` and the TOST columns come from:
``"bootstrap"`` (the document-clustered percentile bootstrap, rows over at least
:data:`~structablate.stats.power.MIN_DOCS` (30) documents), ``"sign-flip-exact"`` or
``"sign-flip-mc"`` (the document-level sign-flip randomization test of
:mod:`structablate.stats.smallsample`, all ``2^D`` sign vectors or a seeded Monte-Carlo
sample of them, rows over fewer than 30 documents, where the percentile bootstrap is too
optimistic: docs/statistics.md); null on a withheld row. ``se``, ``mde80``, ``mde80_family``
and ``design_effect`` are the bootstrap's on every row that has one.

``mixedlm_disagrees``: whether a mixed model reaches a different significance than the row's
own test: the row is significant when ``p_holm < α``; each of ``p_mixedlm``,
``p_mixedlm_query`` and ``p_mixedlm_slope`` is Holm-adjusted over the same declared family
(a contrast that did not run, a withheld row or a model that was not fitted or failed enters
with p = 1) and the row disagrees when any of the fitted models is significant (adjusted p <
α) while the row is not, or the other way round. Null when no mixed model was fitted on the
row or the row is withheld. ``mixedlm_disagreeing``: the disagreeing models' columns,
comma-separated (e.g. ``"p_mixedlm,p_mixedlm_slope"``), empty when none; null with
``mixedlm_disagrees``.

``family_size``: the contrasts the config declares in the row's family (Holm runs over all of
them: one that did not run enters with p = 1); ``family_missing``: the declared contrasts of
the family that did not run (comma-separated names, empty when the family is complete);
``withheld``: why the bootstrap's answers (p, CIs, Holm p, decision inputs) are null, e.g. too
few documents (:data:`~structablate.stats.decision.MIN_BOOTSTRAP_DOCS`); null otherwise.

``mean_b``: the mean of the control condition ``b`` over the contrast's paired questions (the
level a relative margin, and Δ as a share of the control, refer to).

``margin``: the equivalence margin the row was tested with, in the measure's units (null:
none configured for the measure); ``margin_relative``: the share of ``mean_b`` it was set as
(a relative margin, :class:`structablate.settings.RelativeMargin`; null for an absolute one);
``equivalence_bound``: the smallest margin whose TOST passes at the family's level (every
margin above it would; NaN when none can), printed beside each equivalence answer so a
reader can apply their own margin; ``p_tost``: the
bootstrap two one-sided tests p of ``|Δ| >= margin``; ``p_tost_adj``: Bonferroni over the
declared family; ``ci_tost_low``/``ci_tost_high``: the ``(1 − 2α / family_size)`` percentile
interval, inside ``±margin`` exactly when ``p_tost_adj < α`` (below 30 documents all four, and
``equivalence_bound``, are the sign-flip test's, its inverted interval in place of the
percentile one: ``p_method``); ``decision``:
:func:`structablate.stats.decision.row_decision` of the row (``p_holm``, ``p_tost_adj``
and whether its sample has any spread)."""

EQUIVALENCE_COLUMNS = ["margin", "margin_relative", "p_tost", "p_tost_adj", "ci_tost_low",
                       "ci_tost_high", "equivalence_bound"]

_STRING_COLUMNS = ("metric", "contrast", "cond_a", "cond_b", "p_method", "mixedlm_disagreeing",
                   "family_missing", "withheld", "decision")
_BOOL_COLUMNS = ("primary", "mixedlm_disagrees")
MIXEDLM_COLUMNS = ("p_mixedlm", "p_mixedlm_query", "p_mixedlm_slope")
"""The mixed models' p columns :data:`OUTPUT_COLUMNS`' ``mixedlm_disagrees`` compares."""
_INT_COLUMNS = ("n_queries", "n_docs", "n_zero_delta", "family_size")


MarginSpec = float | Mapping[str, float] | object
"""One measure's margin as configured: a number (absolute, in the measure's units) or a
relative margin (:class:`structablate.settings.RelativeMargin`, or a mapping
``{"relative": share}``)."""


def resolve_margins(margins: float | Mapping[str, MarginSpec] | None,
                    primary_metric: str = PRIMARY_METRIC) -> dict[str, MarginSpec] | None:
    """The per-measure margins of ``statistics.equivalence_margin``: a mapping as given; one
    number applies to ``primary_metric`` only (a margin is defended on one measure's scale,
    never on every measure's: docs/statistics.md); None stays None."""
    if margins is None:
        return None
    if isinstance(margins, Mapping):
        return dict(margins)
    return {primary_metric: float(margins)}


def relative_share(spec: MarginSpec | None) -> float | None:
    """The share of a relative margin (None for an absolute one or none)."""
    if spec is None or isinstance(spec, int | float):
        return None
    share = spec.get("relative") if isinstance(spec, Mapping) else getattr(spec, "relative",
                                                                            None)
    if share is None:
        raise ValueError(f"equivalence margin {spec!r}: neither a number nor {{relative: x}}")
    return float(share)


def margin_for(margins: float | Mapping[str, MarginSpec] | None, metric: str,
               control_mean: float | None = None,
               primary_metric: str = PRIMARY_METRIC) -> float | None:
    """The absolute equivalence margin of ``metric`` (:func:`resolve_margins`): an absolute
    margin as configured, a relative one times ``control_mean`` (the control condition's mean
    in the cell); None when the measure has none (or a relative one lacks its mean)."""
    spec = (resolve_margins(margins, primary_metric) or {}).get(metric)
    if spec is None:
        return None
    share = relative_share(spec)
    if share is None:
        return float(spec)
    return None if control_mean is None else share * float(control_mean)


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
    contrasts: Mapping[str, tuple[str, str]] = PAPER_CONTRASTS,
    metrics: Sequence[str] | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    primary: Mapping[str, str] | None = None,
    mixedlm: str = "primary",
    by: Sequence[str] = (),
    equivalence_margin: float | Mapping[str, MarginSpec] | None = None,
    primary_family: bool = True,
    alpha: float = ALPHA,
    min_docs: int = MIN_BOOTSTRAP_DOCS,
    small_sample_docs: int = MIN_DOCS,
) -> pl.DataFrame:
    """The contrasts table: one row per (cell[, by-values], metric, contrast that ran).

    Columns :data:`OUTPUT_COLUMNS` (with the ``by`` columns after ``reranker``).

    * ``contrasts`` is the whole declared family: Holm runs over all of it in every (cell,
      by-values, metric), a contrast that cannot run there (a condition absent, no query
      scored under both) entering with p = 1; ``family_size`` and ``family_missing`` say so on
      every row. A partial run therefore never reports a smaller adjusted p than the complete
      run would.
    * ``n_boot`` replicates of the document-clustered bootstrap with ``seed``. Every group of
      tests over the same document set draws from a fresh ``default_rng(seed)`` with documents
      in sorted order, so results do not depend on which other cells or contrasts are run.
    * A row over fewer than ``min_docs`` documents has its bootstrap answers withheld (null,
      with the reason in ``withheld``) and enters Holm with p = 1.
    * A row over at least ``min_docs`` but fewer than ``small_sample_docs`` documents
      (:data:`~structablate.stats.power.MIN_DOCS`, 30) takes ``p``, ``ci_low``/``ci_high``,
      the TOST columns and ``equivalence_bound`` from the document-level sign-flip test
      (:func:`structablate.stats.smallsample.sign_flip`: exact up to 16 documents, else
      ``n_boot`` sign vectors from a fresh ``default_rng(seed)``), then Holm and the decision
      as before; ``p_method`` says which. Rows over ``small_sample_docs`` or more documents
      are the bootstrap's, bit for bit (``small_sample_docs=0``: the bootstrap everywhere).
    * ``equivalence_margin``: a mapping measure -> margin (a number in the measure's units, or
      a relative margin ``{"relative": share}`` of the control condition's mean over the
      row's questions), one number (the primary measure's margin: ``primary["metric"]``,
      else :data:`~structablate.study.PRIMARY_METRIC`; no other measure gets one), or None;
      the TOST columns are null for a metric without one.
    * ``contrasts``: default the paper's C1–C4 (:data:`structablate.study.PAPER_CONTRASTS`).
    * ``primary``: the primary cell and metric: a row lies in it when its
      metric/embedder/reranker (and corpus, if given) equal these values and ``by`` is empty
      (None: no row is; the workflow passes the configured ``statistics.primary``).
      Its ``primary`` column is true for the rows in it when ``primary_family`` (the
      pre-registered family); an exploratory family passes ``primary_family=False`` and is
      never primary.
    * ``mixedlm``: ``"all"``, ``"primary"`` (the rows in the primary cell and metric, of either
      family; NaN elsewhere) or ``"none"``. Each fit takes seconds on 4,303 queries.
    * ``decision``: :func:`structablate.stats.decision.row_decision` at family-wise ``alpha``.
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
    primary_metric = (primary or {}).get("metric") or PRIMARY_METRIC
    opts = _Options(n_boot, seed, primary, mixedlm, bool(by),
                    resolve_margins(equivalence_margin, primary_metric), primary_family, alpha,
                    min_docs, small_sample_docs)
    rows: list[dict] = []
    for cell_key, cell in sorted(scores.group_by(keys), key=lambda kv: tuple(map(str, kv[0]))):
        rows.extend(_cell_rows(dict(zip(keys, cell_key, strict=True)), cell, contrasts,
                               metrics, opts))
    schema = table_schema(by)
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def table_schema(by: Sequence[str] = ()) -> dict[str, pl.DataType]:
    """The column types of :func:`contrast_table` (``by`` columns after ``reranker``)."""
    cols = [*CELL, *by, *OUTPUT_COLUMNS[3:]]
    schema = {c: pl.String for c in [*CELL, *by, *_STRING_COLUMNS]}
    schema |= {c: pl.Int64 for c in _INT_COLUMNS} | {c: pl.Boolean for c in _BOOL_COLUMNS}
    return {c: schema.get(c, pl.Float64) for c in cols}


@dataclass(frozen=True)
class _Options:
    n_boot: int
    seed: int
    primary: Mapping[str, str] | None
    mixedlm: str
    cut: bool
    margins: Mapping[str, MarginSpec] | None
    primary_family: bool
    alpha: float
    min_docs: int
    small_sample_docs: int


def _is_primary(cell: dict, metric: str, primary: Mapping[str, str] | None, cut: bool) -> bool:
    if primary is None or cut:
        return False
    want = dict(primary)
    if want.pop("metric", metric) != metric:
        return False
    return all(str(cell.get(k)) == str(v) for k, v in want.items())


def _bootstrap(tests, metrics, o: _Options) -> dict[str, dict]:
    """Per test name: the bootstrap replicates per metric from one shared draw per group of
    tests over the same document set, and below ``o.small_sample_docs`` documents the
    sign-flip distribution (:class:`~structablate.stats.smallsample.SignFlip`, one column per
    metric) from one shared set of sign vectors per group."""
    stats: dict[str, dict] = {}
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
        if docs < o.min_docs:
            for i in members:
                stats[tests[i][0]] = {"n_docs": docs, "reps": None}
            continue
        sums = np.concatenate([s for s, _ in deltas], axis=1)
        cnts = np.concatenate([np.repeat(c[:, None], len(metrics), axis=1) for _, c in deltas], 1)
        reps = cluster_bootstrap(sums, cnts, o.n_boot, o.seed)
        flip = (sign_flip(sums, cnts, o.n_boot, o.seed)
                if docs < o.small_sample_docs else None)
        for k, i in enumerate(members):
            cols = slice(k * len(metrics), (k + 1) * len(metrics))
            stats[tests[i][0]] = {"n_docs": docs, "reps": reps[:, cols], "flip": flip,
                                  "flip_cols": cols}
    return stats


def _cell_rows(cell, df, contrasts, metrics, o: _Options):
    conds = set(df["condition"].unique().to_list())
    tests = []  # (name, a, b, paired frame)
    for name, (a, b) in contrasts.items():
        if a in conds and b in conds:
            j = paired(df, a, b, metrics)
            if j.height:
                tests.append((name, a, b, j))
    if not tests:
        return []
    m_family = len(contrasts)
    ran = {t[0] for t in tests}
    family_missing = ",".join(n for n in contrasts if n not in ran)
    level = 1.0 - 2.0 * o.alpha / m_family
    stats = _bootstrap(tests, metrics, o)
    out = []
    for mi, metric in enumerate(metrics):
        spec = (o.margins or {}).get(metric)
        fam = []
        for name, a, b, j in tests:
            d = (j[metric] - j[f"{metric}__b"]).to_numpy()
            mean_b = float(j[f"{metric}__b"].mean())
            margin = margin_for(o.margins, metric, mean_b)
            st = stats[name]
            reps = None if st["reps"] is None else st["reps"][:, mi]
            in_primary_cell = _is_primary(cell, metric, o.primary, o.cut)
            row = {
                **cell, "metric": metric, "contrast": name, "cond_a": a, "cond_b": b,
                "n_queries": len(d), "n_docs": int(st["n_docs"]), "delta": float(d.mean()),
                "dz": float(cohen_dz(d[:, None])[0]),
                "n_zero_delta": int((np.abs(d) <= ZERO_TOL).sum()),
                "primary": in_primary_cell and o.primary_family,
                "family_size": m_family, "family_missing": family_missing,
                "mean_b": mean_b, "margin": margin,
                "margin_relative": relative_share(spec), "withheld": None,
                "p_mixedlm": float("nan"), "p_mixedlm_query": float("nan"),
                "p_mixedlm_slope": float("nan"), "p_method": None,
            }
            if reps is None:
                row["withheld"] = (f"{st['n_docs']} documents, fewer than the {o.min_docs} a "
                                   "document-clustered bootstrap needs")
            else:
                row |= _bootstrap_columns(reps, d, margin, m_family, level, o.alpha)
                if st.get("flip") is not None:
                    col = st["flip_cols"].start + mi
                    row |= _sign_flip_columns(st["flip"], col, margin, m_family, o.alpha)
            if o.mixedlm == "all" or (o.mixedlm == "primary" and in_primary_cell):
                qids, doc_ids = j["qid"].to_numpy(), j["doc_id"].to_numpy()
                row["p_mixedlm"], row["p_mixedlm_query"] = mixedlm_pvalues(
                    qids, doc_ids, j[metric].to_numpy(), j[f"{metric}__b"].to_numpy())
                row["p_mixedlm_slope"] = mixedlm_slope(doc_ids, d)[0]
            fam.append(row)
        # the declared family: contrasts that did not run, and withheld rows, enter with p = 1
        ps = [1.0 if r.get("p") is None else r["p"] for r in fam]
        adj = holm(ps + [1.0] * (m_family - len(fam)))
        for row, ph in zip(fam, adj, strict=False):
            row["p_holm"] = None if row.get("p") is None else float(ph)
            row["decision"] = row_decision(row, alpha=o.alpha)  # ties: too small to tell
        _mixedlm_disagreement(fam, m_family, o.alpha)
        out.extend(fam)
    return out  # ordered by metric as given, then contrast as given


def _bootstrap_columns(reps: np.ndarray, d: np.ndarray, margin: float | None, m_family: int,
                       level: float, alpha: float) -> dict:
    """The bootstrap's columns of one row from its replicate means ``reps`` (n_boot,)."""
    lo, hi = percentile_ci(reps, 0.95)
    se = float(bootstrap_se(reps[:, None])[0])
    sd = float(d.std(ddof=1)) if len(d) > 1 else float("nan")
    out = {
        "ci_low": float(lo), "ci_high": float(hi), "p": float(bootstrap_p(reps)),
        "p_method": "bootstrap",
        "se": se, "mde80": mde(se), "mde80_family": mde(se, alpha=alpha / m_family),
        "design_effect": design_effect(se, sd, len(d)),
        "equivalence_bound": tost_bound(reps, m_family, alpha),
    }
    if margin is not None:
        tlo, thi = percentile_ci(reps, level)
        p_tost = float(tost(reps, margin))
        out |= {"p_tost": p_tost, "p_tost_adj": min(1.0, m_family * p_tost),
                "ci_tost_low": float(tlo), "ci_tost_high": float(thi)}
    return out


def _sign_flip_columns(flip: SignFlip, col: int, margin: float | None, m_family: int,
                       alpha: float) -> dict:
    """The columns a row below :data:`~structablate.stats.power.MIN_DOCS` documents takes
    from the sign-flip test (column ``col`` of ``flip``): p, the inverted 95 % interval, the
    TOST against ``±margin`` at the family's level and the smallest margin it passes at
    (:class:`~structablate.stats.smallsample.SignFlip`); infinite interval ends (too few sign
    vectors for the level) become NaN."""
    def fin(x) -> float:
        x = float(x)
        return x if np.isfinite(x) else float("nan")

    lo, hi = flip.interval(0.95)
    out = {"p": float(flip.p_zero()[col]), "p_method": flip.method, "ci_low": fin(lo[col]),
           "ci_high": fin(hi[col]),
           "equivalence_bound": float(flip.equivalence_bound(m_family, alpha)[col])}
    if margin is not None:
        t = flip.tost(margin, m_family, alpha)
        out |= {"p_tost": float(t["p_tost"][col]), "p_tost_adj": float(t["p_tost_adj"][col]),
                "ci_tost_low": fin(t["ci_tost_low"][col]),
                "ci_tost_high": fin(t["ci_tost_high"][col])}
    return out


def _mixedlm_disagreement(fam: list[dict], m_family: int, alpha: float) -> None:
    """Set ``mixedlm_disagrees`` and ``mixedlm_disagreeing`` on one family's rows
    (:data:`OUTPUT_COLUMNS`' docstring): each mixed model's p Holm-adjusted over the declared
    family (missing, withheld, unfitted: p = 1) against the row's ``p_holm`` at ``alpha``."""
    def fitted(x) -> bool:
        return x is not None and np.isfinite(x)

    adjusted = {}
    for c in MIXEDLM_COLUMNS:
        ps = [r[c] if fitted(r.get(c)) and r.get("p") is not None else 1.0 for r in fam]
        adjusted[c] = holm(ps + [1.0] * (m_family - len(fam)))
    for k, row in enumerate(fam):
        models = [c for c in MIXEDLM_COLUMNS if fitted(row.get(c))]
        if row.get("p_holm") is None or not models:
            row["mixedlm_disagrees"], row["mixedlm_disagreeing"] = None, None
            continue
        sig = row["p_holm"] < alpha
        off = [c for c in models if (adjusted[c][k] < alpha) != sig]
        row["mixedlm_disagrees"], row["mixedlm_disagreeing"] = bool(off), ",".join(off)


def equivalence_table(
    scores: pl.DataFrame,
    contrasts: Mapping[str, tuple[str, str]] = PAPER_CONTRASTS,
    metrics: Sequence[str] | None = None,
    *,
    margin: float | Mapping[str, MarginSpec] = 0.01,
    **kwargs,
) -> pl.DataFrame:
    """Equivalence per contrast: the contrast table's key columns with delta, the 95% CI,
    Holm p, the TOST columns (:data:`EQUIVALENCE_COLUMNS`) and the decision."""
    kwargs.setdefault("mixedlm", "none")
    t = contrast_table(scores, contrasts, metrics, equivalence_margin=margin, **kwargs)
    keep = [*CELL, "metric", "contrast", "cond_a", "cond_b", "n_queries", "n_docs",
            "family_size", "delta", "mean_b", "ci_low", "ci_high", "p_holm", *EQUIVALENCE_COLUMNS,
            "decision"]
    return t.select([c for c in t.columns if c in keep])


def contrast_difference(
    scores: Mapping[str, pl.DataFrame],
    first: tuple[str, str],
    second: tuple[str, str],
    metric: str,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> dict:
    """The paired difference of two contrasts of one cell, ``(a − b) − (c − d)`` for
    ``first = (a, b)`` and ``second = (c, d)``, over the questions scored under all four
    conditions, with its own document-clustered bootstrap (``n_boot`` replicates from a fresh
    ``default_rng(seed)``, documents in sorted order): whether a contrast differs from its
    control (e.g. A3 − A2 against G3 − G2: does the heading-path step on induced structure
    differ from the same step on gold structure?).

    ``scores``: condition -> per-query score table (``qid, doc_id`` and ``metric``). Returns
    ``delta`` (mean per-query difference of differences), ``ci_low``/``ci_high`` (95%
    percentile interval), ``p`` (two-sided bootstrap p of 0), ``n_queries``, ``n_docs``,
    ``se`` (the analytic document-clustered standard error,
    :func:`structablate.stats.power.clustered_se`) and ``mde80`` (the effect detected with
    80 % power at two-sided α 0.05, ``2.8016 · se``); the bootstrap values are NaN below
    :data:`~structablate.stats.decision.MIN_BOOTSTRAP_DOCS`
    documents. Raises ``ValueError`` naming a condition that is missing."""
    conds = [*first, *second]
    missing = [c for c in conds if c not in scores]
    if missing:
        raise ValueError(f"contrast_difference: no scores for {', '.join(missing)}")
    joined = None
    for i, c in enumerate(conds):
        df = scores[c].select("qid", "doc_id", pl.col(metric).alias(f"s{i}"))
        joined = df if joined is None else joined.join(df, on=["qid", "doc_id"], how="inner")
    joined = joined.sort("qid")
    d = ((joined["s0"] - joined["s1"]) - (joined["s2"] - joined["s3"])).to_numpy()
    nan = float("nan")
    out = {"delta": float(d.mean()) if len(d) else nan, "n_queries": len(d),
           "n_docs": int(joined["doc_id"].n_unique()), "ci_low": nan, "ci_high": nan,
           "p": nan}
    if out["n_docs"] < MIN_BOOTSTRAP_DOCS:
        return out
    _, sums, counts = per_doc(d, joined["doc_id"].to_numpy())
    reps = cluster_bootstrap(sums[:, 0], counts, n_boot, seed)
    lo, hi = percentile_ci(reps, 0.95)
    se = clustered_se(d, joined["doc_id"].to_list())[0]
    return out | {"ci_low": float(lo), "ci_high": float(hi), "p": float(bootstrap_p(reps)),
                  "se": se, "mde80": mde(se)}
