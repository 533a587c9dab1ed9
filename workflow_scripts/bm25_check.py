"""Glue: the gold structural chunks without prefix (G2) + documents + queries + qrels -> the
BM25 report (gold-top-1 within the
question's document, the paper's figure, and over the whole corpus) and its per-query table."""

from structablate.io import read_parquet, write_json, write_parquet
from structablate.plan.jobs import InputsOnlyJob
from structablate.retrieval.bm25 import bm25_report
from structablate.study import BM25_CHUNKSET
from structablate.tables import check_table
from structablate.workflow import setup


def main(smk):
    log, _ = setup(smk, InputsOnlyJob)
    tables = {name: check_table(read_parquet(smk.input[name]), table, smk.input[name])
              for name, table in (("chunks", "chunks"), ("documents", "documents"),
                                  ("queries", "queries"), ("qrels", "qrels"))}
    out, per_query = bm25_report(tables["chunks"], tables["documents"], tables["queries"],
                                 tables["qrels"], corpus=smk.wildcards.corpus,
                                 chunkset=BM25_CHUNKSET, include_prefix=False)
    log.info("BM25 gold-top-1: %s within the document, %s corpus-wide",
             out["gold_top1_within_document"], out["gold_top1_corpus_wide"])
    write_json(out, smk.output.json)
    write_parquet(per_query, smk.output.per_query)


main(snakemake)  # noqa: F821
