"""Glue: corpus tables and the corpus token table -> the chunk table of one chunkset (and its
size statistics; for the placebo chunksets P and GP, the assignment report under ``placebo``)."""

from structablate.chunking.build import build_chunks, chunk_stats
from structablate.chunking.tokens import TokenCounter, read_corpus_tokens
from structablate.io import read_parquet, write_json, write_parquet
from structablate.plan.jobs import ChunkJob
from structablate.study import condition
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, ChunkJob)
    cond = condition(smk.wildcards.chunkset)
    size_ref = read_parquet(smk.input.size_reference) if smk.input.size_reference else None
    sections = read_parquet(smk.input.sections)
    report: dict = {"chunkset": cond.chunkset, "settings": settings.dump()}
    chunks = build_chunks(
        cond,
        read_parquet(smk.input.documents),
        read_parquet(smk.input.paragraphs),
        sections,
        TokenCounter.from_model(settings.tokenizer),
        settings.chunking,
        size_reference=size_ref,
        report=report,
        tokens=read_corpus_tokens(smk.input.tokens),
        **({"placebo_seed": settings.seed} if settings.seed is not None else {}),
    )
    log.info("%s: %d chunks, mean %.1f content tokens", cond.chunkset, chunks.height,
             chunks["content_tokens"].mean())
    report.update(chunk_stats(chunks, settings.chunking, sections))
    write_parquet(chunks, smk.output.chunks)
    write_json(report, smk.output.stats)


main(snakemake)  # noqa: F821
