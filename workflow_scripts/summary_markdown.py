"""Glue: every cell's summary -> results/summary.md."""

from pathlib import Path

from structablate.io import read_parquet
from structablate.settings import dump
from structablate.summary import summary_markdown
from structablate.workflow import setup


def main(smk):
    _, settings = setup(smk)
    cells = {(c.corpus, c.embedder, c.reranker): read_parquet(path)
             for c, path in zip(settings["cells"], smk.input.summaries, strict=True)}
    text = summary_markdown(cells, dump(settings["embedders"]), dump(settings["rerankers"]))
    Path(smk.output.markdown).write_text(text, encoding="utf-8")


main(snakemake)  # noqa: F821
