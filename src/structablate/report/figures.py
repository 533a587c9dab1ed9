"""The report's figures: pure functions from tables to matplotlib figures (Agg backend).

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it (PNG or SVG
by suffix) with fixed metadata so reruns give the same bytes. A figure whose data did not run
(no A family for the dose-response, no two-stage condition) is a :func:`placeholder` that says
so in words rather than an empty plot.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from structablate.study import DOSE_LADDER  # noqa: E402

from .guard import row_guard, split_reason  # noqa: E402

SIG_COLOR = "#1f5fa8"
NS_COLOR = "#8c8c8c"
PRIMARY_COLOR = "#c0392b"
FLAGGED_COLOR = "#c8c8c8"  # a comparison the structure-quality guard rejects
FLAGGED_TEXT = "#8a4b00"


def save(fig: Figure, path: str | Path, dpi: int = 110) -> None:
    """Write ``fig`` (format from the suffix) with deterministic metadata, then close it."""
    save_all(fig, path, dpi=dpi)


def save_all(fig: Figure, *paths: str | Path, dpi: int = 110) -> None:
    """Write ``fig`` once per path (e.g. a PNG and an SVG of the same figure), then close it."""
    for path in paths:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fmt = path.suffix.lstrip(".").lower()
        meta = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}.get(fmt, {})
        if fmt == "svg":
            plt.rcParams["svg.hashsalt"] = "structablate"
        fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=meta)
    plt.close(fig)


def placeholder(title: str, message: str, size: tuple[float, float] = (7.0, 2.2)) -> Figure:
    """A figure that states in words why there is nothing to plot."""
    fig = plt.figure(figsize=size)
    fig.text(0.5, 0.68, title, ha="center", va="center", fontsize=12, weight="bold")
    fig.text(0.5, 0.35, message, ha="center", va="center", fontsize=10, wrap=True,
             color="#444444")
    return fig


def _finite(*xs) -> bool:
    return all(x is not None and not (isinstance(x, float) and math.isnan(x)) for x in xs)


# ---------------------------------------------------------------- forest plot


def forest_plot(contrasts: pl.DataFrame, metric: str, title: str = "") -> Figure:
    """Contrasts of one corpus (all cells) for ``metric``: Δ with its 95% CI per row.

    Rows are grouped by cell; filled markers are Holm-significant (p_holm < 0.05), the
    pre-registered primary rows are red; a row the structure-quality guard qualifies (its
    ``guard`` column, :func:`structablate.report.testable.mark_contrasts`; ``not_testable`` in
    an older table) is drawn grey and dotted, filled when Holm-significant like any other
    row, and labelled with what its answer is about; a row whose bootstrap was withheld has
    no interval.
    """
    df = contrasts.filter(pl.col("metric") == metric)
    if not df.height:
        return placeholder(title or "Contrasts", f"No contrast of {metric} ran in this corpus.")
    if "family" not in df.columns:
        df = df.with_columns(pl.lit("pre-registered").alias("family"))
    df = df.with_columns((pl.col("family") != "pre-registered").cast(pl.Int8).alias("_f")) \
        .sort(["embedder", "reranker", "_f", "contrast"], maintain_order=True)
    n = df.height
    fig, ax = plt.subplots(figsize=(8.5, 0.9 + 0.42 * n))
    labels = []
    for i, r in enumerate(df.iter_rows(named=True)):
        y = n - 1 - i
        reasons = row_guard(r)
        flagged = bool(reasons)
        sig = _finite(r["p_holm"]) and r["p_holm"] < 0.05
        color = (FLAGGED_COLOR if flagged else PRIMARY_COLOR if r.get("primary")
                 else SIG_COLOR if sig else NS_COLOR)
        if _finite(r.get("ci_low"), r.get("ci_high")):
            ax.hlines(y, r["ci_low"], r["ci_high"], color=color, lw=2,
                      ls=":" if flagged else "-")
        ax.plot([r["delta"]], [y], "o", color=color, ms=7,
                mfc=color if sig else "white", mew=1.8)
        fam = "" if r["family"] == "pre-registered" else " (expl.)"
        mark = ("  [" + "; ".join(split_reason(x)[0] for x in reasons) + "]") if flagged else ""
        labels.append(f"{r['contrast']}: {r['cond_a']}−{r['cond_b']}{fam}  ·  "
                      f"{r['embedder']}/{r['reranker']}{mark}")
    ax.axvline(0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(reversed(labels)), fontsize=9)
    ax.set_xlabel(f"Δ {metric} (a − b), 95% document-clustered bootstrap CI\n"
                  "filled: Holm p < 0.05 · open: n.s. · red: pre-registered primary cell · "
                  "grey dotted: qualified by the structure-quality guard (label: what it is about)",
                  fontsize=9)
    ax.set_title(title or f"Contrasts, {metric}", fontsize=11)
    ax.set_ylim(-0.7, n - 0.3)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- per-condition bars


def condition_bars(cis: pl.DataFrame, measures: Sequence[str] | None = None,
                   conditions: Sequence[str] | None = None, title: str = "") -> Figure:
    """One panel per measure: per-condition means with 95% clustered-bootstrap CIs."""
    if not cis.height:
        return placeholder(title or "Per-condition means", "No scores in this cell.")
    measures = list(measures) if measures else list(dict.fromkeys(cis["measure"]))
    conds = list(dict.fromkeys(cis["condition"]))
    if conditions:
        conds = [c for c in conditions if c in conds] + [c for c in conds if c not in conditions]
    ncol = min(4, len(measures))
    nrow = math.ceil(len(measures) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.1 * ncol, 2.7 * nrow + 0.4), squeeze=False)
    palette = plt.get_cmap("tab10")
    for k, m in enumerate(measures):
        ax = axes[k // ncol][k % ncol]
        sub = {r["condition"]: r for r in cis.filter(pl.col("measure") == m).iter_rows(named=True)}
        xs = [c for c in conds if c in sub]
        means = [sub[c]["mean"] for c in xs]
        err = [[sub[c]["mean"] - sub[c]["ci_low"] for c in xs],
               [sub[c]["ci_high"] - sub[c]["mean"] for c in xs]]
        ax.bar(range(len(xs)), means, color=[palette(i % 10) for i in range(len(xs))],
               yerr=err, capsize=3, ecolor="black", error_kw={"lw": 1})
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs, fontsize=8, rotation=45 if len(xs) > 6 else 0)
        ax.set_title(m, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(axis="y", labelsize=8)
    for k in range(len(measures), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    fig.suptitle(title or "Per-condition means, 95% clustered-bootstrap CI", fontsize=11)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- dose-response


def dose_response_plot(dose: pl.DataFrame, cis: pl.DataFrame, metric: str,
                       title: str = "", flags: Sequence[str] = ()) -> Figure:
    """Breadcrumb depth (A2 → A3-d1 → A3-d2 → A3) against the mean of ``metric`` with CIs,
    annotated with the within-query slope and its CI. A placeholder when the ladder did not
    run. ``flags``: the guard's reasons against the ladder
    (:func:`structablate.report.testable.dose_flags`); with any, the slope is labelled with
    what it is about ("about this inducer's segmentation: slope …") and the reasons are printed
    under the plot."""
    title = title or f"Breadcrumb-depth dose-response, {metric}"
    row = dose.filter(pl.col("metric") == metric) if dose.height else dose
    have = set(cis.filter(pl.col("measure") == metric)["condition"]) if cis.height else set()
    if not row.height or not set(DOSE_LADDER) <= have:
        missing = [c for c in DOSE_LADDER if c not in have]
        return placeholder(title, "Not run: the depth ladder needs conditions "
                           + ", ".join(DOSE_LADDER) + " (induced structure); missing: "
                           + ", ".join(missing) + ".")
    r = row.row(0, named=True)
    sub = {x["condition"]: x for x in cis.filter(pl.col("measure") == metric).iter_rows(named=True)}
    xs = list(DOSE_LADDER.values())
    ys = [sub[c]["mean"] for c in DOSE_LADDER]
    err = [[sub[c]["mean"] - sub[c]["ci_low"] for c in DOSE_LADDER],
           [sub[c]["ci_high"] - sub[c]["mean"] for c in DOSE_LADDER]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.errorbar(xs, ys, yerr=err, fmt="o-", color=SIG_COLOR, capsize=4)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{c}\n(depth {d})" for c, d in DOSE_LADDER.items()], fontsize=9)
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    mark = ("; ".join(dict.fromkeys(split_reason(f)[0] for f in flags)).upper() + ": "
            if flags else "")
    ax.text(0.02, 0.95, f"{mark}slope {r['slope']:+.4f} per level, 95% CI "
            f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}], p = {r['p']:.3f}",
            transform=ax.transAxes, va="top", fontsize=9,
            color=FLAGGED_TEXT if flags else "black")
    if flags:
        wrapped = "\n".join(textwrap.fill(f, 95) for f in flags)
        fig.text(0.01, 0.01, wrapped, fontsize=7, color=FLAGGED_TEXT, va="bottom")
        fig.tight_layout(rect=(0, 0.06 + 0.045 * wrapped.count("\n"), 1, 1))
    else:
        fig.tight_layout()
    return fig


# ---------------------------------------------------------------- section recall


def section_recall_plot(sr: pl.DataFrame, title: str = "") -> Figure:
    """Stage-1 section recall per two-stage condition with its 95% CI."""
    title = title or "Stage-1 section recall"
    if not sr.height:
        return placeholder(title, "Not run: no two-stage condition (A4, G4) in this cell.")
    fig, ax = plt.subplots(figsize=(5.5, 1.2 + 0.55 * sr.height))
    conds = sr["condition"].to_list()
    vals = sr["section_recall"].to_list()
    lo = [v - x for v, x in zip(vals, sr["ci_low"], strict=True)]
    hi = [x - v for v, x in zip(vals, sr["ci_high"], strict=True)]
    ax.barh(range(len(conds)), vals, xerr=[lo, hi], color=SIG_COLOR, capsize=4, height=0.55)
    for i, v in enumerate(vals):
        ax.text(min(v + 0.02, 0.9), i, f"{v:.3f}", va="center", fontsize=9)
    ax.set_yticks(range(len(conds)))
    ax.set_yticklabels(conds)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of queries whose kept sections overlap gold evidence")
    ax.set_title(title, fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- funnel


def funnel_plot(steps: Sequence[tuple[str, int]], title: str = "") -> Figure:
    """Horizontal bars: items left after each step of the corpus funnel."""
    title = title or "Corpus funnel"
    if not steps:
        return placeholder(title, "No funnel recorded for this corpus.")
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.5 * len(steps)))
    names = [s for s, _ in steps]
    counts = [n for _, n in steps]
    ax.barh(range(len(steps)), counts, color=SIG_COLOR, height=0.6)
    top = max(counts) or 1
    for i, n in enumerate(counts):
        ax.text(n + top * 0.01, i, f"{n:,}", va="center", fontsize=9)
    ax.set_yticks(range(len(steps)))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.15)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
