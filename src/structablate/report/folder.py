"""The one reader of a results folder: a cell's and a corpus's report facts, typed.

Which files the report reads is the folder's layout (:mod:`structablate.results_paths`:
:data:`~structablate.results_paths.CELL_FILES`, :data:`~structablate.results_paths.
CORPUS_FILES`, :func:`~structablate.results_paths.page_files`, through the ``Plan.paths`` the
rules build their inputs from); reading them is this module's: the workflow's report page
(``workflow_scripts/report_page.py``: settings → :func:`read_cell` / :func:`read_corpus` →
:func:`~structablate.report.page.build_page`) and the results pages
(:class:`structablate.report.run.Run`, which reads a table by its name through
:func:`cell_file`, :func:`corpus_file`, :func:`read_table`, :func:`read_json` and
:func:`read_scores`). The rule ``report_page`` declares :func:`~structablate.results_paths.
page_files` as its inputs, so the files the reader opens and the files Snakemake dates are one
list (``tests/test_report_folder.py``).

A cell is ``(corpus, embedder, reranker)``; a missing file is a :class:`ResultsError` naming
it. Figure paths are relative to the report page's folder (``Paths.report()``), as the page
links them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from structablate import study
from structablate.io import read_parquet
from structablate.mechanisms import written_by
from structablate.results_paths import (
    CELL_FIGURES,
    CELL_FILES,
    CORPUS_FIGURES,
    CORPUS_FILES,
    PAGE_CELL_FILES,
    Paths,
    page_corpus_files,
)

from .page import CellData, CorpusData

Cell = tuple[str, str, str]


class ResultsError(ValueError):
    """A page or a results folder the report cannot use; the message names the file."""


def cell_file(paths: Paths, cell: Cell, which: str) -> str:
    """The path of a cell's file ``which`` (:data:`~structablate.results_paths.CELL_FILES`)."""
    return CELL_FILES[which](paths, *cell)


def corpus_file(paths: Paths, corpus: str, which: str) -> str:
    """The path of a corpus's file ``which``
    (:data:`~structablate.results_paths.CORPUS_FILES`)."""
    return CORPUS_FILES[which](paths, corpus)


def read_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A Parquet table of the folder; :class:`ResultsError` when the run has not written it."""
    if not Path(path).exists():
        raise ResultsError(f"{path}: missing (the run has not written it)")
    try:
        return read_parquet(path)
    except Exception as e:  # noqa: BLE001 - any damage to the file: name it
        raise ResultsError(f"{path}: not a readable Parquet table ({type(e).__name__}: "
                           f"{e})") from None


def read_json(path: str | os.PathLike[str]) -> dict:
    """A JSON report of the folder; :class:`ResultsError` when the run has not written it."""
    if not Path(path).exists():
        raise ResultsError(f"{path}: missing (the run has not written it)")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: a JSON report must be an object, not a "
                           f"{type(data).__name__}")
    return data


def read_scores(paths: Paths, cell: Cell, conditions: Sequence[str]) -> dict[str, pl.DataFrame]:
    """condition -> the cell's per-query score table (``scores/<condition>.parquet``: one row
    per question, a column per measure)."""
    return {c: read_table(paths.scores(*cell, c)) for c in conditions}


def contextualized(conditions: Sequence[str]) -> list[str]:
    """The chunksets of ``conditions`` whose prefix A1's contexts stage writes
    (:func:`structablate.mechanisms.written_by`, as the plan's ``contextualized``): their
    chunk statistics hold the contexts' cost."""
    return written_by("contexts", study.chunksets_for(conditions))


def _figure(paths: Paths, path: str) -> str:
    """``path`` relative to the report page's folder, with forward slashes."""
    return os.path.relpath(path, paths.report()).replace(os.sep, "/")


def read_cell(paths: Paths, cell: Cell) -> CellData:
    """One cell's report facts (:data:`~structablate.results_paths.PAGE_CELL_FILES`), its
    figures linked relative to the page."""
    f = {k: cell_file(paths, cell, k) for k in PAGE_CELL_FILES}
    return CellData(
        cell=tuple(cell),
        summary=read_table(f["summary"]),
        contrasts=read_table(f["contrasts"]),
        cis=read_table(f["cis"]),
        section_recall=read_table(f["section_recall"]),
        dose=read_table(f["dose"]),
        observed_trained=read_json(f["cell"])["reranker_trained"],
        ranking_identity=read_table(f["ranking_identity"]),
        figures={k: _figure(paths, paths.report_cell(*cell, f"{stem}.png"))
                 for k, stem in CELL_FIGURES.items()},
    )


def a1_cost(stats: Mapping | None) -> dict:
    """Mean A1 context length (tokens) and the LLM calls behind it (generated plus served
    from the cache), from a contextualised chunkset's statistics; empty without them."""
    if stats is None:
        return {}
    llm = stats.get("llm", {})
    return {"a1_prefix_tokens": stats.get("prefix_tokens_mean"),
            "a1_llm_calls": llm.get("generated", 0) + llm.get("cache_hits", 0)}


def read_corpus(paths: Paths, corpus: str, *, kind: str, questions_generated: bool,
                conditions: Sequence[str]) -> CorpusData:
    """One corpus's report facts (:func:`~structablate.results_paths.page_corpus_files`);
    ``kind`` is its ``type`` in the config, ``questions_generated`` whether an LLM wrote its
    questions (the plan's answer, recorded in the report page's job) and ``conditions`` the
    run's (whose contextualised chunkset holds A1's cost)."""
    f = page_corpus_files(paths, corpus, questions_generated=questions_generated,
                          contextualized=contextualized(conditions))
    return CorpusData(
        name=corpus, kind=kind,
        funnel=read_json(f["build_report"]),
        size_matching=read_table(f["size_matching"]),
        figures={k: _figure(paths, paths.report_corpus(corpus, f"{stem}.png"))
                 for k, stem in CORPUS_FIGURES.items()},
        structure_quality=read_table(f["structure_quality"]),
        comparison_checks=read_table(f["comparison_checks"]),
        bm25=read_json(f["bm25"]),
        question_funnel=read_json(f["question_funnel"]) if f["question_funnel"] else None,
        questions_generated=questions_generated,
        **a1_cost(read_json(f["a1_stats"]) if f["a1_stats"] else None),
    )
