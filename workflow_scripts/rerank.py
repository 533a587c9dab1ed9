"""Glue: a first-stage run -> the same run with its top_n reordered by a cross-encoder."""

from structablate.chunking.build import chunk_texts
from structablate.io import read_parquet, write_parquet
from structablate.retrieval.runs import rerank_run
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    rr = settings["reranker"]
    chunks = read_parquet(smk.input.chunks)
    run = rerank_run(
        read_parquet(smk.input.run),
        read_parquet(smk.input.queries),
        chunks,
        chunk_texts(chunks, read_parquet(smk.input.documents)),
        rr.model,
        top_n=rr.top_n,
        trained=rr.trained,
        seed=settings["seed"],
    )
    if not run["reranker_trained"][0]:
        log.warning("%s is not a trained reranker: these scores are not results", rr.model)
    write_parquet(run, smk.output.run)


main(snakemake)  # noqa: F821
