"""Glue: a user corpus's documents (Markdown / reStructuredText / HTML / JSONL) -> documents,
paragraphs, gold sections and the document build report; its questions file, when it has
one, is mapped by map_user_questions (a question edit reruns only what reads questions)."""

from structablate.corpus.byo import build_user_documents
from structablate.corpus.result import write_corpus
from structablate.plan.jobs import BuildUserDocumentsJob
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, BuildUserDocumentsJob)
    build = build_user_documents(settings.corpus, smk.wildcards.corpus)
    for s in build.report["skipped"]:
        log.warning("skipped %s: %s", s["where"], s["reason"])
    write_corpus(build, smk.wildcards.corpus, smk.output)


main(snakemake)  # noqa: F821
