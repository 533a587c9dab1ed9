"""Glue: G2 chunks + documents + queries + qrels -> BM25 gold-top-1 and evidence ROUGE-L.

Both scopes are computed: ``corpus`` (top chunk over the whole chunkset) and ``document`` (top
chunk within the question's own document). output: ``json``, ``per_query`` (per-question top
chunk, hit and ROUGE-L in both scopes).
"""

import polars as pl

from structablate.bm25 import bm25_gold_top1, evidence_rouge
from structablate.io import read_parquet, write_json, write_parquet
from structablate.tables import check_table
from structablate.workflow import setup

CHUNKSET = "G2"  # gold structural chunks without prefix, the paper's BM25 check


def main(smk):
    log, _ = setup(smk)
    chunks = check_table(read_parquet(smk.input.chunks), "chunks", smk.input.chunks)
    documents = check_table(read_parquet(smk.input.documents), "documents", smk.input.documents)
    queries = check_table(read_parquet(smk.input.queries), "queries", smk.input.queries)
    qrels = check_table(read_parquet(smk.input.qrels), "qrels", smk.input.qrels)
    out = {"corpus": smk.wildcards.corpus, "chunkset": CHUNKSET}
    frames = []
    for scope in ("corpus", "document"):
        summary, per_query = bm25_gold_top1(chunks, documents, queries, qrels, scope=scope,
                                            include_prefix=False)
        log.info("BM25 gold-top-1 (%s scope): %s", scope, summary["gold_top1"])
        out[f"bm25_{scope}"] = summary
        frames.append(per_query.select(
            "qid", pl.col("top_chunk_id").alias(f"top_chunk_{scope}"),
            pl.col("hit").alias(f"hit_{scope}")))
    rouge, rouge_pq = evidence_rouge(documents, queries, qrels)
    out["gold_top1"] = out["bm25_corpus"]["gold_top1"]
    out["gold_top1_document_scope"] = out["bm25_document"]["gold_top1"]
    out["rouge_l_vs_evidence"] = rouge
    out["paper"] = {"gold_top1": {"wikipedia_fa": 0.363, "qasper": 0.227},
                    "rouge_l_typical_wikipedia_fa": [0.02, 0.13]}
    write_json(out, smk.output.json)
    pq = frames[0].join(frames[1], on="qid").join(rouge_pq.select("qid", "rouge_l"), on="qid",
                                                  how="left")
    write_parquet(pq, smk.output.per_query)


main(snakemake)  # noqa: F821
