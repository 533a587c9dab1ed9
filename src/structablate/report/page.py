"""The summary page (``results/report/index.md`` / ``index.html``) from loaded tables.

:func:`build_page` is pure: it takes the tables of every cell and corpus (already read) and the
figure paths relative to the page, and returns the page's sections; :func:`write_page` renders
them to Markdown and HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from structablate import study
from structablate.settings import (
    InductionSettings,
    LLMSettings,
    PrimaryCell,
    Settings,
    dump,
)
from structablate.stats.power import resolving_power

from . import render
from .blocks import (
    bm25_sentence,
    cell_label,
    condition_cis_block,
    condition_means_block,
    contrasts_block,
    cross_cell_means_block,
    dropped_inputs,
    funnel_block,
    left_out_block,
    markup_block,
    partial_evidence_block,
    resolving_power_block,
    sample_block,
    section_recall_block,
    size_matching_block,
    structure_quality_block,
    two_stage_conditions,
)
from .guard import GuardSettings, split_reason
from .provenance import answer_provenance, cell_flags, llm_status, provenance_blocks
from .render import FigureBlock, Note, PageSection
from .testable import GUARD_COLUMN, dose_flags, mark_contrasts
from .verdict import verdict_blocks

TITLE = "structablate report"


@dataclass
class CellData:
    """One cell's report inputs, ``cell`` = ``(corpus, embedder, reranker)``: its summary,
    contrasts (guard-marked where the report marked them), condition CIs, stage-1 section
    recall, dose-response, whether its reranker was trained (``cell.json``), ranking identity
    and its figures relative to the page. Read from a results folder by
    :func:`structablate.report.folder.read_cell`."""

    cell: tuple[str, str, str]
    summary: pl.DataFrame
    contrasts: pl.DataFrame
    cis: pl.DataFrame
    section_recall: pl.DataFrame
    dose: pl.DataFrame
    observed_trained: bool | None = None
    figures: dict[str, str] = field(default_factory=dict)  # name -> path relative to page
    # how often two conditions returned identical rankings (stats.ranking_identity)
    ranking_identity: pl.DataFrame | None = None


@dataclass
class CorpusData:
    """One corpus's report inputs. ``funnel`` is the corpus build report (QASPER / user-corpus
    ``funnel.json``, Wikipedia ``corpus_report.json``); ``question_funnel`` the
    query-generation funnel where questions were generated; ``questions_generated`` whether an
    LLM wrote the corpus's questions, the plan's answer (``Plan.generates_queries``, recorded in
    the report page's job; never inferred from the corpus's kind or files);
    ``structure_quality`` and ``comparison_checks`` come from
    :func:`structablate.structure.quality.corpus_structure_report`; ``bm25`` is the BM25
    report (:func:`structablate.retrieval.bm25.bm25_report`). Read from a results folder by
    :func:`structablate.report.folder.read_corpus`."""

    name: str
    kind: str
    funnel: Mapping | None
    size_matching: pl.DataFrame
    figures: dict[str, str] = field(default_factory=dict)
    a1_prefix_tokens: float | None = None  # mean context length of A1 (tokens), if it ran
    a1_llm_calls: int | None = None
    structure_quality: pl.DataFrame | None = None
    comparison_checks: pl.DataFrame | None = None
    bm25: Mapping | None = None
    question_funnel: Mapping | None = None
    questions_generated: bool = False


def primary_metric(primary: Mapping, measures: Sequence[str]) -> str:
    """The configured primary metric, or the first measure when it was not scored."""
    m = primary.get("metric")
    return m if m in measures else measures[0]


@dataclass(frozen=True)
class PageSettings:
    """What the summary page reads of the run's settings and plan: one object, built by the
    glue from :meth:`structablate.plan.Plan.rule_settings` of ``report_page``.

    ``embedders``/``rerankers``: name -> settings (:class:`~structablate.settings.
    EmbedderSettings`, :class:`~structablate.settings.RerankerSettings`, or their plain
    mappings); ``conditions``, ``measures``: what ran; ``primary``: the primary cell
    (:class:`~structablate.settings.PrimaryCell` or a mapping); ``stage_conditions``: which LLM
    stage each condition needs (:meth:`~structablate.plan.Plan.stage_conditions`); ``llm``:
    stage label -> the llm settings it ran with, None where it did not run
    (:meth:`~structablate.plan.Plan.llm_stages`), None: no LLM information; ``guard``: the
    structure-quality guard's thresholds; ``contrasts``: the configured contrast families
    (``{"statistics.contrasts": {name: [a, b]}, "statistics.extra_contrasts": …}``), so a
    question or contrast that did not run says why (None: the paper's C1–C4 are assumed);
    ``n_boot``: the bootstrap replicates of the run's contrasts (``statistics.bootstrap_iters``),
    so a decision within Monte-Carlo error of α is flagged (None: not checked); ``top_k``: the
    results per question (``retrieval.top_k``), so a routing row says what share of them was
    back-filled from the flat ranking (None: the count alone).
    """

    embedders: Mapping[str, Any]
    rerankers: Mapping[str, Any]
    conditions: Sequence[str]
    measures: Sequence[str]
    primary: PrimaryCell | Mapping[str, Any]
    stage_conditions: Mapping[str, Sequence[str]]
    llm: Mapping[str, LLMSettings | Mapping[str, Any] | None] | None = None
    size_match_structure: str = Settings.size_match_structure
    inducer: str = InductionSettings.inducer
    guard: GuardSettings = field(default_factory=GuardSettings)
    contrasts: Mapping[str, Mapping[str, Sequence[str]]] | None = None
    n_boot: int | None = None
    top_k: int | None = None


def build_page(cells: Sequence[CellData], corpora: Sequence[CorpusData], run: PageSettings
               ) -> tuple[list, list[PageSection]]:
    """(intro blocks, sections) of the summary page for ``run`` (:class:`PageSettings`)."""
    embedders = {k: dump(v) for k, v in run.embedders.items()}
    rerankers = {k: dump(v) for k, v in run.rerankers.items()}
    primary = dump(run.primary)
    llm = None if run.llm is None else {
        "stages": {k: dump(v) if v is not None else None for k, v in run.llm.items()}}
    conditions, measures = list(run.conditions), list(run.measures)
    size_match_structure, inducer = run.size_match_structure, run.inducer
    stage_conditions, guard, contrasts = run.stage_conditions, run.guard, run.contrasts
    metric = primary_metric(primary, measures)
    cells = [_marked(c, next((x for x in corpora if x.name == c.cell[0]), None), guard)
             for c in cells]
    observed = {c.cell: c.observed_trained for c in cells}
    intro = [Note("Per-query results of the structure ablation, the pre-registered contrasts "
                  "(Table 1 layout) and per-condition means (Table 2 layout), with the figures "
                  "of the workflow. The same tables and figures are in Snakemake's report "
                  "(snakemake --report).")]
    sections = []
    for corpus in corpora:
        mine = [c for c in cells if c.cell[0] == corpus.name]
        want = (corpus.name, primary.get("embedder"), primary.get("reranker", "none"))
        chosen = next((c for c in mine if c.cell == want), mine[0] if mine else None)
        if chosen is not None:
            sections.append(PageSection(
                f"Verdict: {corpus.name}",
                _verdict_section(corpus, chosen, metric, guard, embedders, rerankers, llm,
                                 conditions, inducer, stage_conditions, contrasts, run.top_k),
                key=f"verdict-{corpus.name}"))
    sections += [PageSection("Run provenance: models and flags", provenance_blocks(
        embedders, rerankers, [c.cell for c in cells], observed, llm, conditions,
        size_match_structure, primary, inducer, stage_conditions=stage_conditions),
        key="provenance")]

    # Table 1 across cells: the pre-registered family first, primary metric
    allc = [c.contrasts for c in cells if c.contrasts.height]
    t1: list = []
    if allc:
        df = pl.concat(allc, how="diagonal_relaxed")
        t1.append(contrasts_block(df, [metric], key="table-1", with_cell=True,
                                 title=f"Contrasts, {metric}, every cell", n_boot=run.n_boot))
        pre = df.filter(pl.col("family") == "pre-registered") if "family" in df.columns else df
        if not pre.height:
            missing = _missing_contrasts(contrasts, conditions)
            t1.append(Note(f"no pre-registered contrast ran: {missing}; only exploratory "
                           "contrasts ran.", "not-run"))
    else:
        t1.append(Note("no contrast has both of its conditions in the grid: "
                       f"{_missing_contrasts(contrasts, conditions)}.", "not-run"))
    sections.append(PageSection("Table 1: contrasts", t1, key="table-1-contrasts"))

    sections.append(PageSection("Table 2: per-condition means", [cross_cell_means_block(
        {c.cell: c.summary for c in cells}, metric, conditions,
        title=f"Per-condition {metric}, every cell")], key="table-2-means"))

    for corpus in corpora:
        blocks: list = []
        if "forest" in corpus.figures:
            blocks.append(_figure(f"forest-{corpus.name}", corpus.figures["forest"],
                                 f"Forest plot of the contrasts of {corpus.name} ({metric}), "
                                 "95% clustered-bootstrap CIs, all cells."))
        if corpus.funnel is not None:
            if "funnel" in corpus.figures:
                blocks.append(_figure(f"funnel-{corpus.name}", corpus.figures["funnel"],
                                     f"Corpus funnel of {corpus.name}."))
            blocks.append(funnel_block(corpus.funnel, key=f"funnel-{corpus.name}-table",
                                       title=f"Corpus funnel, {corpus.name}"))
            sample = sample_block(corpus.funnel, key=f"sample-{corpus.name}",
                                  title=f"The slice against its sources, {corpus.name}")
            if sample is not None:
                blocks.append(sample)
        blocks.append(size_matching_block(corpus.size_matching, size_match_structure,
                                          key=f"size-matching-{corpus.name}",
                                          title=f"Size matching and truncation, {corpus.name}"))
        if not any(study.on_induced(c) for c in conditions):
            blocks.append(Note("structure induction report: no condition of this run uses "
                               "induced structure.", "not-run"))
        sections.append(PageSection(f"Corpus {corpus.name}", blocks, key=f"corpus-{corpus.name}"))

    two_stage = two_stage_conditions(conditions)
    for c in cells:
        label = cell_label(*c.cell)
        k = "-".join(c.cell)
        blocks = [Note(f, "warning") for f in cell_flags(c.cell, rerankers, c.observed_trained)]
        # the guard's sentences are the table's lettered notes: one per reason in this cell
        blocks.append(contrasts_block(c.contrasts, measures, key=f"contrasts-{k}",
                                      title=f"Contrasts, {label}", n_boot=run.n_boot,
                                      section_recall=c.section_recall, top_k=run.top_k))
        corpus = next((x for x in corpora if x.name == c.cell[0]), None)
        if c.contrasts.height and "mde80" in c.contrasts.columns:
            blocks.append(resolving_power_block(
                resolving_power(c.contrasts.filter(pl.col("metric") == metric)),
                key=f"power-{k}", title=f"Resolving power, {metric}, {label}"))
        blocks.append(condition_means_block(c.summary, conditions, key=f"means-{k}",
                                            title=f"Per-condition means, {label}"))
        blocks.append(condition_cis_block(c.cis, metric, key=f"cis-{k}",
                                         title=f"{metric} per condition, 95% clustered-bootstrap "
                                               f"CI, {label}"))
        if "bars" in c.figures:
            blocks.append(_figure(f"bars-{k}", c.figures["bars"],
                                 f"Per-condition means with 95% document-clustered bootstrap "
                                 f"CIs, {label}."))
        if not c.dose.height:
            *first, last = study.DOSE_LADDER
            blocks.append(Note(f"breadcrumb-depth dose-response: needs {', '.join(first)} and "
                               f"{last} (induced structure), which are not in this run.",
                               "not-run"))
        if "dose" in c.figures:
            blocks.append(_figure(f"dose-{k}", c.figures["dose"],
                                 f"Breadcrumb-depth dose-response, {label}."))
        if c.dose.height:
            blocks += dose_notes(dose_flags(
                list(study.DOSE_LADDER), quality=corpus.structure_quality if corpus else None,
                checks=corpus.comparison_checks if corpus else None,
                ranking=c.ranking_identity, guard=guard))
        if two_stage and c.section_recall.height:
            blocks.append(section_recall_block(c.section_recall, key=f"section-recall-{k}",
                                               title=f"Stage-1 section recall, {label}"))
        else:
            blocks.append(Note("stage-1 section recall: no two-stage condition (A4, G4) in "
                               "this run.", "not-run"))
        if "section_recall" in c.figures:
            blocks.append(_figure(f"section-recall-{k}", c.figures["section_recall"],
                                 f"Stage-1 section recall, {label}."))
        sections.append(PageSection(f"Cell {label}", blocks, key=f"cell-{k}"))
    return intro, sections


def _missing_contrasts(configured: Mapping[str, Mapping[str, Sequence[str]]] | None,
                       conditions: Sequence[str]) -> str:
    """Each configured contrast that names a condition the run lacks, with those conditions
    (the paper's C1–C4 when ``configured`` is None)."""
    families = configured if configured is not None else {
        "statistics.contrasts": {k: list(v) for k, v in study.PAPER_CONTRASTS.items()}}
    parts = []
    for family, contrasts in families.items():
        for name, (a, b) in (contrasts or {}).items():
            missing = [c for c in (a, b) if c not in conditions]
            if missing:
                parts.append(f"{family.rsplit('.', 1)[-1]} {name} ({a} − {b}) lacks "
                             + " and ".join(missing))
    return "; ".join(parts) or "every configured contrast's conditions ran"


def _figure(key: str, src: str, caption: str) -> FigureBlock:
    """A figure of the page, its SVG twin (written beside every PNG by the report rules)
    linked under it."""
    svg = src[: -len(".png")] + ".svg" if src.endswith(".png") else None
    return FigureBlock(key, src, caption, formats={"SVG": svg} if svg else {})


def _marked(cell: CellData, corpus: CorpusData | None, guard: GuardSettings | None
            ) -> CellData:
    """``cell`` with its contrasts marked by the guard (:func:`.testable.mark_contrasts`), so
    every table of the page carries the mark; kept as it is when already marked."""
    if not cell.contrasts.height or GUARD_COLUMN in cell.contrasts.columns:
        return cell
    marked = mark_contrasts(
        cell.contrasts, quality=corpus.structure_quality if corpus else None,
        checks=corpus.comparison_checks if corpus else None, ranking=cell.ranking_identity,
        guard=guard)
    return replace(cell, contrasts=marked)


def dose_notes(reasons: Sequence[str]) -> list[Note]:
    """The guard's reasons against the depth ladder (:func:`.testable.dose_flags`) as one
    warning each: the dose-response rests on the same structure as the contrasts it
    qualifies, so the slope carries the same qualification."""
    out = []
    for reason in reasons:
        about, detail = split_reason(reason)
        out.append(Note(f"The breadcrumb-depth slope is {about}: {detail}.", "warning"))
    return out


def _verdict_section(corpus: CorpusData, chosen: CellData, metric: str,
                     guard: GuardSettings | None, embedders, rerankers, llm, conditions,
                     inducer, stage_conditions, configured=None, top_k=None) -> list:
    """The verdict of one corpus: flags, answers, the guard table, BM25, what was left out."""
    blocks: list = []
    if corpus.questions_generated:
        blocks.append(Note(
            f"The questions of {corpus.name} are SYNTHETIC: an LLM wrote them from "
            "evidence spans the pipeline chose, behind a lexical-leakage filter "
            "(docs/queries.md). They are not questions your users asked.", "warning"))
    _, replay = llm_status(llm, conditions, inducer, stage_conditions=stage_conditions)
    # another corpus's question generation does not concern this corpus
    blocks += [Note(f, "warning") for f in replay
               if not f.startswith("queries (") or f.startswith(f"queries ({corpus.name})")]
    blocks += verdict_blocks(
        corpus.name, chosen.cell, chosen.contrasts, chosen.summary, chosen.section_recall,
        metric, a1_prefix_tokens=corpus.a1_prefix_tokens, a1_llm_calls=corpus.a1_llm_calls,
        quality=corpus.structure_quality, checks=corpus.comparison_checks,
        ranking=chosen.ranking_identity, guard=guard,
        provenance=answer_provenance(chosen.cell, embedders, rerankers, llm, inducer),
        conditions=conditions, configured=configured, top_k=top_k)
    if corpus.structure_quality is not None and corpus.structure_quality.height:
        blocks.append(structure_quality_block(
            corpus.structure_quality, key=f"structure-quality-{corpus.name}",
            title=f"Structure quality, {corpus.name}"))
    else:
        blocks.append(Note("structure-quality guard: no structure-quality table was given for "
                           "this corpus, so no comparison could be checked.", "not-run"))
    bm25 = bm25_sentence(corpus.bm25, corpus.kind)
    if bm25:
        blocks.append(Note(bm25))
    left_out = dropped_inputs(corpus.funnel, corpus.question_funnel)
    blocks.append(Note("Left out of this corpus: " + " ".join(left_out) if left_out else
                       "Nothing was left out of this corpus: no input file skipped, no question "
                       "dropped."))
    table = left_out_block(corpus.funnel, key=f"left-out-{corpus.name}",
                           title=f"Left out of {corpus.name}, with reasons")
    if table is not None:
        blocks.append(table)
    for table in (partial_evidence_block(
            corpus.funnel, key=f"partial-evidence-{corpus.name}",
            title=f"Questions of {corpus.name} kept with part of their evidence"),
            markup_block(corpus.funnel, key=f"markup-{corpus.name}",
                         title=f"Markup of {corpus.name} the readers left out")):
        if table is not None:
            blocks.append(table)
    return blocks


def overview_html(intro: list, sections: list[PageSection]) -> str:
    """The provenance and the two paper tables as one standalone document (for --report)."""
    keep = [s for s in sections if s.key in ("provenance", "table-1-contrasts",
                                             "table-2-means")]
    return render.page_html(TITLE + ": overview", keep, intro)


def corpus_html(sections: list[PageSection], corpus: str) -> str:
    """One corpus's verdict and corpus sections as a standalone document (for --report):
    tables and notes only, since a figure's relative link does not survive embedding (the
    figures are report items of their own)."""
    keep = [PageSection(s.title, [b for b in s.blocks if not isinstance(b, FigureBlock)],
                        s.level, s.key)
            for s in sections if s.key in (f"verdict-{corpus}", f"corpus-{corpus}")]
    return render.page_html(f"{TITLE}: {corpus}", keep)


def write_page(intro: list, sections: list[PageSection], markdown: str | Path,
               html: str | Path) -> None:
    Path(markdown).write_text(render.page_markdown(TITLE, sections, intro), encoding="utf-8")
    Path(html).write_text(render.page_html(TITLE, sections, intro), encoding="utf-8")
