"""Glue: documents + paragraphs (+ gold sections) -> induced sections table + induction report.

The gold sections reach the report, and the supervised inducer's cross-fitting: it trains on
the gold of the other folds' documents only, never on a document's own
(:mod:`structablate.structure.supervised`); the LLM and TextTiling inducers never see them."""

from pathlib import Path

from structablate.corpus.flatten import documents_from_frames, sections_frame
from structablate.io import read_parquet, write_json, write_parquet
from structablate.plan.jobs import InduceStructureJob
from structablate.structure import induce_documents
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, InduceStructureJob)
    docs = documents_from_frames(
        read_parquet(smk.input.documents), read_parquet(smk.input.paragraphs),
        read_parquet(smk.input.gold_sections))
    # an LLM inducer holds the stage lock of its cache, one generator per corpus at a time
    pairs, report = induce_documents(docs, settings.induction, settings.llm,
                                     base_dir=Path.cwd(),
                                     stage=f"induction/{smk.wildcards.corpus}")
    report["corpus"] = smk.wildcards.corpus
    log.info("induced %d documents with %s: %d usable, %d repaired, %.1f sections/doc",
             report["n_documents"], report["inducer"], report["usable"], report["repaired"],
             report["mean_sections_per_doc"] or 0.0)
    write_parquet(sections_frame(pairs), smk.output.sections)
    write_json(report, smk.output.report)


main(snakemake)  # noqa: F821
