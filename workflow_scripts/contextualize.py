"""Glue: a chunk table (A1's fixed windows) + documents -> the same table with LLM contexts.

``prefix`` becomes ``context + " "`` (empty when the model wrote nothing) and ``prefix_tokens``
is recounted with the embedder's tokenizer. params: ``llm`` (llm config block), ``contexts``
(``context_max_tokens``, ``max_tokens``, ``max_doc_chars``), ``tokenizer`` (the embedder's
model name). input: chunks, documents. output: chunks, report.
"""

from pathlib import Path

import polars as pl

from structablate.chunking.build import chunk_stats
from structablate.chunking.tokens import TokenCounter
from structablate.io import read_parquet, write_json, write_parquet
from structablate.llm.client import client_from_config
from structablate.llm.contextualize import contextualize_chunks
from structablate.tables import check_table
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
cfg = dict(smk.params.contexts or {})
chunks = check_table(read_parquet(smk.input.chunks), "chunks", smk.input.chunks)
# A1 cuts exactly A0's size-matched windows; only the prefix differs
chunks = chunks.with_columns(pl.col("chunk_id").str.replace(r"^A0:", "A1:"))
client = client_from_config(smk.params.llm, base_dir=Path.cwd())
counter = TokenCounter.from_model(smk.params.tokenizer)
out = contextualize_chunks(
    chunks, read_parquet(smk.input.documents), client, counter,
    context_max_tokens=int(cfg.get("context_max_tokens", 80)),
    max_tokens=int(cfg.get("max_tokens", 160)), max_doc_chars=cfg.get("max_doc_chars"),
    progress=True,
)
stats = client.stats.as_dict()
client.close()
log.info("contexts for %d chunks: %s", out.height, stats)
write_parquet(out, smk.output.chunks)
write_json({"chunkset": "A1", "model": client.model, "llm_mode": client.mode,
            "empty_contexts": int((out["prefix"] == "").sum()), "llm": stats,
            **chunk_stats(out)}, smk.output.stats)
