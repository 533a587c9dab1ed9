"""Glue: question and chunk vectors -> the run (top-k chunks per question) of one condition,
and what the search did (exact or HNSW, why, recall measured against exact search)."""

from structablate.io import read_npy, read_parquet, write_json, write_parquet
from structablate.plan.jobs import RetrieveJob
from structablate.retrieval.runs import retrieve_run
from structablate.study import condition
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, RetrieveJob)
    report: dict = {}
    run = retrieve_run(
        condition(settings.condition),
        read_parquet(smk.input.queries),
        read_npy(smk.input.query_vectors),
        read_parquet(smk.input.chunks),
        read_npy(smk.input.vectors),
        settings.retrieval,
        qrels=read_parquet(smk.input.qrels),
        report=report,
    )
    log.info("%d rows for %d queries; search: %s", run.height, run["qid"].n_unique(),
             report["retrieval"])
    write_parquet(run, smk.output.run)
    write_json(report["retrieval"], smk.output.report)


main(snakemake)  # noqa: F821
