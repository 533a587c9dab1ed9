"""Glue: one cell's per-query scores -> contrasts, per-qtype cuts, dose-response."""

from pathlib import Path

from structablate.io import read_parquet, write_parquet
from structablate.stats.cell import analyze_cell
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
scores = {c: read_parquet(p) for c, p in zip(smk.params.conditions, smk.input.scores,
                                               strict=True)}
corpus, embedder, reranker = Path(smk.output.contrasts).parts[-4:-1]
tables = analyze_cell(scores, corpus, embedder, reranker, smk.params.statistics, smk.params.seed)
log.info("%d contrast rows", tables["contrasts"].height)
for name, df in tables.items():
    write_parquet(df, smk.output[name])
