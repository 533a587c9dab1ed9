"""Reading a results folder for a results page: one cell's tables by name (:class:`Run`), the
run's description shipped with them (:class:`RunDescription`), and shipping the small tables a
page reads beside it (:func:`table_files`, :func:`export_tables`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import polars as pl

from structablate.results_paths import Paths

from .folder import ResultsError, cell_file, corpus_file, read_json, read_scores, read_table
from .rederive import CONFIG, RunSettings, settings_from


@dataclass
class Run:
    """The tables of one cell of a results folder (file names relative to ``results``)."""

    results: Path
    corpus: str
    embedder: str
    reranker: str

    @property
    def paths(self) -> Paths:
        return Paths(str(self.results))

    def rel(self, path: str) -> str:
        return Path(path).relative_to(self.results).as_posix()

    @cached_property
    def settings(self) -> RunSettings | None:
        """The run's statistics settings from the ``config.yaml`` shipped with its tables
        (:func:`structablate.report.rederive.settings_from`); None without one."""
        path = self.results / CONFIG
        return settings_from(path) if path.exists() else None

    @property
    def n_boot(self) -> int | None:
        """The bootstrap replicates of the run's contrasts (None: not recorded here)."""
        s = self.settings
        return s.statistics.bootstrap_iters if s is not None else None

    @property
    def top_k(self) -> int | None:
        """The results per question of the run's retrieval (None: not recorded here)."""
        s = self.settings
        return s.top_k if s is not None else None

    def optional(self, which: str) -> pl.DataFrame | None:
        """Table ``which`` of the cell, None where the run did not write (or ship) it."""
        try:
            return self.table(which)
        except ResultsError:
            return None

    def optional_file(self, path: str) -> pl.DataFrame | None:
        """The table at ``path`` (under the run's folder), None where it is absent."""
        return read_table(path) if Path(path).exists() else None

    def conditions(self) -> list[str]:
        """The cell's conditions, in the order of its summary table."""
        return list(dict.fromkeys(self.table("summary")["condition"].to_list()))

    def has(self, which: str) -> bool:
        """The cell's table ``which`` is in the folder."""
        return (self.results / self.file(which)).exists()

    def sibling(self, embedder: str) -> Run:
        """The cell of the same corpus and reranker under ``embedder``."""
        return Run(self.results, self.corpus, embedder, self.reranker)

    CORPUS_NAMES = {"structure": "structure_quality", "funnel": "funnel", "bm25": "bm25"}
    """The corpus files a page reads, by the name a block asks for (the rest are the cell's,
    :data:`~structablate.results_paths.CELL_FILES`)."""

    def file(self, which: str) -> str:
        """The file of table ``which``, relative to ``results`` (the ledger's source name),
        from the folder's layout (:mod:`structablate.report.folder`)."""
        if which in self.CORPUS_NAMES:
            return self.rel(corpus_file(self.paths, self.corpus, self.CORPUS_NAMES[which]))
        return self.rel(cell_file(self.paths, (self.corpus, self.embedder, self.reranker),
                                  which))

    def source(self, which: str) -> str:
        """The file table ``which`` is read from: the contrasts as the guard marked them, or
        before the report ran, as the statistics wrote them."""
        name = self.file(which)
        if which == "contrasts" and not (self.results / name).exists():
            return self.file("contrasts_raw")
        return name

    def table(self, which: str) -> pl.DataFrame:
        return read_table(self.results / self.source(which))

    def scores(self) -> dict[str, pl.DataFrame]:
        """condition -> the cell's per-query score table (``scores/<condition>.parquet``)."""
        return read_scores(self.paths, (self.corpus, self.embedder, self.reranker),
                           self.conditions())

    def json(self, which: str) -> dict:
        return read_json(self.results / self.file(which))

    @staticmethod
    def cells(results: str | Path) -> list[tuple[str, str, str]]:
        """Every (corpus, embedder, reranker) of ``results`` with a summary table."""
        results = Path(results)
        return sorted({tuple(p.relative_to(results).parts[:3])
                       for p in results.glob("*/*/*/summary.parquet")})

    @classmethod
    def find(cls, results: str | Path, corpus: str | None = None, embedder: str | None = None,
             reranker: str | None = None) -> Run:
        """The one cell of ``results`` matching the given names (each may be left out when
        only one value exists)."""
        results = Path(results)
        cells = cls.cells(results)
        want = (corpus, embedder, reranker)
        match = [c for c in cells if all(w is None or w == x for w, x in zip(want, c,
                                                                            strict=True))]
        if not cells:
            raise ResultsError(f"{results}: no cell here (no CORPUS/EMBEDDER/RERANKER/"
                               "summary.parquet, which the statistics write for every cell): "
                               "name a run's results folder or its exported tables")
        if len(match) != 1:
            raise ResultsError(f"{results}: {len(match)} cells match corpus={corpus} "
                               f"embedder={embedder} reranker={reranker} (cells: "
                               f"{', '.join('/'.join(c) for c in cells) or 'none'}); name one")
        return cls(results, *match[0])


# ---------------------------------------------------------------- shipping a page's tables

CELL_TABLES = ("summary", "contrasts", "contrasts_raw", "qtype", "dose", "cis",
               "section_recall")
"""The per-cell tables a page reads (:meth:`Run.file`), shipped beside it."""


def table_files(results: str | Path) -> list[str]:
    """Every file of ``results`` a results page can read, relative to it: per cell its
    :data:`CELL_TABLES`, ranking identity and per-query score tables; per corpus its funnel,
    BM25 report and structure-quality table; every embedding job's counts and every
    benchmark. These are what ``--check`` re-reads (a few MB for the full QASPER: no vectors,
    runs or chunk tables)."""
    results = Path(results)
    files: set[str] = set()
    for corpus, embedder, reranker in Run.cells(results):
        run = Run(results, corpus, embedder, reranker)
        for which in (*CELL_TABLES, "structure", "funnel", "bm25"):
            files.add(run.file(which))
        files.add(run.rel(run.paths.ranking_identity(corpus, embedder, reranker)))
        for path in (results / run.rel(run.paths.cell(corpus, embedder, reranker))
                     / "scores").glob("*.parquet"):
            files.add(path.relative_to(results).as_posix())
    for pattern in ("*/*/embeddings/*.json", "benchmarks/**/*.tsv"):
        files |= {p.relative_to(results).as_posix() for p in results.glob(pattern)}
    return sorted(f for f in files if (results / f).is_file())


RUN_DESCRIPTION = "run.json"
"""The run's description shipped with its tables (:func:`export_tables`)."""


@dataclass(frozen=True)
class RunDescription:
    """What :func:`export_tables` records of a run (``run.json``): the config file as given
    and its sha256 (the file itself ships as ``config.yaml``), the command that made the run,
    the code version; None where not recorded."""

    command: str | None = None
    code_version: str | None = None
    config: str | None = None
    config_sha256: str | None = None

    @classmethod
    def read(cls, results: Path) -> RunDescription | None:
        """The description shipped in ``results``, None without one."""
        path = results / RUN_DESCRIPTION
        if not path.exists():
            return None
        d = read_json(path)
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})



def code_version(repo: str | Path = ".") -> str:
    """``git describe --always --dirty`` of ``repo`` ("unknown" outside a git checkout)."""
    import subprocess
    try:
        out = subprocess.run(["git", "-C", str(repo), "describe", "--always", "--dirty",
                              "--abbrev=12"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def export_tables(results: str | Path, dest: str | Path, *, config: str | None = None,
                  command: str | None = None, code: str | None = None) -> list[str]:
    """Copy :func:`table_files` of ``results`` into ``dest`` (same layout, so ``dest`` reads
    as a results folder) and write ``dest/run.json``: the config file (its path as given, its
    sha256, and a copy as ``dest/config.yaml``), the command that made the run, and the code
    version (``code``, else :func:`code_version` of the current checkout at export, said so).
    Files of ``dest`` no longer in ``results`` are removed, so the folder is exactly the
    run's. Returns the files written."""
    import shutil
    results, dest = Path(results), Path(dest)
    files = table_files(results)
    if not files:
        raise ResultsError(f"{results}: no cell tables to export (is it a results folder?)")
    if dest.exists():
        for old in sorted(dest.rglob("*"), reverse=True):
            if old.is_file():
                old.unlink()
            elif old.is_dir() and not any(old.iterdir()):
                old.rmdir()
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results / f, dest / f)
    desc: dict = {"command": command, "code_version": code or f"{code_version()} (at export)"}
    if config:
        text = Path(config).read_bytes()
        desc |= {"config": config, "config_sha256": hashlib.sha256(text).hexdigest()}
        (dest / "config.yaml").write_bytes(text)
        files.append("config.yaml")
    (dest / RUN_DESCRIPTION).write_text(json.dumps(desc, indent=1, sort_keys=True) + "\n")
    return [*files, RUN_DESCRIPTION]

