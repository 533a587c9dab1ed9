"""Benchmark: which contrast rows of a shipped results folder change decision with the
bootstrap's seed, and whether the Monte-Carlo flag (:func:`structablate.stats.decision.
monte_carlo_flags`) marks them. Every cell's contrasts are recomputed from the shipped
per-question scores with the run's configuration, at the run's seed and at ``--seeds`` others;
a row "flips" when any other seed gives it another decision.

    python bench/bench_monte_carlo.py [docs/results/qasper-two-embedders/tables] [--seeds 5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from structablate.report.rederive import run_settings
from structablate.report.results import Run
from structablate.stats.cell import analyze_cell
from structablate.stats.decision import monte_carlo_flags, row_decision


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tables", nargs="?", default="docs/results/qasper-two-embedders/tables")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    folder = Path(args.tables)
    s = run_settings(folder)
    flips, flagged, total = set(), set(), 0
    for cell in Run.cells(folder):
        run = Run(folder, *cell)
        conds = list(dict.fromkeys(run.table("summary")["condition"].to_list()))
        scores = {c: run.scores()[c] for c in conds}
        base: dict = {}
        for seed in [s.seed, *range(1, args.seeds + 1)]:
            t = analyze_cell(scores, *cell, s.statistics, seed)["contrasts"]
            rows = {(cell[1], r["contrast"], r["metric"]): r for r in t.iter_rows(named=True)}
            if not base:
                base = rows
                total += len(rows)
                flagged |= {k for k, r in rows.items()
                            if monte_carlo_flags(r, s.statistics.bootstrap_iters)}
                continue
            flips |= {k for k, r in rows.items() if row_decision(r) != row_decision(base[k])}
    print(f"{total} rows; {len(flips)} change decision with one of {args.seeds} other seeds: "
          f"{sorted(flips)}")
    print(f"{len(flagged)} flagged at the run's seed: {sorted(flagged)}")
    print(f"flagged among the rows that change: {len(flips & flagged)} of {len(flips)}")


if __name__ == "__main__":
    main()
