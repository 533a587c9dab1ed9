"""Glue: corpus tables -> the chunk table of one chunkset."""

from structablate.chunking.build import ChunkingParams, build_chunks, chunk_stats
from structablate.chunking.tokens import TokenCounter
from structablate.conditions import condition
from structablate.io import read_parquet, write_json, write_parquet
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
cond = condition(smk.wildcards.chunkset)
params = ChunkingParams.from_config(smk.params.chunking)
size_ref = read_parquet(smk.input.size_reference) if smk.input.size_reference else None
report: dict = {"chunkset": cond.chunkset, "params": dict(smk.params.chunking)}
chunks = build_chunks(
    cond,
    read_parquet(smk.input.documents),
    read_parquet(smk.input.paragraphs),
    read_parquet(smk.input.sections),
    TokenCounter.from_model(smk.params.chunking["tokenizer"]),
    params,
    size_reference=size_ref,
    report=report,
)
log.info("%s: %d chunks, mean %.1f content tokens", cond.chunkset, chunks.height,
         chunks["content_tokens"].mean())
report.update(chunk_stats(chunks))
write_parquet(chunks, smk.output.chunks)
write_json(report, smk.output.stats)
