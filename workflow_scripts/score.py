"""Glue: a run + chunks + qrels -> per-question scores of every configured measure."""

from structablate.io import read_parquet, write_parquet
from structablate.metrics import score_run
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    measures = list(settings["measures"])
    scores = score_run(
        read_parquet(smk.input.run),
        read_parquet(smk.input.chunks),
        read_parquet(smk.input.qrels),
        read_parquet(smk.input.queries),
        measures,
    )
    log.info("scored %d queries: %s", scores.height,
             {m: round(scores[m].mean(), 4) for m in measures} if scores.height else {})
    write_parquet(scores, smk.output.scores)


main(snakemake)  # noqa: F821
