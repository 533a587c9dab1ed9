"""Glue: one cell's per-question scores -> contrasts, per-question-type cuts, dose-response."""

from structablate.io import read_parquet, write_parquet
from structablate.plan.jobs import ContrastsJob
from structablate.stats.cell import analyze_cell
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ContrastsJob)
    w = smk.wildcards
    scores = {c: read_parquet(p) for c, p in zip(settings.conditions, smk.input.scores,
                                                   strict=True)}
    tables = analyze_cell(scores, w.corpus, w.embedder, w.reranker, settings.statistics,
                          settings.seed)
    log.info("%d contrast rows", tables["contrasts"].height)
    for name, df in tables.items():
        write_parquet(df, smk.output[name])


main(snakemake)  # noqa: F821
