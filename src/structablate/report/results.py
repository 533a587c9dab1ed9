"""Results pages generated from a results folder: every number on the page comes from the run.

A results page (e.g. ``docs/results/qasper-full-cpu.md``) is Markdown prose with generated
blocks between markers::

    <!-- results: contrasts metric=covNDCG@10 -->
    …generated table…
    <!-- /results -->

``python -m structablate.report.results RESULTS --page PAGE [--corpus C --embedder E
--reranker R]`` reads the run's own tables under ``RESULTS`` and rewrites every block of
``PAGE`` in place (``--out`` writes elsewhere; ``--check`` fails when the page is stale). The
prose between blocks is written by hand and must hold no number of its own
(:func:`prose_numbers`); a claim names the table row it rests on, which the ``claims`` block
prints. The paper's numbers come from :mod:`structablate.paper`.

Every number a block prints is recorded in a :class:`Ledger` with the file, row and column it
came from; :func:`verify_ledger` reads each source again and checks the printed text is that
value formatted, which is how the tests hold the generator to the rule.

Blocks (``NAME key=value …``): ``run``, ``means``, ``contrasts`` (``metric``, ``family``),
``contrast`` (``name``: one contrast over every measure), ``qtype`` (``metric``), ``dose``,
``section_recall``, ``funnel``, ``bm25``, ``structure``, ``paper`` (``kind``: the paper's
corpus, ``qasper`` or ``wikipedia``; ``control_embedder``: a second embedder cell whose
interval may explain a difference, :func:`against_paper`), ``sensitivity`` (``embedder``: the
same conditions and contrasts in a second embedder cell), ``claims`` (``metric``),
``timing``, ``embedding``, ``hashes``.
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
    paper_contrast,
)
from structablate.plan.paths import Paths
from structablate.study import CONTROLS, DOSE_LADDER

from .blocks import row_answer

MARK = re.compile(r"^<!-- results: (?P<spec>[^>]*?) -->\s*$")
END = "<!-- /results -->"

_NUMBER = re.compile(r"(?<![\w@.\-−/<])[+\-−±]?\d[\d,]*(?:\.\d+)?(?![\w@%])")
"""A number in running text: digits not glued to a name (``covNDCG@10``, ``A3-d1``, ``C2``,
``v0.3`` and ``all-MiniLM-L6-v2`` are names, not numbers), nor a method's level written
``95%`` (a data share is printed with a space, ``12.3 %``), nor the p-value floor ``<0.001``."""


class ResultsError(ValueError):
    """A page or a results folder the generator cannot use; the message names the file."""


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

    @staticmethod
    def format(value: float | None, kind: str) -> str:
        """``"4"``/``"3"``/``"2"``: fixed decimals; ``"+4"``/``"+2"``: signed; ``"p"``: p-value
        (``<0.001`` below a thousandth); ``"int"``: thousands separators; ``"pct"``: a share
        as a percentage with one decimal; ``"s"``: seconds, no decimals."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "—"
        if kind == "p":
            return "<0.001" if value < 0.001 else f"{value:.3f}"
        if kind == "int":
            return f"{int(round(value)):,}"
        if kind == "pct":
            return f"{100 * value:.1f} %"
        if kind == "s":
            return f"{value:.0f}"
        if kind.startswith("+"):
            return f"{value:+.{int(kind[1:])}f}".replace("-", "−")
        return f"{value:.{int(kind)}f}".replace("-", "−")

    def num(self, value, kind: str, source: str, key: Mapping[str, object], column: str) -> str:
        text = self.format(value, kind)
        if text != "—":
            self.entries.append(Entry(text, source, tuple((k, str(v)) for k, v in key.items()),
                                      column, float(value), kind))
        return text

    def ci(self, row: Mapping, kind: str, source: str, key: Mapping[str, object]) -> str:
        """A row's interval ``[ci_low, ci_high]``, each end recorded; ``—`` without one."""
        if row.get("ci_low") is None:
            return "—"
        return (f"[{self.num(row['ci_low'], kind, source, key, 'ci_low')}, "
                f"{self.num(row['ci_high'], kind, source, key, 'ci_high')}]")


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
        return pl.read_parquet(path)
    if source.endswith(".json"):
        return pl.DataFrame([_flat_json(json.loads(path.read_text()))])
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
    """The numbers a page's hand-written prose states (outside generated blocks and code)."""
    out, inside, fence = [], False, False
    for line in page.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if MARK.match(line):
            inside = True
            continue
        if line.strip() == END:
            inside = False
            continue
        if inside or fence:
            continue
        text = re.sub(r"`[^`]*`", "", line)
        out += _NUMBER.findall(text)
    return out


def page_numbers(text: str) -> list[str]:
    """Every number of a generated block's text (names excluded, as :data:`_NUMBER`)."""
    return [m.strip() for m in _NUMBER.findall(re.sub(r"`[^`]*`", "", text))]


# ---------------------------------------------------------------- reading a run


def _flat_json(obj, prefix: str = "") -> dict:
    out = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out |= _flat_json(v, f"{prefix}{k}.")
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        out[prefix[:-1]] = float(obj)
    return out


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
        s = json.loads(path.read_text())
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

    def file(self, which: str) -> str:
        p, c = self.paths, (self.corpus, self.embedder, self.reranker)
        return self.rel({
            "summary": p.cell_table(*c, "summary"),
            "contrasts": p.report_cell(*c, "contrasts_marked.parquet"),
            "contrasts_raw": p.cell_table(*c, "contrasts"),
            "qtype": p.cell_table(*c, "contrasts_qtype"),
            "dose": p.cell_table(*c, "dose_response"),
            "cis": p.report_cell(*c, "condition_cis.parquet"),
            "section_recall": p.report_cell(*c, "section_recall.parquet"),
            "structure": p.report_corpus(self.corpus, "structure_quality.parquet"),
            "funnel": p.funnel(self.corpus),
            "bm25": p.bm25(self.corpus),
        }[which])

    def table(self, which: str) -> pl.DataFrame:
        name = self.file(which)
        if which == "contrasts" and not (self.results / name).exists():
            name = self.file("contrasts_raw")  # before the report ran: no guard marks
        path = self.results / name
        if not path.exists():
            raise ResultsError(f"{path}: missing (the run has not written it)")
        return pl.read_parquet(path)

    def source(self, which: str) -> str:
        name = self.file(which)
        if which == "contrasts" and not (self.results / name).exists():
            return self.file("contrasts_raw")
        return name

    def json(self, which: str) -> dict:
        path = self.results / self.file(which)
        if not path.exists():
            raise ResultsError(f"{path}: missing (the run has not written it)")
        return json.loads(path.read_text())

    @classmethod
    def find(cls, results: str | Path, corpus: str | None = None, embedder: str | None = None,
             reranker: str | None = None) -> Run:
        """The one cell of ``results`` matching the given names (each may be left out when
        only one value exists)."""
        results = Path(results)
        cells = sorted({tuple(p.relative_to(results).parts[:3])
                        for p in results.glob("*/*/*/summary.parquet")})
        want = (corpus, embedder, reranker)
        match = [c for c in cells if all(w is None or w == x for w, x in zip(want, c,
                                                                            strict=True))]
        if len(match) != 1:
            raise ResultsError(f"{results}: {len(match)} cells match corpus={corpus} "
                               f"embedder={embedder} reranker={reranker} (cells: "
                               f"{', '.join('/'.join(c) for c in cells) or 'none'}); name one")
        return cls(results, *match[0])


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


def block_means(run: Run, led: Ledger, **_) -> list[str]:
    s, src = run.table("summary"), run.source("summary")
    measures = list(dict.fromkeys(s["measure"].to_list()))
    conds = _conds(run)
    rows = []
    for m in measures:
        row = [m]
        for c in conds:
            v = s.filter((pl.col("condition") == c) & (pl.col("measure") == m))
            row.append(led.num(v["mean"][0], "4", src, {"condition": c, "measure": m}, "mean")
                       if v.height else "—")
        rows.append(row)
    out = _table(["measure", *conds], rows, "l" + "r" * len(conds))
    try:
        cis, csrc = run.table("cis"), run.source("cis")
    except ResultsError:
        return out
    m0 = measures[0]
    ci_row = [f"95% CI, {m0}"]
    for c in conds:
        r = cis.filter((pl.col("condition") == c) & (pl.col("measure") == m0))
        if not r.height:
            ci_row.append("—")
            continue
        ci_row.append(led.ci(r.row(0, named=True), "4", csrc, {"condition": c, "measure": m0}))
    out.append("| " + " | ".join(ci_row) + " |")
    return out


def _contrast_cells(r: Mapping, led: Ledger, src: str, *, paper_kind: str | None = None
                    ) -> list[str]:
    key = {"family": r.get("family"), "contrast": r["contrast"], "metric": r["metric"]}
    key = {k: v for k, v in key.items() if v is not None}

    def n(col, kind):
        return led.num(r.get(col), kind, src, key, col)

    ci = led.ci(r, "+4", src, key)
    return [n("delta", "+4"), ci, n("p", "p"),
            f"{n('p_holm', 'p')} (of {n('family_size', 'int')})",
            n("dz", "+3"), "±" + n("mde80_family", "4") if r.get("mde80_family") is not None
            else "—",
            ("±" + n("margin", "3") + ": " + n("p_tost_adj", "p"))
            if r.get("margin") is not None and r.get("p_tost_adj") is not None else "—",
            n("p_mixedlm", "p"), n("p_mixedlm_query", "p"), n("p_mixedlm_slope", "p"),
            row_answer(r)]


CONTRAST_HEADER = ["Δ", "95% CI", "p", "Holm p (family size)", "dz",
                   "MDE 80% (family level)", "margin: TOST p (adj.)", "p MixedLM (doc)",
                   "p MixedLM (query in doc)", "p MixedLM (doc slope)", "answer"]


def block_contrasts(run: Run, led: Ledger, metric: str = PAPER_METRIC,
                    family: str | None = None, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("metric") == metric)
    if family:
        df = df.filter(pl.col("family") == family)
    rows = []
    for r in df.iter_rows(named=True):
        rows.append([f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r.get("family", ""),
                     *_contrast_cells(r, led, src)])
    out = _table(["contrast", "family", *CONTRAST_HEADER], rows, "ll" + "r" * 10 + "l")
    notes = []
    for fam in dict.fromkeys(df["family"].to_list() if "family" in df.columns else []):
        sub = df.filter(pl.col("family") == fam)
        missing = sorted({m for v in sub["family_missing"].to_list() if v for m in v.split(",")})
        if missing:
            notes.append(f"The {fam} family as configured also holds {', '.join(missing)}, "
                         "which did not run: Holm counts them with p set to one.")
    flagged = [r for r in df.iter_rows(named=True) if r.get("not_testable")]
    for r in flagged:
        notes.append(f"{r['contrast']} not testable here: {r['not_testable']}.")
    return out + ([""] + notes if notes else [])


def block_contrast(run: Run, led: Ledger, name: str, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    df = df.filter(pl.col("contrast") == name)
    if not df.height:
        return [f"No row of `{src}` is named {name}: it did not run in this cell (a condition "
                "of it is not in the run's conditions)."]
    rows = [[r["metric"], *_contrast_cells(r, led, src)] for r in df.iter_rows(named=True)]
    return _table(["measure", *CONTRAST_HEADER], rows, "l" + "r" * 10 + "l")


def block_qtype(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    df, src = run.table("qtype"), run.source("qtype")
    df = df.filter(pl.col("metric") == metric)
    rows = []
    for r in df.iter_rows(named=True):
        key = {"family": r["family"], "contrast": r["contrast"], "metric": metric,
               "qtype": r["qtype"]}
        ci = led.ci(r, "+4", src, key)
        rows.append([f"{r['contrast']}: {r['cond_a']} − {r['cond_b']}", r["qtype"],
                     led.num(r["n_queries"], "int", src, key, "n_queries"),
                     led.num(r["n_zero_delta"], "int", src, key, "n_zero_delta"),
                     led.num(r["delta"], "+4", src, key, "delta"), ci,
                     led.num(r.get("p_holm"), "p", src, key, "p_holm")])
    return _table(["contrast", "question type", "questions", "Δ exactly zero", "Δ", "95% CI",
                   "Holm p (per type)"], rows, "llrrrrr")


def block_dose(run: Run, led: Ledger, **_) -> list[str]:
    df, src = run.table("dose"), run.source("dose")
    if not df.height:
        return [f"The depth ladder ({', '.join(DOSE_LADDER)}) did not run in this cell."]
    rows = []
    for r in df.iter_rows(named=True):
        key = {"metric": r["metric"]}
        rows.append([r["metric"], led.num(r["slope"], "+4", src, key, "slope"),
                     led.ci(r, "+4", src, key),
                     led.num(r["p"], "p", src, key, "p")])
    return _table(["measure", "slope per level", "95% CI", "p"], rows, "lrrr")


def block_section_recall(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    df, src = run.table("section_recall"), run.source("section_recall")
    if not df.height:
        return ["No two-stage condition ran in this cell."]
    lo, hi = PAPER_SECTION_RECALL.get(kind, (None, None))
    paper = ("—" if lo is None else
             f"{led.num(lo, '2', 'paper:section_recall', {'corpus': kind}, 'low')}–"
             f"{led.num(hi, '2', 'paper:section_recall', {'corpus': kind}, 'high')}")
    rows = []
    for r in df.iter_rows(named=True):
        key = {"condition": r["condition"]}
        rows.append([r["condition"],
                     f"{led.num(r['n_queries'], 'int', src, key, 'n_queries')} / "
                     f"{led.num(r['n_docs'], 'int', src, key, 'n_docs')}",
                     led.num(r["section_recall"], "3", src, key, "section_recall"),
                     led.ci(r, "3", src, key),
                     led.num(r["mean_backfill"], "1", src, key, "mean_backfill"),
                     led.num(r["share_backfilled"], "pct", src, key, "share_backfilled"),
                     paper])
    return _table(["condition", "queries / docs", "section recall", "95% CI",
                   "mean results backfilled", "queries with backfill", "paper"], rows,
                  "lrrrrrr")


def block_funnel(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    flat, src = _flat_json(run.json("funnel")), run.file("funnel")
    rows = [[k, led.num(v, "int" if float(v).is_integer() else "4", src, {}, k)]
            for k, v in flat.items() if not k.startswith("paper")]
    out = _table(["funnel field (funnel.json)", "value"], rows, "lr")
    if kind == "qasper":
        prow = [[k, led.num(v, "int" if float(v).is_integer() else "3", "paper:funnel",
                            {"step": k}, "value")] for k, v in PAPER_QASPER_FUNNEL.items()]
        out += ["", *_table(["paper (QASPER)", "value"], prow, "lr")]
    return out


def block_bm25(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    flat, src = _flat_json(run.json("bm25")), run.file("bm25")
    rows = [[k, led.num(v, "int" if float(v).is_integer() else "4", src, {}, k)]
            for k, v in flat.items() if not k.startswith("paper")]
    if kind in PAPER_BM25_GOLD_TOP1:
        rows.append([f"paper gold-top-1 ({kind})",
                     led.num(PAPER_BM25_GOLD_TOP1[kind], "3", "paper:bm25", {"corpus": kind},
                             "gold_top1")])
    return _table(["BM25 (bm25.json)", "value"], rows, "lr")


STRUCTURE_COLUMNS = ("sections_per_doc", "top_sections_per_doc", "single_top_share",
                     "depth_1", "depth_2", "depth_3", "depth_4plus", "docs_depth3_share",
                     "section_span_identity", "chunk_span_identity", "boundary_precision",
                     "boundary_recall", "boundary_f1", "top_boundary_f1")


def block_structure(run: Run, led: Ledger, kind: str = "qasper", **_) -> list[str]:
    df, src = run.table("structure"), run.source("structure")
    cols = [c for c in df.columns if c in STRUCTURE_COLUMNS or c.endswith(("_chance",
                                                                          "_kappa"))]
    sources = df["source"].to_list()
    rows = []
    for c in cols:
        rows.append([c, *[led.num(df.filter(pl.col("source") == s)[c][0], "3", src,
                                  {"source": s}, c) for s in sources]])
    out = _table(["measure", *sources], rows, "l" + "r" * len(sources))
    if kind in PAPER_CHUNK_SPAN_IDENTITY:
        out += ["", f"Paper's LLM inducer, chunk spans identical to gold ({kind}): "
                    f"{led.num(PAPER_CHUNK_SPAN_IDENTITY[kind], '3', 'paper:chunk_span_identity', {'corpus': kind}, 'identity')}."]  # noqa: E501
    return out


def _inside(value: float, row: Mapping | None) -> bool:
    """``value`` lies in the row's 95% interval (``ci_low`` … ``ci_high``, both included)."""
    return (row is not None and row.get("ci_low") is not None
            and row["ci_low"] <= value <= row["ci_high"])


def against_paper(paper_value: float, here: Mapping | None,
                  controls: Sequence[tuple[str, Mapping | None]]) -> str:
    """The one rule the side-by-side applies to a paper value (a contrast's Δ or a mean):

    1. *consistent* when the paper's value lies in this run's 95% interval of the same
       quantity;
    2. else *explained by* the first measured control (in the order given) whose 95%
       interval holds the paper's value: the control removes one known difference between
       this run and the paper, and with it removed the run agrees with the paper;
    3. else *unexplained*.
    """
    if _inside(paper_value, here):
        return "consistent: the paper's value lies in this run's 95% CI"
    for label, row in controls:
        if _inside(paper_value, row):
            return f"explained by {label}: the paper's value lies in its 95% CI"
    return "unexplained: no measured control holds the paper's value in its 95% CI"


def _sensitivity_run(run: Run, embedder: str | None) -> Run | None:
    if not embedder:
        return None
    other = Run(run.results, run.corpus, embedder, run.reranker)
    return other if (run.results / other.file("summary")).exists() else None


def _contrast_row(df: pl.DataFrame, a: str, b: str, metric: str) -> dict | None:
    sub = df.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                    & (pl.col("metric") == metric))
    return sub.row(0, named=True) if sub.height else None


def block_paper(run: Run, led: Ledger, kind: str = "qasper", control_embedder: str = "",
                **_) -> list[str]:
    s, src = run.table("summary"), run.source("summary")
    other = _sensitivity_run(run, control_embedder)
    other_label = f"the embedder {control_embedder}"
    paper = PAPER_MEANS[kind]
    conds = _conds(run)
    try:
        cis = run.table("cis")
    except ResultsError:
        cis = None
    ocis = None
    if other is not None:
        try:
            ocis = other.table("cis")
        except ResultsError:
            ocis = None

    def ci_row(table, c):
        if table is None:
            return None
        r = table.filter((pl.col("condition") == c) & (pl.col("measure") == PAPER_METRIC))
        return r.row(0, named=True) if r.height else None

    row_p = [led.num(paper[c], "3", "paper:means", {"corpus": kind, "condition": c}, "mean")
             if c in paper else "— (beyond the paper)" for c in conds]
    here, verdicts = [], []
    for c in conds:
        v = s.filter((pl.col("condition") == c) & (pl.col("measure") == PAPER_METRIC))
        here.append(led.num(v["mean"][0], "3", src, {"condition": c, "measure": PAPER_METRIC},
                            "mean") if v.height else "—")
        verdicts.append(against_paper(paper[c], ci_row(cis, c),
                                      [(other_label, ci_row(ocis, c))] if other else [])
                        .split(":")[0] if c in paper else "—")
    out = _table(["", *conds], [["paper", *row_p], ["here", *here],
                                ["against the paper", *verdicts]], "l" + "r" * len(conds))
    df, csrc = run.table("contrasts"), run.source("contrasts")
    odf = other.table("contrasts") if other is not None else None
    df = df.filter(pl.col("metric") == PAPER_METRIC)
    pairs = [(r["cond_a"], r["cond_b"]) for r in df.iter_rows(named=True)
             if paper_contrast(kind, r["cond_a"], r["cond_b"]) is not None]
    pairs += [p for p in PAPER_CONTRASTS.get(kind, {}) if p not in pairs]
    rows = []
    for a, b in pairs:
        pd = paper_contrast(kind, a, b)
        r = _contrast_row(df, a, b, PAPER_METRIC)
        published = (a, b) in PAPER_CONTRASTS.get(kind, {})
        ptxt = Ledger.format(pd, "+4")
        led.entries.append(Entry(ptxt, "paper:contrasts", (), "=", pd, "+4"))
        controls = []
        for ca, cb in CONTROLS.get((a, b), ()):
            crow = _contrast_row(df, ca, cb, PAPER_METRIC)
            if crow is not None:
                controls.append((f"{crow['contrast']} ({ca} − {cb})", crow))
        if odf is not None:
            controls.append((other_label, _contrast_row(odf, a, b, PAPER_METRIC)))
        if r is None:
            name, cells = f"{a} − {b}", ["not run here", "—", "—"]
        else:
            key = {"family": r.get("family"), "contrast": r["contrast"],
                   "metric": PAPER_METRIC}
            name = f"{r['contrast']}: {a} − {b}"
            cells = [led.num(r["delta"], "+4", csrc, key, "delta"),
                     led.ci(r, "+4", csrc, key), row_answer(r)]
        rows.append([name, ptxt + ("" if published else " (from the means)"), *cells,
                     against_paper(pd, r, controls)])
    out += ["", *_table(["contrast", "paper Δ", "here Δ", "here 95% CI", "here: answer",
                         "against the paper"], rows, "lrrrll")]
    if control_embedder and other is None:
        out += ["", f"The control cell `{run.corpus}/{control_embedder}/{run.reranker}` is not "
                "in this results folder, so no value above could be explained by it."]
    return out


def block_sensitivity(run: Run, led: Ledger, embedder: str, metric: str = PAPER_METRIC,
                      **_) -> list[str]:
    """The cell's levels and contrasts beside a second cell of the same results folder that
    differs only by its embedder entry (e.g. the same model at another ``max_seq_length``)."""
    other = Run(run.results, run.corpus, embedder, run.reranker)
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
                    row_answer(x)]
        row.append("same" if row_answer(r) == row_answer(o) else "differs")
        rows.append(row)
    out += ["", *_table(["contrast", f"Δ `{run.embedder}`", "95% CI", "answer",
                         f"Δ `{embedder}`", "95% CI", "answer", "answers"], rows,
                        "lrrlrrll")]
    return out


def block_claims(run: Run, led: Ledger, metric: str = PAPER_METRIC, **_) -> list[str]:
    df, src = run.table("contrasts"), run.source("contrasts")
    out = []
    for r in df.filter(pl.col("metric") == metric).iter_rows(named=True):
        key = {"family": r.get("family"), "contrast": r["contrast"], "metric": metric}
        where = f"`{src}` row family={r.get('family')}, contrast={r['contrast']}, metric={metric}"
        ph = led.num(r.get("p_holm"), "p", src, key, "p_holm")
        fs = led.num(r.get("family_size"), "int", src, key, "family_size")
        out.append(f"- {r['contrast']} ({r['cond_a']} − {r['cond_b']}, {r.get('family')}): "
                   f"**{row_answer(r)}** — Δ {led.num(r['delta'], '+4', src, key, 'delta')}, "
                   f"Holm p {ph} over a family of {fs} ({where}).")
    return out


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
    "run": block_run, "means": block_means, "contrasts": block_contrasts,
    "contrast": block_contrast, "qtype": block_qtype, "dose": block_dose,
    "section_recall": block_section_recall, "funnel": block_funnel, "bm25": block_bm25,
    "structure": block_structure, "paper": block_paper, "claims": block_claims,
    "timing": block_timing, "embedding": block_embedding, "hashes": block_hashes,
    "sensitivity": block_sensitivity,
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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m structablate.report.results",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the results folder of a run")
    ap.add_argument("--page", required=True, help="the Markdown page whose blocks to rewrite")
    ap.add_argument("--out", help="write here instead of rewriting --page")
    ap.add_argument("--corpus")
    ap.add_argument("--embedder")
    ap.add_argument("--reranker")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the page differs from what the run gives")
    a = ap.parse_args(argv)
    try:
        run = Run.find(a.results, a.corpus, a.embedder, a.reranker)
        page_path = Path(a.page)
        text = page_path.read_text(encoding="utf-8")
        stated = prose_numbers(text)
        if stated:
            raise ResultsError(f"{page_path}: the prose states numbers of its own "
                               f"({', '.join(stated[:10])}); put them in generated blocks")
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
        return 0 if new == text else 1
    Path(a.out or a.page).write_text(new, encoding="utf-8")
    print(f"wrote {a.out or a.page}: {len(led.entries)} numbers from {run.results}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
