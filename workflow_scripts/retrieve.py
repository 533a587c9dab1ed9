"""Glue: question and chunk vectors -> the run (top-k chunks per question) of one condition."""

import numpy as np

from structablate.conditions import condition
from structablate.io import read_parquet, write_parquet
from structablate.retrieval.runs import retrieve_run
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    run = retrieve_run(
        condition(settings["condition"]),
        read_parquet(smk.input.queries),
        np.load(smk.input.query_vectors),
        read_parquet(smk.input.chunks),
        np.load(smk.input.vectors),
        dump(settings["retrieval"]),
        qrels=read_parquet(smk.input.qrels),
    )
    log.info("%d rows for %d queries", run.height, run["qid"].n_unique())
    write_parquet(run, smk.output.run)


main(snakemake)  # noqa: F821
