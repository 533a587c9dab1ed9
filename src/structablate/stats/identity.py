"""How often two conditions of a cell return the very same ranking.

When two conditions embed identical texts (A3-d2 and A3 on a structure no deeper than two
levels) or route to every section (A4 when stage 1 keeps the whole corpus), their runs are
identical and every per-query delta is exactly 0: the comparison measures nothing. This counts
it from the runs themselves, whatever the cause.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

RANKING_IDENTITY_SCHEMA = {"cond_a": pl.String, "cond_b": pl.String, "n_queries": pl.Int64,
                           "identical": pl.Int64, "identical_share": pl.Float64}


def ranked_lists(run: pl.DataFrame, chunks: pl.DataFrame | None = None) -> pl.DataFrame:
    """``qid, chunks``: each query's results in rank order (a query without rows is absent).

    A result is its ``chunk_id``, or, with the run's ``chunks`` table, its span
    ``"doc_id|start|end"`` (chunk ids name their chunkset, so two chunksets with the same
    boundaries only compare equal by span).
    """
    key = pl.col("chunk_id")
    if chunks is not None:
        run = run.join(chunks.select("chunk_id", "doc_id", "start", "end"), on="chunk_id",
                       how="left")
        if run["start"].null_count():
            bad = run.filter(pl.col("start").is_null())["chunk_id"][0]
            raise ValueError(f"ranked_lists: run names chunk {bad!r}, absent from its chunks")
        key = pl.concat_str([pl.col("doc_id"), pl.col("start").cast(pl.String),
                             pl.col("end").cast(pl.String)], separator="|")
    return (run.sort("qid", "rank").group_by("qid", maintain_order=True)
            .agg(key.alias("chunks")))


def ranking_identity(runs: Mapping[str, pl.DataFrame],
                     chunks: Mapping[str, pl.DataFrame] | None = None) -> pl.DataFrame:
    """For every pair of conditions (given order, ``cond_a`` first): over the queries both runs
    hold, how many have identical ranked lists (the same results at the same ranks, all ranks).

    ``runs``: condition -> run table (``qid, rank, chunk_id``); ``chunks``: condition -> the
    chunk table it ran on; with it, results compare by span (:func:`ranked_lists`), which is
    what every measure but TokCov reads (TokCov also charges the prefix). Columns: cond_a,
    cond_b, n_queries, identical, identical_share (NaN without common queries).
    """
    chunks = chunks or {}
    missing = sorted(set(runs) - set(chunks)) if chunks else []
    if missing:
        raise ValueError(f"ranking_identity: chunks given for some conditions, not for {missing}")
    lists = {c: ranked_lists(r, chunks.get(c)) for c, r in runs.items()}
    names = list(lists)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            j = lists[a].join(lists[b], on="qid", how="inner", suffix="_b")
            same = int(j.select((pl.col("chunks") == pl.col("chunks_b")).sum()).item()) \
                if j.height else 0
            rows.append({"cond_a": a, "cond_b": b, "n_queries": j.height, "identical": same,
                         "identical_share": same / j.height if j.height else float("nan")})
    return (pl.DataFrame(rows, schema=RANKING_IDENTITY_SCHEMA) if rows
            else pl.DataFrame(schema=RANKING_IDENTITY_SCHEMA))
