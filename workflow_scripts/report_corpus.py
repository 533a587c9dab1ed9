"""Glue: a corpus's contrasts, chunks and embedding stats -> forest plot, size-matching table,
funnel figure."""

import json
from pathlib import Path

import polars as pl

from structablate.io import read_parquet, write_parquet
from structablate.plan.jobs import ReportCorpusJob
from structablate.report import blocks, figures, render
from structablate.stats import size_matching
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ReportCorpusJob)
    corpus = smk.wildcards.corpus
    metric = settings.metric
    chunksets, embedders = settings.chunksets, settings.embedders

    frames = [f for f in map(read_parquet, smk.input.contrasts) if f.height]
    contrasts = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(
        schema={"metric": pl.String})
    figures.save_all(figures.forest_plot(contrasts, metric,
                                         title=f"Contrasts of {corpus}, {metric}"),
                     smk.output.forest, smk.output.forest_svg)

    chunks = {cs: read_parquet(p) for cs, p in zip(chunksets, smk.input.chunks, strict=True)}
    paths = iter(smk.input.embed_stats)  # embedder outer, chunkset inner (rule order)
    stats = {(e, cs): json.loads(Path(next(paths)).read_text())
             for e in embedders for cs in chunksets}
    sm = size_matching(chunks, stats, settings.conditions)
    write_parquet(sm, smk.output.size_matching)
    Path(smk.output.size_matching_table).write_text(render.standalone_html(
        f"Size matching and truncation, {corpus}",
        [blocks.size_matching_block(sm, settings.size_match_structure,
                                    title=f"Size matching and truncation, {corpus}")]),
        encoding="utf-8")

    report = json.loads(Path(smk.input.corpus_report).read_text())
    figures.save_all(figures.funnel_plot(blocks.funnel_steps(report),
                                         title=f"Corpus funnel, {corpus}"),
                     smk.output.funnel, smk.output.funnel_svg)
    log.info("wrote the corpus report of %s (%d contrast rows)", corpus, contrasts.height)


main(snakemake)  # noqa: F821
