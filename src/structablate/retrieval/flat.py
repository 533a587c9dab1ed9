"""Flat top-k retrieval over all chunks of a corpus.

Both searchers return ``(idx, scores)``: ``idx[q]`` holds the row indices (into the chunk
table) of the top ``k`` chunks for query ``q`` by inner product, best first; ties in score are
broken by ascending row index, so the ranking is a pure function of the vectors.

* ``exact``: float32 inner products with numpy/BLAS, queries in blocks.
* ``hnsw``: an hnswlib index (inner-product space) built single-threaded with a fixed
  ``random_seed``, so the graph and the results are reproducible; ``ef_search`` is raised to at
  least ``k``. Its scores are recomputed exactly so both searchers report the same score for the
  same chunk.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def _topk_sorted(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` columns of each row of ``scores``: score descending, index ascending."""
    n = scores.shape[1]
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        # include every column tied with the k-th score so ties resolve by index
        kth = np.take_along_axis(scores, part, axis=1).min(axis=1, keepdims=True)
        idx_rows = []
        for r in range(scores.shape[0]):
            cand = np.flatnonzero(scores[r] >= kth[r, 0])
            order = np.lexsort((cand, -scores[r, cand]))[:k]
            idx_rows.append(cand[order])
        idx = np.stack(idx_rows) if idx_rows else np.zeros((0, k), dtype=np.int64)
    else:
        idx = np.lexsort((np.broadcast_to(np.arange(n), scores.shape), -scores), axis=1)
    return idx.astype(np.int64), np.take_along_axis(scores, idx, axis=1)


def exact_search(
    queries: np.ndarray, chunks: np.ndarray, k: int, block: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-``k`` (see module docstring for the tie rule)."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    chunks = np.ascontiguousarray(chunks, dtype=np.float32)
    k = min(k, chunks.shape[0])
    idx_out = np.zeros((queries.shape[0], k), dtype=np.int64)
    sc_out = np.zeros((queries.shape[0], k), dtype=np.float32)
    for s in range(0, queries.shape[0], block):
        scores = queries[s : s + block] @ chunks.T
        idx, sc = _topk_sorted(scores, k)
        idx_out[s : s + block] = idx
        sc_out[s : s + block] = sc
    return idx_out, sc_out


def hnsw_search(
    queries: np.ndarray,
    chunks: np.ndarray,
    k: int,
    *,
    M: int = 32,
    ef_construction: int = 200,
    ef_search: int = 200,
    seed: int = 20260710,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate top-``k`` with hnswlib (deterministic: one thread, fixed seed)."""
    import hnswlib

    queries = np.ascontiguousarray(queries, dtype=np.float32)
    chunks = np.ascontiguousarray(chunks, dtype=np.float32)
    n, dim = chunks.shape
    k = min(k, n)
    index = hnswlib.Index(space="ip", dim=dim)
    index.init_index(max_elements=n, ef_construction=ef_construction, M=M, random_seed=seed)
    index.set_num_threads(1)
    index.add_items(chunks, np.arange(n), num_threads=1)
    index.set_ef(max(ef_search, k))
    labels, _ = index.knn_query(queries, k=k, num_threads=1)
    labels = labels.astype(np.int64)
    exact = np.einsum("qd,qkd->qk", queries, chunks[labels])
    order = np.lexsort((labels, -exact), axis=1)
    labels = np.take_along_axis(labels, order, axis=1)
    return labels, np.take_along_axis(exact, order, axis=1).astype(np.float32)


def search(
    queries: np.ndarray, chunks: np.ndarray, k: int, method: str = "exact",
    hnsw: Mapping | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Dispatch on ``method`` (``exact`` | ``hnsw``)."""
    if method == "exact":
        return exact_search(queries, chunks, k)
    if method == "hnsw":
        return hnsw_search(queries, chunks, k, **dict(hnsw or {}))
    raise ValueError(f"unknown retrieval method {method!r} (exact or hnsw)")
