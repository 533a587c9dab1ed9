"""Glue: per-question score tables of one cell -> per-condition means."""

from structablate.io import read_parquet, write_parquet
from structablate.plan.jobs import SummarizeCellJob
from structablate.report.summary import summarize_cell
from structablate.workflow import setup


def main(smk):
    _, settings = setup(smk, SummarizeCellJob)
    tables = {c: read_parquet(p) for c, p in zip(settings.conditions, smk.input.scores,
                                                   strict=True)}
    write_parquet(summarize_cell(tables), smk.output.summary)


main(snakemake)  # noqa: F821
