"""Glue: chunks + documents + queries + qrels -> BM25 gold-top-1 and evidence ROUGE-L (JSON).

input: ``chunks`` (the stated chunkset, G2 in the workflow), ``documents``, ``queries``,
``qrels``. params (optional): ``chunkset`` (its name, recorded), ``include_prefix`` (false).
output: ``json``; optional ``per_query`` (Parquet: per-query top chunk, hit, ROUGE-L, both
scopes). Both scopes are computed: ``corpus`` (top chunk over the whole chunkset, the headline)
and ``document`` (top chunk within the query's own document).
"""

import polars as pl

from structablate.bm25 import bm25_gold_top1, evidence_rouge
from structablate.io import read_parquet, write_json, write_parquet
from structablate.tables import check_table
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
chunks = check_table(read_parquet(smk.input.chunks), "chunks", smk.input.chunks)
documents = check_table(read_parquet(smk.input.documents), "documents", smk.input.documents)
queries = check_table(read_parquet(smk.input.queries), "queries", smk.input.queries)
qrels = check_table(read_parquet(smk.input.qrels), "qrels", smk.input.qrels)
include_prefix = bool(getattr(smk.params, "include_prefix", False))
out = {"corpus": getattr(smk.wildcards, "corpus", None),
       "chunkset": getattr(smk.params, "chunkset", None)}
frames = []
for scope in ("corpus", "document"):
    summary, per_query = bm25_gold_top1(chunks, documents, queries, qrels, scope=scope,
                                        include_prefix=include_prefix)
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
if getattr(smk.output, "per_query", None):
    pq = frames[0].join(frames[1], on="qid").join(rouge_pq.select("qid", "rouge_l"), on="qid",
                                                  how="left")
    write_parquet(pq, smk.output.per_query)
