"""``--check`` re-derives: every statistics table a results page reads, computed again from the
shipped per-question scores with the run's own settings, compared value for value.

A results page's tables (:func:`structablate.report.run.table_files`) ship with the run's
``config.yaml``. :func:`rederive` reads it (:func:`run_settings`: the statistics block with
its primary cell resolved as the plan resolves it, the global seed), recomputes each cell's
tables from its per-question score tables with the functions the workflow's jobs call —
:func:`structablate.stats.cell.analyze_cell` (contrasts, cuts by question type,
dose-response), :func:`structablate.stats.means.condition_means` (summary) and
:func:`structablate.stats.means.condition_mean_cis` (per-condition CIs) — with the same seeds,
and compares them with the shipped tables: every column both hold, every row, bit for bit
(NaN equals NaN, null equals null). A difference names the file, the table, the row, the
column and both values; a score table with fewer questions than the summary records, or
without a measure's column, names itself; a table the statistics write for every cell that is
missing names itself (:func:`missing_tables`; a page that does not print it would otherwise
pass having compared nothing), and a ``run.json`` shipped beside the tables must parse. What
the scores cannot give (section recall and ranking identity come from the runs, the guard's
reasons from the chunk tables) is not re-derived, and :func:`rederive` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl
import yaml

from structablate.errors import ConfigError
from structablate.settings import StatisticsSettings, load_settings
from structablate.stats.cell import analyze_cell
from structablate.stats.means import condition_mean_cis, condition_means

from .folder import ResultsError, read_json, read_table

CONFIG = "config.yaml"
"""The run's configuration, shipped beside its tables (:func:`structablate.report.run.
export_tables`)."""

KEYS: dict[str, tuple[str, ...]] = {
    "summary": ("condition", "measure"),
    "cis": ("condition", "measure"),
    "contrasts_raw": ("family", "contrast", "metric"),
    "contrasts": ("family", "contrast", "metric"),
    "qtype": ("family", "contrast", "metric", "qtype"),
    "dose": ("metric",),
}
"""The tables re-derived (by the page's name for them, :meth:`structablate.report.results.
Run.file`) and the columns that name a row of each."""

WRITTEN_FOR_EVERY_CELL = ("summary", "contrasts_raw", "qtype", "dose")
"""Tables of :data:`KEYS` the statistics jobs write for every cell (the others, ``cis`` and
the marked ``contrasts``, only once the report ran): one missing is a broken export, named."""

ID_COLUMNS = ("qid", "doc_id")
"""Columns every per-question score table holds besides one per measure."""

NOT_REDERIVED = ("section_recall", "ranking_identity")
"""Tables a page reads that the per-question scores cannot give (they come from the runs)."""


@dataclass(frozen=True)
class RunSettings:
    """What the statistics jobs of a run were given: the statistics block with the primary
    cell's embedder resolved (``statistics.primary.embedder``, else the last embedder listed,
    as :attr:`structablate.plan.Plan.primary`), the global ``seed`` and the retrieval depth
    ``top_k`` (results per question)."""

    statistics: StatisticsSettings
    seed: int
    top_k: int


def run_settings(tables: str | Path) -> RunSettings:
    """The statistics settings of the run whose tables are ``tables`` (its shipped
    ``config.yaml``); :class:`ResultsError` naming the file when it is missing or invalid."""
    path = Path(tables) / CONFIG
    if not path.exists():
        raise ResultsError(f"{path}: missing, so the tables cannot be re-derived (export them "
                           "with --export-tables DIR --config FILE, or give --config)")
    return settings_from(path)


def settings_from(path: str | Path) -> RunSettings:
    """:class:`RunSettings` of the config file ``path`` (:func:`run_settings`)."""
    try:  # the shipped config.yaml, read as the workflow reads it (the report sits below it)
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level is not a mapping of keys")
        s = load_settings(data, str(path))
    except (ConfigError, ValueError, OSError, yaml.YAMLError) as e:
        raise ResultsError(f"{path}: not a configuration the statistics can be re-derived "
                           f"from ({e})") from None
    st = s.statistics
    embedder = st.primary.embedder or (list(s.embedders)[-1] if s.embedders else None)
    return RunSettings(replace(st, primary=replace(st.primary, embedder=embedder)), s.seed,
                       s.retrieval.top_k)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        fa, fb = float(a), float(b)
        return (math.isnan(fa) and math.isnan(fb)) or fa == fb
    return a == b


def _show(v) -> str:
    return "null" if v is None else repr(v)


def compare(file: str, table: str, shipped: pl.DataFrame, derived: pl.DataFrame,
            keys: Sequence[str]) -> list[str]:
    """Where ``shipped`` (read from ``file``) and ``derived`` differ: a row one has and the
    other lacks, or a value of a column both hold (bit for bit; NaN equals NaN). Columns only
    one table holds are not compared (a table written before a column existed, or a report's
    own columns such as the guard's). Each problem names the file, the table, the row (its
    ``keys``), the column and both values."""
    keys = [k for k in keys if k in shipped.columns and k in derived.columns]
    cols = [c for c in shipped.columns if c in derived.columns and c not in keys]

    def index(df: pl.DataFrame) -> dict[tuple, dict]:
        return {tuple(str(r[k]) for k in keys): r for r in df.iter_rows(named=True)}

    have, want = index(shipped), index(derived)
    out = []
    for key in have.keys() - want.keys():
        out.append(f"{file} ({table}): row {dict(zip(keys, key, strict=True))} is not "
                   "re-derived from the per-question scores")
    for key in want.keys() - have.keys():
        out.append(f"{file} ({table}): row {dict(zip(keys, key, strict=True))} is re-derived "
                   "but missing from the file")
    for key in sorted(have.keys() & want.keys()):
        a, b = have[key], want[key]
        for c in cols:
            if not _same(a[c], b[c]):
                out.append(f"{file} ({table}): row {dict(zip(keys, key, strict=True))}, "
                           f"column {c}: the file has {_show(a[c])}, the per-question scores "
                           f"give {_show(b[c])}")
    return out


def derive_cell(scores: dict[str, pl.DataFrame], cell: tuple[str, str, str],
                settings: RunSettings) -> dict[str, pl.DataFrame]:
    """A cell's statistics tables from its per-question scores (condition -> table), as the
    jobs ``contrasts``, ``summarize_cell`` and ``cell_statistics`` compute them."""
    stats = analyze_cell(scores, *cell, settings.statistics, settings.seed)
    return {"summary": condition_means(scores),
            "cis": condition_mean_cis(scores, n_boot=settings.statistics.bootstrap_iters,
                                      seed=settings.seed),
            "contrasts_raw": stats["contrasts"], "contrasts": stats["contrasts"],
            "qtype": stats["contrasts_qtype"], "dose": stats["dose_response"]}


def check_scores(file_of, scores: dict[str, pl.DataFrame], summary: pl.DataFrame
                 ) -> list[str]:
    """Each per-question score table against the question and document counts the summary
    records for its condition (a truncated table names itself). ``file_of(condition)``: the
    score table's file."""
    out = []
    for cond, df in scores.items():
        rec = summary.filter(pl.col("condition") == cond)
        if not rec.height:
            continue
        nq, nd = int(rec["n_queries"][0]), int(rec["n_docs"][0])
        if df.height != nq or df["doc_id"].n_unique() != nd:
            out.append(f"{file_of(cond)}: {df.height:,} questions over "
                       f"{df['doc_id'].n_unique():,} documents, but the summary records "
                       f"{nq:,} over {nd:,}: the per-question table is truncated or not the "
                       "run's")
    return out


def check_columns(file_of, scores: dict[str, pl.DataFrame], summary: pl.DataFrame
                  ) -> list[str]:
    """Each per-question score table against the columns it must hold: the question and
    document ids (:data:`ID_COLUMNS`) and every measure the summary records. A missing
    column names the file and the column (the statistics would otherwise stop on tables of
    different widths). ``file_of(condition)``: the score table's file."""
    measures = list(dict.fromkeys(summary["measure"].to_list())) if "measure" in \
        summary.columns else []
    out = []
    for cond, df in scores.items():
        lost = [c for c in (*ID_COLUMNS, *measures) if c not in df.columns]
        if lost:
            out.append(f"{file_of(cond)}: no column {', '.join(lost)} (the summary records "
                       f"{', '.join(measures)}): the per-question table is damaged or not "
                       "the run's; export the run's tables again")
    return out


def missing_tables(run, cell: tuple[str, str, str]) -> list[str]:
    """The tables of :data:`WRITTEN_FOR_EVERY_CELL` that ``run``'s folder lacks for ``cell``,
    each named with its file (a page can render without them, so without this a check
    would pass having compared nothing)."""
    from .run import Run

    other = Run(run.results, *cell)
    return [f"{other.file(name)} ({name}): missing, so it cannot be compared with what the "
            "per-question scores give; the statistics jobs write it for every cell: export "
            "the run's tables again (--export-tables DIR)"
            for name in WRITTEN_FOR_EVERY_CELL if not (run.results / other.file(name)).exists()]


def rederive(run, settings: RunSettings) -> tuple[list[str], list[str]]:
    """(problems, notes) of re-deriving every cell of ``run``'s folder
    (:class:`structablate.report.run.Run`): each table of :data:`KEYS` the folder holds,
    recomputed from the cell's per-question scores and compared (:func:`compare`); notes say
    what was not re-derived and why."""
    from .run import RUN_DESCRIPTION, Run

    if (run.results / RUN_DESCRIPTION).exists():  # shipped beside the tables: must be whole
        read_json(run.results / RUN_DESCRIPTION)
    problems: list[str] = []
    notes = [f"not re-derived (the per-question scores cannot give them): "
             f"{', '.join(NOT_REDERIVED)}, and the guard's reasons (from the chunk tables)"]
    for cell in Run.cells(run.results):
        other = Run(run.results, *cell)
        summary = other.table("summary")
        conds = list(dict.fromkeys(summary["condition"].to_list()))
        scores = other.scores()
        problems += missing_tables(run, cell)

        def file_of(c: str, o=other, x=cell) -> str:
            return o.rel(o.paths.scores(*x, c))

        bad = check_columns(file_of, scores, summary)
        bad = bad or check_scores(file_of, scores, summary)
        if bad:
            problems += bad
            continue
        derived = derive_cell({c: scores[c] for c in conds}, cell, settings)
        for name, keys in KEYS.items():
            file = other.file(name)
            if not (run.results / file).exists():
                continue
            problems += compare(file, name, read_table(run.results / file), derived[name],
                                keys)
    return problems, notes
