"""Glue: every cell's and corpus's report data -> {results}/report/index.{md,html} and the
overview document of `snakemake --report`."""

import json
import os
from pathlib import Path

from structablate.io import read_parquet
from structablate.plan.jobs import ReportPageJob
from structablate.report import (
    CellData,
    CorpusData,
    PageSettings,
    build_page,
    corpus_html,
    overview_html,
    write_page,
)
from structablate.workflow import setup


def read_json(path):
    return json.loads(Path(path).read_text())


def a1_cost(path):
    """Mean A1 context length (tokens) and the LLM calls behind it, from chunks/A1.json."""
    if not path:
        return {}
    stats = read_json(path)
    llm = stats.get("llm", {})
    return {"a1_prefix_tokens": stats.get("prefix_tokens_mean"),
            "a1_llm_calls": llm.get("generated", 0) + llm.get("cache_hits", 0)}


def main(smk):
    log, settings = setup(smk, ReportPageJob)
    page_dir = Path(smk.output.html).parent

    def rel(path):
        return os.path.relpath(path, page_dir).replace(os.sep, "/")

    cells = []
    for i, cell in enumerate(settings.cells):
        d = page_dir.joinpath(cell.corpus, cell.embedder, cell.reranker)
        meta = read_json(smk.input.cell[i])
        cells.append(CellData(
            cell=(cell.corpus, cell.embedder, cell.reranker),
            summary=read_parquet(smk.input.summaries[i]),
            contrasts=read_parquet(smk.input.contrasts[i]),
            cis=read_parquet(smk.input.cis[i]),
            section_recall=read_parquet(smk.input.section_recall[i]),
            dose=read_parquet(smk.input.dose[i]),
            observed_trained=meta["reranker_trained"],
            ranking_identity=read_parquet(smk.input.ranking_identity[i]),
            figures={"bars": rel(d / "condition_bars.png"),
                     "dose": rel(d / "dose_response.png"),
                     "section_recall": rel(d / "section_recall.png")},
        ))
    corpora = []
    question_funnels = iter(smk.input.question_funnels)
    for i, name in enumerate(settings.corpora):
        d = page_dir / name
        generated = settings.generated_queries[name]
        corpora.append(CorpusData(
            name=name, kind=settings.corpus_types[name],
            funnel=read_json(smk.input.corpus_reports[i]),
            size_matching=read_parquet(smk.input.size_matching[i]),
            figures={"forest": rel(d / "forest.png"), "funnel": rel(d / "funnel.png")},
            structure_quality=read_parquet(smk.input.structure_quality[i]),
            comparison_checks=read_parquet(smk.input.comparison_checks[i]),
            bm25=read_json(smk.input.bm25[i]),
            question_funnel=read_json(next(question_funnels)) if generated else None,
            questions_generated=generated,
            **a1_cost(smk.input.a1_stats[i] if smk.input.a1_stats else None),
        ))
    run = PageSettings(
        embedders=settings.embedders, rerankers=settings.rerankers,
        conditions=settings.conditions, measures=settings.measures, primary=settings.primary,
        stage_conditions=settings.stage_conditions, llm=settings.llm,
        size_match_structure=settings.size_match_structure, inducer=settings.inducer,
        guard=settings.guard, contrasts=settings.contrasts)
    intro, sections = build_page(cells, corpora, run)
    write_page(intro, sections, smk.output.markdown, smk.output.html)
    Path(smk.output.overview).write_text(overview_html(intro, sections), encoding="utf-8")
    for name, path in zip(settings.corpora, smk.output.verdicts, strict=True):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(corpus_html(sections, name), encoding="utf-8")
    log.info("summary page: %d cells, %d corpora", len(cells), len(corpora))


main(snakemake)  # noqa: F821
