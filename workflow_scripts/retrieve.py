"""Glue: query and chunk vectors -> the run (top-k chunks per query) of one condition."""

import numpy as np

from structablate.conditions import condition
from structablate.io import read_parquet, write_parquet
from structablate.retrieval.runs import retrieve_run
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
run = retrieve_run(
    condition(smk.params.condition),
    read_parquet(smk.input.queries),
    np.load(smk.input.query_vectors),
    read_parquet(smk.input.chunks),
    np.load(smk.input.vectors),
    smk.params.retrieval,
    qrels=read_parquet(smk.input.qrels),
)
log.info("%d rows for %d queries", run.height, run["qid"].n_unique())
write_parquet(run, smk.output.run)
