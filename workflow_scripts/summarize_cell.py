"""Glue: per-query score tables of one cell -> per-condition means."""

from structablate.io import read_parquet, write_parquet
from structablate.summary import summarize_cell
from structablate.workflow import setup

setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
tables = {c: read_parquet(p) for c, p in zip(smk.params.conditions, smk.input.scores, strict=True)}
write_parquet(summarize_cell(tables), smk.output.summary)
