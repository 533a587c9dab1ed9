"""What a run cost: each job's Snakemake benchmark, each embedding job's counts, and the
hashes of the per-question score tables, read from a results folder as typed records, and the
results-page blocks that print them (``timing``, ``embedding``, ``hashes``)."""

from __future__ import annotations

import csv
import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from .blocks import format_number
from .folder import read_json
from .render import table_lines

if TYPE_CHECKING:
    from .ledger import Ledger
    from .run import Run


@dataclass(frozen=True)
class JobTimes:
    """One Snakemake benchmark file (``benchmarks/**.tsv``): ``s`` wall seconds, ``cpu_s``
    CPU seconds, ``max_rss_mb`` peak resident memory in MB; NaN where Snakemake measured
    nothing (it writes ``NA``)."""

    s: float
    cpu_s: float
    max_rss_mb: float

    @classmethod
    def read(cls, path: Path) -> JobTimes:
        with path.open() as fh:
            rec = next(csv.DictReader(fh, delimiter="\t"), None) or {}

        def num(key: str) -> float:
            try:
                return float(rec.get(key) or "nan")
            except ValueError:  # Snakemake writes "NA" where it measured nothing
                return float("nan")

        return cls(s=num("s"), cpu_s=num("cpu_time"), max_rss_mb=num("max_rss"))


@dataclass(frozen=True)
class Benchmark(JobTimes):
    """One job's benchmark: ``job`` (its name under ``benchmarks/``), ``rule`` (the name
    before a wildcard suffix), ``file`` (relative to the results folder)."""

    job: str = ""
    rule: str = ""
    file: str = ""


_PER_CONDITION = {"embed": "embed_chunks", "chunk": "chunk", "retrieve": "retrieve",
                  "rerank": "rerank", "trec": "trec_export"}


def _rule_of(stem: str) -> str:
    """The rule of a benchmark file's stem (rules/*.smk name them ``<rule or short
    name>[_<chunkset or condition>]``)."""
    if stem in ("embed_queries", "summarize"):
        return {"summarize": "summarize_cell"}.get(stem, stem)
    head, sep, _ = stem.partition("_")
    return _PER_CONDITION[head] if sep and head in _PER_CONDITION else stem


def read_benchmarks(results: str | Path) -> list[Benchmark]:
    """One record per job, from ``{results}/benchmarks/**.tsv``, in path order."""
    root = Path(results) / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        job = path.relative_to(root).with_suffix("").as_posix()
        rows.append(Benchmark(**vars(JobTimes.read(path)), job=job,
                              rule=_rule_of(job.rsplit("/", 1)[-1]),
                              file=f"benchmarks/{job}.tsv"))
    return rows


@dataclass(frozen=True)
class EmbeddingCount:
    """One embedding job's counts (``{corpus}/{embedder}/embeddings/{name}.json``): texts,
    unique texts, computed, served from the cache, texts/s, truncated; None where the job's
    report lacks the field."""

    job: str
    file: str
    texts: int | None = None
    unique_texts: int | None = None
    computed: int | None = None
    cache_hits: int | None = None
    texts_per_second: float | None = None
    truncated: int | None = None


COUNTED = tuple(f.name for f in fields(EmbeddingCount))[2:]
"""The fields of an embedding job's report :class:`EmbeddingCount` reads."""


def embedding_counts(results: str | Path) -> list[EmbeddingCount]:
    """Per embedding job, in path order (:class:`EmbeddingCount`)."""
    results = Path(results)
    out = []
    for path in sorted(results.glob("*/*/embeddings/*.json")):
        s = read_json(path)
        out.append(EmbeddingCount(job=path.relative_to(results).with_suffix("").as_posix(),
                                  file=path.relative_to(results).as_posix(),
                                  **{k: s[k] for k in COUNTED if k in s}))
    return out


def score_hashes(results: str | Path) -> list[tuple[str, str]]:
    """``(path under results, sha256)`` of every per-query score table."""
    results = Path(results)
    return [(p.relative_to(results).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(results.glob("*/*/*/scores/*.parquet"))]


def block_timing(run: Run, led: Ledger, **_) -> list[str]:
    """Per rule: its jobs, their wall and CPU seconds summed, their peak memory."""
    by_rule: dict[str, list[Benchmark]] = defaultdict(list)
    for r in read_benchmarks(run.results):
        by_rule[r.rule].append(r)
    rows = []
    for rule, jobs in sorted(by_rule.items()):
        wall = sum(j.s for j in jobs if not math.isnan(j.s))
        cpu = sum(j.cpu_s for j in jobs if not math.isnan(j.cpu_s))
        rss = max((j.max_rss_mb for j in jobs if not math.isnan(j.max_rss_mb)),
                  default=float("nan"))
        for value in (wall, cpu, rss):
            led.derived(value, "s", source="benchmarks")
        rows.append([rule, format_number(len(jobs), "int"), format_number(wall, "s"),
                     format_number(cpu, "s"), format_number(rss, "s")])
        led.derived(len(jobs), "int", source="benchmarks")
    return table_lines(["rule", "jobs", "wall s (sum)", "CPU s (sum)", "peak RSS MB (max)"],
                       rows, "lrrrr")


def block_embedding(run: Run, led: Ledger, **_) -> list[str]:
    """Per embedding job: texts, unique texts, computed, from the cache, texts/s."""
    rows = []
    for r in embedding_counts(run.results):
        cells = [r.job]
        for col, kind in (("texts", "int"), ("unique_texts", "int"), ("computed", "int"),
                          ("cache_hits", "int"), ("texts_per_second", "1")):
            value = getattr(r, col)
            cells.append(led.num(value, kind, r.file, {}, col) if value is not None else "—")
        rows.append(cells)
    return table_lines(["embedding job", "texts", "unique", "computed", "from cache",
                        "texts/s"], rows, "lrrrrr")


def block_hashes(run: Run, led: Ledger, **_) -> list[str]:
    """The sha256 of each of the cell's per-question score tables."""
    return table_lines(["per-query score table", "sha256"],
                       [[f"`{p}`", f"`{h}`"] for p, h in score_hashes(run.results)
                        if p.startswith(f"{run.corpus}/{run.embedder}/{run.reranker}/")], "ll")
