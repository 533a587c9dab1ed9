"""The one reader of a results folder (structablate.report.folder) on real files: the tables
shipped with docs/results/qasper-two-embedders.md (a real two-embedder QASPER run), read by
the results pages' Run and by the reader's own functions under the same names, and the
recorded ``questions_generated`` deciding the page's SYNTHETIC warning. That the report page
reads exactly its rule's inputs is checked on a real workflow run in
tests/test_report_workflow.py."""

from pathlib import Path

import polars as pl
import pytest

from structablate.report import PageSettings, build_page, page_markdown
from structablate.report.folder import (
    ResultsError,
    cell_file,
    corpus_file,
    read_cell,
    read_json,
    read_scores,
    read_table,
)
from structablate.report.page import CellData, CorpusData
from structablate.report.results import Run, table_files
from structablate.results_paths import PAGE_CELL_FILES, Paths, page_corpus_files, page_files

REPO = Path(__file__).resolve().parents[1]
TABLES = REPO / "docs" / "results" / "qasper-two-embedders" / "tables"
CELL = ("qasper", "mpnet", "none")


def test_run_names_its_tables_as_the_ledger_cites_them():
    """The ledger of a results page cites each number by the file it read, relative to the
    folder: the names Run gives (through the reader's layout) are the shipped files'."""
    run = Run(TABLES, *CELL)
    assert {w: run.file(w) for w in ("summary", "contrasts", "contrasts_raw", "qtype", "dose",
                                     "cis", "section_recall", "structure", "funnel", "bm25")} \
        == {"summary": "qasper/mpnet/none/summary.parquet",
            "contrasts": "report/qasper/mpnet/none/contrasts_marked.parquet",
            "contrasts_raw": "qasper/mpnet/none/contrasts.parquet",
            "qtype": "qasper/mpnet/none/contrasts_qtype.parquet",
            "dose": "qasper/mpnet/none/dose_response.parquet",
            "cis": "report/qasper/mpnet/none/condition_cis.parquet",
            "section_recall": "report/qasper/mpnet/none/section_recall.parquet",
            "structure": "report/qasper/structure_quality.parquet",
            "funnel": "qasper/funnel.json", "bm25": "qasper/bm25.json"}
    # the export list is the shipped folder, less the run's description and config
    shipped = {p.relative_to(TABLES).as_posix() for p in TABLES.rglob("*") if p.is_file()}
    assert set(table_files(TABLES)) == shipped - {"run.json", "config.yaml"}


def test_run_reads_through_the_reader():
    run, paths = Run(TABLES, *CELL), Paths(str(TABLES))
    for which in ("summary", "contrasts", "qtype", "dose", "cis", "section_recall"):
        assert run.table(which).equals(read_table(cell_file(paths, CELL, which))), which
    assert run.table("structure").equals(
        read_table(corpus_file(paths, "qasper", "structure_quality")))
    assert run.json("funnel") == read_json(corpus_file(paths, "qasper", "funnel"))
    assert run.json("bm25")["gold_top1_within_document"] is not None
    conditions = run.table("summary")["condition"].unique(maintain_order=True).to_list()
    scores = run.scores()
    assert list(scores) == conditions
    assert all(scores[c].equals(s) for c, s in read_scores(paths, CELL, conditions).items())
    assert scores[conditions[0]].height == run.table("summary")["n_queries"].max()


def test_a_missing_file_names_itself():
    """The shipped tables hold no cell.json (the report's record of the cell), so the report
    page's reader refuses the cell naming that file; a results page never asks for it."""
    paths = Paths(str(TABLES))
    with pytest.raises(ResultsError, match=r"report/qasper/mpnet/none/cell\.json: missing"):
        read_cell(paths, CELL)
    with pytest.raises(ResultsError, match="summary.parquet: missing"):
        Run(TABLES, "qasper", "absent", "none").table("summary")


def test_page_files_are_the_files_the_reader_names():
    """What the rule report_page declares (page_files) is, per cell, PAGE_CELL_FILES and, per
    corpus, page_corpus_files, plus the figures the page links."""
    paths = Paths("results")
    cells = [("qasper", "minilm", "none"), ("wikipedia", "minilm", "none")]
    corpora = {"qasper": False, "wikipedia": True}
    files = page_files(paths, cells, corpora, ["A1"])
    named = {cell_file(paths, c, w) for c in cells for w in PAGE_CELL_FILES}
    for name, generated in corpora.items():
        f = page_corpus_files(paths, name, questions_generated=generated, contextualized=["A1"])
        named |= {v for v in f.values() if v}
    declared = [p for k, v in files.items() if k != "figures" for p in v]
    assert len(declared) == len(set(declared)) and set(declared) == named
    # generated questions: the build report is the corpus report, the funnel the question
    # generation's; brought questions: the funnel is the build report, no question funnel
    assert files["corpus_reports"] == ["results/qasper/funnel.json",
                                       "results/wikipedia/corpus_report.json"]
    assert files["question_funnels"] == ["results/wikipedia/funnel.json"]
    assert files["a1_stats"] == ["results/qasper/chunks/A1.json",
                                 "results/wikipedia/chunks/A1.json"]
    assert len(files["figures"]) == 3 * len(cells) + 2 * len(corpora)


def _page(kind: str, generated: bool) -> str:
    """The report page of the shipped mpnet cell with one corpus of ``kind``."""
    paths = Paths(str(TABLES))
    t = {w: read_table(cell_file(paths, CELL, w))
         for w in ("summary", "contrasts", "cis", "section_recall", "dose", "ranking_identity")}
    cell = CellData(CELL, t["summary"], t["contrasts"], t["cis"], t["section_recall"],
                    t["dose"], ranking_identity=t["ranking_identity"])
    corpus = CorpusData("qasper", kind, read_json(corpus_file(paths, "qasper", "funnel")),
                        pl.DataFrame(), bm25=read_json(corpus_file(paths, "qasper", "bm25")),
                        structure_quality=read_table(
                            corpus_file(paths, "qasper", "structure_quality")),
                        questions_generated=generated)
    intro, sections = build_page([cell], [corpus], PageSettings(
        embedders={"mpnet": {"model": "m"}}, rerankers={"none": {}},
        conditions=t["summary"]["condition"].unique(maintain_order=True).to_list(),
        measures=t["summary"]["measure"].unique(maintain_order=True).to_list(),
        primary={"metric": "covNDCG@10", "embedder": "mpnet", "reranker": "none"},
        stage_conditions={}))
    return page_markdown("t", sections, intro)


def test_synthetic_questions_are_the_recorded_fact_not_the_corpus_kind():
    warning = "are SYNTHETIC"
    assert warning not in _page("wikipedia", generated=False)
    assert warning in _page("markdown", generated=True)
    assert warning not in _page("qasper", generated=False)


def test_the_page_glue_finds_its_folder_from_its_own_output():
    from structablate.results_paths import Paths

    for root in ("results", "runs/a b/results-x", "/abs/results"):
        layout = Paths(root)
        for name in ("index.md", "index.html", "overview.html"):
            assert Paths.of_report_page(layout.report_page(name)) == layout
    assert Paths.of_report_page("./results/report/index.md") == Paths("results")
    with pytest.raises(ValueError, match="not a report page"):
        Paths.of_report_page("results/qasper/index.md")
