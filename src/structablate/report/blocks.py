"""The report's blocks: formatted tables built from the workflow's (and the statistics')
frames. Nothing here computes a statistic; the numbers come from :mod:`structablate.stats` and
:mod:`structablate.structure.quality`.

* :func:`contrasts_block` — the paper's Table 1 layout (Δ, 95% CI, p, Holm p, dz, MDE, margin,
  TOST p, MixedLM p) with each row's answer (the decision rule or the guard's mark).
* :func:`condition_means_block` — per-condition means across metrics (one cell).
* :func:`cross_cell_means_block` — the paper's Table 2: one metric, cells × conditions.
* :func:`condition_cis_block` — per-condition means with their clustered-bootstrap CIs.
* :func:`section_recall_block` — stage-1 section recall of two-stage conditions.
* :func:`size_matching_block` — realized chunk sizes and truncation.
* :func:`funnel_block` — the corpus funnel (QASPER questions or Wikipedia selection).
* :func:`structure_quality_block` — the structure-quality guard per structure source.
* :func:`resolving_power_block` — the smallest effect each contrast resolves and the sample the
  paper's effects would need.
* :func:`dropped_inputs` — skipped files and dropped questions with their reasons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from structablate import study
from structablate.paper import PAPER_BM25_GOLD_TOP1, PAPER_CORPORA, PAPER_QASPER_FUNNEL
from structablate.stats.decision import monte_carlo_flags, row_words
from structablate.stats.sizes import size_gap

from .guard import Flags, row_guard, split_reason
from .render import TableBlock

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


def format_number(value, kind: str) -> str:
    """A number as a page prints it, by ``kind``: ``"4"``/``"3"``/``"2"`` fixed decimals;
    ``"+4"``/``"+3"``/``"+2"`` signed; ``"p"`` a p-value (``<0.001`` below a thousandth);
    ``"int"`` thousands separators; ``"pct"``/``"+pct"`` a share as a percentage with one
    decimal; ``"s"`` seconds without decimals. ``—`` for a missing value; minus as U+2212."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if kind == "p":
        return "<0.001" if value < 0.001 else f"{value:.3f}"
    if kind == "int":
        return f"{int(round(value)):,}"
    if kind == "pct":
        return f"{100 * value:.1f} %".replace("-", "−")
    if kind == "+pct":
        return f"{100 * value:+.1f} %".replace("-", "−")
    if kind == "s":
        return f"{value:.0f}"
    if kind.startswith("+"):
        return f"{value:+.{int(kind[1:])}f}".replace("-", "−")
    return f"{value:.{int(kind)}f}".replace("-", "−")


Cite = Callable[[object, str, str, Mapping[str, object]], str]
"""``(value, kind, column, key) -> text``: how a block prints the number in ``column`` of the
source row that ``key`` (column -> value) selects. The report page only prints it
(:func:`plain`); a results page also records where it came from, so ``--check`` can re-read
it (:class:`structablate.report.ledger.Ledger`)."""


def plain(value, kind: str, column: str, key: Mapping[str, object]) -> str:
    """A :data:`Cite` that only formats (:func:`format_number`)."""
    return format_number(value, kind)


def cell_label(corpus: str, embedder: str, reranker: str) -> str:
    return f"{corpus} / {embedder} / {reranker}"


# ---------------------------------------------------------------- contrasts (Table 1)

CONTRAST_CELLS = ["tied (Δ = 0)", "Δ", "95% CI", "p", "p (Holm)", "dz", "MDE (80%, family)",
                  "margin", "p TOST (adj.)", "equivalence holds above", "p (MixedLM doc)",
                  "p (MixedLM query in doc)", "p (MixedLM slope)", "answer", "role"]
"""The columns of one contrast row on every page (:func:`contrast_cells`)."""

CONTRAST_COLUMNS = ["contrast", "family", "metric", "queries / docs", *CONTRAST_CELLS]
"""The report page's contrast table (:func:`contrasts_block`)."""

CONTRAST_NOTE = (
    "Δ = mean paired per-query difference (a − b); 95% CI and p from the document-clustered "
    "bootstrap; tied = questions scored the same under both conditions (shown, never a reason "
    "to withhold a significant answer); p (Holm) over the family the config declares (per cell "
    "and metric; a declared contrast that did not run counts with p = 1), with the family's "
    "size; dz = Cohen's dz; MDE (80%, family) = the smallest |Δ| this design detects with 80% "
    "power at the family's level (α = 0.05 / family size); margin = the equivalence margin "
    "(structablate's choice, docs/statistics.md), absolute and as a share of the control's "
    "mean, and p TOST its two one-sided tests, adjusted over the family; equivalence holds "
    "above = the smallest margin at which the equivalence test passes at the family's level, "
    "for a reader who prefers another margin; p MixedLM = the mixed models (document "
    "intercept; query in document; per-document slope), only where fitted; answer = the one "
    "decision rule, followed where the structure-quality guard qualifies it by what the answer "
    "is about and a letter whose sentence follows the table (the guard never hides an answer); "
    "role = confirmatory for the pre-registered family on the primary measure in "
    "the primary cell, exploratory for everything else.")


def interval(r: Mapping, kind: str, key: Mapping[str, object], cite: Cite = plain) -> str:
    """A row's ``[ci_low, ci_high]``, each end printed through ``cite`` as ``kind`` under
    ``key``; ``—`` without an interval."""
    if r.get("ci_low") is None:
        return "—"
    return f"[{cite(r['ci_low'], kind, 'ci_low', key)}, {cite(r['ci_high'], kind, 'ci_high', key)}]"


def contrast_cells(r: Mapping, cite: Cite = plain, flags: Flags | None = None,
                   n_boot: int | None = None, extra: Sequence[str] = ()) -> list[str]:
    """One contrast row's cells under :data:`CONTRAST_CELLS`, each number printed by
    ``cite``; the answer is :func:`row_answer` with ``flags``, ``n_boot`` and ``extra``."""
    key = {k: r[k] for k in ("family", "contrast", "metric") if r.get(k) is not None}

    def n(col: str, kind: str) -> str:
        return cite(r.get(col), kind, col, key)

    ci = interval(r, "+4", key, cite)
    if not _nan(r.get("margin")) and r.get("p_tost_adj") is not None:
        margin = "±" + n("margin", "4")
        if r.get("margin_relative") is not None:
            margin += f" ({n('margin_relative', 'pct')} of {r['cond_b']})"
        tost = n("p_tost_adj", "p")
    else:
        margin = "— (no margin for this measure)" if r.get("p_holm") is not None else "—"
        tost = "—"
    bound = "—" if _nan(r.get("equivalence_bound")) else "±" + n("equivalence_bound", "4")
    holm = n("p_holm", "p")
    if r.get("family_size") is not None:
        holm += f" (of {n('family_size', 'int')})"
    mde = "—" if _nan(r.get("mde80_family")) else "±" + n("mde80_family", "4")
    tied = "—" if r.get("n_zero_delta") is None else \
        f"{n('n_zero_delta', 'int')} of {n('n_queries', 'int')}"
    return [tied, n("delta", "+4"), ci,
            n("p", "p"), holm, n("dz", "+3"), mde, margin, tost, bound,
            n("p_mixedlm", "p"), n("p_mixedlm_query", "p"), n("p_mixedlm_slope", "p"),
            row_answer(r, flags, n_boot, extra),
            "confirmatory" if r.get("primary") else "exploratory"]


def _family_order(df: pl.DataFrame) -> pl.DataFrame:
    if "family" not in df.columns:
        df = df.with_columns(pl.lit("pre-registered").alias("family"))
    return df.with_columns(
        (pl.col("family") != "pre-registered").cast(pl.Int8).alias("_fam"))


def routing_row(r: Mapping, section_recall: pl.DataFrame | None) -> dict | None:
    """The section-recall row of a routing contrast's two-stage condition (a two-stage
    condition against its flat twin, either order), None for any other row."""
    if section_recall is None or not section_recall.height:
        return None
    a, b = r["cond_a"], r["cond_b"]
    if not (study.is_condition(a) and study.is_condition(b)):
        return None
    two = [c for c in (a, b) if study.is_two_stage(c)]
    if len(two) != 1:
        return None
    sub = section_recall.filter(pl.col("condition") == two[0])
    return sub.row(0, named=True) if sub.height else None


def monte_carlo_sentence() -> str:
    """The flag sentence of a decision within Monte-Carlo error of α
    (:func:`structablate.stats.decision.monte_carlo_flags`). It states no number of its own
    (a results page records every number it prints; the replicates are stated beside the
    table, :func:`structablate.report.answers.monte_carlo_line`)."""
    return ("Within Monte-Carlo error of α: the adjusted p lies within two Monte-Carlo "
            "standard errors of the level for the run's bootstrap replicates (the binomial "
            "error of a share of replicates, taken where the decision flips, "
            "docs/statistics.md), so another bootstrap seed could give the other decision; "
            "structablate flags such a row rather than raising the replicates, so the "
            "shipped tables stay the run's own.")


def method_qualifiers(r: Mapping) -> list[str]:
    """Short qualifiers for the optional columns of the small-sample inference: ``p_method``
    (which test gave p, when not the percentile bootstrap) and ``mixedlm_disagrees`` (the mixed
    models fall on the other side of α); empty for a table without them."""
    out = []
    method = r.get("p_method")
    if method and method != "bootstrap":
        out.append("p from " + METHOD_WORDS.get(method, f"the {method} test"))
    if r.get("mixedlm_disagrees") is True:
        which = r.get("mixedlm_disagreeing")
        out.append("the mixed models disagree" + (f" ({which})" if which else ""))
    return out


METHOD_WORDS = {"sign-flip-exact": "the exact document sign-flip test",
                "sign-flip-mc": "the document sign-flip test (Monte-Carlo)"}
"""How a row's ``p_method`` other than the bootstrap reads in its answer."""


def routing_words(sr: Mapping | None, top_k: int | None, cite: Cite = plain) -> list[str]:
    """What a routing row rests on, from its two-stage condition's row of the section-recall
    table (``sr``): the routing hit rate (the share of questions whose stage 1 kept a section
    holding gold evidence, ``section_recall``) and the share of each question's ``top_k``
    results back-filled from the flat ranking (``mean_backfill / top_k``; a corpus with fewer
    chunks than ``top_k`` returns fewer, so the share is then a lower bound). Empty without a
    row; the share is left out without ``top_k``."""
    if sr is None:
        return []
    k = {"condition": sr["condition"]}
    out = f"routing hit {cite(sr['section_recall'], 'pct', 'section_recall', k)}"
    if top_k and sr.get("mean_backfill") is not None:
        share = sr["mean_backfill"] / top_k
        out += (f", {cite(share, 'pct', '=', k)} of the {cite(top_k, 'int', '=', {})} results "
                "back-filled from the flat ranking")
    return [out]


def row_answer(r: Mapping, flags: Flags | None = None, n_boot: int | None = None,
               extra: Sequence[str] = ()) -> str:
    """A contrast row's answer: the one decision rule in words
    (:func:`structablate.stats.decision.row_words`), then, after " — ", what qualifies it:
    each guard reason's "about …" (with its letter in ``flags``, whose sentences the caller
    prints once; without ``flags`` the phrase alone), "within Monte-Carlo error of α" when
    ``n_boot`` is given and a p lies that close to α, and the small-sample inference's
    qualifiers (:func:`method_qualifiers`), then ``extra`` (e.g. :func:`routing_words`). A
    guarded row keeps its answer: the guard qualifies, it never hides."""
    quals = [flags.reason(x) if flags is not None else split_reason(x)[0] for x in row_guard(r)]
    if n_boot and monte_carlo_flags(r, n_boot):
        mc = "within Monte-Carlo error of α"
        quals.append(f"{mc} [{flags.ref(monte_carlo_sentence())}]" if flags is not None
                     else mc)
    quals += method_qualifiers(r)
    quals += list(extra)
    words = row_words(r)
    return f"{words} — {'; '.join(quals)}" if quals else words


def family_notes(contrasts: pl.DataFrame) -> list[str]:
    """One sentence per family whose declared contrasts did not all run: Holm still counts
    them (with p = 1)."""
    if not contrasts.height or "family_missing" not in contrasts.columns:
        return []
    df = _family_order(contrasts)
    out = []
    for fam in dict.fromkeys(df["family"].to_list()):
        sub = df.filter(pl.col("family") == fam)
        missing = sorted({m for v in sub["family_missing"].to_list() if v
                          for m in v.split(",")})
        if missing:
            size = int(sub["family_size"].max())
            out.append(f"The {fam} family declares {size} contrasts; {', '.join(missing)} did "
                       f"not run here and enter{'s' if len(missing) == 1 else ''} Holm with "
                       "p = 1, so the adjusted p-values are those a complete run could at most "
                       "give.")
    return out


def contrasts_block(
    contrasts: pl.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    key: str = "contrasts",
    title: str = "Contrasts",
    with_cell: bool = False,
    n_boot: int | None = None,
    section_recall: pl.DataFrame | None = None,
    top_k: int | None = None,
) -> TableBlock:
    """Table 1 layout, one row per (cell, metric, contrast): pre-registered family first.

    ``metrics`` restricts and orders the metrics (default: all, in the table's order).
    ``with_cell`` adds a leading ``cell`` column (for a table spanning cells). The ``answer``
    column is :func:`row_answer` (the guard's qualification travels with the row, by letter;
    each letter's sentence is printed once, after the table's note); ``n_boot``: the run's
    bootstrap replicates, to flag decisions within Monte-Carlo error of α; ``section_recall``
    (the cell's; a table spanning cells leaves it out) and ``top_k``: a routing row prints its
    routing hit rate and back-filled share (:func:`routing_words`).
    """
    df = _family_order(contrasts)
    order = list(metrics) if metrics is not None else list(dict.fromkeys(df["metric"]))
    df = df.filter(pl.col("metric").is_in(order)).with_columns(
        pl.col("metric").replace_strict({m: i for i, m in enumerate(order)},
                                        return_dtype=pl.Int32).alias("_m"))
    sort = (["corpus", "embedder", "reranker"] if with_cell else []) + ["_fam", "_m", "contrast"]
    df = df.sort(sort, maintain_order=True)
    rows = []
    flags = Flags()
    for r in df.iter_rows(named=True):
        row = [f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r["family"], r["metric"],
               f"{r.get('n_queries', '—')} / {r.get('n_docs', '—')}",
               *contrast_cells(r, flags=flags, n_boot=n_boot,
                               extra=routing_words(routing_row(r, section_recall), top_k))]
        if with_cell:
            row.insert(0, cell_label(r["corpus"], r["embedder"], r["reranker"]))
        rows.append(row)
    cols = (["cell"] if with_cell else []) + CONTRAST_COLUMNS
    note = CONTRAST_NOTE
    extra = family_notes(contrasts) + flags.notes()
    if extra:
        note += " " + " ".join(extra)
    align = ["l"] * (4 if with_cell else 3) + ["r"] * (len(CONTRAST_CELLS) - 1) + ["l", "l"]
    return TableBlock(key, title, cols, rows, note=note, align=align)


# ---------------------------------------------------------------- per-condition means


def _ordered_conditions(names: Sequence[str], order: Sequence[str] | None) -> list[str]:
    names = list(dict.fromkeys(names))
    if order is None:
        return names
    return [c for c in order if c in names] + [c for c in names if c not in order]


def condition_means_block(summary: pl.DataFrame, conditions: Sequence[str] | None = None, *,
                          key: str = "condition-means", title: str = "Per-condition means",
                          cite: Cite = plain, cis: pl.DataFrame | None = None,
                          cite_cis: Cite = plain) -> TableBlock:
    """One cell's summary (condition, measure, mean, n_queries, n_docs): a row per condition,
    a column per measure, then questions / documents; with ``cis`` (the cell's condition
    CIs) a last column holds the first measure's 95% clustered-bootstrap interval. Numbers of
    ``summary`` print through ``cite``, those of ``cis`` through ``cite_cis``."""
    measures = list(dict.fromkeys(summary["measure"]))
    conds = _ordered_conditions(summary["condition"].to_list(), conditions)
    vals = {(r["condition"], r["measure"]): r["mean"] for r in summary.iter_rows(named=True)}
    first = {}
    for r in summary.iter_rows(named=True):
        first.setdefault(r["condition"], r)
    ci_rows = {} if cis is None else {
        r["condition"]: r for r in cis.filter(pl.col("measure") == measures[0]).iter_rows(
            named=True)} if measures else {}
    rows = []
    for c in conds:
        row = [c]
        for m in measures:
            k = {"condition": c, "measure": m}
            row.append(cite(vals[(c, m)], "4", "mean", k) if (c, m) in vals else "—")
        f = first[c]
        k = {"condition": c, "measure": f["measure"]}
        row.append(f"{cite(f['n_queries'], 'int', 'n_queries', k)} / "
                   f"{cite(f['n_docs'], 'int', 'n_docs', k)}")
        if cis is not None:
            r = ci_rows.get(c)
            k = {"condition": c, "measure": measures[0]}
            row.append("—" if r is None else interval(r, "4", k, cite_cis))
        rows.append(row)
    cols = ["condition", *measures, "queries / docs"]
    if cis is not None:
        cols.append(f"95% CI, {measures[0]}" if measures else "95% CI")
    return TableBlock(key, title, cols, rows, note="Unweighted means of per-query scores.")


def cross_cell_means_block(summaries: Mapping[tuple[str, str, str], pl.DataFrame], metric: str,
                           conditions: Sequence[str] | None = None, *,
                           key: str = "table-2", title: str | None = None) -> TableBlock:
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
    return TableBlock(key, title or f"Per-condition {metric}", ["cell", *conds], rows,
                      note="'—': the condition did not run in that cell.")


def condition_cis_block(cis: pl.DataFrame, metric: str, *, key: str = "condition-cis",
                       title: str | None = None) -> TableBlock:
    sub = cis.filter(pl.col("measure") == metric)
    rows = [[r["condition"], fmt(r["mean"]), fmt_ci(r["ci_low"], r["ci_high"], signed=False),
             f"{r['n_queries']} / {r['n_docs']}"] for r in sub.iter_rows(named=True)]
    return TableBlock(key, title or f"{metric} per condition, 95% clustered-bootstrap CI",
                      ["condition", "mean", "95% CI", "queries / docs"], rows)


# ---------------------------------------------------------------- two-stage section recall


def two_stage_conditions(conditions: Sequence[str]) -> list[str]:
    return [c for c in conditions if study.is_two_stage(c)]


def section_recall_block(sr: pl.DataFrame, *, key: str = "section-recall",
                         title: str = "Stage-1 section recall (two-stage conditions)",
                         cite: Cite = plain, paper: tuple[str, float, float] | None = None,
                         cite_paper: Cite = plain) -> TableBlock:
    """A row per two-stage condition: questions / documents, section recall with its 95% CI,
    the mean number of results backfilled and the share of questions with any; with
    ``paper`` (``(corpus kind, low, high)``, the paper's range) a last column holds it,
    printed through ``cite_paper``."""
    rows = []
    for r in sr.iter_rows(named=True):
        k = {"condition": r["condition"]}
        row = [r["condition"],
               f"{cite(r['n_queries'], 'int', 'n_queries', k)} / "
               f"{cite(r['n_docs'], 'int', 'n_docs', k)}",
               cite(r["section_recall"], "3", "section_recall", k),
               interval(r, "3", k, cite),
               cite(r["mean_backfill"], "1", "mean_backfill", k),
               cite(r["share_backfilled"], "pct", "share_backfilled", k)]
        if paper is not None:
            pk = {"corpus": paper[0]}
            row.append(f"{cite_paper(paper[1], '2', 'low', pk)}–"
                       f"{cite_paper(paper[2], '2', 'high', pk)}")
        rows.append(row)
    cols = ["condition", "queries / docs", "section recall", "95% CI",
            "mean backfilled results", "queries with backfill"] + (["paper"] if paper else [])
    return TableBlock(key, title, cols, rows,
                      note="Section recall: share of queries for which stage 1 kept at least "
                           "one section overlapping gold evidence (paper: 0.60–0.68 "
                           "Wikipedia-FA, 0.17–0.20 QASPER).")


# ---------------------------------------------------------------- size matching, truncation


def size_matching_block(sm: pl.DataFrame, size_match_structure: str = "induced", *,
                        key: str = "size-matching",
                        title: str = "Size matching and truncation") -> TableBlock:
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
    gaps = {st: size_gap(sm, st, size_match_structure)
            for st in (study.Structure.INDUCED, study.Structure.GOLD)}
    note = ("Content tokens exclude the prefix; 'truncated' is the share of embedded texts "
            "(prefix + content) longer than the embedder's max_seq_length; 'spans = gold' is "
            "the share of an induced chunkset's chunk spans identical to a gold structural "
            "chunk span (paper: 78.9% Wikipedia-FA, 75.8% QASPER).")
    for st, gap in gaps.items():
        if gap is not None:
            note += (f" Fixed windows sized to {st} structure minus the {st} structural chunks, "
                     f"mean content tokens: {fmt(gap, 1, True)} (paper: within 4).")
    align = ["l", "l"] + ["r"] * (len(cols) - 2)
    return TableBlock(key, title, cols, rows, note=note, align=align)


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


def funnel_block(report: Mapping, *, key: str = "funnel",
                 title: str = "Corpus funnel") -> TableBlock:
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
    return TableBlock(key, title, ["step", "count", "share of first step"], rows,
                      note="; ".join(extra))


# ---------------------------------------------------------------- structure-quality guard


STRUCTURE_DETAIL = (
    ("boundary_precision", "boundary precision", "3"),
    ("boundary_recall", "boundary recall", "3"),
    ("section_span_identity_chance", "section spans = gold by chance", "pct"),
    ("section_span_identity_kappa", "section spans, chance-corrected", "3"),
    ("top_boundary_f1_chance", "top-level F1 of random boundaries", "3"),
    ("top_boundary_f1_kappa", "top-level F1, chance-corrected", "3"),
    ("docs_depth3_share", "docs reaching depth 3", "pct"),
)
"""The structure-quality figures :func:`structure_quality_block` adds with ``detail``:
(column, label, number kind)."""


def structure_quality_block(quality: pl.DataFrame, *, key: str = "structure-quality",
                            title: str = "Structure quality", cite: Cite = plain,
                            detail: bool = False) -> TableBlock:
    """One row per structure source (:func:`structablate.structure.quality.structure_quality`),
    each number printed through ``cite``; ``detail`` adds every further agreement figure the
    table holds (:data:`STRUCTURE_DETAIL`: boundary precision and recall, the chance level and
    chance-corrected value of span identity and of top-level F1, the share of documents
    reaching depth 3)."""
    rows = []
    for r in quality.iter_rows(named=True):
        k = {"source": r["source"]}

        def n(col: str, kind: str, r=r, k=k) -> str:
            return cite(r.get(col), kind, col, k)

        depth = " / ".join(n(b, "pct").replace(" %", "%") for b in
                           ("depth_1", "depth_2", "depth_3", "depth_4plus"))
        rows.append([r["source"], n("n_docs", "int"), n("sections_per_doc", "1"),
                     n("top_sections_per_doc", "1"), n("single_top_share", "pct"),
                     n("max_depth", "int"), depth, n("section_span_identity", "pct"),
                     n("chunk_span_identity", "pct"), n("boundary_f1", "3"),
                     n("boundary_f1_chance", "3"), n("boundary_f1_kappa", "3"),
                     n("top_boundary_f1", "3")])
        if detail:
            rows[-1] += [n(col, kind) for col, _, kind in STRUCTURE_DETAIL]
    cols = ["source", "docs", "sections / doc", "top-level / doc", "docs with one top-level",
            "max depth", "depth 1 / 2 / 3 / 4+", "section spans = gold", "chunk spans = gold",
            "boundary F1 (±1 para)", "boundary F1 of random boundaries", "chance-corrected",
            "top-level boundary F1"]
    if detail:
        cols += [label for _, label, _ in STRUCTURE_DETAIL]
    return TableBlock(
        key, title, cols, rows,
        note="Depth is the length of a section's heading path (share of sections per depth). "
             "Agreement with gold: identical (doc, start, end) spans of sections and of "
             "structural chunks (paper: 78.9% Wikipedia-FA, 75.8% QASPER), and section-start "
             "boundaries matched within one paragraph, beside the same figure for random "
             "boundaries with the same count per document and the chance-corrected "
             "(observed − chance) / (1 − chance), on which the guard decides. Two-stage "
             "routing ranks the top-level sections of the whole corpus.",
        align=["l"] + ["r"] * 5 + ["l"] + ["r"] * (len(cols) - 7))


def resolving_power_block(power: pl.DataFrame, *, key: str = "resolving-power",
                          title: str = "Resolving power") -> TableBlock:
    """The smallest effect each contrast resolves and the sample the paper's effects would
    need (:func:`structablate.stats.power.resolving_power`)."""
    need = [c for c in power.columns if c.startswith("queries_for_")]
    cols = ["contrast", "metric", "α", "MDE (80%)"]
    for c in need:
        target = c.removeprefix("queries_for_").replace("delta_", "|Δ| ").replace("dz_", "dz ")
        cols.append(f"questions / docs for {target}")
    rows = []
    for r in power.iter_rows(named=True):
        row = [f"{r.get('contrast', '')}: {r['cond_a']} − {r['cond_b']}", r["metric"],
               f"{r['alpha']:.4g}" if not _nan(r.get("alpha")) else "0.05",
               "±" + fmt(r["mde80"], 4) if not _nan(r["mde80"]) else "—"]
        for c in need:
            q, d = r[c], r[c.replace("queries_for_", "docs_for_")]
            row.append("—" if q is None or d is None else f"{q:,} / {d:,}")
        rows.append(row)
    return TableBlock(key, title, cols, rows, align=["l", "l"] + ["r"] * (len(cols) - 2),
                      note="MDE: the smallest |Δ| detected with 80% power at the level of the "
                           "decision, two-sided α = 0.05 / the declared family's size (Holm's "
                           "strictest step), from the document-clustered bootstrap's standard "
                           "error. "
                           "Needed samples assume the standard error shrinks as 1/√documents "
                           "at the observed questions per document (for dz, at the observed "
                           "design effect of the clustering).")


# ---------------------------------------------------------------- what was left out


def _capped(items: Sequence[str], cap: int = 10) -> str:
    items = list(items)
    more = len(items) - cap
    return "; ".join(items[:cap]) + (f"; and {more} more" if more > 0 else "")


def _reason(text: str) -> str:
    """A skip reason without the advice to turn skipping on (it was on)."""
    return re.sub(r"[,;]? or set skip_bad_files: true[^;)]*", "", str(text)).rstrip("; ")


def dropped_inputs(build_report: Mapping | None, question_funnel: Mapping | None = None
                   ) -> list[str]:
    """Sentences naming every skipped input and every dropped question, with reasons, from a
    corpus's build report (QASPER ``funnel.json``, Wikipedia ``corpus_report.json``, a
    bring-your-own build report) and, for generated questions, the query-generation funnel.
    Empty when nothing was left out."""
    out: list[str] = []
    rep = build_report or {}
    skipped = rep.get("skipped")
    if isinstance(skipped, list) and skipped:
        out.append(f"{len(skipped)} input file(s) skipped: " + _capped(
            [f"{s.get('where', '?')} ({_reason(s.get('reason', '?'))})" for s in skipped])
            + ".")
    src = rep.get("source") if isinstance(rep.get("source"), Mapping) else {}
    if isinstance(src.get("skipped"), Mapping):
        parts = [f"{n} {k.replace('_', ' ')}" for k, n in src["skipped"].items() if n]
        if parts:
            out.append("Export pages skipped: " + ", ".join(parts) + ".")
    if rep.get("reject_counts"):
        out.append("Candidate documents rejected: " + ", ".join(
            f"{n} {k.replace('_', ' ')}" for k, n in sorted(rep["reject_counts"].items()))
            + ".")
    for funnel in (rep, rep.get("queries") if isinstance(rep.get("queries"), Mapping) else None):
        if not funnel:
            continue
        drops = [(k.removeprefix("dropped_").replace("_", " "), n) for k, n in funnel.items()
                 if k.startswith("dropped_") and n]
        if drops:
            out.append("Questions dropped: " + ", ".join(f"{n} {k}" for k, n in drops)
                       + f" (kept {funnel.get('kept', '?')}).")

    qf = question_funnel or {}
    statuses = qf.get("statuses")
    if isinstance(statuses, Mapping):
        names = {"no_query": "no usable question generated",
                 "query_leak": "question leaked its evidence",
                 "no_paraphrase": "no usable paraphrase",
                 "paraphrase_leak": "paraphrase leaked its evidence",
                 "survivor": "passed but not drawn by balancing"}
        parts = [f"{statuses[k]} {v}" for k, v in names.items() if statuses.get(k)]
        if parts:
            out.append("Generated questions dropped: " + ", ".join(parts)
                       + f" (kept {statuses.get('final', 0)}).")
        if qf.get("leak_reasons"):
            out.append("Leak reasons: " + ", ".join(
                f"{k} {v}" for k, v in sorted(qf["leak_reasons"].items())) + ".")
        if qf.get("unusable_reasons"):
            out.append("Unusable generations: " + ", ".join(
                f"{k} {v}" for k, v in sorted(qf["unusable_reasons"].items())) + ".")
    return out


def left_out_block(build_report: Mapping | None, *, key: str = "left-out",
                   title: str = "Left out") -> TableBlock | None:
    """Every skipped input file and every dropped question of a corpus build report, one row
    each with its reason (None when the report lists none): ``skipped`` entries and the
    question funnel's ``dropped`` list (``{"qid", "doc_id", "where", "reason"}``)."""
    rep = build_report or {}
    rows = [["input file skipped", str(s.get("where", "?")), _reason(s.get("reason", "?"))]
            for s in rep.get("skipped") or [] if isinstance(s, Mapping)]
    funnels = [rep, rep.get("queries") if isinstance(rep.get("queries"), Mapping) else None]
    for funnel in funnels:
        for d in (funnel or {}).get("dropped") or []:
            if isinstance(d, Mapping):
                rows.append(["question dropped",
                             f"{d.get('qid', '?')} on {d.get('doc_id', '?')} "
                             f"({d.get('where', '?')})", str(d.get("reason", "?"))])
    if not rows:
        return None
    return TableBlock(key, title, ["what", "which", "why"], rows, align=["l", "l", "l"],
                      note="The answers above rest on the documents and questions kept; these "
                           "were not used.")


def partial_evidence_block(build_report: Mapping | None, *, key: str = "partial-evidence",
                           title: str = "Kept with part of their evidence") -> TableBlock | None:
    """The questions kept under ``partial_evidence: keep`` although some of their evidence
    snippets map nowhere, one row per snippet with why (the closest passage), from a
    bring-your-own build report's ``queries.kept_with_partial_evidence``; None when there is
    none."""
    queries = (build_report or {}).get("queries")
    kept = queries.get("kept_with_partial_evidence") if isinstance(queries, Mapping) else None
    rows = []
    for k in kept or []:
        if not isinstance(k, Mapping):
            continue
        which = f"{k.get('qid', '?')} on {k.get('doc_id', '?')} ({k.get('where', '?')})"
        for why in k.get("unmapped") or ["?"]:
            rows.append([which, str(why)])
    if not rows:
        return None
    return TableBlock(key, title, ["question", "evidence that maps nowhere, and why"], rows,
                      align=["l", "l"],
                      note="partial_evidence: keep: these questions are scored against the "
                           "part of their gold that was found; the snippets listed are not "
                           "part of it.")


_MARKUP_ROWS = (("includes_refused", "include refused"),
                ("autodoc", "autodoc directive (its API text is not in the corpus)"),
                ("unresolved_substitutions", "substitution defined nowhere in the file"),
                ("unknown_directives", "unknown directive (body kept)"),
                ("unknown_roles", "unknown role (text kept)"))


def markup_block(build_report: Mapping | None, *, key: str = "markup",
                 title: str = "Markup the readers left out") -> TableBlock | None:
    """What the MyST and reStructuredText readers could not render, per file, from a
    bring-your-own build report's ``markup.files``: includes refused (outside the corpus,
    missing), autodoc directives whose API text is absent, unresolved substitutions, unknown
    directives and roles; None when there is none. Navigation dropped on purpose
    (``toctree``, …) is counted in a sentence of the note."""
    markup = (build_report or {}).get("markup")
    if not isinstance(markup, Mapping):
        return None
    rows = []
    for doc_id, m in (markup.get("files") or {}).items():
        if not isinstance(m, Mapping):
            continue
        for field_name, label in _MARKUP_ROWS:
            found = m.get(field_name)
            if isinstance(found, Mapping):
                items = [f"{k} ({n}×)" if n != 1 else str(k) for k, n in found.items()]
            else:
                items = [str(x) for x in found or ()]
            if items:
                rows.append([label, str(doc_id), _capped(items)])
    if not rows:
        return None
    dropped = markup.get("dropped_directives") or {}
    note = "The text these would have shown is not in the documents scored."
    if isinstance(dropped, Mapping) and dropped:
        note += (" Navigation and generated content dropped on purpose: " + ", ".join(
            f"{k} {n}" for k, n in sorted(dropped.items())) + ".")
    return TableBlock(key, title, ["what", "document", "which"], rows, align=["l", "l", "l"],
                      note=note)


# ---------------------------------------------------------------- BM25


def bm25_sentence(bm25: Mapping | None, corpus_kind: str | None = None) -> str:
    """The BM25 gold-top-1 line of a corpus, headlining the within-document figure (the one
    comparable to the paper's), the corpus-wide one second; '' without a BM25 report."""
    if not bm25:
        return ""
    doc, wide = bm25.get("gold_top1_within_document"), bm25.get("gold_top1_corpus_wide")
    if doc is None and wide is None:
        return ""
    # the paper's figure, by corpus kind; within the question's document is the comparable
    # scope (see :mod:`structablate.retrieval.bm25`)
    paper = PAPER_BM25_GOLD_TOP1.get(corpus_kind or "")
    text = "BM25 gold-top-1 (share of questions whose best BM25 chunk is relevant)"
    if doc is not None:
        text += f": {_pct(doc)} within the question's own document"
        if paper is not None:
            text += (f" (comparable to the paper's {_pct(paper)} on "
                     f"{PAPER_CORPORA[corpus_kind].label})")
    if wide is not None:
        text += f"; {_pct(wide)} over the whole corpus"
    chunkset = bm25.get("chunkset")
    return text + (f", {chunkset} chunks." if chunkset else ".") + \
        " A low figure means word overlap alone does not find the evidence."


# ---------------------------------------------------------------- report fields, the funnel


def flat_fields(obj, prefix: str = "") -> dict[str, float]:
    """Every number of a JSON report, keyed by its dotted path (``llm.generated``); lists,
    strings and booleans are left out. How a results page names a report's field, and how
    its ledger reads it back."""
    out: dict[str, float] = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out |= flat_fields(v, f"{prefix}{k}.")
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        out[prefix[:-1]] = float(obj)
    return out


def _int_or(v: float, kind: str) -> str:
    """``"int"`` for a whole number, else ``kind``."""
    return "int" if float(v).is_integer() else kind


def report_fields_block(report: Mapping, label: str, *, key: str = "report-fields",
                        title: str = "", cite: Cite = plain,
                        paper: tuple[str, float] | None = None,
                        cite_paper: Cite = plain) -> TableBlock:
    """Every number of a JSON report (``funnel.json``, ``bm25.json``: :func:`flat_fields`),
    a row each but the ``paper…`` fields, whole numbers as counts and others with four
    decimals, each printed through ``cite`` (column: the field, no row key); with ``paper``
    (``(corpus kind, value)``, the paper's BM25 gold-top-1) a last row holds it, printed through
    ``cite_paper``."""
    rows = [[k, cite(v, _int_or(v, "4"), k, {})]
            for k, v in flat_fields(report).items() if not k.startswith("paper")]
    if paper is not None:
        rows.append([f"paper gold-top-1 ({paper[0]})",
                     cite_paper(paper[1], "3", "gold_top1", {"corpus": paper[0]})])
    return TableBlock(key, title, [label, "value"], rows, align=["l", "r"])


FUNNEL_LIKE = (
    ("questions", "questions", "questions", "the same count"),
    ("kept (evidence mapped)", "kept", "kept", "the same count"),
    ("papers with a kept question", None, "papers", "the same count (this cell's documents)"),
    ("evidence strings mapped exactly", "evidence_exact_share", "exact_share",
     "the paper's denominator is not recoverable exactly (docs/qasper.md)"),
)
"""Funnel rows whose definition is the paper's: (label, funnel.json field or None for the
cell's documents, the paper's key in :data:`structablate.paper.PAPER_QASPER_FUNNEL`, how
alike)."""


def qasper_funnel_block(funnel: Mapping, documents: tuple[float, Mapping[str, object]], *,
                        key: str = "qasper-funnel", title: str = "", cite: Cite = plain,
                        cite_documents: Cite = plain, cite_paper: Cite = plain) -> TableBlock:
    """The QASPER funnel like for like with the paper's (:data:`FUNNEL_LIKE`, then the
    multi-span share and evidence per question, distinct evidence strings and distinct gold
    spans): the run's ``funnel.json`` through ``cite``, the cell's documents
    (``documents``: ``(n_docs, the summary row's key)``) through ``cite_documents``, the
    paper's :data:`~structablate.paper.PAPER_QASPER_FUNNEL` through ``cite_paper``."""
    flat = flat_fields(funnel)

    def paper(step: str, kind: str | None = None) -> str:
        v = PAPER_QASPER_FUNNEL[step]
        return cite_paper(v, kind or _int_or(v, "3"), "value", {"step": step})

    rows = []
    for label, field_, pkey, alike in FUNNEL_LIKE:
        if field_ is None:
            here = cite_documents(documents[0], "int", "n_docs", documents[1])
        elif field_ in flat:
            here = cite(flat[field_], _int_or(flat[field_], "3"), field_, {})
        else:
            here = "—"
        rows.append([label, here, paper(pkey), alike])
    for label, pkey, field_ in (
            ("multi-span questions", "multi_span_share", "multi_evidence_share"),
            ("evidence per question", "spans_per_question", "mean_evidence_per_question")):
        here = (cite(flat[field_], "3", field_, {}) if field_ in flat
                else "— (not in this run's funnel.json)")
        rows.append([f"{label} (distinct evidence strings)", here, paper(pkey, "3"),
                     "the same count"])
    for label, field_ in (("multi-span questions", "multi_span_share"),
                          ("spans per question", "mean_spans_per_question")):
        if field_ in flat:
            rows.append([f"{label} (distinct gold spans)", cite(flat[field_], "3", field_, {}),
                         "—", "not the paper's count: two evidence strings can map to one span"])
    return TableBlock(key, title, ["QASPER funnel, like for like", "here", "paper",
                                   "definition"], rows, align=["l", "r", "r", "l"])


# ---------------------------------------------------------------- dose-response, question types


def dose_blocks(dose: pl.DataFrame, summary: pl.DataFrame, *, key: str = "dose",
                cite: Cite = plain, cite_summary: Cite = plain,
                cite_depth: Cite = plain) -> list[TableBlock]:
    """The breadcrumb-depth dose-response as two tables: each rung's mean per measure (the
    ladder :data:`structablate.study.DOSE_LADDER`, its depth in levels printed through
    ``cite_depth``, the means of ``summary`` through ``cite_summary``), then the slope per
    level with its 95% interval and p (exploratory, as the paper reports it) through
    ``cite``."""
    rungs = list(study.DOSE_LADDER)
    rows = []
    for m in dose["metric"].to_list():
        row = [m]
        for c in rungs:
            v = summary.filter((pl.col("condition") == c) & (pl.col("measure") == m))
            row.append(cite_summary(v["mean"][0], "4", "mean", {"condition": c, "measure": m})
                       if v.height else "—")
        rows.append(row)
    cols = ["measure", *(f"{c} (depth {cite_depth(d, 'int', 'depth', {'condition': c})})"
                         for c, d in study.DOSE_LADDER.items())]
    means = TableBlock(f"{key}-means", "", cols, rows, align=["l"] + ["r"] * len(rungs))
    rows = []
    for r in dose.iter_rows(named=True):
        k = {"metric": r["metric"]}
        rows.append([r["metric"], cite(r["slope"], "+4", "slope", k), interval(r, "+4", k, cite),
                     cite(r["p"], "p", "p", k), "exploratory"])
    slope = TableBlock(f"{key}-slope", "", ["measure", "slope per level", "95% CI", "p",
                                            "role"], rows, align=list("lrrrl"))
    return [means, slope]


def qtype_block(qtype: pl.DataFrame, metric: str, *, key: str = "qtype", title: str = "",
                cite: Cite = plain) -> TableBlock:
    """Each contrast cut by question type on ``metric`` (the ``contrasts_qtype`` table):
    questions, questions tied at zero, Δ with its 95% interval and the Holm p within the type,
    each number printed through ``cite``. Every row is exploratory."""
    rows = []
    for r in qtype.filter(pl.col("metric") == metric).iter_rows(named=True):
        k = {"family": r["family"], "contrast": r["contrast"], "metric": metric,
             "qtype": r["qtype"]}
        rows.append([f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r["qtype"],
                     cite(r["n_queries"], "int", "n_queries", k),
                     cite(r["n_zero_delta"], "int", "n_zero_delta", k),
                     cite(r["delta"], "+4", "delta", k), interval(r, "+4", k, cite),
                     cite(r.get("p_holm"), "p", "p_holm", k)])
    return TableBlock(key, title, ["contrast", "question type", "questions", "Δ exactly zero",
                                   "Δ", "95% CI", "Holm p (per type)"], rows,
                      align=list("llrrrrr"))


# ---------------------------------------------------------------- a slice against its whole


def sample_block(report: Mapping, *, key: str = "sample", title: str = "",
                 cite: Cite = plain) -> TableBlock | None:
    """The slice a ``papers: N`` source kept beside every paper of its sources (the ``sample``
    field of a QASPER ``funnel.json``, :func:`structablate.corpus.qasper_sample.sample_report`):
    papers, the share with a nested section, named sections per paper, and the share of each
    split and year; None when the report has no ``sample``. Each number is printed through
    ``cite`` with its dotted field (``sample.slice.nested_share``) as the column."""
    s = report.get("sample")
    if not isinstance(s, Mapping):
        return None
    parts = ("slice", "whole")

    def cell(part: str, path: str, kind: str) -> str:
        v = s[part]
        for k in path.split("."):
            v = v.get(k) if isinstance(v, Mapping) else None
        return "—" if v is None else cite(v, kind, f"sample.{part}.{path}", {})

    rows = [["papers", *(cell(p, "papers", "int") for p in parts)],
            ["papers with a nested section", *(cell(p, "nested_share", "pct") for p in parts)],
            ["named sections per paper", *(cell(p, "mean_sections", "2") for p in parts)]]
    for group, label in (("split", "split"), ("year", "year")):
        labels = sorted(set(s["whole"].get(group, {})) | set(s["slice"].get(group, {})))
        rows += [[f"{label} {x}", *(cell(p, f"{group}.{x}", "pct") for p in parts)]
                 for x in labels]
    method = s.get("method", "")
    how = ("a stratified sample (structure depth × split × year, proportional allocation with "
           "largest-remainder rounding, seeded by the run's seed)" if method == "stratified"
           else "the first papers in paper-id order" if method == "first" else method)
    return TableBlock(key, title, ["slice against its sources", "slice", "whole"], rows,
                      note=f"The slice is {how}; the whole is every paper of the sources it "
                           "was drawn from.", align=["l", "r", "r"])
