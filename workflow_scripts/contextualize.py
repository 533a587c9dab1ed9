"""Glue: a chunkset's fixed windows + documents -> the chunk table of the chunkset made from
them with LLM situating contexts (A1 from A0's windows; :func:`structablate.study.derived_from`).

``prefix`` becomes ``context + " "`` (empty when the model wrote nothing) and ``prefix_tokens``
is recounted with the chunk tokenizer.
"""

import re
from pathlib import Path

import polars as pl

from structablate.chunking.build import chunk_stats
from structablate.chunking.tokens import TokenCounter
from structablate.io import read_parquet, write_json, write_parquet
from structablate.llm.client import client_from_config
from structablate.llm.contextualize import contextualize_chunks
from structablate.plan.jobs import ContextualizeJob
from structablate.settings import one_process_per_core, with_context_tokens
from structablate.study import derived_from
from structablate.tables import check_table
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ContextualizeJob)
    cfg = settings.contexts
    chunks = check_table(read_parquet(smk.input.chunks), "chunks", smk.input.chunks)
    # A1 takes exactly A0's size-matched windows; only the chunk ids and the prefix differ
    name = smk.wildcards.chunkset
    base = derived_from(name)
    chunks = chunks.with_columns(
        pl.col("chunk_id").str.replace(f"^{re.escape(base)}:", f"{name}:"))
    # llama.cpp on CPUs: one worker process per core of the job, each owning whole documents
    client = client_from_config(one_process_per_core(settings.llm, smk.threads),
                                base_dir=Path.cwd(),
                                stage=f"contexts/{smk.wildcards.corpus}")
    counter = TokenCounter.from_model(settings.tokenizer)
    # the document budget derives from the model's context (contexts.context_tokens, else the
    # stage's llm block): it shapes the prompts, so it is part of what a recording replays
    report: dict = {}
    out = contextualize_chunks(
        chunks, read_parquet(smk.input.documents), client, counter,
        config=with_context_tokens(cfg, settings.llm), progress=True,
        report=report,
    )
    stats = client.stats.as_dict()
    client.close()
    log.info("contexts for %d chunks: %s", out.height, stats)
    write_parquet(out, smk.output.chunks)
    write_json({"chunkset": name, "model": client.model, "llm_mode": client.mode,
                "empty_contexts": int((out["prefix"] == "").sum()), "llm": stats, **report,
                **chunk_stats(out)}, smk.output.stats)


main(snakemake)  # noqa: F821
