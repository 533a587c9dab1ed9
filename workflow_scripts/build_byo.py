"""Glue: a bring-your-own corpus (markdown / html / jsonl + optional user queries) ->
documents, paragraphs, gold sections, queries, qrels, funnel (the build report)."""

from structablate.corpus.byo import build_byo_corpus
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.qasper import qrels_frame, queries_frame
from structablate.io import write_json, write_parquet
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
name = smk.wildcards.corpus
docs, questions, report = build_byo_corpus(dict(smk.params.corpus), name)
for s in report["skipped"]:
    log.warning("skipped %s: %s", s["where"], s["reason"])
write_parquet(documents_frame(docs, name), smk.output.documents)
write_parquet(paragraphs_frame(docs), smk.output.paragraphs)
write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), smk.output.sections)
if getattr(smk.output, "queries", None):
    write_parquet(queries_frame(questions), smk.output.queries)
    write_parquet(qrels_frame(questions), smk.output.qrels)
    write_json(report, smk.output.funnel)
else:  # no user queries: generate_queries writes queries, qrels and the query funnel
    write_json(report, smk.output.report)
