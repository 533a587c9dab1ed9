"""Benchmark: HNSW (hnswlib) against exact search at QASPER sizes, and its recall.

For clustered vectors (200 topics, like embeddings of one corpus) and uniform ones (the hard
case), at the project settings (M 32, ef_construction 200, ef_search 200): build and query
time and recall@k against exact search; then the beam :func:`tuned_hnsw_search` picks for
recall@k >= 0.99 on sampled queries, and the cost ratio that calibrates its cost model
(seconds per hnswlib distance over seconds per float32 matrix-product multiply-add).

    python bench/bench_hnsw.py                     # 4,301 q x 36,217 chunks x 384
    python bench/bench_hnsw.py --chunks 10000      # quicker
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from structablate.retrieval.flat import (
    _hnsw_index,
    _hnsw_query,
    exact_is_faster,
    exact_search,
    recall_at_k,
    tuned_hnsw_search,
)
from structablate.settings import HnswSettings


def vectors(kind: str, n: int, nq: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        x = rng.standard_normal((n, d), dtype=np.float32)
        q = rng.standard_normal((nq, d), dtype=np.float32)
    else:
        c = rng.standard_normal((200, d), dtype=np.float32)
        x = c[rng.integers(0, 200, n)] + 0.7 * rng.standard_normal((n, d), dtype=np.float32)
        q = c[rng.integers(0, 200, nq)] + 0.9 * rng.standard_normal((nq, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q, x


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=4301)
    ap.add_argument("--chunks", type=int, default=36217)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--kinds", nargs="+", default=["clustered", "uniform"])
    ap.add_argument("--seed", type=int, default=20260710)
    args = ap.parse_args(argv)
    st = HnswSettings()
    k = args.k
    for kind in args.kinds:
        q, x = vectors(kind, args.chunks, args.queries, args.dim, args.seed)
        t0 = time.perf_counter()
        truth, _ = exact_search(q, x, k)
        t_exact = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = _hnsw_index(x, st.M, st.ef_construction, st.seed)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        found = _hnsw_query(index, q, k, st.ef_search)
        t_query = time.perf_counter() - t0
        rec = recall_at_k(found, truth)
        # calibration: distances per second of hnswlib vs multiply-adds per second of exact
        dist = args.chunks * st.ef_construction + args.queries * st.ef_search
        cost_ratio = ((t_build + t_query) / dist) / (t_exact / (args.queries * args.chunks))
        print(f"{kind}: exact {t_exact:.2f}s; HNSW build {t_build:.1f}s + query {t_query:.2f}s "
              f"({(t_build + t_query) / t_exact:.1f}x exact), recall@{k} {rec:.3f} at "
              f"ef_search {st.ef_search}; measured cost_ratio {cost_ratio:.0f}")
        faster, crossover = exact_is_faster(args.queries, args.chunks, st)
        t0 = time.perf_counter()
        _, _, rep = tuned_hnsw_search(q, x, k, HnswSettings(prefer_exact=False))
        t_tuned = time.perf_counter() - t0
        tried = ", ".join(f"ef {t['ef_search']}: {t['recall']:.3f}" for t in rep["recall_tried"])
        print(f"{kind}: tuned -> {rep['method']} ({rep['reason']}); tried {tried}; "
              f"{t_tuned:.1f}s in all; cost model says exact faster: {faster} "
              f"(crossover {crossover})")
        print(f"TABLE|hnswlib ({kind}), project settings|recall@{k} {rec:.3f}; "
              f"build {t_build:.1f} s + query {t_query:.2f} s|exact {t_exact:.2f} s|"
              f"{(t_build + t_query) / t_exact:.2f}x|tuned: {rep['method']}"
              + (f" at ef_search {rep['ef_search_used']}, recall {rep['recall_at_k']:.3f}"
                 if rep["method"] == "hnsw" else "")
              + f"; default run: {'exact (predicted faster)' if faster else 'hnsw'}",
              flush=True)


if __name__ == "__main__":
    main()
