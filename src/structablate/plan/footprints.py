"""Measured footprints: the peak RSS, CPU and wall seconds of each rule's jobs, read from the
benchmark files a run wrote (Snakemake's ``benchmark:`` TSVs under ``results/benchmarks/``),
from which the rates of :mod:`structablate.plan.rules` are set and checked.

A benchmark file's path names its rule by the pattern the rule's ``benchmark:`` gives
(:data:`BENCHMARKS`, the same patterns as ``rules/*.smk``; ``tests/test_footprints.py``
checks that they agree); its columns ``max_rss`` (MB, 2^20 bytes as psutil reports them),
``cpu_time`` (s) and ``s`` (wall s) are read from its last row (a repeated benchmark keeps
one row per repeat: the largest is taken).

Command line::

    python -m structablate.plan.footprints results/benchmarks          # the Markdown table
    python -m structablate.plan.footprints results/benchmarks --tsv    # per rule and corpus

The Markdown table is docs/cluster.md's "Measured footprints"; the TSV is
``resources/footprints.tsv``'s body (the peaks the bookings are tested against).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BENCHMARKS", "Footprint", "markdown_table", "read_benchmarks", "read_footprints",
           "rule_of", "tsv_rows"]

BENCHMARKS: tuple[tuple[str, str], ...] = (
    ("tokenize_corpus", "{corpus}/tokenize_corpus"),
    ("chunk", "{corpus}/chunk_{chunkset}"),
    ("contextualize", "{corpus}/contextualize_{chunkset}"),
    ("induce_structure", "{corpus}/induce_structure"),
    ("build_qasper", "{corpus}/build_qasper"),
    ("build_wikipedia", "{corpus}/build_wikipedia"),
    ("build_user_documents", "{corpus}/build_user_documents"),
    ("map_user_questions", "{corpus}/map_user_questions"),
    ("generate_queries", "{corpus}/generate_queries"),
    ("bm25_check", "{corpus}/bm25_check"),
    ("embed_queries", "{corpus}/{embedder}/embed_queries"),
    ("embed_chunks", "{corpus}/{embedder}/embed_{chunkset}"),
    ("score", "{corpus}/{embedder}/{reranker}/score"),
    ("summarize_cell", "{corpus}/{embedder}/{reranker}/summarize"),
    ("summary_markdown", "summary_markdown"),
    ("contrasts", "{corpus}/{embedder}/{reranker}/contrasts"),
    ("cell_statistics", "{corpus}/{embedder}/{reranker}/cell_statistics"),
    ("trec_export", "{corpus}/{embedder}/{reranker}/trec_{condition}"),
    ("structure_quality", "{corpus}/structure_quality"),
    ("report_cell", "{corpus}/{embedder}/{reranker}/report_cell"),
    ("report_corpus", "{corpus}/report_corpus"),
    ("report_page", "report_page"),
    ("retrieve", "{corpus}/{embedder}/retrieve_{condition}"),
    ("rerank", "{corpus}/{embedder}/{reranker}/rerank_{condition}"),
)
"""Rule -> its ``benchmark:`` pattern (without the ``.tsv``), in the order they are tried: a
file matching an earlier pattern is that rule's (``embed_queries`` before
``embed_{chunkset}``)."""


def _regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", pattern)
    out = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)"
                  for i, p in enumerate(parts))
    return re.compile(out + r"\.tsv")


_REGEXES = [(rule, _regex(p)) for rule, p in BENCHMARKS]


def rule_of(relative: str) -> tuple[str, str] | None:
    """``(rule, corpus)`` of a benchmark file by its path relative to the benchmarks folder
    (``/``-separated); corpus ``""`` for a run-level rule; None for a path no rule writes."""
    for rule, regex in _REGEXES:
        m = regex.fullmatch(relative)
        if m:
            return rule, m.groupdict().get("corpus", "")
    return None


@dataclass(frozen=True)
class Footprint:
    """One job's measurement: its rule and corpus, peak RSS in MB (``max_rss``), CPU seconds
    (``cpu_time``) and wall seconds (``s``), and its file relative to the folder."""

    rule: str
    corpus: str
    path: str
    rss_mb: float
    cpu_s: float
    wall_s: float


def read_benchmarks(folder: str | Path) -> list[Footprint]:
    """Every job's :class:`Footprint` under ``folder`` (a run's ``results/benchmarks``),
    sorted by rule and path. A file no rule writes, or one without the columns, is refused
    (ValueError naming the file and what it lacks)."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: no such folder; give a run's results/benchmarks")
    out = []
    for path in sorted(root.rglob("*.tsv")):
        rel = path.relative_to(root).as_posix()
        found = rule_of(rel)
        if found is None:
            raise ValueError(f"{path}: no rule's benchmark pattern matches {rel!r}; add the "
                             "rule's pattern to structablate.plan.footprints.BENCHMARKS")
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        try:
            rss = max(float(r["max_rss"]) for r in rows)
            cpu = max(float(r["cpu_time"]) for r in rows)
            wall = max(float(r["s"]) for r in rows)
        except (KeyError, ValueError) as err:
            raise ValueError(f"{path}: no numeric max_rss, cpu_time and s columns ({err}); "
                             "is it a Snakemake benchmark file?") from err
        out.append(Footprint(found[0], found[1], rel, rss, cpu, wall))
    return sorted(out, key=lambda f: (f.rule, f.path))


def _span(values: list[float], digits: int) -> str:
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def markdown_table(prints: Iterable[Footprint]) -> str:
    """The footprint table: per rule the number of jobs and the ranges over them of peak RSS
    (MB), CPU seconds and wall seconds, as docs/cluster.md shows it."""
    by_rule: dict[str, list[Footprint]] = {}
    for f in prints:
        by_rule.setdefault(f.rule, []).append(f)
    lines = ["| rule | jobs | peak RSS MB | CPU s | wall s |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for rule in sorted(by_rule):
        fs = by_rule[rule]
        lines.append(f"| `{rule}` | {len(fs)} | {_span([f.rss_mb for f in fs], 0)} | "
                     f"{_span([f.cpu_s for f in fs], 1)} | {_span([f.wall_s for f in fs], 1)} |")
    return "\n".join(lines) + "\n"


TSV_FIELDS = ("rule", "corpus", "jobs", "peak_rss_mb")


def tsv_rows(prints: Iterable[Footprint]) -> list[dict[str, str]]:
    """Per rule and corpus: the number of jobs and their largest peak RSS (MB, rounded up),
    the rows of ``resources/footprints.tsv``."""
    groups: dict[tuple[str, str], list[float]] = {}
    for f in prints:
        groups.setdefault((f.rule, f.corpus), []).append(f.rss_mb)
    return [{"rule": r, "corpus": c, "jobs": str(len(v)), "peak_rss_mb": str(-int(-max(v) // 1))}
            for (r, c), v in sorted(groups.items())]


def read_footprints(path: str | Path) -> list[dict[str, str]]:
    """The rows of a footprints TSV (``resources/footprints.tsv``: ``#`` lines are its
    provenance, then a header of :data:`TSV_FIELDS`)."""
    lines = [ln for ln in Path(path).read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))
    if not rows or set(TSV_FIELDS) - set(rows[0]):
        raise ValueError(f"{path}: expected a header of {', '.join(TSV_FIELDS)} (tab-separated) "
                         "after the # lines")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m structablate.plan.footprints",
        description="Print the measured footprint table of a run's benchmark files.")
    ap.add_argument("folder", help="a run's results/benchmarks folder")
    ap.add_argument("--tsv", action="store_true",
                    help="print per rule and corpus the jobs and peak RSS (footprints.tsv)")
    args = ap.parse_args(argv)
    try:
        prints = read_benchmarks(args.folder)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.tsv:
        w = csv.DictWriter(sys.stdout, TSV_FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(tsv_rows(prints))
    else:
        sys.stdout.write(markdown_table(prints))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
