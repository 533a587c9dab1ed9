"""Glue: a run and its chunk-level binary qrels as TREC files (for trec_eval / ir_measures)."""

from structablate.io import read_parquet
from structablate.metrics.trec import write_trec_qrels, write_trec_run
from structablate.plan.jobs import InputsOnlyJob
from structablate.workflow import setup


def main(smk):
    setup(smk, InputsOnlyJob)
    write_trec_run(read_parquet(smk.input.run), smk.output.run, tag=smk.wildcards.condition)
    write_trec_qrels(read_parquet(smk.input.qrels), read_parquet(smk.input.chunks),
                     smk.output.qrels)


main(snakemake)  # noqa: F821
