"""Results pages generated from a results folder: every number on the page comes from the run.

A results page (e.g. ``docs/results/qasper-full-cpu.md``) is Markdown prose with generated
blocks between markers::

    <!-- results: contrasts metric=covNDCG@10 -->
    …generated table…
    <!-- /results -->

``python -m structablate.report.results RESULTS --page PAGE [--corpus C --embedder E
--reranker R]`` reads the run's own tables under ``RESULTS`` and rewrites every block of
``PAGE`` in place (``--out`` writes elsewhere; ``--check`` re-derives every statistics table
from the per-question scores with the run's shipped config, :mod:`.rederive`, and fails,
saying where, when a table does not re-derive bit for bit or the page is stale). The
prose between blocks is written by hand and must hold no number of its own
(:func:`prose_numbers`: digits with their qualifiers, ``4x``, ``<0.05``, ``80%``, ``.005``,
and number words); a claim names the table row it rests on, which the ``claims`` block
prints. The paper's numbers come from :mod:`structablate.paper`. A results folder with several
cells (e.g. two embedders) needs ``--embedder`` (and ``--corpus``/``--reranker``) to name the
page's cell.

**Pages anyone can re-check.** ``--export-tables DIR [--config FILE --command CMD
--code-version V]`` copies the small tables a page reads (:func:`table_files`: per-question
scores, contrasts, summaries, funnel, BM25, structure quality, embedding counts, timing; no
vectors or runs) into ``DIR`` with a ``run.json`` describing the run, and renders the page
from that copy. The page names the folder in a line ``<!-- results-tables: DIR [--embedder
E …] -->`` (or ``<!-- results-tables: not shipped: REASON -->``), and ``--check`` without a
results folder reads it from there: the test suite checks every committed page so.

Every number a block prints is recorded in a :class:`Ledger` with the file, row and column it
came from; :func:`verify_ledger` reads each source again and checks the printed text is that
value formatted, which is how the tests hold the generator to the rule.

Blocks (``NAME key=value …``): ``run``, ``describe`` (every cell with its conditions, and the
run's config, command and code version from ``run.json``), ``means``, ``contrasts``
(``metric``, ``family``; with the tied count, the margin the row was tested with, the
smallest margin at which equivalence holds and each row's role, confirmatory or
exploratory), ``contrast`` (``name``: one contrast over every measure), ``qtype``
(``metric``), ``dose`` (the breadcrumb-depth slope), ``section_recall``, ``funnel`` (like for
like with the paper's QASPER funnel, then every field), ``bm25``, ``structure``, ``paper``
(``kind``: the paper's corpus, ``qasper`` or ``wikipedia``; each contrast against the
paper's on its own interval, in units and as a share of the control's mean, and against its
controls as a paired difference, :func:`against_paper`; ``control_embedder``: a second
embedder cell as one more control), ``sensitivity`` (``embedder``: the same conditions and
contrasts in a second embedder cell; ``absent=say``: a cell the tables lack is said, not an
error), ``embedders`` (``weak``: the embedder axis, levels
and each contrast under both embedders with its interaction test), ``claims``
(``metric``), ``timing``, ``embedding``, ``hashes``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import polars as pl

from structablate.paper import (
    PAPER_BM25_GOLD_TOP1,
    PAPER_CHUNK_SPAN_IDENTITY,
    PAPER_CONTRASTS,
    PAPER_MEANS,
    PAPER_METRIC,
    PAPER_QASPER_FUNNEL,
    PAPER_SECTION_RECALL,
    difference_of_estimates,
    paper_contrast,
    paper_contrast_ci,
)
from structablate.results_paths import Paths
from structablate.stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from structablate.stats.contrasts import contrast_difference
from structablate.stats.decision import no_spread, row_decision, row_words
from structablate.stats.design import design_table
from structablate.stats.embedders import embedder_contrasts, embedder_levels
from structablate.stats.power import ALPHA, POWER
from structablate.study import CONTROLS, DOSE_LADDER

from .blocks import (
    CONTRAST_CELLS,
    Cite,
    condition_means_block,
    contrast_cells,
    dose_blocks,
    flat_fields,
    format_number,
    interval,
    qasper_funnel_block,
    qtype_block,
    report_fields_block,
    routing_row,
    routing_words,
    row_answer,
    sample_block,
    section_recall_block,
    structure_quality_block,
)
from .folder import ResultsError, cell_file, corpus_file, read_json, read_scores, read_table
from .guard import Flags
from .rederive import CONFIG, RunSettings, rederive, run_settings, settings_from
from .render import table_markdown
from .testable import dose_flags

MARK = re.compile(r"^<!-- results: (?P<spec>[^>]*?) -->\s*$")
END = "<!-- /results -->"
SOURCE = re.compile(r"^<!-- results-tables: (?P<spec>.*?) -->\s*$")
"""The page's statement of where its tables are: ``<!-- results-tables: PATH [--corpus C]
[--embedder E] [--reranker R] -->`` (a folder in the repository, relative to its root, that
``--check`` reads) or ``<!-- results-tables: not shipped: REASON -->``."""

_NUMBER = re.compile(r"(?<![\w@.\-−/<])[+\-−±]?\d[\d,]*(?:\.\d+)?(?![\w@%])")
"""A number in a generated block's text: digits not glued to a name (``covNDCG@10``,
``A3-d1``, ``C2``, ``v0.3`` and ``all-MiniLM-L6-v2`` are names, not numbers), nor a
method's level written ``95%`` (a data share is printed with a space, ``12.3 %``), nor the
p-value floor ``<0.001``."""

_PROSE_NUMBER = re.compile(
    r"(?<![A-Za-z0-9@/_.])(?<![A-Za-z0-9]-)(?:[<>≤≥~≈]\s*)?[+\-−±]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)"
    r"(?:\s*%|x\b|×)?")
"""A number in hand-written prose: any digits not glued to a name on their left
(``covNDCG@10``, ``A3-d1``, ``C2``, ``v0.3``), with whatever qualifies them — a comparison
(``<0.05``), a leading point (``.005``), a share (``80%``, ``80 %``), a factor (``4x``,
``4×``, ``tenfold`` is a word below). Method constants belong in generated blocks or code."""

NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty",
                "seventy", "eighty", "ninety", "hundred", "hundreds", "thousand", "thousands",
                "million", "millions", "dozen", "dozens", "twice", "thrice", "half", "halves",
                "double", "doubled", "triple", "tripled", "quarter", "quarters", "percent",
                "twofold", "threefold", "fourfold", "fivefold", "tenfold", "hundredfold")
"""Number words the prose may not use either ("four of the five answers", "twice as
large"): a count is a result and belongs in a generated block. "one" is allowed (the one
rule, one run)."""

_WORD = re.compile(r"(?<!-)\b(" + "|".join(NUMBER_WORDS) + r")\b(?!-)", re.IGNORECASE)
"""A number word standing alone (``two-stage`` is a method's name, not a count)."""


# ---------------------------------------------------------------- the ledger


@dataclass(frozen=True)
class Entry:
    text: str
    source: str  # a file under the results folder, or "paper:<name>"
    key: tuple[tuple[str, str], ...]  # row selector: (column, value) pairs
    column: str
    value: float
    kind: str  # the format of the text (:meth:`Ledger.format`)


@dataclass
class Ledger:
    """Every number a page prints, with where it came from."""

    entries: list[Entry] = field(default_factory=list)
    flags: Flags = field(default_factory=Flags)
    """The page's lettered qualifications (:class:`structablate.report.guard.Flags`): a
    sentence is printed once per page, by the first block whose rows refer to it."""

    format = staticmethod(format_number)

    def num(self, value, kind: str, source: str, key: Mapping[str, object], column: str) -> str:
        text = self.format(value, kind)
        if text != "—":
            self.entries.append(Entry(text, source, tuple((k, str(v)) for k, v in key.items()),
                                      column, float(value), kind))
        return text

    def cite(self, source: str) -> Cite:
        """A :data:`~structablate.report.blocks.Cite` that records each number it prints as
        read from ``source``."""
        return lambda value, kind, column, key: self.num(value, kind, source, key, column)

    def ci(self, row: Mapping, kind: str, source: str, key: Mapping[str, object]) -> str:
        """A row's interval ``[ci_low, ci_high]``, each end recorded; ``—`` without one
        (:func:`structablate.report.blocks.interval`)."""
        return interval(row, kind, key, self.cite(source))


def _read_source(results: Path, source: str) -> pl.DataFrame:
    if source.startswith("paper:"):
        name = source.removeprefix("paper:")
        rows = {"means": [{"corpus": c, "condition": k, "mean": v}
                          for c, d in PAPER_MEANS.items() for k, v in d.items()],
                "bm25": [{"corpus": c, "gold_top1": v} for c, v in PAPER_BM25_GOLD_TOP1.items()],
                "chunk_span_identity": [{"corpus": c, "identity": v}
                                        for c, v in PAPER_CHUNK_SPAN_IDENTITY.items()],
                "funnel": [{"step": k, "value": float(v)} for k, v in
                           PAPER_QASPER_FUNNEL.items()],
                "section_recall": [{"corpus": c, "low": lo, "high": hi}
                                   for c, (lo, hi) in PAPER_SECTION_RECALL.items()]}[name]
        return pl.DataFrame(rows)
    path = results / source
    if source.endswith(".parquet"):
        return read_table(path)
    if source.endswith(".json"):
        return pl.DataFrame([flat_fields(read_json(path))])
    if source.endswith(".tsv"):
        return pl.DataFrame([_benchmark(path)])
    raise ResultsError(f"{source}: no reader for this kind of file")


def verify_ledger(ledger: Ledger, results: str | Path) -> list[str]:
    """Read every number's source again; the problems found (empty: every printed number is
    its source's value, formatted as printed). Values derived on the page (a difference of
    paper means, a sum over jobs) are recorded with ``column`` ``"="`` and checked only for
    their formatting."""
    results = Path(results)
    problems, cache = [], {}
    for e in ledger.entries:
        if Ledger.format(e.value, e.kind) != e.text:
            problems.append(f"{e.text}: formats as {Ledger.format(e.value, e.kind)}")
            continue
        if e.column == "=":
            continue
        if e.source not in cache:
            cache[e.source] = _read_source(results, e.source)
        df = cache[e.source]
        for k, v in e.key:
            df = df.filter(pl.col(k).cast(pl.String) == v)
        if df.height != 1:
            problems.append(f"{e.text}: {e.source} has {df.height} rows for {dict(e.key)}")
        elif df[e.column][0] is None or not math.isclose(float(df[e.column][0]), e.value,
                                                         rel_tol=1e-12, abs_tol=1e-15):
            problems.append(f"{e.text}: {e.source} {dict(e.key)} {e.column} is "
                            f"{df[e.column][0]}, not {e.value}")
    return problems


def prose_numbers(page: str) -> list[str]:
    """The numbers a page's hand-written prose states (outside generated blocks, HTML
    comments and code): digits with their qualifiers (:data:`_PROSE_NUMBER`) and number
    words (:data:`NUMBER_WORDS`)."""
    out, inside, fence, comment = [], False, False, False
    for line in page.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if MARK.match(line) or SOURCE.match(line):
            inside = inside or bool(MARK.match(line))
            continue
        if line.strip() == END:
            inside = False
            continue
        if inside or fence:
            continue
        text = re.sub(r"`[^`]*`", "", line)
        if comment or "<!--" in text:
            start = text.find("<!--") if not comment else 0
            end = text.find("-->", start)
            comment = end < 0
            text = text[:max(start, 0)] + ("" if comment else text[end + 3:])
        out += [m.strip() for m in _PROSE_NUMBER.findall(text)]
        out += _WORD.findall(text)
    return out


def page_numbers(text: str) -> list[str]:
    """Every number of a generated block's text (names excluded, as :data:`_NUMBER`)."""
    return [m.strip() for m in _NUMBER.findall(re.sub(r"`[^`]*`", "", text))]


# ---------------------------------------------------------------- reading a run


def _benchmark(path: Path) -> dict:
    with path.open() as fh:
        rec = next(csv.DictReader(fh, delimiter="\t"), None) or {}

    def num(key: str) -> float:
        try:
            return float(rec.get(key) or "nan")
        except ValueError:  # Snakemake writes "NA" where it measured nothing
            return float("nan")

    return {"s": num("s"), "cpu_s": num("cpu_time"), "max_rss_mb": num("max_rss")}


_PER_CONDITION = {"embed": "embed_chunks", "chunk": "chunk", "retrieve": "retrieve",
                  "rerank": "rerank", "trec": "trec_export"}


def _rule_of(stem: str) -> str:
    """The rule of a benchmark file's stem (rules/*.smk name them ``<rule or short
    name>[_<chunkset or condition>]``)."""
    if stem in ("embed_queries", "summarize"):
        return {"summarize": "summarize_cell"}.get(stem, stem)
    head, sep, _ = stem.partition("_")
    return _PER_CONDITION[head] if sep and head in _PER_CONDITION else stem


def read_benchmarks(results: str | Path) -> list[dict]:
    """One row per job: ``job`` (its benchmark name under ``benchmarks/``), ``rule`` (the name
    before a wildcard suffix), ``s`` (wall seconds), ``cpu_s`` and ``max_rss_mb`` (peak
    resident memory, MB), from ``{results}/benchmarks/**.tsv``."""
    root = Path(results) / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        job = path.relative_to(root).with_suffix("").as_posix()
        rule = _rule_of(job.rsplit("/", 1)[-1])
        rows.append({"job": job, "rule": rule, "file": f"benchmarks/{job}.tsv",
                     **_benchmark(path)})
    return rows


def embedding_counts(results: str | Path) -> list[dict]:
    """Per embedding job (``{corpus}/{embedder}/embeddings/{name}.json``): texts, unique
    texts, computed, served from the cache, texts/s."""
    results = Path(results)
    out = []
    for path in sorted(results.glob("*/*/embeddings/*.json")):
        s = read_json(path)
        out.append({"job": path.relative_to(results).with_suffix("").as_posix(),
                    "file": path.relative_to(results).as_posix(),
                    **{k: s.get(k) for k in ("texts", "unique_texts", "computed", "cache_hits",
                                             "texts_per_second", "truncated")}})
    return out


def score_hashes(results: str | Path) -> list[tuple[str, str]]:
    """``(path under results, sha256)`` of every per-query score table."""
    results = Path(results)
    return [(p.relative_to(results).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(results.glob("*/*/*/scores/*.parquet"))]


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

    def section_recall(self) -> pl.DataFrame | None:
        """The cell's stage-1 section recall table, None where the run wrote none."""
        try:
            return self.table("section_recall")
        except ResultsError:
            return None

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
                           _conds(self))

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


# ---------------------------------------------------------------- blocks


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    out = ["| " + " | ".join(header) + " |",
           "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _conds(run: Run) -> list[str]:
    return list(dict.fromkeys(run.table("summary")["condition"].to_list()))


def block_run(run: Run, led: Ledger, **_) -> list[str]:
    s = run.table("summary")
    src = run.source("summary")
    first = s.row(0, named=True)
    n_q = led.num(s["n_queries"].max(), "int", src,
                  {"condition": first["condition"], "measure": first["measure"]}, "n_queries") \
        if s.height else "—"
    n_d = led.num(s["n_docs"].max(), "int", src,
                  {"condition": first["condition"], "measure": first["measure"]}, "n_docs") \
        if s.height else "—"
    return [f"Cell `{run.corpus} / {run.embedder} / {run.reranker}`: {n_q} questions over "
            f"{n_d} documents; conditions {', '.join(_conds(run))}."]


def block_describe(run: Run, led: Ledger, **_) -> list[str]:
    """What ran: every cell of the folder with its conditions, questions and documents, and
    the run's description (config, command, code version) where the tables carry one
    (:func:`export_tables`)."""
    out = ["| cell | conditions | questions | documents |", "| --- | --- | ---: | ---: |"]
    for cell in Run.cells(run.results):
        other = Run(run.results, *cell)
        s, src = other.table("summary"), other.source("summary")
        first = s.row(0, named=True)
        key = {"condition": first["condition"], "measure": first["measure"]}
        mark = " (this page's cell)" if cell == (run.corpus, run.embedder, run.reranker) else ""
        out.append(f"| `{'/'.join(cell)}`{mark} | {', '.join(_conds(other))} | "
                   f"{led.num(s['n_queries'].max(), 'int', src, key, 'n_queries')} | "
                   f"{led.num(s['n_docs'].max(), 'int', src, key, 'n_docs')} |")
    path = run.results / RUN_DESCRIPTION
    if not path.exists():
        return [*out, "", "No run description is recorded with these tables (the config, the "
                "command and the code version are written by `--export-tables DIR --config "
                "FILE --command CMD`)."]
    d = read_json(path)
    out += ["", f"- config: `{d.get('config') or 'not recorded'}`"
            + (f" (sha256 `{d['config_sha256']}`, shipped as `config.yaml` beside the tables)"
               if d.get("config_sha256") else "")]
    out.append(f"- command: `{d.get('command') or 'not recorded'}`")
    out.append(f"- code version: `{d.get('code_version') or 'not recorded'}`")
    return out


def role_line(run: Run) -> str:
    """Which measure of this cell is confirmatory: the pre-registered family's rows marked
    ``primary`` name it (covNDCG@10 in the primary cell); nothing else is."""
    try:
        df = run.table("contrasts")
    except ResultsError:
        return "Role: no contrasts table, so nothing here is marked confirmatory."
    prim = df.filter(pl.col("primary")) if "primary" in df.columns else df.clear()
    cell = f"`{run.corpus}/{run.embedder}/{run.reranker}`"
    if not prim.height:
        pre = df.filter(pl.col("family") == "pre-registered") if "family" in df.columns \
            else df.clear()
        if not pre.height:
            return (f"Role: none of the pre-registered contrasts ran in the cell {cell}, so "
                    "every number of this table is exploratory.")
        return (f"Role: the cell {cell} is not the pre-registered primary cell, so every number "
                "of this table is exploratory.")
    m = prim["metric"][0]
    return (f"Role: {m} in this cell ({cell}, the primary cell) is the confirmatory measure, "
            "for the pre-registered contrasts only; every other measure, contrast and cut is "
            "exploratory.")


def block_means(run: Run, led: Ledger, **_) -> list[str]:
    """The cell's per-condition means as the report page shows them
    (:func:`structablate.report.blocks.condition_means_block`), with the first measure's
    95% CI where the run wrote them, and which measure is confirmatory."""
    s, src = run.table("summary"), run.source("summary")
    try:
        cis, csrc = run.table("cis"), run.source("cis")
    except ResultsError:
        cis, csrc = None, ""
    block = condition_means_block(s, _conds(run), title="", cite=led.cite(src), cis=cis,
                                  cite_cis=led.cite(csrc))
    return [table_markdown(block), "", role_line(run)]


def _routing(run: Run, led: Ledger, r: Mapping) -> list[str]:
    """A routing row's hit rate and back-filled share (:func:`structablate.report.blocks.
    routing_words`), each number recorded: the hit rate against the section-recall table, the
    share as derived."""
    sr = routing_row(r, run.section_recall())
    if sr is None:
        return []
    src = run.source("section_recall")

    def cite(value, kind, column, key):
        if column == "=":
            return _derived(led, value, kind)
        return led.num(value, kind, src, key, column)

    return routing_words(sr, run.top_k, cite)


def _answer(run: Run, led: Ledger, r: Mapping) -> str:
    """A contrast row's answer on a results page: the rule's words, qualified by letter
    (:func:`structablate.report.blocks.row_answer` with the page's flags, the run's
    replicates and the routing figures). "Too small to tell" carries the MDE at the family's
    level beside it (``mde80_family``): it rules out only effects that large."""
    text = row_answer(r, led.flags, run.n_boot, _routing(run, led, r))
    mde = r.get("mde80_family")
    if (row_decision(r) == "inconclusive" and no_spread(r) is None and mde is not None
            and math.isfinite(mde)):
        words = row_words(r)
        text = f"{words} (MDE ±{_derived(led, mde, '4')}){text[len(words):]}"
    return text


def _contrast_cells(r: Mapping, led: Ledger, src: str, run: Run | None = None) -> list[str]:
    """A contrast row's cells (:func:`structablate.report.blocks.contrast_cells`), each number
    recorded in the ledger against the row of ``src`` it came from; the answer qualified by
    the page's lettered flags."""
    if run is None:
        return contrast_cells(r, led.cite(src), flags=led.flags)
    return contrast_cells(r, led.cite(src), flags=led.flags, n_boot=run.n_boot,
                          extra=_routing(run, led, r))


def flag_lines(led: Ledger) -> list[str]:
    """The sentences of the page's flags that no earlier block printed (each once a page)."""
    return led.flags.notes(new_only=True)


def monte_carlo_line(run: Run, led: Ledger) -> list[str]:
    """What the page does about Monte-Carlo error (item 8 of issue 50): rows are flagged, not
    recomputed with more replicates; empty when the run's replicates are not recorded."""
    if run.n_boot is None:
        return ["Monte-Carlo error of the bootstrap p-values: not checked (the run's "
                "replicates are not recorded with these tables)."]
    return [f"Monte-Carlo error: each decision's adjusted p is compared with α at the run's "
            f"{_derived(led, run.n_boot, 'int')} bootstrap replicates; a decision within "
            "two Monte-Carlo standard errors of α is flagged on its row (\"within Monte-Carlo "
            "error of α\"), not recomputed with more replicates (docs/statistics.md)."]


CONTRAST_HEADER = CONTRAST_CELLS
CONTRAST_ALIGN = "r" * (len(CONTRAST_CELLS) - 2) + "ll"

ROLE_NOTE = ("Role: confirmatory is the pre-registered family on the primary measure in the "
             "primary cell (`statistics.primary`); every other row, measure and cell is "
             "exploratory. Tied: questions scored the same under both conditions (shown, never "
             "a reason to withhold a significant answer). Equivalence holds above: the smallest "
             "margin at which the equivalence test passes at the family's level, for a reader "
             "who prefers another margin.")


def block_contrasts(run: Run, led: Ledger, metric: str = PAPER_METRIC,
                    family: str | None = None, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("metric") == metric)
    if family:
        df = df.filter(pl.col("family") == family)
    rows = []
    for r in df.iter_rows(named=True):
        rows.append([f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r.get("family", ""),
                     *_contrast_cells(r, led, src, run)])
    out = _table(["contrast", "family", *CONTRAST_HEADER], rows, "ll" + CONTRAST_ALIGN)
    notes = [ROLE_NOTE, *monte_carlo_line(run, led)]
    for fam in dict.fromkeys(df["family"].to_list() if "family" in df.columns else []):
        sub = df.filter(pl.col("family") == fam)
        missing = sorted({m for v in sub["family_missing"].to_list() if v for m in v.split(",")})
        if missing:
            notes.append(f"The {fam} family as configured also holds {', '.join(missing)}, "
                         "which did not run: Holm counts them with p set to one.")
    return out + [""] + notes + flag_lines(led)


def block_contrast(run: Run, led: Ledger, name: str, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("contrast") == name)
    if not df.height:
        return [f"No row of `{src}` is named {name}: it did not run in this cell (a condition "
                "of it is not in the run's conditions)."]
    rows = [[r["metric"], *_contrast_cells(r, led, src, run)] for r in df.iter_rows(named=True)]
    out = _table(["measure", *CONTRAST_HEADER], rows, "l" + CONTRAST_ALIGN)
    return [*out, "", ROLE_NOTE, *flag_lines(led)]


def block_qtype(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    """Each contrast cut by question type (:func:`structablate.report.blocks.qtype_block`)."""
    block = qtype_block(run.table("qtype"), metric, cite=led.cite(run.source("qtype")))
    return [table_markdown(block), "",
            "Role: every row is exploratory (cut by question type, Holm within each type)."]


def block_dose(run: Run, led: Ledger, **_) -> list[str]:
    """The breadcrumb-depth dose-response (:func:`structablate.report.blocks.dose_blocks`):
    each rung's mean per measure (the ladder :data:`structablate.study.DOSE_LADDER`, depth in
    levels), then the slope per level with its interval (exploratory: the paper reports it as
    such)."""
    df, src = run.table("dose"), run.source("dose")
    if not df.height:
        return [f"The depth ladder ({', '.join(DOSE_LADDER)}) did not run in this cell."]
    means, slope = dose_blocks(
        df, run.table("summary"), cite=led.cite(src),
        cite_summary=led.cite(run.source("summary")),
        cite_depth=lambda value, kind, column, key: _derived(led, value, kind))
    out = [table_markdown(means), "", table_markdown(slope)]
    reasons = dose_flags(list(DOSE_LADDER), quality=_optional(run, "structure"),
                         ranking=_optional_file(run, run.paths.ranking_identity(
                             run.corpus, run.embedder, run.reranker)))
    if reasons:
        out += ["", "The slope rests on the ladder's structure, and the guard qualifies it: "
                "it is " + "; ".join(led.flags.reason(x) for x in reasons) + ".",
                *flag_lines(led)]
    return out


def _optional(run: Run, which: str) -> pl.DataFrame | None:
    """Table ``which`` of the run, None where it was not written (or shipped)."""
    try:
        return run.table(which)
    except ResultsError:
        return None


def _optional_file(run: Run, path: str) -> pl.DataFrame | None:
    """The table at ``path`` (under the run's folder), None where it is absent."""
    return read_table(path) if Path(path).exists() else None


def block_section_recall(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Stage-1 section recall as the report page shows it
    (:func:`structablate.report.blocks.section_recall_block`), with the paper's range."""
    df, src = run.table("section_recall"), run.source("section_recall")
    if not df.height:
        return ["No two-stage condition ran in this cell."]
    lo, hi = PAPER_SECTION_RECALL.get(kind, (None, None))
    block = section_recall_block(
        df, title="", cite=led.cite(src), paper=None if lo is None else (kind, lo, hi),
        cite_paper=led.cite("paper:section_recall"))
    block.note = ""
    return [table_markdown(block)]


def block_funnel(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """The corpus's funnel: for QASPER like for like with the paper's
    (:func:`structablate.report.blocks.qasper_funnel_block`), then every field of
    ``funnel.json`` (:func:`structablate.report.blocks.report_fields_block`)."""
    funnel, src = run.json("funnel"), run.file("funnel")
    out = []
    if kind == "qasper":
        s, ssrc = run.table("summary"), run.source("summary")
        first = s.row(0, named=True)
        block = qasper_funnel_block(
            funnel, (s["n_docs"].max(), {"condition": first["condition"],
                                         "measure": first["measure"]}),
            cite=led.cite(src), cite_documents=led.cite(ssrc),
            cite_paper=led.cite("paper:funnel"))
        out += [table_markdown(block), ""]
        sample = sample_block(funnel, cite=led.cite(src))
        if sample is not None:
            out += [table_markdown(sample), ""]
    return out + [table_markdown(report_fields_block(funnel, "funnel field (funnel.json)",
                                                     cite=led.cite(src)))]


def block_bm25(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Every field of ``bm25.json`` and the paper's gold-top-1 of the same corpus kind
    (:func:`structablate.report.blocks.report_fields_block`)."""
    paper = (kind, PAPER_BM25_GOLD_TOP1[kind]) if kind in PAPER_BM25_GOLD_TOP1 else None
    return [table_markdown(report_fields_block(
        run.json("bm25"), "BM25 (bm25.json)", cite=led.cite(run.file("bm25")), paper=paper,
        cite_paper=led.cite("paper:bm25")))]


def block_structure(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    """Structure quality as the report page shows it
    (:func:`structablate.report.blocks.structure_quality_block`), with the paper's chunk-span
    identity of its LLM inducer."""
    df, src = run.table("structure"), run.source("structure")
    block = structure_quality_block(df, title="", cite=led.cite(src), detail=True)
    block.note = ""
    out = [table_markdown(block)]
    if kind in PAPER_CHUNK_SPAN_IDENTITY:
        out += ["", f"Paper's LLM inducer, chunk spans identical to gold ({kind}): "
                    f"{led.num(PAPER_CHUNK_SPAN_IDENTITY[kind], '3', 'paper:chunk_span_identity', {'corpus': kind}, 'identity')}."]  # noqa: E501
    return out


def _inside(value: float, row: Mapping | None) -> bool:
    """``value`` lies in the row's 95% interval (``ci_low`` … ``ci_high``, both included)."""
    return (row is not None and row.get("ci_low") is not None
            and row["ci_low"] <= value <= row["ci_high"])


def against_paper(paper_value: float, here: Mapping | None,
                  paper_ci: tuple[float, float] | None = None) -> str:
    """The paper's value against this run's estimate of the same quantity: ``"not run"`` (no
    row), ``"no interval"`` (the bootstrap was withheld), ``"consistent"`` or ``"differs"``.

    With ``paper_ci`` (the paper printed a 95% interval) the two are compared as two
    estimates: ``here − paper`` with the 95% interval of
    :func:`structablate.paper.difference_of_estimates` (both standard errors combined);
    consistent when it holds 0. Without one the paper's value is taken as exact: consistent
    when it lies in this run's 95% interval. No other row's interval is consulted: whether a
    control accounts for a gap is a test of its own
    (:func:`structablate.stats.contrasts.contrast_difference`)."""
    if here is None:
        return "not run"
    if here.get("ci_low") is None or here.get("ci_high") is None \
            or math.isnan(here["ci_low"]):
        return "no interval"
    if paper_ci is None:
        return "consistent" if _inside(paper_value, here) else "differs"
    _, lo, hi = difference_of_estimates(here["delta"], (here["ci_low"], here["ci_high"]),
                                        paper_value, paper_ci)
    return "consistent" if lo <= 0 <= hi else "differs"


def _difference_cell(led: Ledger, paper_value: float, here: Mapping | None,
                     paper_ci: tuple[float, float] | None) -> str:
    """``here − paper`` and its 95% interval (:func:`structablate.paper.difference_of_estimates`),
    or ``—`` without an interval here."""
    if here is None or here.get("ci_low") is None or math.isnan(here["ci_low"]):
        return "—"
    d, lo, hi = difference_of_estimates(here["delta"], (here["ci_low"], here["ci_high"]),
                                        paper_value, paper_ci)
    return (f"{_derived(led, d, '+4')} [{_derived(led, lo, '+4')}, "
            f"{_derived(led, hi, '+4')}]")


def relative_row(row: Mapping | None, level: float | None) -> dict | None:
    """``row``'s Δ and 95% interval as shares of ``level`` (the control's mean; treated as
    fixed), for comparing with the paper across levels."""
    if row is None or level is None or not level or math.isnan(level):
        return None
    out = {"delta": row["delta"] / level}
    if row.get("ci_low") is not None and not math.isnan(row["ci_low"]):
        out |= {"ci_low": row["ci_low"] / level, "ci_high": row["ci_high"] / level}
    return out


def _sensitivity_run(run: Run, embedder: str | None) -> Run | None:
    if not embedder:
        return None
    other = Run(run.results, run.corpus, embedder, run.reranker)
    return other if (run.results / other.file("summary")).exists() else None


def _contrast_row(df: pl.DataFrame, a: str, b: str, metric: str) -> dict | None:
    sub = df.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                    & (pl.col("metric") == metric))
    return sub.row(0, named=True) if sub.height else None


def _derived(led: Ledger, value: float | None, kind: str) -> str:
    """A value computed on the page (a share, a bootstrap of two contrasts), recorded for its
    formatting only."""
    text = Ledger.format(value, kind)
    if text != "—":
        led.entries.append(Entry(text, "derived", (), "=", float(value), kind))
    return text


def _control_mean(r: Mapping, summary: pl.DataFrame) -> float | None:
    if r.get("mean_b") is not None:
        return float(r["mean_b"])
    v = summary.filter((pl.col("condition") == r["cond_b"])
                       & (pl.col("measure") == r["metric"]))
    return float(v["mean"][0]) if v.height else None


def block_paper(run: Run, led: Ledger, kind: str = "qasper", control_embedder: str = "",
                **_) -> list[str]:
    """The paper's means and contrasts beside this cell's, each contrast compared with the
    paper on its own 95% interval (:func:`against_paper`), in the measure's units and as a
    share of the control's mean (levels differ between embedders); then each contrast against
    its control (:data:`structablate.study.CONTROLS`, and the same contrast under
    ``control_embedder``) as a paired difference with its own interval."""
    s, src = run.table("summary"), run.source("summary")
    other = _sensitivity_run(run, control_embedder)
    paper = PAPER_MEANS[kind]
    conds = _conds(run)
    row_p = [led.num(paper[c], "3", "paper:means", {"corpus": kind, "condition": c}, "mean")
             if c in paper else "— (beyond the paper)" for c in conds]
    here = []
    for c in conds:
        v = s.filter((pl.col("condition") == c) & (pl.col("measure") == PAPER_METRIC))
        here.append(led.num(v["mean"][0], "3", src, {"condition": c, "measure": PAPER_METRIC},
                            "mean") if v.height else "—")
    out = _table(["", *conds], [["paper", *row_p], ["here", *here]], "l" + "r" * len(conds))
    out += ["", "Levels are not compared: they depend on the embedder. The contrasts below are "
            "compared in the measure's units and as a share of their control's mean."]
    df, csrc = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("metric") == PAPER_METRIC)
    pairs = [(r["cond_a"], r["cond_b"]) for r in df.iter_rows(named=True)
             if paper_contrast(kind, r["cond_a"], r["cond_b"]) is not None]
    pairs += [p for p in PAPER_CONTRASTS.get(kind, {}) if p not in pairs]
    pairs = list(dict.fromkeys(pairs))  # a pair declared in both families: one row
    rows, ran = [], {}
    for a, b in pairs:
        pd = paper_contrast(kind, a, b)
        pci = paper_contrast_ci(kind, a, b)
        r = _contrast_row(df, a, b, PAPER_METRIC)
        published = (a, b) in PAPER_CONTRASTS.get(kind, {})
        ptxt = Ledger.format(pd, "+4")
        led.entries.append(Entry(ptxt, "paper:contrasts", (), "=", pd, "+4"))
        if pci is not None:
            ptxt += f" [{_derived(led, pci[0], '+4')}, {_derived(led, pci[1], '+4')}]"
        elif not published:
            ptxt += " (from the means)"
        pshare = pd / paper[b] if b in paper else None
        pshare_ci = (pci[0] / paper[b], pci[1] / paper[b]) if pci and b in paper else None
        pstxt = _derived(led, pshare, "+pct") if pshare is not None else "—"
        exact = pci is None
        if r is None:
            rows.append([f"{a} − {b}", ptxt, pstxt, "—", "—", "—", "—", "—", "not run",
                         "not run"])
            continue
        ran[(a, b)] = r
        key = {"family": r.get("family"), "contrast": r["contrast"], "metric": PAPER_METRIC}
        rel = relative_row(r, _control_mean(r, s))
        share = "—" if rel is None else _derived(led, rel["delta"], "+pct")
        if rel is not None and "ci_low" in rel:
            share += (f" [{_derived(led, rel['ci_low'], '+pct')}, "
                      f"{_derived(led, rel['ci_high'], '+pct')}]")
        tag = " (paper exact)" if exact else ""
        rows.append([f"{r['contrast']}: {a} − {b}", ptxt, pstxt,
                     led.num(r["delta"], "+4", csrc, key, "delta"), led.ci(r, "+4", csrc, key),
                     share, _answer(run, led, r), _difference_cell(led, pd, r, pci),
                     against_paper(pd, r, pci) + tag,
                     (against_paper(pshare, rel, pshare_ci) + tag)
                     if pshare is not None else "—"])
    out += ["", *_table(["contrast", "paper Δ [95% CI]", "paper Δ / control", "here Δ",
                         "here 95% CI", "here Δ / control [95% CI]", "here: answer",
                         "here − paper [95% CI]", "against the paper (Δ)",
                         "against the paper (share of control)"], rows, "lrrrrrlrll")]
    out += ["", "Against the paper: where the paper prints a 95% interval (the "
            "pre-registered contrasts, in its first table), this run's Δ and the paper's "
            "are compared as two independent estimates: here − paper with the 95% interval "
            "of the difference, "
            "each standard error read off its own interval (its half-width over the normal "
            "quantile of the interval's level) and the two combined as the square root of "
            "the sum of their squares; consistent when that interval holds zero, "
            "differs when it does not. Where the paper prints no interval (every contrast "
            "from the means, marked paper exact), the comparison treats the paper's value as "
            "exact: consistent when it lies in this run's 95% interval, and the difference's "
            "interval is this run's shifted by it. Not run when the contrast has no row here "
            "(no interval of another contrast is consulted). The share of control treats "
            "each control's mean as fixed. A lettered answer is about what its flag says, "
            "and so is its comparison with the paper.", *flag_lines(led)]
    out += _control_differences(run, led, ran, other, control_embedder)
    if control_embedder and other is None:
        out += ["", f"The control cell `{run.corpus}/{control_embedder}/{run.reranker}` is not "
                "in this results folder, so no contrast is compared with it."]
    return out


def _control_differences(run: Run, led: Ledger, ran: Mapping[tuple[str, str], Mapping],
                         other: Run | None, control_embedder: str) -> list[str]:
    """Each contrast of the paper minus its control (a contrast asking the same question with
    one known difference removed, :data:`structablate.study.CONTROLS`; the same contrast under
    a second embedder), paired per question with its own document-clustered bootstrap."""
    tests, conds = [], set(_conds(run))
    for a, b in ran:
        for c, d in CONTROLS.get((a, b), ()):
            if {c, d} <= conds:
                tests.append(((a, b), (c, d), None))
        if other is not None:
            tests.append(((a, b), (a, b), other))
    if not tests:
        return []
    try:
        scores = run.scores()
        oscores = other.scores() if other is not None else {}
    except ResultsError as e:
        return ["", f"Contrast against its control: not computed, the per-question score "
                f"tables are missing ({e})."]
    rows = []
    for first, second, cell in tests:
        if cell is None:
            table, label = scores, f"({first[0]} − {first[1]}) − ({second[0]} − {second[1]})"
        else:
            table = {"x_a": scores[first[0]], "x_b": scores[first[1]],
                     "y_a": oscores.get(second[0]), "y_b": oscores.get(second[1])}
            if table["y_a"] is None or table["y_b"] is None:
                continue
            label = (f"({first[0]} − {first[1]}) in `{run.embedder}` − the same in "
                     f"`{cell.embedder}`")
            first, second = ("x_a", "x_b"), ("y_a", "y_b")
        res = contrast_difference(table, first, second, PAPER_METRIC,
                                  n_boot=DEFAULT_N_BOOT, seed=DEFAULT_SEED)
        ci = ("—" if math.isnan(res["ci_low"]) else
              f"[{_derived(led, res['ci_low'], '+4')}, {_derived(led, res['ci_high'], '+4')}]")
        word = ("withheld (too few documents)" if math.isnan(res["ci_low"]) else
                "differs from its control" if res["ci_low"] > 0 or res["ci_high"] < 0 else
                "no difference from its control shown; one smaller than the MDE would go "
                "unseen")
        mde_txt = ("—" if math.isnan(res["ci_low"]) else
                   "±" + _derived(led, res["mde80"], "4"))
        rows.append([label, _derived(led, res["n_queries"], "int"),
                     _derived(led, res["delta"], "+4"), ci, _derived(led, res["p"], "p"),
                     mde_txt, word])
    return ["", *_table(["contrast − control (paired per question)", "questions", "Δ − Δ",
                         "95% CI", "p", "MDE", "reading"], rows, "lrrrrrl"),
            "", f"Document-clustered bootstrap of the per-question difference of the two "
            f"contrasts ({_derived(led, DEFAULT_N_BOOT, 'int')} replicates, seed "
            f"{_derived(led, DEFAULT_SEED, 's')}), unadjusted; a "
            "contrast that differs from its control differs because of what the control "
            "removes (induced against gold structure, the embedder). MDE: the difference "
            f"detected with power {_derived(led, POWER, '1')} at two-sided α "
            f"{_derived(led, ALPHA, '2')} from the document-clustered standard error "
            "(docs/statistics.md, \"Designing a run\"); python -m structablate.stats.design "
            "gives the questions a stated one needs."]


def block_sensitivity(run: Run, led: Ledger, embedder: str, metric: str = PAPER_METRIC,
                      absent: str = "", **_) -> list[str]:
    """The cell's levels and contrasts beside a second cell of the same results folder that
    differs only by its embedder entry (e.g. the same model at another ``max_seq_length``).
    A second cell the folder lacks is an error, unless ``absent=say``: then the block says
    which cell is missing from which folder, and prints nothing of it."""
    other = Run(run.results, run.corpus, embedder, run.reranker)
    if absent == "say" and not (run.results / other.file("summary")).exists():
        return [f"The cell `{run.corpus}/{embedder}/{run.reranker}` is not in these tables "
                f"(`{run.results}`): none of its numbers can be printed or re-derived here."]
    cells = (run, other)
    sums = [c.table("summary") for c in cells]
    conds = [c for c in _conds(run) if c in set(sums[1]["condition"].to_list())]
    rows = []
    for c in conds:
        row = [c]
        for cell, s in zip(cells, sums, strict=True):
            v = s.filter((pl.col("condition") == c) & (pl.col("measure") == metric))
            row.append(led.num(v["mean"][0], "4", cell.source("summary"),
                               {"condition": c, "measure": metric}, "mean")
                       if v.height else "—")
        rows.append(row)
    out = _table(["condition", f"`{run.embedder}`", f"`{embedder}`"], rows, "lrr")
    dfs = [c.table("contrasts").filter(pl.col("metric") == metric) for c in cells]
    rows = []
    for r in dfs[0].iter_rows(named=True):
        o = _contrast_row(dfs[1], r["cond_a"], r["cond_b"], metric)
        if o is None:
            continue
        row = [f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}"]
        for cell, x in zip(cells, (r, o), strict=True):
            key = {"family": x.get("family"), "contrast": x["contrast"], "metric": metric}
            src = cell.source("contrasts")
            row += [led.num(x["delta"], "+4", src, key, "delta"), led.ci(x, "+4", src, key),
                    _answer(cell, led, x)]
        row.append("same" if row_words(r) == row_words(o) else "differs")
        rows.append(row)
    out += ["", *_table(["contrast", f"Δ `{run.embedder}`", "95% CI", "answer",
                         f"Δ `{embedder}`", "95% CI", "answer", "answers"], rows,
                        "lrrlrrll")]
    return [*out, "", role_line(run) + " The second cell is a sensitivity check: exploratory.",
            *flag_lines(led)]


def block_embedders(run: Run, led: Ledger, weak: str, kind: str = "qasper",
                    metric: str = PAPER_METRIC, **_) -> list[str]:
    """The embedder axis: the page's cell (the stronger embedder) beside cell ``weak`` of the
    same folder. Levels: each condition's mean under both, the change, and the paper's
    (bge-large) level. Contrasts: each contrast's Δ under both with its answer, and the
    interaction (Δ under the page's embedder − Δ under ``weak``, per question) with its own
    document-clustered bootstrap interval and Holm p over the contrasts
    (:func:`structablate.stats.embedders.embedder_contrasts`)."""

    other = Run(run.results, run.corpus, weak, run.reranker)
    sums = {c.embedder: c.table("summary") for c in (run, other)}
    paper = PAPER_MEANS.get(kind, {})

    def mean(cell: Run, cond: str) -> tuple[str, float | None]:
        v = sums[cell.embedder].filter((pl.col("condition") == cond)
                                       & (pl.col("measure") == metric))
        if not v.height:
            return "—", None
        return (led.num(v["mean"][0], "4", cell.source("summary"),
                        {"condition": cond, "measure": metric}, "mean"), float(v["mean"][0]))

    try:
        scores = {weak: other.scores(), run.embedder: run.scores()}
    except ResultsError as e:
        return [f"The embedder axis: not computed, the per-question score tables are missing "
                f"({e})."]
    levels = {r["condition"]: r for r in embedder_levels(
        scores, weak, run.embedder, _conds(run), [metric], n_boot=DEFAULT_N_BOOT,
        seed=DEFAULT_SEED).iter_rows(named=True)}
    rows = []
    for c in _conds(run):
        (tw, w), (ts, _) = mean(other, c), mean(run, c)
        lv = levels.get(c)
        if lv is None:
            change, ci, ph = "—", "—", "—"
        else:
            change = _derived(led, lv["difference"], "+4")
            if w:
                change += f" ({_derived(led, lv['difference'] / w, '+pct')})"
            ci = f"[{_derived(led, lv['ci_lo'], '+4')}, {_derived(led, lv['ci_hi'], '+4')}]"
            ph = _derived(led, lv["p_holm"], "p")
        pv = (led.num(paper[c], "3", "paper:means", {"corpus": kind, "condition": c}, "mean")
              if c in paper else "—")
        rows.append([c, tw, ts, change, ci, ph, pv])
    out = _table(["condition", f"`{weak}`", f"`{run.embedder}`",
                  f"`{run.embedder}` − `{weak}`", "95% CI", "Holm p", "paper (bge-large)"],
                 rows, "lrrrrrr")

    dfs = {c.embedder: c.table("contrasts").filter(pl.col("metric") == metric)
           for c in (run, other)}
    pairs: dict[str, tuple[str, str]] = {}
    for r in dfs[run.embedder].iter_rows(named=True):
        if _contrast_row(dfs[weak], r["cond_a"], r["cond_b"], metric) is not None:
            pairs.setdefault(r["contrast"], (r["cond_a"], r["cond_b"]))
    inter = embedder_contrasts(scores, weak, run.embedder, pairs, [metric],
                               n_boot=DEFAULT_N_BOOT, seed=DEFAULT_SEED)
    design = design_table({weak: scores[weak], run.embedder: scores[run.embedder]},
                          {k: (a, b, "") for k, (a, b) in pairs.items()}, [metric])
    mdes = {r["contrast"]: r["mde"] for r in design.iter_rows(named=True)
            if r["kind"] == "interaction"}
    rows = []
    for r in inter.iter_rows(named=True):
        a, b = r["cond_a"], r["cond_b"]
        cells_ = [f"{r['contrast']}: {a} − {b}"]
        answers = []
        for cell in (other, run):
            x = _contrast_row(dfs[cell.embedder], a, b, metric)
            src = cell.source("contrasts")
            key = {"family": x.get("family"), "contrast": x["contrast"], "metric": metric}
            answers.append(row_words(x))
            cells_ += [led.num(x["delta"], "+4", src, key, "delta"),
                       _derived(led, r["rel_weak" if cell is other else "rel_strong"], "+pct"),
                       _answer(cell, led, x)]
        ci = f"[{_derived(led, r['ci_lo'], '+4')}, {_derived(led, r['ci_hi'], '+4')}]"
        moved = ("moves" if r["p_holm"] < 0.05 else "no change shown")
        cells_ += [_derived(led, r["interaction"], "+4"), ci, _derived(led, r["p_holm"], "p"),
                   "±" + _derived(led, mdes.get(r["contrast"]), "4"),
                   "same" if answers[0] == answers[1] else "differ", moved]
        rows.append(cells_)
    out += ["", *_table(["contrast", f"Δ `{weak}`", "share", "answer", f"Δ `{run.embedder}`",
                         "share", "answer", "interaction Δ − Δ", "95% CI", "Holm p",
                         "interaction MDE", "answers", "with capacity"], rows,
                        "lrrlrrlrrrrll")]
    return [*out, "", f"Levels: the paired per-question difference of each condition between "
            f"the embedders, with its own bootstrap interval and Holm p over the conditions. "
            f"Share: Δ as a share of the control condition's mean under the same "
            f"embedder. Interaction: the per-question Δ under `{run.embedder}` minus the same "
            f"under `{weak}`, document-clustered bootstrap "
            f"({_derived(led, DEFAULT_N_BOOT, 'int')} replicates, seed "
            f"{_derived(led, DEFAULT_SEED, 's')}) with both deltas on the same draws, Holm over "
            "the contrasts of the table; \"moves\" where the Holm p is below the level; "
            "\"no change shown\" says only that no change as large as the interaction MDE "
            f"beside it happened (power {_derived(led, POWER, '1')}, two-sided α "
            f"{_derived(led, ALPHA, '2')} before Holm, from the "
            "document-clustered standard error of the per-question interaction; "
            "docs/statistics.md, \"Designing a run\"): a smaller one would go unseen. "
            f"{role_line(run)} The embedder comparison is exploratory (the paper "
            "pre-registers no interaction).", *flag_lines(led)]


def block_claims(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    out = []
    for r in df.filter(pl.col("metric") == metric).iter_rows(named=True):
        key = {"family": r.get("family"), "contrast": r["contrast"], "metric": metric}
        where = f"`{src}` row family={r.get('family')}, contrast={r['contrast']}, metric={metric}"
        ph = led.num(r.get("p_holm"), "p", src, key, "p_holm")
        fs = led.num(r.get("family_size"), "int", src, key, "family_size")
        out.append(f"- {r['contrast']} ({r['cond_a']} − {r['cond_b']}, {r.get('family')}): "
                   f"**{_answer(run, led, r)}** — Δ "
                   f"{led.num(r['delta'], '+4', src, key, 'delta')}, "
                   f"Holm p {ph} over a family of {fs} ({where}).")
    return out + ([""] + flag_lines(led) if led.flags.items() else [])


def block_timing(run: Run, led: Ledger, **_) -> list[str]:
    rows_by_rule: dict[str, list[dict]] = defaultdict(list)
    for r in read_benchmarks(run.results):
        rows_by_rule[r["rule"]].append(r)
    rows = []
    for rule, jobs in sorted(rows_by_rule.items()):
        def total(col, jobs=jobs):
            return sum(j[col] for j in jobs if not math.isnan(j[col]))
        rss = max((j["max_rss_mb"] for j in jobs if not math.isnan(j["max_rss_mb"])),
                  default=float("nan"))
        for value, kind in ((total("s"), "s"), (total("cpu_s"), "s"), (rss, "s")):
            if not math.isnan(value):
                led.entries.append(Entry(Ledger.format(value, kind), "benchmarks", (), "=",
                                         value, kind))
        rows.append([rule, Ledger.format(len(jobs), "int"), Ledger.format(total("s"), "s"),
                     Ledger.format(total("cpu_s"), "s"), Ledger.format(rss, "s")])
        led.entries.append(Entry(Ledger.format(len(jobs), "int"), "benchmarks", (), "=",
                                 len(jobs), "int"))
    return _table(["rule", "jobs", "wall s (sum)", "CPU s (sum)", "peak RSS MB (max)"], rows,
                  "lrrrr")


def block_embedding(run: Run, led: Ledger, **_) -> list[str]:
    rows = []
    for r in embedding_counts(run.results):
        cells = [r["job"]]
        for col, kind in (("texts", "int"), ("unique_texts", "int"), ("computed", "int"),
                          ("cache_hits", "int"), ("texts_per_second", "1")):
            cells.append(led.num(r[col], kind, r["file"], {}, col) if r[col] is not None
                         else "—")
        rows.append(cells)
    return _table(["embedding job", "texts", "unique", "computed", "from cache", "texts/s"],
                  rows, "lrrrrr")


def block_hashes(run: Run, led: Ledger, **_) -> list[str]:
    return _table(["per-query score table", "sha256"],
                  [[f"`{p}`", f"`{h}`"] for p, h in score_hashes(run.results)
                   if p.startswith(f"{run.corpus}/{run.embedder}/{run.reranker}/")], "ll")


BLOCKS: dict[str, Callable[..., list[str]]] = {
    "run": block_run, "describe": block_describe, "means": block_means,
    "contrasts": block_contrasts,
    "contrast": block_contrast, "qtype": block_qtype, "dose": block_dose,
    "section_recall": block_section_recall, "funnel": block_funnel, "bm25": block_bm25,
    "structure": block_structure, "paper": block_paper, "claims": block_claims,
    "timing": block_timing, "embedding": block_embedding, "hashes": block_hashes,
    "sensitivity": block_sensitivity, "embedders": block_embedders,
}


def _spec(text: str, where: str) -> tuple[str, dict[str, str]]:
    name, *args = text.split()
    if name not in BLOCKS:
        raise ResultsError(f"{where}: unknown block {name!r}; known: {', '.join(BLOCKS)}")
    kw = {}
    for a in args:
        k, sep, v = a.partition("=")
        if not sep:
            raise ResultsError(f"{where}: block argument {a!r} is not key=value")
        kw[k] = v
    return name, kw


def render_page(page: str, run: Run, ledger: Ledger | None = None, where: str = "page") -> str:
    """``page`` with every generated block rewritten from ``run`` (module docstring)."""
    led = ledger if ledger is not None else Ledger()
    out: list[str] = []
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == END), None)
        if j is None:
            raise ResultsError(f"{where}:{i + 1}: block {m['spec']!r} has no {END}")
        name, kw = _spec(m["spec"], f"{where}:{i + 1}")
        try:
            body = BLOCKS[name](run, led, **kw)
        except TypeError as e:
            raise ResultsError(f"{where}:{i + 1}: block {name}: {e}") from None
        out += [lines[i], *body, END]
        i = j + 1
    return "\n".join(out) + "\n"


def page_source(page: str, where: str = "page") -> tuple[str | None, list[str], str | None]:
    """The page's ``<!-- results-tables: … -->`` line (:data:`SOURCE`): ``(folder, cell
    arguments, None)`` for shipped tables (the folder relative to the repository root),
    ``(None, [], reason)`` for ``not shipped: REASON``, ``(None, [], None)`` without one."""
    for line in page.splitlines():
        m = SOURCE.match(line)
        if not m:
            continue
        spec = m["spec"].strip()
        if spec.startswith("not shipped:"):
            reason = spec.removeprefix("not shipped:").strip()
            if not reason:
                raise ResultsError(f"{where}: 'not shipped' needs a reason")
            return None, [], reason
        folder, *args = spec.split()
        return folder, args, None
    return None, [], None


def page_differences(old: str, new: str, where: str, limit: int = 5) -> list[str]:
    """Where the committed page ``old`` differs from what its tables give (``new``): the
    line number and both lines, the first ``limit`` of them (empty when equal)."""
    if old == new:
        return []
    a, b = old.splitlines(), new.splitlines()
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(no line)"
        y = b[i] if i < len(b) else "(no line)"
        if x != y:
            out.append(f"{where}:{i + 1}: the page has {x!r}, its tables give {y!r}")
            if len(out) == limit:
                out.append(f"{where}: … (regenerate the page to see every difference)")
                break
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m structablate.report.results",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?",
                    help="the results folder of a run, or a page's shipped tables (default: "
                         "the folder the page's results-tables line names)")
    ap.add_argument("--page", required=True, help="the Markdown page whose blocks to rewrite")
    ap.add_argument("--out", help="write here instead of rewriting --page")
    ap.add_argument("--corpus")
    ap.add_argument("--embedder")
    ap.add_argument("--reranker")
    ap.add_argument("--check", action="store_true",
                    help="re-derive every statistics table from the per-question scores (the "
                         "run's config.yaml beside the tables, or --config) and exit 1, "
                         "saying where, when a table or the page differs from what the run "
                         "gives")
    ap.add_argument("--export-tables", metavar="DIR",
                    help="also copy the run's small tables (what --check reads) into DIR")
    ap.add_argument("--config", help="with --export-tables: the config file of the run; with "
                                     "--check: the config to re-derive the tables with when "
                                     "none is shipped beside them")
    ap.add_argument("--command", help="with --export-tables: the command that made the run")
    ap.add_argument("--code-version",
                    help="with --export-tables: the code version that made the run (default: "
                         "this checkout's, marked 'at export')")
    a = ap.parse_args(argv)
    try:
        page_path = Path(a.page)
        if not page_path.exists():
            raise ResultsError(f"{page_path}: no such page")
        text = page_path.read_text(encoding="utf-8")
        results, cell = a.results, {"corpus": a.corpus, "embedder": a.embedder,
                                    "reranker": a.reranker}
        if results is None:
            folder, args, reason = page_source(text, str(page_path))
            if folder is None:
                raise ResultsError(f"{page_path}: no results folder given and the page ships "
                                   f"no tables ({reason or 'no results-tables line'})")
            results = Path(folder)
            sub = argparse.ArgumentParser(add_help=False)
            for k in cell:
                sub.add_argument(f"--{k}")
            named = vars(sub.parse_args(args))
            cell = {k: v if v is not None else named[k] for k, v in cell.items()}
        run = Run.find(results, cell["corpus"], cell["embedder"], cell["reranker"])
        stated = prose_numbers(text)
        if stated:
            raise ResultsError(f"{page_path}: the prose states numbers of its own "
                               f"({', '.join(stated[:10])}); put them in generated blocks")
        if a.export_tables:
            export_tables(run.results, a.export_tables, config=a.config, command=a.command,
                          code=a.code_version)
            run = Run(Path(a.export_tables), run.corpus, run.embedder, run.reranker)
        if a.check:
            settings = (settings_from(a.config) if a.config and not a.export_tables
                        else run_settings(run.results))
            derived, notes = rederive(run, settings)
        led = Ledger()
        new = render_page(text, run, led, str(page_path))
        problems = verify_ledger(led, run.results)
        if problems:
            raise ResultsError("numbers that do not match their source:\n  "
                               + "\n  ".join(problems[:20]))
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.check:
        stale = page_differences(text, new, str(page_path))
        for line in [*derived[:50], *stale]:
            print(f"check failed: {line}", file=sys.stderr)
        if len(derived) > 50:
            per_file: dict[str, int] = defaultdict(int)
            for line in derived:
                per_file[line.split(" (", 1)[0]] += 1
            print(f"check failed: … and {len(derived) - 50} more differences of the tables; "
                  "all of them by file: " + ", ".join(f"{f} {n}" for f, n in per_file.items()),
                  file=sys.stderr)
        if derived or stale:
            return 1
        print(f"check passed: {page_path} is what its tables give, and every statistics table "
              f"re-derives bit for bit from the per-question scores of {run.results} ("
              + "; ".join(notes) + ")", file=sys.stderr)
        return 0
    Path(a.out or a.page).write_text(new, encoding="utf-8")
    print(f"wrote {a.out or a.page}: {len(led.entries)} numbers from {run.results}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
