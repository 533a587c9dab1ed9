"""Glue: one cell's runs + chunks + qrels -> per-question scores of every configured measure,
every condition scored in one process (each chunkset's layout prepared once)."""

from structablate.io import read_parquet, write_parquet
from structablate.metrics import score_runs
from structablate.plan.jobs import ScoreJob
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ScoreJob)
    conditions, measures = list(settings.conditions), list(settings.measures)
    # one frame per chunk file: conditions reading the same chunkset share one layout
    chunk_frames = {p: read_parquet(p) for p in dict.fromkeys(smk.input.chunks)}
    runs = {c: read_parquet(p) for c, p in zip(conditions, smk.input.runs, strict=True)}
    chunks = {c: chunk_frames[p] for c, p in zip(conditions, smk.input.chunks, strict=True)}
    scores = score_runs(runs, chunks, read_parquet(smk.input.qrels),
                        read_parquet(smk.input.queries), measures)
    for c, path in zip(conditions, smk.output.scores, strict=True):
        df = scores[c]
        log.info("%s: %d queries, %s", c, df.height,
                 {m: round(df[m].mean(), 4) for m in measures} if df.height else {})
        write_parquet(df, path)


main(snakemake)  # noqa: F821
