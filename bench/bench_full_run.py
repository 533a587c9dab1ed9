"""The full QASPER through the whole offline grid (config/qasper-full-cpu.yaml), timed per rule.

Runs the workflow with the committed configuration on the three v0.3 files in ``--qasper`` and
prints, from the jobs' Snakemake ``benchmark:`` files, the wall time, CPU time and peak memory
(RSS) of every job and the totals per rule; from the embedding statistics, the texts embedded
against those served from the embedding cache; and the sha256 of every per-query score table.
``--summarize`` prints the tables of an existing results folder without running anything (a
run in progress shows the jobs done).

    python bench/bench_full_run.py --qasper DATA/qasper --results RESULTS [--cores 2]
    python bench/bench_full_run.py --results RESULTS --summarize

The goal on a 2-core machine is the whole run in at most 60 minutes (issue 19); the measured
run and where its time went: docs/results/qasper-full-cpu.md. A rerun in the same results
folder does only what is missing (the embedding cache keeps every vector).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from structablate.report.benchmarks import (
    Benchmark,
    embedding_counts,
    read_benchmarks,
    score_hashes,
)

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "qasper-full-cpu.yaml"


def markdown(results: Path) -> str:
    """The per-job and per-rule tables (Markdown)."""
    rows = read_benchmarks(results)
    lines = ["| job | wall s | CPU s | peak RSS MB |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r.job} | {r.s:.0f} | {r.cpu_s:.0f} | {r.max_rss_mb:.0f} |" for r in rows]
    by_rule: dict[str, list[Benchmark]] = defaultdict(list)
    for r in rows:
        by_rule[r.rule].append(r)
    lines += ["", "| rule | jobs | wall s (sum) | CPU s (sum) | peak RSS MB (max) |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for rule, rs in sorted(by_rule.items(), key=lambda kv: -sum(r.s for r in kv[1])):
        lines.append(f"| {rule} | {len(rs)} | {sum(r.s for r in rs):.0f} | "
                     f"{sum(r.cpu_s for r in rs):.0f} | {max(r.max_rss_mb for r in rs):.0f} |")
    lines.append(f"| **all** | {len(rows)} | {sum(r.s for r in rows):.0f} | "
                 f"{sum(r.cpu_s for r in rows):.0f} | "
                 f"{max((r.max_rss_mb for r in rows), default=0):.0f} |")
    emb = embedding_counts(results)
    if emb:
        lines += ["", "| embedding job | texts | unique | computed | from cache | texts/s |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {e.job} | {e.texts} | {e.unique_texts} | {e.computed} | "
                  f"{e.cache_hits} | {e.texts_per_second} |" for e in emb]
        lines.append(f"| **all** | {sum(e.texts for e in emb)} | "
                     f"{sum(e.unique_texts for e in emb)} | {sum(e.computed for e in emb)} | "
                     f"{sum(e.cache_hits for e in emb)} | |")
    hashes = score_hashes(results)
    if hashes:
        lines += ["", "| per-query score table | sha256 |", "| --- | --- |"]
        lines += [f"| {name} | `{digest}` |" for name, digest in hashes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qasper", help="folder with the three QASPER v0.3 files")
    ap.add_argument("--results", required=True, help="results folder of the run")
    ap.add_argument("--cores", default="2")
    ap.add_argument("--summarize", action="store_true", help="only print the tables")
    args = ap.parse_args(argv)
    results = Path(args.results).resolve()
    if not args.summarize:
        if not args.qasper:
            ap.error("--qasper is required unless --summarize")
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(REPO), "--cores", args.cores, "--configfile", str(CONFIG),
               "--config", f"corpora={{qasper: {{data_dir: {Path(args.qasper).resolve()}}}}}",
               f"results={results}"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO)
        print(f"TABLE|full QASPER run ({args.cores} cores)|{time.perf_counter() - t0:.0f} s|"
              f"60 min goal||exit {proc.returncode}", flush=True)
        if proc.returncode:
            sys.exit(proc.returncode)
    print(markdown(results))


if __name__ == "__main__":
    main()
