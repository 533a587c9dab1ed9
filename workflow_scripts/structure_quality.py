"""Glue: a corpus's paragraphs, sections and chunk tables -> the structure-quality table and the
comparison checks the verdict's guard reads (src/structablate/structure/quality.py)."""

import json
from pathlib import Path

from structablate.io import read_parquet, write_parquet
from structablate.plan.jobs import StructureQualityJob
from structablate.structure.quality import corpus_structure_report
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, StructureQualityJob)
    chunksets = settings.chunksets
    chunks = {cs: read_parquet(p) for cs, p in zip(chunksets, smk.input.chunks, strict=True)}
    stats = {cs: json.loads(Path(p).read_text())
             for cs, p in zip(chunksets, smk.input.chunk_stats, strict=True)}
    induced = read_parquet(smk.input.induced) if smk.input.induced else None
    quality, checks = corpus_structure_report(
        read_parquet(smk.input.paragraphs), read_parquet(smk.input.gold), induced, chunks,
        settings.conditions, hier_top_sections=settings.hier_top_sections,
        inducer=settings.inducer, chunk_stats=stats, seed=settings.seed)
    log.info("structure quality: %d sources, %d comparison checks", quality.height,
             checks.height)
    write_parquet(quality, smk.output.quality)
    write_parquet(checks, smk.output.checks)


main(snakemake)  # noqa: F821
