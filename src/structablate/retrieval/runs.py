"""From vectors to a run table (qid, rank, chunk_id, score, stage) for one condition."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from structablate.conditions import Condition
from structablate.retrieval.flat import search
from structablate.tables import frame


def _check_aligned(name: str, table: pl.DataFrame, vectors: np.ndarray) -> None:
    if vectors.ndim != 2 or vectors.shape[0] != table.height:
        raise ValueError(
            f"{name}: {vectors.shape[0] if vectors.ndim else 0} vectors for {table.height} rows; "
            "the embedding file is stale or belongs to another table"
        )


def retrieve_run(
    cond: Condition,
    queries: pl.DataFrame,
    query_vectors: np.ndarray,
    chunks: pl.DataFrame,
    chunk_vectors: np.ndarray,
    params: Mapping,
) -> pl.DataFrame:
    """Rank the chunks for every query; ``rank`` is 1-based, ``stage`` says how a row got in.

    Flat conditions: ``stage = "flat"``. Two-stage conditions (A4, G4): rows kept by routing
    are ``"routed"``, rows filled from the global ranking are ``"backfill"``.
    """
    _check_aligned("queries", queries, query_vectors)
    _check_aligned("chunks", chunks, chunk_vectors)
    k = int(params["top_k"])
    idx, scores = search(query_vectors, chunk_vectors, k, params.get("method", "exact"),
                         params.get("hnsw"))
    stage = np.full(idx.shape, "flat", dtype=object)
    if cond.retrieval == "two_stage":
        from structablate.retrieval.two_stage import route_run

        idx, scores, stage = route_run(
            query_vectors, chunks, chunk_vectors, idx, k, int(params["hier_top_sections"])
        )
    nq, kk = idx.shape
    chunk_ids = np.asarray(chunks["chunk_id"].to_list(), dtype=object)
    qids = np.repeat(np.asarray(queries["qid"].to_list(), dtype=object), kk)
    return frame(
        "runs",
        {
            "qid": qids.tolist(),
            "rank": np.tile(np.arange(1, kk + 1, dtype=np.int32), nq).tolist(),
            "chunk_id": chunk_ids[idx.reshape(-1)].tolist(),
            "score": scores.reshape(-1).astype(np.float32).tolist(),
            "stage": stage.reshape(-1).tolist(),
        },
    )
