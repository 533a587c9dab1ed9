"""Two-stage routing vs flat exact retrieval: cost at full QASPER sizes.

Random L2-normalised float32 vectors (retrieval cost does not depend on the data); sections are
contiguous runs of chunks, grouped ~15 per document like QASPER's 1,508 papers. Prints
queries/s per method and dimension.

    python bench/bench_two_stage.py                      # 4,303 q, 60,000 chunks, 22,000 sections
    python bench/bench_two_stage.py --dims 384 --queries 1000   # quicker

Methods:
- ``flat32``: plain float32 ``Q @ X.T`` + exact top-k (the naive baseline, block-size dependent
  rounding);
- ``flat``: :func:`flat_search` (float64 accumulation, rounded to float32; the scoring the
  two-stage module uses);
- ``two_stage+global``: routing, stage 2 and backfill given a precomputed flat ranking;
- ``two_stage``: self-contained (computes the flat ranking for backfill in the same pass).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from structablate.retrieval.two_stage import (
    STAGE_BACKFILL,
    flat_search,
    section_centroids,
    topk_desc,
    two_stage_search,
)


def make_corpus(n_queries: int, n_chunks: int, n_sections: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_chunks, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.standard_normal((n_queries, dim), dtype=np.float32)
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=4303)
    ap.add_argument("--chunks", type=int, default=60000)
    ap.add_argument("--sections", type=int, default=22000)
    ap.add_argument("--dims", type=int, nargs="+", default=[384, 1024])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--top-sections", type=int, default=5)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--seed", type=int, default=20260710)
    args = ap.parse_args(argv)

    print(
        f"queries={args.queries} chunks={args.chunks} sections={args.sections} k={args.k} "
        f"top_sections={args.top_sections} block={args.block}"
    )
    print(f"{'dim':>5} {'method':<18} {'seconds':>9} {'queries/s':>11}")
    for dim in args.dims:
        q, x, doc_ids, tops = make_corpus(args.queries, args.chunks, args.sections, dim, args.seed)
        (keys, cent, sec), t_cent = timed(section_centroids, x, doc_ids, tops)
        rows = []
        _, t = timed(flat32, q, x, args.k, args.block)
        rows.append(("flat32", t))
        (g_idx, _), t = timed(flat_search, q, x, args.k, block=args.block)
        rows.append(("flat", t))
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
            f"backfilled results per query: mean {backfilled.mean():.1f} of {args.k}"
        )


if __name__ == "__main__":
    main()
