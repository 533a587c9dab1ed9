"""The rule of a results page: every number it prints comes from the run, and says from where.

A generated block records each number it prints in a :class:`Ledger` (the file, row and
column it came from); :func:`verify_ledger` reads each source again and checks the printed
text is that value formatted. The hand-written prose between blocks may hold no number of its
own (:func:`prose_numbers`). The page's block markers (:data:`MARK`, :data:`END`) and its
statement of where its tables are (:data:`SOURCE`) are read here too, so the prose is told
apart from the blocks in one place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from structablate.paper import (
    PAPER_BM25_GOLD_TOP1,
    PAPER_CHUNK_SPAN_IDENTITY,
    PAPER_MEANS,
    PAPER_QASPER_FUNNEL,
    PAPER_SECTION_RECALL,
)

from .benchmarks import JobTimes
from .blocks import Cite, flat_fields, format_number, interval
from .folder import ResultsError, read_json, read_table
from .guard import Flags

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

    def derived(self, value: float | None, kind: str, source: str = "derived") -> str:
        """A value computed on the page (a share, a bootstrap of two contrasts, a sum over
        jobs: ``source`` says which), recorded for its formatting only (column ``"="``)."""
        text = self.format(value, kind)
        if text != "—":
            self.entries.append(Entry(text, source, (), "=", float(value), kind))
        return text

    def flag_lines(self) -> list[str]:
        """The sentences of the page's flags that no earlier block printed (each once a
        page)."""
        return self.flags.notes(new_only=True)


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
        return pl.DataFrame([vars(JobTimes.read(path))])
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

