"""Glue: one cell's statistics and runs -> its marked contrasts, report tables and figures."""

from pathlib import Path

import polars as pl

from structablate.io import read_parquet, write_json, write_parquet
from structablate.plan.jobs import ReportCellJob
from structablate.report import blocks, figures, render
from structablate.report.provenance import cell_flags
from structablate.report.testable import dose_flags, mark_contrasts
from structablate.settings import dump
from structablate.study import DOSE_LADDER
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ReportCellJob)
    conds = list(settings.conditions)
    cell = (smk.wildcards.corpus, smk.wildcards.embedder, smk.wildcards.reranker)
    label = blocks.cell_label(*cell)
    runs = dict(zip(conds, smk.input.runs, strict=True))
    summary = read_parquet(smk.input.summary)
    contrasts = read_parquet(smk.input.contrasts)
    dose = read_parquet(smk.input.dose_response)
    measures = list(dict.fromkeys(summary["measure"]))
    metric = settings.metric if settings.metric in measures else measures[0]

    cis = read_parquet(smk.input.cis)
    sr = read_parquet(smk.input.section_recall)
    ranking = read_parquet(smk.input.ranking_identity)
    guard = dict(quality=read_parquet(smk.input.structure_quality),
                 checks=read_parquet(smk.input.comparison_checks), ranking=ranking,
                 guard=settings.guard)
    contrasts = mark_contrasts(contrasts, **guard)
    write_parquet(contrasts, smk.output.marked)
    log.info("%d of %d contrast rows qualified by the structure-quality guard",
             contrasts["guard"].is_not_null().sum(), contrasts.height)

    # did the reranker of this cell have a trained head? (the rerank rule records it per row)
    observed = None
    if cell[2] != "none":
        first = pl.read_parquet(runs[conds[0]], n_rows=1)
        if "reranker_trained" in first.columns:
            observed = bool(first["reranker_trained"][0])
    flags = cell_flags(cell, {cell[2]: dump(settings.reranker)}, observed)
    for f in flags:
        log.warning(f)
    write_json({"cell": list(cell), "reranker_trained": observed, "flags": flags,
                "metric": metric, "conditions": conds}, smk.output.cell)

    warn = [render.Note(f, "warning") for f in flags]
    Path(smk.output.contrasts_table).write_text(render.standalone_html(
        f"Contrasts, {label}",
        [*warn, blocks.contrasts_block(contrasts, measures, title=f"Contrasts, {label}")]),
        encoding="utf-8")
    Path(smk.output.means_table).write_text(render.standalone_html(
        f"Per-condition means, {label}",
        [*warn,
         blocks.condition_means_block(summary, conds, title=f"Per-condition means, {label}"),
         blocks.condition_cis_block(cis, metric)]), encoding="utf-8")
    figures.save_all(figures.condition_bars(cis, measures, conds,
                                            title=f"Per-condition means, 95% CI — {label}"),
                     smk.output.bars, smk.output.bars_svg)
    figures.save_all(figures.dose_response_plot(
        dose, cis, metric, title=f"Breadcrumb-depth dose-response — {label}",
        flags=dose_flags(list(DOSE_LADDER), **guard) if dose.height else ()),
        smk.output.dose, smk.output.dose_svg)
    figures.save_all(figures.section_recall_plot(sr, title=f"Stage-1 section recall — {label}"),
                     smk.output.section_recall_fig, smk.output.section_recall_svg)
    log.info("wrote the report of %s", label)


main(snakemake)  # noqa: F821
