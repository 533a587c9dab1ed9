"""Glue: a Wikipedia source -> documents, paragraphs, gold sections, selection report."""

from structablate.corpus.result import write_corpus
from structablate.corpus.wikipedia import build_wikipedia
from structablate.plan.jobs import BuildWikipediaJob
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, BuildWikipediaJob)
    build = build_wikipedia(settings.source, settings.selection, smk.params.cache_dir,
                            name=smk.wildcards.corpus)
    log.info("%d documents accepted", len(build.documents))
    write_corpus(build, smk.wildcards.corpus, smk.output)


main(snakemake)  # noqa: F821
