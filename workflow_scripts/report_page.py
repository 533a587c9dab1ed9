"""Glue: every cell's and corpus's report facts, read from the results folder
(:mod:`structablate.report.folder`, the same files the rule declares as inputs) ->
{results}/report/index.{md,html} and the overview document of `snakemake --report`."""

from pathlib import Path

from structablate.plan.jobs import ReportPageJob
from structablate.report import (
    PageSettings,
    build_page,
    corpus_html,
    overview_html,
    write_page,
)
from structablate.report.folder import read_cell, read_corpus
from structablate.results_paths import Paths
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ReportPageJob)
    paths = Paths.of_report_page(smk.output.markdown)  # the folder the page is written in
    cells = [read_cell(paths, (c.corpus, c.embedder, c.reranker)) for c in settings.cells]
    corpora = [read_corpus(paths, name, kind=settings.corpus_types[name],
                           questions_generated=settings.generated_queries[name],
                           conditions=settings.conditions)
               for name in settings.corpora]
    run = PageSettings(
        embedders=settings.embedders, rerankers=settings.rerankers,
        conditions=settings.conditions, measures=settings.measures, primary=settings.primary,
        stage_conditions=settings.stage_conditions, llm=settings.llm,
        size_match_structure=settings.size_match_structure, inducer=settings.inducer,
        guard=settings.guard, contrasts=settings.contrasts, n_boot=settings.n_boot,
        top_k=settings.top_k)
    intro, sections = build_page(cells, corpora, run)
    write_page(intro, sections, smk.output.markdown, smk.output.html)
    Path(smk.output.overview).write_text(overview_html(intro, sections), encoding="utf-8")
    for name, path in zip(settings.corpora, smk.output.verdicts, strict=True):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(corpus_html(sections, name), encoding="utf-8")
    log.info("summary page: %d cells, %d corpora", len(cells), len(corpora))


main(snakemake)  # noqa: F821
