"""Glue: a first-stage run -> the same run with its top_n reordered by a cross-encoder, and a
report (model, resolved precision, pairs scored vs served from the score cache)."""

from structablate.chunking.build import chunk_texts
from structablate.io import read_parquet, write_json, write_parquet
from structablate.plan.jobs import RerankJob
from structablate.retrieval.runs import rerank_run
from structablate.store.typed import ScoreStore
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, RerankJob)
    rr = settings.reranker
    chunks = read_parquet(smk.input.chunks)
    cache = ScoreStore(smk.params.cache, label="reranker score cache", setting="`results:`")
    try:
        run, report = rerank_run(
            read_parquet(smk.input.run),
            read_parquet(smk.input.queries),
            chunks,
            chunk_texts(chunks, read_parquet(smk.input.documents)),
            rr,
            seed=settings.seed,
            cache=cache,
            progress=True,
        )
    finally:
        cache.close()
    if report["dtype"] != settings.precision:  # the trigger recorded another precision
        raise RuntimeError(f"reranker {rr.model!r} ran in {report['dtype']!r}, the plan said "
                           f"{settings.precision!r}")
    if not run["reranker_trained"][0]:
        log.warning("%s is not a trained reranker: these scores are not results", rr.model)
    log.info("reranked %s", report)
    write_parquet(run, smk.output.run)
    write_json(report, smk.output.report)


main(snakemake)  # noqa: F821
