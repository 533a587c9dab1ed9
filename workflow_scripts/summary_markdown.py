"""Glue: every cell's summary -> results/summary.md."""

from pathlib import Path

from structablate.io import read_parquet
from structablate.plan.jobs import SummaryMarkdownJob
from structablate.report.summary import summary_markdown
from structablate.settings import dump
from structablate.workflow import setup


def main(smk):
    _, settings = setup(smk, SummaryMarkdownJob)
    keys = [(c.corpus, c.embedder, c.reranker) for c in settings.cells]
    cells = dict(zip(keys, map(read_parquet, smk.input.summaries), strict=True))
    contrasts = dict(zip(keys, map(read_parquet, smk.input.contrasts), strict=True))
    text = summary_markdown(cells, dump(settings.embedders), dump(settings.rerankers),
                            contrasts=contrasts, metric=settings.metric)
    Path(smk.output.markdown).write_text(text, encoding="utf-8")


main(snakemake)  # noqa: F821
