"""Glue: a run + chunks + qrels -> per-query scores of every configured measure."""

from structablate.io import read_parquet, write_parquet
from structablate.metrics import score_run
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
scores = score_run(
    read_parquet(smk.input.run),
    read_parquet(smk.input.chunks),
    read_parquet(smk.input.qrels),
    read_parquet(smk.input.queries),
    list(smk.params.measures),
)
log.info("scored %d queries: %s", scores.height,
         {m: round(scores[m].mean(), 4) for m in smk.params.measures})
write_parquet(scores, smk.output.scores)
