"""Glue: a Wikipedia source -> documents, paragraphs, gold sections, selection report."""

from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.wikipedia import build_wikipedia_corpus
from structablate.io import write_json, write_parquet
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    corpus = smk.wildcards.corpus
    cache_dir = smk.params.cache_dir if settings["source"].mode == "api" else None
    docs, report = build_wikipedia_corpus(dump(settings["source"]), dump(settings["selection"]),
                                          cache_dir)
    report["corpus"] = corpus
    log.info("%d documents accepted", len(docs))
    write_parquet(documents_frame(docs, corpus), smk.output.documents)
    write_parquet(paragraphs_frame(docs), smk.output.paragraphs)
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), smk.output.sections)
    write_json(report, smk.output.report)


main(snakemake)  # noqa: F821
