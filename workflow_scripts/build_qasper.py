"""Glue: QASPER sources -> documents, paragraphs, gold sections, queries, qrels, funnel."""

from structablate.corpus.qasper import build_qasper, read_sources_sampled
from structablate.corpus.result import write_corpus
from structablate.plan.jobs import BuildQasperJob
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, BuildQasperJob)
    corpus = settings.corpus
    sources = [dump(s) for s in corpus.sources]
    papers, sample = read_sources_sampled(sources, settings.seed)
    if sample is not None:
        log.info("sample (%s): slice %s, whole %s", sample["method"], sample["slice"],
                 sample["whole"])
    build = build_qasper(
        papers,
        fuzzy_min_ratio=corpus.fuzzy_min_ratio,
        keep_papers_without_questions=corpus.keep_papers_without_questions,
        source=", ".join(s["path"] for s in sources),
        sample=sample,
    )
    log.info("funnel: %s", build.report["funnel"])
    write_corpus(build, smk.wildcards.corpus, smk.output)


main(snakemake)  # noqa: F821
