"""Glue: a user corpus (Markdown / HTML / JSONL + optional questions file) -> documents,
paragraphs, gold sections, and queries, qrels and funnel when the user brings questions (else
the document build report; generate_queries writes the questions)."""

from structablate.corpus.byo import build_user_corpus
from structablate.corpus.result import write_corpus
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk)
    build = build_user_corpus(settings["corpus"], smk.wildcards.corpus)
    for s in build.report["skipped"]:
        log.warning("skipped %s: %s", s["where"], s["reason"])
    write_corpus(build, smk.wildcards.corpus, smk.output)


main(snakemake)  # noqa: F821
