"""Glue: QASPER sources -> documents, paragraphs, gold sections, queries, qrels, funnel."""

from structablate.corpus import qasper
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.io import write_json, write_parquet
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    corpus = settings["corpus"]
    sources = [dump(s) for s in corpus.sources]
    built = qasper.build_qasper_corpus(
        qasper.read_sources(sources),
        fuzzy_min_ratio=corpus.fuzzy_min_ratio,
        keep_papers_without_questions=corpus.keep_papers_without_questions,
        source=", ".join(s["path"] for s in sources),
    )
    docs = built.documents
    funnel = built.funnel.as_dict()
    log.info("funnel: %s", funnel["funnel"])
    write_parquet(documents_frame(docs, smk.wildcards.corpus), smk.output.documents)
    write_parquet(paragraphs_frame(docs), smk.output.paragraphs)
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), smk.output.sections)
    write_parquet(qasper.queries_frame(built.questions), smk.output.queries)
    write_parquet(qasper.qrels_frame(built.questions), smk.output.qrels)
    write_json(funnel, smk.output.funnel)


main(snakemake)  # noqa: F821
