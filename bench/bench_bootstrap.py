"""Benchmark: 10,000-replicate document-clustered bootstrap for 4 contrasts over 4,303 queries
and 1,508 documents (QASPER's shape), vectorized vs a per-replicate Python loop with the same
draws; then the full contrast table of one cell (7 metrics x 4 contrasts) with and without the
MixedLM fits.

    python bench/bench_bootstrap.py [--boot 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from structablate.stats import cluster_bootstrap, contrast_table, draw_blocks, per_doc
from structablate.study import PRIMARY_METRIC

N_Q, N_DOCS = 4303, 1508
METRICS = ["covNDCG@10", "R@50", "RR", "nDCG@10", "TokCov@512", "TokCov@1024", "TokCov@2048"]
CONDS = {"A1": -0.012, "A3": 0.0, "P": -0.016, "G3": 0.001, "A4": -0.015}
PRIMARY = {"metric": PRIMARY_METRIC, "embedder": "strong", "reranker": "none"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=10_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    # every document gets at least one query: 1,508 documents, 4,303 queries
    doc = np.sort(np.concatenate([np.arange(N_DOCS), rng.integers(0, N_DOCS, N_Q - N_DOCS)]))
    for m in (4, 4 * len(METRICS)):
        deltas = rng.normal(0.01, 0.15, size=(N_Q, m)) + rng.normal(0, 0.05, N_DOCS)[doc][:, None]
        _, sums, counts = per_doc(deltas, doc)
        n_docs = sums.shape[0]
        cnts = np.repeat(counts[:, None], m, 1)
        cluster_bootstrap(sums, cnts, 100, seed=1)  # warm-up
        t0 = time.perf_counter()
        vec = cluster_bootstrap(sums, cnts, args.boot, seed=1)
        t_vec = time.perf_counter() - t0

        t0 = time.perf_counter()
        loop = np.empty((args.boot, m))
        b = 0
        for block in draw_blocks(np.random.default_rng(1), n_docs, args.boot):
            for idx in block:
                for j in range(m):  # one statistic at a time, as a straightforward loop would
                    loop[b, j] = sums[idx, j].sum() / counts[idx].sum()
                b += 1
        t_loop = time.perf_counter() - t0
        print(
            f"bootstrap B={args.boot}, {m} statistics ({m // 4} metric(s) x 4 contrasts), "
            f"{N_Q} queries / {n_docs} docs: vectorized {t_vec:.2f}s, per-replicate loop "
            f"{t_loop:.2f}s ({t_loop / t_vec:.1f}x); max |diff| {np.abs(vec - loop).max():.1e}"
        )
        print(f"TABLE|clustered bootstrap, {args.boot:,} x {n_docs:,} docs, {m} statistics|"
              f"{t_vec / m:.3f} s per contrast|per-replicate loop {t_loop / m:.3f} s|"
              f"{t_vec / t_loop:.2f}x|goal <= 0.2 s per contrast", flush=True)

    # full contrast table of one cell
    base = rng.normal(0.12, 0.15, N_Q) + rng.normal(0, 0.05, N_DOCS)[doc]
    frames = []
    for c, shift in CONDS.items():
        cols = {
            m: base * (1 + k / 10) + shift + rng.normal(0, 0.05, N_Q) for k, m in enumerate(METRICS)
        }
        frames.append(
            pl.DataFrame(
                {
                    "corpus": "qasper",
                    "embedder": "strong",
                    "reranker": "none",
                    "condition": c,
                    "qid": [f"q{i:05d}" for i in range(N_Q)],
                    "doc_id": [f"D{d:04d}" for d in doc],
                    "qtype": "x",
                    **cols,
                }
            )
        )
    scores = pl.concat(frames)
    for mode in ("none", "primary"):
        t0 = time.perf_counter()
        t = contrast_table(scores, n_boot=args.boot, seed=1, mixedlm=mode, primary=PRIMARY)
        print(
            f"contrast_table, 1 cell x {len(METRICS)} metrics x 4 contrasts, mixedlm={mode!r}: "
            f"{time.perf_counter() - t0:.2f}s"
        )
    print(
        t.filter(pl.col("primary")).select(
            "contrast",
            "delta",
            "ci_low",
            "ci_high",
            "p",
            "p_holm",
            "dz",
            "p_mixedlm",
            "p_mixedlm_query",
        )
    )


if __name__ == "__main__":
    main()
