"""Flat top-k retrieval over all chunks of a corpus.

Both searchers return ``(idx, scores)``: ``idx[q]`` holds the row indices (into the chunk
table) of the top ``k`` chunks for query ``q`` by inner product, best first; ties in score are
broken by ascending row index, so the ranking is a pure function of the vectors.

* ``exact``: inner products with numpy/BLAS accumulated in float64 and rounded to float32
  (block-size independent), queries in blocks.
* ``hnsw``: an hnswlib index (inner-product space) built single-threaded with a fixed
  ``random_seed``, so the graph and the results are reproducible; ``ef_search`` is raised to at
  least ``k``. Its scores are recomputed exactly so both searchers report the same score for the
  same chunk.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from tqdm import tqdm


def topk_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Row-wise top-``k`` column indices, score descending then index ascending.

    Exact under ties: rows where the k-th score ties with an excluded column fall back to a
    stable full sort. Returns ``[n, min(k, m)]`` int64.
    """
    scores = np.asarray(scores)
    n, m = scores.shape
    k = min(k, m)
    if k <= 0:
        return np.empty((n, 0), dtype=np.int64)
    if k == m:
        return np.argsort(-scores, axis=1, kind="stable").astype(np.int64)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)
    top = np.take_along_axis(part, order, axis=1).astype(np.int64)
    # tie check: every column scoring exactly the k-th score must be inside the selection
    kth = np.take_along_axis(scores, top[:, -1:], axis=1)
    n_eq_all = (scores == kth).sum(axis=1)
    n_eq_sel = (np.take_along_axis(scores, top, axis=1) == kth).sum(axis=1)
    tied = np.flatnonzero(n_eq_all != n_eq_sel)
    if tied.size:
        top[tied] = np.argsort(-scores[tied], axis=1, kind="stable")[:, :k]
    return top


def score_matrix(query_vecs: np.ndarray, chunk_vecs: np.ndarray) -> np.ndarray:
    """``[nq, n]`` float32 inner products, accumulated in float64 (block-size independent)."""
    q = np.asarray(query_vecs, dtype=np.float64)
    x = np.asarray(chunk_vecs, dtype=np.float64)
    return (q @ x.T).astype(np.float32)


def exact_search(
    queries: np.ndarray, chunks: np.ndarray, k: int, block: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-``k`` (see module docstring for the tie rule).

    Returns ``min(k, n_chunks)`` columns.
    """
    x = np.asarray(chunks, dtype=np.float32).astype(np.float64)
    queries = np.asarray(queries, dtype=np.float32)
    nq = queries.shape[0]
    k = min(k, x.shape[0])
    idx_out = np.zeros((nq, k), dtype=np.int64)
    sc_out = np.zeros((nq, k), dtype=np.float32)
    # a progress bar where stderr is a terminal or a workflow job's log (structablate.workflow)
    bar = tqdm(total=nq, desc="exact search", unit="query", disable=None)
    for s in range(0, nq, block):
        scores = score_matrix(queries[s : s + block], x)
        top = topk_desc(scores, k)
        idx_out[s : s + block] = top
        sc_out[s : s + block] = np.take_along_axis(scores, top, axis=1)
        bar.update(min(block, nq - s))
    bar.close()
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
