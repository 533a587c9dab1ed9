"""A contrast row as a results page prints it: its cells and its answer, qualified by the
page's lettered flags, the run's replicates and the routing figures, each number recorded in
the page's :class:`~structablate.report.ledger.Ledger`; the lines about the role of a table's
rows and the Monte-Carlo error of its p-values. Shared by the blocks of
:mod:`~structablate.report.results` and :mod:`~structablate.report.comparisons`."""

from __future__ import annotations

import math
from collections.abc import Mapping

import polars as pl

from structablate.stats.decision import no_spread, row_decision, row_words

from .blocks import CONTRAST_CELLS, contrast_cells, routing_row, routing_words, row_answer
from .folder import ResultsError
from .ledger import Ledger
from .run import Run

CONTRAST_ALIGN = "r" * (len(CONTRAST_CELLS) - 2) + "ll"
"""The alignment of :data:`~structablate.report.blocks.CONTRAST_CELLS`."""


def row_key(r: Mapping, metric: str) -> dict[str, object]:
    """The ledger's selector of a contrasts-table row: its family, contrast and measure."""
    return {"family": r.get("family"), "contrast": r["contrast"], "metric": metric}


def contrast_row(df: pl.DataFrame, a: str, b: str, metric: str) -> dict | None:
    """The row of contrasts table ``df`` for ``a − b`` on ``metric``; None where it did not
    run."""
    sub = df.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                    & (pl.col("metric") == metric))
    return sub.row(0, named=True) if sub.height else None


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


def routing(run: Run, led: Ledger, r: Mapping) -> list[str]:
    """A routing row's hit rate and back-filled share (:func:`structablate.report.blocks.
    routing_words`), each number recorded: the hit rate against the section-recall table, the
    share as derived."""
    sr = routing_row(r, run.optional("section_recall"))
    if sr is None:
        return []
    src = run.source("section_recall")

    def cite(value, kind, column, key):
        if column == "=":
            return led.derived(value, kind)
        return led.num(value, kind, src, key, column)

    return routing_words(sr, run.top_k, cite)


def answer(run: Run, led: Ledger, r: Mapping) -> str:
    """A contrast row's answer on a results page: the rule's words, qualified by letter
    (:func:`structablate.report.blocks.row_answer` with the page's flags, the run's
    replicates and the routing figures). "Too small to tell" carries the MDE at the family's
    level beside it (``mde80_family``): it rules out only effects that large."""
    text = row_answer(r, led.flags, run.n_boot, routing(run, led, r))
    mde = r.get("mde80_family")
    if (row_decision(r) == "inconclusive" and no_spread(r) is None and mde is not None
            and math.isfinite(mde)):
        words = row_words(r)
        text = f"{words} (MDE ±{led.derived(mde, '4')}){text[len(words):]}"
    return text


def row_cells(r: Mapping, led: Ledger, src: str, run: Run) -> list[str]:
    """A contrast row's cells (:func:`structablate.report.blocks.contrast_cells`), each number
    recorded in the ledger against the row of ``src`` it came from; the answer qualified by
    the page's lettered flags, the run's replicates and the routing figures."""
    return contrast_cells(r, led.cite(src), flags=led.flags, n_boot=run.n_boot,
                          extra=routing(run, led, r))


def monte_carlo_line(run: Run, led: Ledger) -> list[str]:
    """What the page does about Monte-Carlo error (item 8 of issue 50): rows are flagged, not
    recomputed with more replicates; empty when the run's replicates are not recorded."""
    if run.n_boot is None:
        return ["Monte-Carlo error of the bootstrap p-values: not checked (the run's "
                "replicates are not recorded with these tables)."]
    return [f"Monte-Carlo error: each decision's adjusted p is compared with α at the run's "
            f"{led.derived(run.n_boot, 'int')} bootstrap replicates; a decision within "
            "two Monte-Carlo standard errors of α is flagged on its row (\"within Monte-Carlo "
            "error of α\"), not recomputed with more replicates (docs/statistics.md)."]
