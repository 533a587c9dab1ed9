"""Glue: documents + paragraphs (+ gold sections) -> induced sections table + induction report.

params: ``llm`` (the llm config block), ``induction`` (the induction block; ``inducer: llm |
texttiling``). input: documents, paragraphs, optional gold_sections (for the report only; the
inducer never sees it). output: sections, report.
"""

from pathlib import Path

from structablate.corpus.flatten import sections_frame
from structablate.io import read_parquet, write_json, write_parquet
from structablate.structure import documents_from_frames, induce_documents
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
gold_path = getattr(smk.input, "gold_sections", None)
docs = documents_from_frames(  # gold sections ride along for the report; inducers ignore them
    read_parquet(smk.input.documents), read_parquet(smk.input.paragraphs),
    read_parquet(gold_path) if gold_path else None)
pairs, report = induce_documents(docs, smk.params.induction, getattr(smk.params, "llm", None),
                                 base_dir=Path.cwd())
report["corpus"] = getattr(smk.wildcards, "corpus", None)
log.info("induced %d documents with %s: %d usable, %d repaired, %.1f sections/doc",
         report["n_documents"], report["inducer"], report["usable"], report["repaired"],
         report["mean_sections_per_doc"] or 0.0)
write_parquet(sections_frame(pairs), smk.output.sections)
write_json(report, smk.output.report)
