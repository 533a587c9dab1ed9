"""Benchmark: the project's exact search against faiss's flat inner-product index.

One process, contenders interleaved round by round (so a load on the machine falls on both),
at the full-QASPER size (4,301 queries x 36,217 chunks, k 100) and the three embedders'
dimensions (384 bge-small/MiniLM, 768 mpnet, 1024 bge-large). Vectors are clustered unit
vectors (200 topics, like one corpus's embeddings). Each round times
:func:`structablate.retrieval.flat.exact_search` and ``faiss.IndexFlatIP.search`` (index built
outside the timing, as a run builds it once), both with the same thread count, and prints
the ratio faiss-seconds / ours-seconds (> 1: ours faster). Equality is checked, not assumed:
ours against a float64 brute force (same lists and float32 scores, ties by row), and faiss's
lists against ours (the share of queries whose top k differ as a set or in order, which
float32 summation makes non-zero). Beside the wall-clock ratio it prints the ratio of CPU
seconds (``time.process_time``, all threads), which a loaded machine disturbs far less.

    python bench/bench_exact_search.py                       # needs the bench extra (faiss-cpu)
    python bench/bench_exact_search.py --queries 1024 --dims 384 --rounds 3

Measured 2026-12-07 22:26-22:35 UTC on 2 shared cores at load average 4.0-5.8 (very noisy:
one contender's rounds varied up to 5x in wall time), 4,301 queries x 36,217 chunks, k 100,
faiss-cpu 1.15.1, 3 rounds, ``nice -n 5``, the commit that threads the ranking (after) and the
one before it (before) run one after the other; faiss/ours min / median / max:

| dim | wall, before | wall, after | CPU-s, before | CPU-s, after |
| --- | --- | --- | --- | --- |
| 384 | 1.03 / 1.08 / 1.10 | 0.92 / 1.19 / 1.24 | 1.06 / 1.07 / 1.16 | 1.05 / 1.10 / 1.20 |
| 768 | 0.50 / 0.71 / 0.87 | 0.75 / 1.08 / 1.23 | 0.73 / 0.78 / 0.89 | 0.90 / 0.98 / 1.03 |
| 1024 | 0.88 / 1.27 / 1.47 | 0.73 / 0.76 / 1.01 | 0.86 / 0.93 / 0.94 | 0.91 / 0.96 / 1.00 |

Ours equal to the float64 brute force in every run (100 queries checked per dimension);
faiss's lists differ from ours on 1.3 / 2.2 / 1.8 % of queries. Where the time goes (CPU
seconds, one thread, 384 d / 1024 d): the float32 matrix product about 1.25 / 3.2, the
ranking 0.53 / 0.88, of which the float64 re-scoring of the ~105 candidates per query (a
gather of their rows, bound by memory) 0.27 / 0.65 and the group maxima, k-th bound and
candidate gather 0.18 / 0.17. faiss spends about 1 CPU-second on its heaps at every
dimension, so at 1024 d the re-scoring leaves ours near parity, not ahead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from bench_hnsw import vectors  # clustered unit vectors, the HNSW benchmark's

from structablate.retrieval.flat import exact_search


def brute_force(q: np.ndarray, x: np.ndarray, k: int, block: int = 128):
    """Float64 scores rounded to float32, ranked score desc then row asc."""
    x64 = x.astype(np.float64)
    idx = np.empty((len(q), k), dtype=np.int64)
    sc = np.empty((len(q), k), dtype=np.float32)
    rows = np.arange(len(x))
    for s in range(0, len(q), block):
        ref = (q[s:s + block].astype(np.float64) @ x64.T).astype(np.float32)
        for i, r in enumerate(ref):
            order = np.lexsort((rows, -r))[:k]
            idx[s + i], sc[s + i] = order, r[order]
    return idx, sc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=4301)
    ap.add_argument("--chunks", type=int, default=36217)
    ap.add_argument("--dims", type=int, nargs="+", default=[384, 768, 1024])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check-queries", type=int, default=300,
                    help="queries checked against the float64 brute force (it is slow)")
    ap.add_argument("--seed", type=int, default=20261207)
    args = ap.parse_args(argv)
    import faiss

    threads = len(os.sched_getaffinity(0))
    faiss.omp_set_num_threads(threads)
    print(f"threads {threads}, load average {os.getloadavg()[0]:.2f}, faiss {faiss.__version__}")
    print("| dim | ours s (median) | faiss s (median) | faiss/ours min / median / max | "
          "CPU-s faiss/ours min / median / max | ours = float64 brute force | "
          "faiss lists differing from ours |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for d in args.dims:
        q, x = vectors("clustered", args.chunks, args.queries, d, args.seed)
        index = faiss.IndexFlatIP(d)
        index.add(x)
        ours_t, faiss_t, ours_c, faiss_c = [], [], [], []
        for _ in range(args.rounds):
            t, c = time.perf_counter(), time.process_time()
            idx, sc = exact_search(q, x, args.k)
            ours_t.append(time.perf_counter() - t)
            ours_c.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            _, fidx = index.search(q, args.k)
            faiss_t.append(time.perf_counter() - t)
            faiss_c.append(time.process_time() - c)
        m = min(args.check_queries, len(q))
        bidx, bsc = brute_force(q[:m], x, args.k)
        equal = np.array_equal(bidx, idx[:m]) and np.array_equal(bsc, sc[:m])
        differ = float(np.mean([a.tolist() != b.tolist() for a, b in zip(fidx, idx,
                                                                         strict=True)]))
        ratios = [f / o for f, o in zip(faiss_t, ours_t, strict=True)]
        cpu = [f / o for f, o in zip(faiss_c, ours_c, strict=True)]
        print(f"| {d} | {statistics.median(ours_t):.3f} | {statistics.median(faiss_t):.3f} | "
              f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f} | "
              f"{min(cpu):.2f} / {statistics.median(cpu):.2f} / {max(cpu):.2f} | "
              f"{'yes' if equal else 'NO'} ({m} queries) | {100 * differ:.1f} % |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
