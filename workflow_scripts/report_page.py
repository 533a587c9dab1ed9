"""Glue: every cell's and corpus's report data -> results/report/index.{md,html} and the
overview document of `snakemake --report`."""

import json
import os
from pathlib import Path

from structablate.io import read_parquet
from structablate.report import CellData, CorpusData, build_page, overview_html, write_page
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
p = smk.params
page_dir = Path(smk.output.html).parent


def rel(path):
    return os.path.relpath(path, page_dir).replace(os.sep, "/")


def a1_cost(path):
    """Mean A1 context length (tokens) and the LLM calls behind it, from chunks/A1.json."""
    if not path:
        return {}
    stats = json.loads(Path(path).read_text())
    llm = stats.get("llm", {})
    return {"a1_prefix_tokens": stats.get("prefix_tokens_mean"),
            "a1_llm_calls": llm.get("generated", 0) + llm.get("cache_hits", 0)}


cells = []
for i, cell in enumerate(p.cells):
    d = page_dir.joinpath(*cell)
    meta = json.loads(Path(smk.input.cell[i]).read_text())
    cells.append(CellData(
        cell=tuple(cell),
        summary=read_parquet(smk.input.summaries[i]),
        contrasts=read_parquet(smk.input.contrasts[i]),
        cis=read_parquet(smk.input.cis[i]),
        section_recall=read_parquet(smk.input.section_recall[i]),
        dose=read_parquet(smk.input.dose[i]),
        observed_trained=meta["reranker_trained"],
        figures={"bars": rel(d / "condition_bars.png"), "dose": rel(d / "dose_response.png"),
                 "section_recall": rel(d / "section_recall.png")},
    ))
corpora = []
for i, name in enumerate(p.corpora):
    d = page_dir / name
    corpora.append(CorpusData(
        name=name, kind=p.corpus_types[name],
        funnel=json.loads(Path(smk.input.corpus_reports[i]).read_text()),
        size_matching=read_parquet(smk.input.size_matching[i]),
        figures={"forest": rel(d / "forest.png"), "funnel": rel(d / "funnel.png")},
        **a1_cost(smk.input.a1_stats[i] if smk.input.a1_stats else None),
    ))
intro, sections = build_page(
    cells, corpora, embedders=p.embedders, rerankers=p.rerankers, conditions=p.conditions,
    measures=p.measures, primary=p.primary, llm=p.llm,
    size_match_structure=p.size_match_structure, inducer=p.inducer)
write_page(intro, sections, smk.output.markdown, smk.output.html)
Path(smk.output.overview).write_text(overview_html(intro, sections), encoding="utf-8")
log.info("summary page: %d cells, %d corpora", len(cells), len(corpora))
