"""Glue: a user corpus (Markdown / HTML / JSONL + optional questions file) -> documents,
paragraphs, gold sections, and queries, qrels and funnel when the user brings questions (else
the document build report; generate_queries writes the questions)."""

from structablate.corpus.byo import build_byo_corpus
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.qasper import qrels_frame, queries_frame
from structablate.io import write_json, write_parquet
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    name = smk.wildcards.corpus
    corpus = {k: v for k, v in dump(settings["corpus"]).items() if v is not None}
    docs, questions, report = build_byo_corpus(corpus, name)
    for s in report["skipped"]:
        log.warning("skipped %s: %s", s["where"], s["reason"])
    write_parquet(documents_frame(docs, name), smk.output.documents)
    write_parquet(paragraphs_frame(docs), smk.output.paragraphs)
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), smk.output.sections)
    if "queries" in smk.output.keys():
        write_parquet(queries_frame(questions), smk.output.queries)
        write_parquet(qrels_frame(questions), smk.output.qrels)
        write_json(report, smk.output.funnel)
    else:
        write_json(report, smk.output.report)


main(snakemake)  # noqa: F821
