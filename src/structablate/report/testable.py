"""The guard's mark on every contrast row, so it travels with the numbers.

:func:`mark_contrasts` adds ``not_testable`` (the structure-quality guard's reasons, joined by
"; "; null when the comparison is testable) and ``answer`` (the decision in words, or "not
testable here") to a contrasts table. The report's cell tables, the forest and dose-response
figures, the summary and the verdict page all read these two columns, so a comparison the guard
rejects is never shown like a confirmed result anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from structablate.settings import GuardSettings

from .blocks import row_answer
from .guard import comparison_flags

NOT_TESTABLE = "not testable here"


def mark_contrasts(
    contrasts: pl.DataFrame,
    *,
    quality: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
    ranking: pl.DataFrame | None = None,
    guard: GuardSettings | None = None,
) -> pl.DataFrame:
    """``contrasts`` with ``not_testable`` and ``answer`` columns (module docstring).

    ``quality``/``checks``: the corpus's structure-quality table and comparison checks;
    ``ranking``: the cell's ranking identity. Without them only what the row itself shows
    (per-query deltas all 0) can flag it."""
    if "not_testable" in contrasts.columns:
        contrasts = contrasts.drop("not_testable", "answer", strict=False)
    reasons, answers = [], []
    for r in contrasts.iter_rows(named=True):
        flags = comparison_flags(r["cond_a"], r["cond_b"], quality=quality, checks=checks,
                                 ranking=ranking, settings=guard, row=r)
        reasons.append("; ".join(flags) if flags else None)
        answers.append(NOT_TESTABLE if flags else row_answer(r))
    return contrasts.with_columns(pl.Series("not_testable", reasons, dtype=pl.String),
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
    neighbouring rungs that do not differ here, and induced structure too far from gold to
    stand for the documents' structure (asked once, of the first and last rung)."""
    out: list[str] = []
    for a, b in zip(rungs, rungs[1:], strict=False):
        for reason in comparison_flags(a, b, quality=quality, checks=checks, ranking=ranking,
                                       settings=guard, gold_agreement=False):
            out.append(f"{a} vs {b}: {reason}")
    if len(rungs) > 1:
        # the agreement reason alone: what the gold check adds to the flags of the end rungs
        ends = dict(quality=quality, settings=guard)
        without = comparison_flags(rungs[-1], rungs[0], gold_agreement=False, **ends)
        out += [r for r in comparison_flags(rungs[-1], rungs[0], **ends) if r not in without]
    return out
