"""The report's tables: pure functions from workflow outputs to frames and :class:`Table` s.

* :func:`contrast_table` — the paper's Table 1 layout (Δ, 95% CI, p, Holm p, dz, MixedLM p).
* :func:`condition_means_table` — per-condition means across metrics (one cell).
* :func:`cross_cell_means_table` — the paper's Table 2: one metric, cells × conditions.
* :func:`condition_cis` / :func:`condition_ci_table` — per-condition means with
  document-clustered bootstrap CIs.
* :func:`section_recall` / :func:`section_recall_table` — stage-1 section recall of two-stage
  conditions.
* :func:`size_matching` / :func:`size_matching_table` — realized chunk sizes and truncation.
* :func:`funnel_table` — the corpus funnel (QASPER questions or Wikipedia selection).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structablate.conditions import condition as get_condition
from structablate.stats.bootstrap import cluster_bootstrap, per_doc, percentile_ci

from .render import Table

ID_COLUMNS = ("qid", "doc_id", "qtype")


# ---------------------------------------------------------------- formatting


def _pct(x) -> str:
    return "—" if x is None or _nan(x) else fmt(100 * x, 1) + " %"


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x, digits: int = 4, signed: bool = False) -> str:
    """A number with fixed decimals; '—' for missing values; minus sign as U+2212."""
    if _nan(x):
        return "—"
    s = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    return s.replace("-", "−")


def fmt_p(p) -> str:
    """p-values as in the paper: '<0.001' below a thousandth, three decimals otherwise."""
    if _nan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_ci(lo, hi, digits: int = 4, signed: bool = True) -> str:
    """'[lo, hi]'; signed for differences, unsigned for means and shares."""
    if _nan(lo) or _nan(hi):
        return "—"
    return f"[{fmt(lo, digits, signed)}, {fmt(hi, digits, signed)}]"


def cell_label(corpus: str, embedder: str, reranker: str) -> str:
    return f"{corpus} / {embedder} / {reranker}"


# ---------------------------------------------------------------- contrasts (Table 1)

CONTRAST_COLUMNS = ["contrast", "family", "metric", "queries / docs", "Δ", "95% CI", "p",
                    "p (Holm)", "dz", "p (MixedLM)", "primary"]


def _family_order(df: pl.DataFrame) -> pl.DataFrame:
    if "family" not in df.columns:
        df = df.with_columns(pl.lit("pre-registered").alias("family"))
    return df.with_columns(
        (pl.col("family") != "pre-registered").cast(pl.Int8).alias("_fam"))


def contrast_table(
    contrasts: pl.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    key: str = "contrasts",
    title: str = "Contrasts",
    with_cell: bool = False,
) -> Table:
    """Table 1 layout, one row per (cell, metric, contrast): pre-registered family first.

    ``metrics`` restricts and orders the metrics (default: all, in the table's order).
    ``with_cell`` adds a leading ``cell`` column (for a table spanning cells).
    """
    df = _family_order(contrasts)
    order = list(metrics) if metrics is not None else list(dict.fromkeys(df["metric"]))
    df = df.filter(pl.col("metric").is_in(order)).with_columns(
        pl.col("metric").replace_strict({m: i for i, m in enumerate(order)},
                                        return_dtype=pl.Int32).alias("_m"))
    sort = (["corpus", "embedder", "reranker"] if with_cell else []) + ["_fam", "_m", "contrast"]
    df = df.sort(sort, maintain_order=True)
    rows = []
    for r in df.iter_rows(named=True):
        row = [
            f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}",
            r["family"],
            r["metric"],
            f"{r['n_queries']} / {r['n_docs']}",
            fmt(r["delta"], 4, True),
            fmt_ci(r["ci_low"], r["ci_high"]),
            fmt_p(r["p"]),
            fmt_p(r["p_holm"]),
            fmt(r["dz"], 2, True),
            fmt_p(r.get("p_mixedlm")),
            "yes" if r.get("primary") else "",
        ]
        if with_cell:
            row.insert(0, cell_label(r["corpus"], r["embedder"], r["reranker"]))
        rows.append(row)
    cols = (["cell"] if with_cell else []) + CONTRAST_COLUMNS
    note = ("Δ = mean paired per-query difference (a − b); 95% CI and p from the "
            "document-clustered bootstrap; Holm within each family (per cell and metric); "
            "dz = Cohen's dz; MixedLM p (document intercept) only where it was fitted. "
            "Only rows marked primary are confirmatory; everything else is exploratory.")
    align = ["l"] * (4 if with_cell else 3) + ["r"] * 7 + ["l"]
    return Table(key, title, cols, rows, note=note, align=align)


# ---------------------------------------------------------------- per-condition means


def _ordered_conditions(names: Sequence[str], order: Sequence[str] | None) -> list[str]:
    names = list(dict.fromkeys(names))
    if order is None:
        return names
    return [c for c in order if c in names] + [c for c in names if c not in order]


def condition_means_table(summary: pl.DataFrame, conditions: Sequence[str] | None = None, *,
                          key: str = "condition-means", title: str = "Per-condition means"
                          ) -> Table:
    """One cell's summary (condition, measure, mean, n_queries, n_docs): conditions × metrics."""
    measures = list(dict.fromkeys(summary["measure"]))
    conds = _ordered_conditions(summary["condition"].to_list(), conditions)
    vals = {(r["condition"], r["measure"]): r["mean"] for r in summary.iter_rows(named=True)}
    n = {r["condition"]: (r["n_queries"], r["n_docs"]) for r in summary.iter_rows(named=True)}
    rows = [[c, *(fmt(vals.get((c, m))) for m in measures), f"{n[c][0]} / {n[c][1]}"]
            for c in conds]
    return Table(key, title, ["condition", *measures, "queries / docs"], rows,
                 note="Unweighted means of per-query scores.")


def cross_cell_means_table(summaries: Mapping[tuple[str, str, str], pl.DataFrame], metric: str,
                           conditions: Sequence[str] | None = None, *,
                           key: str = "table-2", title: str | None = None) -> Table:
    """The paper's Table 2: one metric, a row per cell, a column per condition."""
    conds: list[str] = []
    for df in summaries.values():
        conds += df["condition"].to_list()
    conds = _ordered_conditions(conds, conditions)
    rows = []
    for cell, df in sorted(summaries.items()):
        sub = df.filter(pl.col("measure") == metric)
        vals = dict(zip(sub["condition"], sub["mean"], strict=True))
        rows.append([cell_label(*cell), *(fmt(vals.get(c), 3) for c in conds)])
    return Table(key, title or f"Per-condition {metric}", ["cell", *conds], rows,
                 note="'—': the condition did not run in that cell.")


def condition_cis(
    scores: Mapping[str, pl.DataFrame],
    *,
    n_boot: int = 10_000,
    seed: int = 20260710,
    level: float = 0.95,
) -> pl.DataFrame:
    """Per-condition means with document-clustered bootstrap percentile CIs.

    ``scores``: condition -> per-query score table (qid, doc_id, qtype, one column per metric).
    Every condition draws from a fresh ``default_rng(seed)``. Columns: condition, measure, mean,
    ci_low, ci_high, n_queries, n_docs.
    """
    rows: dict[str, list] = {k: [] for k in ("condition", "measure", "mean", "ci_low",
                                             "ci_high", "n_queries", "n_docs")}
    for cond, df in scores.items():
        measures = [c for c, t in df.schema.items() if c not in ID_COLUMNS and t.is_numeric()]
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
    return pl.DataFrame(rows, schema={"condition": pl.String, "measure": pl.String,
                                      "mean": pl.Float64, "ci_low": pl.Float64,
                                      "ci_high": pl.Float64, "n_queries": pl.Int64,
                                      "n_docs": pl.Int64})


def condition_ci_table(cis: pl.DataFrame, metric: str, *, key: str = "condition-cis",
                       title: str | None = None) -> Table:
    sub = cis.filter(pl.col("measure") == metric)
    rows = [[r["condition"], fmt(r["mean"]), fmt_ci(r["ci_low"], r["ci_high"], signed=False),
             f"{r['n_queries']} / {r['n_docs']}"] for r in sub.iter_rows(named=True)]
    return Table(key, title or f"{metric} per condition, 95% clustered-bootstrap CI",
                 ["condition", "mean", "95% CI", "queries / docs"], rows)


# ---------------------------------------------------------------- two-stage section recall


def two_stage_conditions(conditions: Sequence[str]) -> list[str]:
    return [c for c in conditions if get_condition(c).retrieval == "two_stage"]


def section_recall(
    runs: Mapping[str, pl.DataFrame],
    queries: pl.DataFrame,
    *,
    n_boot: int = 10_000,
    seed: int = 20260710,
) -> pl.DataFrame:
    """Stage-1 section recall per two-stage condition, with a clustered-bootstrap CI.

    ``runs``: condition -> run table carrying per-query ``section_recall`` (bool) and
    ``n_backfill`` repeated on each row. Queries whose recall is null (no gold evidence) are
    left out. Columns: condition, n_queries, n_docs, section_recall, ci_low, ci_high,
    mean_backfill, share_backfilled.
    """
    schema = {"condition": pl.String, "n_queries": pl.Int64, "n_docs": pl.Int64,
              "section_recall": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "mean_backfill": pl.Float64, "share_backfilled": pl.Float64}
    rows = []
    for cond, run in runs.items():
        if "section_recall" not in run.columns:
            raise ValueError(f"section_recall: run of {cond} has no section_recall column")
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
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def section_recall_table(sr: pl.DataFrame, *, key: str = "section-recall",
                         title: str = "Stage-1 section recall (two-stage conditions)") -> Table:
    rows = [[r["condition"], fmt(r["section_recall"], 3),
             fmt_ci(r["ci_low"], r["ci_high"], 3, signed=False), fmt(r["mean_backfill"], 1),
             fmt(100 * r["share_backfilled"], 1) + " %",
             f"{r['n_queries']} / {r['n_docs']}"] for r in sr.iter_rows(named=True)]
    return Table(key, title, ["condition", "section recall", "95% CI", "mean backfilled results",
                              "queries with backfill", "queries / docs"], rows,
                 note="Section recall: share of queries for which stage 1 kept at least one "
                      "section overlapping gold evidence (paper: 0.60–0.68 Wikipedia-FA, "
                      "0.17–0.20 QASPER).")


# ---------------------------------------------------------------- size matching, truncation


def size_matching(
    chunks: Mapping[str, pl.DataFrame],
    embed_stats: Mapping[tuple[str, str], Mapping],
    conditions: Sequence[str],
) -> pl.DataFrame:
    """Realized chunk sizes per chunkset and the truncation rate per embedder.

    ``chunks``: chunkset -> chunk table; ``embed_stats``: (embedder, chunkset) -> the
    embedding stats JSON (``truncation_rate``). Columns: chunkset, conditions, boundaries,
    structure, n_chunks, n_docs, mean_content_tokens, sd_content_tokens, max_content_tokens,
    mean_prefix_tokens, mean_total_tokens, mean_size_target, gold_span_identity (induced
    structural chunksets: the share of their chunk spans ``(doc_id, start, end)`` that equal a
    gold structural chunk span, the paper's 78.9% / 75.8%; NaN for other chunksets or without
    a gold structural chunkset), then ``truncation_rate:<embedder>`` per embedder.
    """
    embedders = list(dict.fromkeys(e for e, _ in embed_stats))
    gold = next((df for cs, df in chunks.items()
                 if get_condition(cs).boundaries == "structural"
                 and get_condition(cs).structure == "gold"), None)
    rows = []
    for cs, df in chunks.items():
        users = [c for c in conditions if get_condition(c).chunkset == cs]
        ct = df["content_tokens"].cast(pl.Float64)
        pt = df["prefix_tokens"].cast(pl.Float64)
        row = {
            "chunkset": cs, "conditions": ", ".join(users),
            "boundaries": get_condition(cs).boundaries,
            "structure": get_condition(cs).structure or "",
            "n_chunks": df.height, "n_docs": df["doc_id"].n_unique(),
            "mean_content_tokens": _mean(ct), "sd_content_tokens": _stat(ct.std()),
            "max_content_tokens": _stat(ct.max()), "mean_prefix_tokens": _mean(pt),
            "mean_total_tokens": _mean(ct + pt),
            "mean_size_target": (_mean(df["size_target"].cast(pl.Float64))
                                 if "size_target" in df.columns else float("nan")),
            "gold_span_identity": (chunk_span_identity(df, gold) if gold is not None
                                   and get_condition(cs).boundaries == "structural"
                                   and get_condition(cs).structure == "induced"
                                   else float("nan")),
        }
        for e in embedders:
            st = embed_stats.get((e, cs))
            rate = st.get("truncation_rate") if st else None
            row[f"truncation_rate:{e}"] = float(rate) if rate is not None else float("nan")
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def chunk_span_identity(chunks: pl.DataFrame, gold: pl.DataFrame) -> float:
    """Share of ``chunks``' spans ``(doc_id, start, end)`` (character offsets on the flat text)
    that are also a span of ``gold``; NaN for an empty table. Prefixes are ignored."""
    if not chunks.height:
        return float("nan")
    keys = ["doc_id", "start", "end"]
    same = chunks.select(keys).join(gold.select(keys).unique(), on=keys, how="semi")
    return same.height / chunks.height


def _stat(x) -> float:
    return float("nan") if x is None else float(x)


def _mean(s: pl.Series) -> float:
    """Mean over non-null values; NaN when there are none."""
    return _stat(s.drop_nulls().mean())


def size_gap(sm: pl.DataFrame, structure: str) -> float | None:
    """Mean content tokens of the fixed windows minus those of the structural chunks of
    ``structure`` (gold / induced) they were sized to; None when either is absent. Chunksets
    with the same boundaries share their content, so the first structural one stands for all.
    The paper reports at most 4 tokens."""
    fixed = sm.filter(pl.col("boundaries") == "fixed")["mean_content_tokens"]
    ref = sm.filter((pl.col("boundaries") == "structural") & (pl.col("structure") == structure))
    if not fixed.len() or not ref.height:
        return None
    return float(fixed.mean() - ref["mean_content_tokens"][0])


def size_matching_table(sm: pl.DataFrame, size_match_structure: str = "induced", *,
                        key: str = "size-matching",
                        title: str = "Size matching and truncation") -> Table:
    trunc = [c for c in sm.columns if c.startswith("truncation_rate:")]
    cols = ["chunkset", "conditions", "chunks", "docs", "mean content tokens", "sd",
            "max", "mean prefix tokens", "mean total tokens", "mean size target",
            "spans = gold", *(f"truncated ({c.split(':', 1)[1]})" for c in trunc)]
    rows = []
    for r in sm.iter_rows(named=True):
        rows.append([r["chunkset"], r["conditions"], str(r["n_chunks"]), str(r["n_docs"]),
                     fmt(r["mean_content_tokens"], 1), fmt(r["sd_content_tokens"], 1),
                     fmt(r["max_content_tokens"], 0), fmt(r["mean_prefix_tokens"], 1),
                     fmt(r["mean_total_tokens"], 1), fmt(r["mean_size_target"], 1),
                     _pct(r.get("gold_span_identity")),
                     *(fmt(100 * r[c], 1) + " %" if not _nan(r[c]) else "—" for c in trunc)])
    gap = size_gap(sm, size_match_structure)
    note = ("Content tokens exclude the prefix; 'truncated' is the share of embedded texts "
            "(prefix + content) longer than the embedder's max_seq_length; 'spans = gold' is "
            "the share of an induced chunkset's chunk spans identical to a gold structural "
            "chunk span (paper: 78.9% Wikipedia-FA, 75.8% QASPER).")
    if gap is not None:
        note += (f" Fixed windows minus the {size_match_structure} structural chunks they are "
                 f"sized to, mean content tokens: {fmt(gap, 1, True)} (paper: within 4).")
    align = ["l", "l"] + ["r"] * (len(cols) - 2)
    return Table(key, title, cols, rows, note=note, align=align)


# ---------------------------------------------------------------- corpus funnel


def funnel_steps(report: Mapping) -> list[tuple[str, int]]:
    """(step, count) pairs: QASPER's ``funnel`` list, a bring-your-own corpus report's
    ``queries.funnel``, or a Wikipedia selection report's candidates → examined → accepted."""
    if "funnel" not in report and isinstance(report.get("queries"), Mapping) \
            and "funnel" in report["queries"]:
        report = report["queries"]
    if "funnel" in report:
        return [(str(s), int(n)) for s, n in report["funnel"]]
    if "n_accepted" in report:
        steps = [("Featured-article titles", report.get("n_candidates")),
                 ("pages examined", report.get("n_examined")),
                 ("documents accepted", report.get("n_accepted"))]
        return [(s, int(n)) for s, n in steps if n is not None]
    raise ValueError("funnel_steps: neither a QASPER funnel nor a Wikipedia selection report")


def funnel_table(report: Mapping, *, key: str = "funnel", title: str = "Corpus funnel") -> Table:
    steps = funnel_steps(report)
    first = steps[0][1] if steps else 0
    rows = [[s, f"{n:,}", fmt(100 * n / first, 1) + " %" if first else "—"] for s, n in steps]
    extra = []
    if "evidence_exact_share" in report:
        extra.append(f"evidence mapped exactly: {100 * report['evidence_exact_share']:.1f} %")
    if "evidence_by_step" in report:
        extra.append("evidence by mapping step: " + ", ".join(
            f"{k} {v}" for k, v in sorted(report["evidence_by_step"].items())))
    if "multi_span_share" in report:
        extra.append(f"multi-span questions: {100 * report['multi_span_share']:.1f} %, "
                     f"{report.get('mean_spans_per_question', float('nan')):.2f} spans/question")
    if "papers" in report:
        extra.append(f"papers: {report['papers']} "
                     f"({report.get('papers_with_kept_questions', '?')} with kept questions)")
    if "reject_counts" in report:
        extra.append("rejected: " + ", ".join(
            f"{k} {v}" for k, v in sorted(report["reject_counts"].items())))
    return Table(key, title, ["step", "count", "share of first step"], rows,
                 note="; ".join(extra))
