"""Per-condition means of a cell and the Markdown summary of all cells (``results/summary.md``).

The means are :func:`structablate.stats.means.condition_means` (this module computes no
statistic of its own). The page renders the report page's own blocks
(:func:`structablate.report.blocks.condition_means_block` and
:func:`~structablate.report.blocks.contrasts_block`, with the guard's reasons) as Markdown, with
each cell's model provenance, so a number and its answer read the same in both. Cells are
listed in sorted (corpus, embedder, reranker) order, conditions and measures in the order of
the summary table.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from structablate.report.blocks import condition_means_block, contrasts_block
from structablate.report.render import table_markdown
from structablate.stats.means import condition_means
from structablate.stats.power import MIN_DOCS, MIN_QUERIES, sample_warnings


def summarize_cell(scores: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Long table: condition, measure, mean, n_queries, n_docs (conditions in given order);
    :func:`structablate.stats.means.condition_means`."""
    return condition_means(scores)


def summary_markdown(
    cells: Mapping[tuple[str, str, str], pl.DataFrame],
    embedders: Mapping[str, Mapping],
    rerankers: Mapping[str, Mapping],
    *,
    contrasts: Mapping[tuple[str, str, str], pl.DataFrame] | None = None,
    metric: str | None = None,
    primary: Mapping[str, str | None] | None = None,
) -> str:
    """A Markdown page: one table (conditions x measures) per cell, with model provenance,
    and, given ``contrasts`` (the marked contrasts of :func:`structablate.report.testable.
    mark_contrasts`) and ``metric``, the cell's contrasts of ``metric`` with their answers by
    the one decision rule, qualified where the guard has reasons (what the answer is about,
    with a letter whose sentence is printed once under the cell's table).

    The page opens with a banner when a cell is small (:func:`structablate.stats.power.
    sample_warnings`) and names the primary cell by what ran: ``primary`` (``metric``,
    ``embedder``, ``reranker`` of ``statistics.primary``), else the cell whose contrast rows
    are marked ``primary``."""
    lines = ["# structablate summary", ""]
    small = []
    for key, df in sorted(cells.items()):
        n = int(df["n_queries"].max()) if df.height else 0
        nd = int(df["n_docs"].max()) if df.height else 0
        if sample_warnings(n, nd):
            small.append(f"{' / '.join(key)} ({n} questions over {nd} documents)")
    if small:
        lines += [f"> **SMALL SAMPLE.** {'; '.join(small)}: below {MIN_QUERIES} questions or "
                  f"{MIN_DOCS} documents the paper's effects cannot be detected with 80% power "
                  "and the clustered bootstrap's intervals are optimistic. A run this small is "
                  "a demonstration of the instrument — the bundled default (`config.yaml`, the "
                  "bundled samples) is one — and its answers are not findings.", ""]
    lines.append("Per-condition means of per-query scores. " + _primary_sentence(
        cells, contrasts, metric, primary))
    lines.append("")
    for (corpus, embedder, reranker), df in sorted(cells.items()):
        model = embedders.get(embedder, {}).get("model", "?")
        lines.append(f"## {corpus} / {embedder} / {reranker}")
        lines.append("")
        lines.append(f"- embedder `{embedder}`: `{model}`")
        if reranker == "none":
            lines.append("- reranker: none")
        else:
            rr = rerankers.get(reranker, {})
            trained = rr.get("trained", True)
            note = "" if trained else " — NOT a trained reranker; these scores are not results"
            lines.append(f"- reranker `{reranker}`: `{rr.get('model', '?')}`{note}")
        lines += ["", table_markdown(condition_means_block(df, title="")), ""]
        cell = (contrasts or {}).get((corpus, embedder, reranker))
        if cell is not None and metric is not None and cell.height:
            lines += _contrast_lines(cell, metric)
    return "\n".join(lines)


def _contrast_lines(df: pl.DataFrame, metric: str) -> list[str]:
    """The cell's contrasts of ``metric`` as the report page shows them
    (:func:`structablate.report.blocks.contrasts_block`): each guard reason once, by letter,
    in the table's note."""
    if not df.filter(pl.col("metric") == metric).height:
        return []
    table = contrasts_block(df, [metric], title=f"Contrasts of {metric}")
    return [table_markdown(table), ""]


def _primary_sentence(cells, contrasts, metric, primary) -> str:
    """Which cell is confirmatory, named by what ran."""
    cell = None
    if primary and primary.get("embedder"):
        cell = next((k for k in sorted(cells) if k[1] == primary["embedder"]
                     and k[2] == (primary.get("reranker") or "none")), None)
        measure = primary.get("metric") or metric
    else:
        measure = metric
        for key, df in sorted((contrasts or {}).items()):
            if df.height and "primary" in df.columns and df["primary"].any():
                cell = key
                measure = df.filter(pl.col("primary"))["metric"][0]
                break
    if cell is None:
        return ("No cell of this run holds a row of the pre-registered primary cell, so every "
                "number below is exploratory.")
    return (f"Only the pre-registered family on {measure} in the primary cell "
            f"{' / '.join(cell)} is confirmatory; every other row and cell is exploratory.")
