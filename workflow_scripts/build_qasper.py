"""Glue: QASPER sources -> documents, paragraphs, gold sections, queries, qrels, funnel."""

from structablate.corpus import qasper
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.io import write_json, write_parquet
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
papers = qasper.read_sources(smk.params.sources)
corpus = qasper.build_qasper_corpus(
    papers,
    fuzzy_min_ratio=smk.params.fuzzy_min_ratio,
    keep_papers_without_questions=smk.params.keep_papers,
    source=", ".join(s["path"] for s in smk.params.sources),
)
docs = corpus.documents
funnel = corpus.funnel.as_dict()
log.info("funnel: %s", funnel["funnel"])
write_parquet(documents_frame(docs, smk.wildcards.corpus), smk.output.documents)
write_parquet(paragraphs_frame(docs), smk.output.paragraphs)
write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), smk.output.sections)
write_parquet(qasper.queries_frame(corpus.questions), smk.output.queries)
write_parquet(qasper.qrels_frame(corpus.questions), smk.output.qrels)
write_json(funnel, smk.output.funnel)
