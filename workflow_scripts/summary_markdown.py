"""Glue: every cell's summary -> results/summary.md."""

from pathlib import Path

from structablate.io import read_parquet
from structablate.summary import summary_markdown
from structablate.workflow import setup

setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
cells = {}
for path in smk.input.summaries:
    corpus, embedder, reranker = Path(path).parts[-4:-1]
    cells[(corpus, embedder, reranker)] = read_parquet(path)
text = summary_markdown(cells, smk.params.embedders, smk.params.rerankers)
Path(smk.output.markdown).write_text(text, encoding="utf-8")
