"""The guard's mark on every contrast row, so it travels with the numbers.

:func:`mark_contrasts` adds ``guard`` (the structure-quality guard's reasons, each "about
WHAT: DETAIL", joined by "; "; null when the guard has nothing to say) and ``answer`` (the
decision in words, followed by what a guarded answer is about) to a contrasts table. The
guard qualifies, never hides: a guarded row keeps the answer the one decision rule gives it
(:func:`structablate.stats.decision.row_words`). The report's cell tables, the forest and
dose-response figures, the summary and the verdict page all read these columns (a table
written before this rule has ``not_testable`` instead of ``guard``:
:func:`structablate.report.guard.row_guard` reads either).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from structablate.settings import GuardSettings

from .blocks import row_answer
from .guard import comparison_flags

GUARD_COLUMN = "guard"
OLD_GUARD_COLUMN = "not_testable"
"""The column an older table holds the guard's reasons in (the answer then read "not testable
here"; :func:`structablate.report.guard.row_guard` reads it as reasons that qualify)."""


def mark_contrasts(
    contrasts: pl.DataFrame,
    *,
    quality: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
    ranking: pl.DataFrame | None = None,
    guard: GuardSettings | None = None,
) -> pl.DataFrame:
    """``contrasts`` with ``guard`` and ``answer`` columns (module docstring); an older mark
    (``not_testable``) is dropped and measured again.

    ``quality``/``checks``: the corpus's structure-quality table and comparison checks;
    ``ranking``: the cell's ranking identity. Without them only what the row itself shows
    (per-query deltas all 0) can flag it."""
    contrasts = contrasts.drop(GUARD_COLUMN, OLD_GUARD_COLUMN, "answer", strict=False)
    reasons, answers = [], []
    for r in contrasts.iter_rows(named=True):
        flags = comparison_flags(r["cond_a"], r["cond_b"], quality=quality, checks=checks,
                                 ranking=ranking, settings=guard, row=r)
        reasons.append("; ".join(flags) if flags else None)
        answers.append(row_answer({**r, GUARD_COLUMN: reasons[-1]}))
    return contrasts.with_columns(pl.Series(GUARD_COLUMN, reasons, dtype=pl.String),
                                  pl.Series("answer", answers, dtype=pl.String))


def dose_flags(
    rungs: Sequence[str],
    *,
    quality: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
    ranking: pl.DataFrame | None = None,
    guard: GuardSettings | None = None,
) -> list[str]:
    """The guard's reasons against the depth ladder ``rungs`` (e.g. A2, A3-d1, A3-d2, A3):
    neighbouring rungs that do not differ here ("about WHAT: A3-d2 vs A3: DETAIL"), and
    induced structure too far from gold to stand for the documents' structure (asked once, of
    the first and last rung)."""
    out: list[str] = []
    for a, b in zip(rungs, rungs[1:], strict=False):
        for reason in comparison_flags(a, b, quality=quality, checks=checks, ranking=ranking,
                                       settings=guard, gold_agreement=False):
            about, _, detail = reason.partition(": ")
            out.append(f"{about}: {a} vs {b}: {detail}")
    if len(rungs) > 1:
        # the agreement reason alone: what the gold check adds to the flags of the end rungs
        ends = dict(quality=quality, settings=guard)
        without = comparison_flags(rungs[-1], rungs[0], gold_agreement=False, **ends)
        out += [r for r in comparison_flags(rungs[-1], rungs[0], **ends) if r not in without]
    return out
