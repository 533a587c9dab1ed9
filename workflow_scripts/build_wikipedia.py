"""Snakemake glue: build the Wikipedia-FA corpus tables (see structablate.corpus.wikipedia)."""

from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.wikipedia import build_wikipedia_corpus
from structablate.io import write_json, write_parquet
from structablate.workflow import setup

snakemake = globals()["snakemake"]  # injected by Snakemake's `script:` directive
setup(snakemake)
params, out = snakemake.params, snakemake.output
docs, report = build_wikipedia_corpus(
    dict(params.source), dict(params.selection), getattr(params, "cache_dir", None)
)
corpus = snakemake.wildcards.corpus
report["corpus"] = corpus
write_parquet(documents_frame(docs, corpus), out.documents)
write_parquet(paragraphs_frame(docs), out.paragraphs)
write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), out.sections)
write_json(report, out.report)
