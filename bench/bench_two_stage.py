"""Exact flat search and two-stage routing at full QASPER sizes.

Clustered L2-normalised float32 vectors (200 topics, chunks and queries scattered around them,
so scores near the k-th are dense as with real embeddings; a few exact duplicates); sections
are contiguous runs of chunks, ~15 per document. Prints seconds per method and dimension and
the table lines (exact search against the plain float32 matrix product).

    python bench/bench_two_stage.py                 # 4,301 q x 36,217 chunks, d 384 and 1024
    python bench/bench_two_stage.py --dims 384 --queries 1000   # quicker

Methods:
- ``plain``: float32 ``Q @ X.T`` + top-k (argpartition, exact tie rule), the anchor: fast, but
  its scores round differently with the block shape and the BLAS kernel;
- ``exact``: :func:`exact_search` (float32 candidates within a proven error bound, float64
  re-score of the candidates: the float64 ranking at float32 speed);
- ``float64``: every score accumulated in float64 (the route before; checked identical);
- ``two_stage+global``: routing, stage 2 and backfill given the flat ranking;
- ``two_stage``: self-contained (computes the flat ranking for backfill in the same pass).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from structablate.retrieval.flat import _exact_float64, exact_search
from structablate.retrieval.two_stage import (
    STAGE_BACKFILL,
    flat_search,
    section_centroids,
    topk_desc,
    two_stage_search,
)


def make_corpus(n_queries: int, n_chunks: int, n_sections: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((200, dim), dtype=np.float32)
    x = centers[rng.integers(0, 200, n_chunks)] + 0.7 * rng.standard_normal(
        (n_chunks, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[1:6] = x[0]  # exact ties
    q = centers[rng.integers(0, 200, n_queries)] + 0.9 * rng.standard_normal(
        (n_queries, dim), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    # every section gets >= 1 chunk; the rest spread at random; contiguous runs
    extra = rng.multinomial(n_chunks - n_sections, np.full(n_sections, 1 / n_sections))
    sec = np.repeat(np.arange(n_sections), extra + 1)
    doc_ids = [f"doc{s // 15}" for s in sec]
    tops = (sec % 15).tolist()
    return q, x, doc_ids, tops


def flat32(q: np.ndarray, x: np.ndarray, k: int, block: int) -> np.ndarray:
    out = np.empty((q.shape[0], k), dtype=np.int64)
    for b0 in range(0, q.shape[0], block):
        out[b0 : b0 + block] = topk_desc(q[b0 : b0 + block] @ x.T, k)
    return out


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def median(repeat, fn, *args, **kwargs):
    times, out = [], None
    for _ in range(repeat):
        out, t = timed(fn, *args, **kwargs)
        times.append(t)
    return out, float(np.median(times))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=4301)
    ap.add_argument("--chunks", type=int, default=36217)
    ap.add_argument("--sections", type=int, default=13000)
    ap.add_argument("--dims", type=int, nargs="+", default=[384, 1024])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--top-sections", type=int, default=5)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20260710)
    args = ap.parse_args(argv)

    print(
        f"queries={args.queries} chunks={args.chunks} sections={args.sections} k={args.k} "
        f"top_sections={args.top_sections} block={args.block} (medians of {args.repeat})"
    )
    print(f"{'dim':>5} {'method':<18} {'seconds':>9} {'queries/s':>11}")
    for dim in args.dims:
        q, x, doc_ids, tops = make_corpus(args.queries, args.chunks, args.sections, dim, args.seed)
        (keys, cent, sec), t_cent = timed(section_centroids, x, doc_ids, tops)
        rows = []
        # alternate the two so that load changes on a shared machine hit both alike
        tp, te, cp, ce = [], [], [], []
        for _ in range(args.repeat):
            c0 = time.process_time()
            _, t = timed(flat32, q, x, args.k, args.block)
            tp.append(t)
            cp.append(time.process_time() - c0)
            c0 = time.process_time()
            (e_idx, e_sc), t = timed(exact_search, q, x, args.k, block=args.block)
            te.append(t)
            ce.append(time.process_time() - c0)
        t_plain, t_exact = float(np.median(tp)), float(np.median(te))
        cpu_ratio = float(np.median(ce)) / float(np.median(cp))
        rows.append(("plain", t_plain))
        rows.append(("exact", t_exact))
        (o_idx, o_sc), t_64 = median(1, _exact_float64, q, x.astype(np.float64), args.k,
                                     args.block)
        rows.append(("float64", t_64))
        same = np.array_equal(e_idx, o_idx) and np.array_equal(e_sc, o_sc)
        g_idx, _ = flat_search(q, x, args.k, block=args.block)
        res_g, t = timed(
            two_stage_search, q, x, sec, cent, args.k, args.top_sections, g_idx, block=args.block
        )
        rows.append(("two_stage+global", t))
        res, t = timed(
            two_stage_search, q, x, sec, cent, args.k, args.top_sections, block=args.block
        )
        rows.append(("two_stage", t))
        assert np.array_equal(res[0], res_g[0]), "two-stage differs with/without global_idx"
        for name, secs in rows:
            print(f"{dim:>5} {name:<18} {secs:>9.2f} {args.queries / secs:>11.0f}")
        backfilled = (res[2] == STAGE_BACKFILL).sum(axis=1)
        print(
            f"{dim:>5} centroids built in {t_cent:.2f}s for {len(keys)} sections; "
            f"backfilled results per query: mean {backfilled.mean():.1f} of {args.k}; "
            f"exact == float64 route: {same}"
        )
        print(f"TABLE|exact top-{args.k}, {args.queries} x {args.chunks} x {dim}|"
              f"{t_exact:.2f} s|plain float32 matmul + argpartition {t_plain:.2f} s|"
              f"{t_exact / t_plain:.2f}x|cpu-time ratio {cpu_ratio:.2f}x; float64 route "
              f"{t_64:.2f} s ({t_64 / t_plain:.2f}x); identical to it: {same}", flush=True)


if __name__ == "__main__":
    main()
