"""TREC export at chunk level, so binary nDCG@k and RR can be checked with trec_eval or
ir_measures.

A chunk is relevant (grade 1) to a query when it is a chunk of the query's document and the
binary rule of :mod:`.relevance` holds for at least one gold span; the other chunks of the
document are written with grade 0 (``include_nonrelevant``), so a query without any relevant
chunk still appears in the qrels and scores 0 instead of being dropped.
"""

from __future__ import annotations

import os

import polars as pl

from ..io import atomic_path
from .relevance import relevant_pairs


def chunk_qrels(
    qrels: pl.DataFrame, chunks: pl.DataFrame, *, include_nonrelevant: bool = True
) -> pl.DataFrame:
    """Chunk-level binary qrels: columns qid, chunk_id, relevance (Int32), sorted."""
    g = qrels.select(
        pl.col("qid").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("start").cast(pl.Int64).alias("gs"),
        pl.col("end").cast(pl.Int64).alias("ge"),
    ).unique()
    c = chunks.select(
        pl.col("chunk_id").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("start").cast(pl.Int64).alias("cs"),
        pl.col("end").cast(pl.Int64).alias("ce"),
    )
    j = g.join(c, on="doc_id", how="inner")
    ov = (pl.min_horizontal("ce", "ge") - pl.max_horizontal("cs", "gs")).clip(lower_bound=0)
    j = j.with_columns(ov.alias("ov"))
    rel = relevant_pairs(
        j["ov"].to_numpy(), (j["ce"] - j["cs"]).to_numpy(), (j["ge"] - j["gs"]).to_numpy()
    )
    out = (
        j.with_columns(pl.Series("rel", rel))
        .group_by("qid", "chunk_id")
        .agg(pl.col("rel").any().cast(pl.Int32).alias("relevance"))
    )
    if not include_nonrelevant:
        out = out.filter(pl.col("relevance") > 0)
    return out.sort("qid", "chunk_id")


def write_trec_qrels(
    qrels: pl.DataFrame,
    chunks: pl.DataFrame,
    path: str | os.PathLike[str],
    *,
    include_nonrelevant: bool = True,
) -> None:
    """Write chunk-level qrels as a TREC qrels file (``qid 0 chunk_id relevance``)."""
    q = chunk_qrels(qrels, chunks, include_nonrelevant=include_nonrelevant)
    _refuse_non_tokens(q, path)
    lines = [f"{a} 0 {b} {r}\n" for a, b, r in q.iter_rows()]
    _write_lines(lines, path)


def write_trec_run(
    run: pl.DataFrame,
    path: str | os.PathLike[str],
    *,
    tag: str = "structablate",
    rank_scores: bool = True,
) -> None:
    """Write a run as a TREC run file (``qid Q0 chunk_id rank score tag``).

    trec_eval and ir_measures order by score, not rank; with ``rank_scores`` (default) the
    score column is ``-rank`` so that they reproduce the run's authoritative rank order even
    where scores tie. With ``rank_scores=False`` the run's own scores are written.
    """
    r = run.select(
        pl.col("qid").cast(pl.String), pl.col("rank").cast(pl.Int64), "chunk_id", "score"
    ).sort("qid", "rank")
    _refuse_non_tokens(r, path)
    lines = [
        f"{q} Q0 {c} {k} {(-k if rank_scores else float(s))!r} {tag}\n"
        for q, k, c, s in r.iter_rows()
    ]
    _write_lines(lines, path)


def _refuse_non_tokens(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """TREC files separate columns by whitespace: a qid or chunk_id holding whitespace (or
    being empty) would shift every column after it, so it is refused, never written raw (the
    id policy, :mod:`structablate.ids`, keeps such ids out at corpus build)."""
    for col in ("qid", "chunk_id"):
        bad = frame.filter(pl.col(col).str.contains(r"\s") | (pl.col(col).str.len_chars() == 0)
                           | pl.col(col).is_null())
        if bad.height:
            raise ValueError(f"{os.fspath(path)}: {col} {bad[col][0]!r} is not one token "
                             "(empty or holding whitespace); a TREC file cannot carry it")


def _write_lines(lines: list[str], path: str | os.PathLike[str]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
