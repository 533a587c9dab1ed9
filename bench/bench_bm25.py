"""Benchmark: the project's BM25 (rank_bm25's BM25Okapi, vectorized) against bm25s.

Chunks are the paragraphs of the full QASPER (all three v0.3 files: 79,981 paragraphs;
``--files`` for fewer), queries its questions, tokenized by the project's rule
(:func:`structablate.retrieval.bm25.bm25_tokenize`) for every contender. Timed, in one process
and interleaved round by round:

* **ours**: :class:`structablate.retrieval.bm25.BM25Index` built once, then each query's top
  chunk over the whole corpus (compared with bm25s) and, timed apart, over its own paper's
  chunks (the second scope of ``bm25.json``);
* **bm25s** (``method="robertson"``, the BM25Okapi family) with the numba backend where numba
  is installed and with the numpy backend: index, then top 1 per query over the corpus.

Index and query seconds are printed apart; ratios are bm25s-seconds / ours-seconds (> 1: ours
faster). Scores are checked, not assumed: ours against ``BM25Okapi.get_scores`` on a sample
of queries (bit-equality over all chunks, and the maximum absolute difference), and the top
chunk of ours and of bm25s compared (their idf differs: BM25Okapi floors a negative idf at
epsilon times the mean, bm25s's robertson does not, so a difference there is a definition,
not an error).

    python bench/bench_bm25.py --data "$STRUCTABLATE_DATA/qasper"   # needs the bench extra
    python bench/bench_bm25.py --data DIR --files qasper-test-v0.3.json --rounds 3

Measured 2026-12-07 on 2 shared cores, full QASPER (79,981 paragraphs, 5,049 questions),
``--rounds 3``, query seconds bm25s numba / ours (min / median / max):

* before (one ``bincount`` over a query's postings, 125,000 on average): 0.50 / 0.50 / 1.14 at
  load average 6.8-8.3 (queries 3.74 s ours, 2.23 s bm25s numba);
* after (frequent terms as dense rows, :class:`structablate.retrieval.bm25.BM25Index`):
  0.99 / 1.01 / 1.46 at load average 9.5-10 (queries 6.13 s ours, 6.17 s bm25s numba: the
  machine ran about three times slower than for the line above; an earlier run of the same
  layout at load 9.4-9.8 gave 1.01 / 1.05 / 1.14, 1.86 s against 2.01 s). The issue's target
  (within 1.5x of bm25s numba, ratio >= 0.67) is reached. Bit-equality with ``get_scores``
  is asserted by tests/test_bm25.py; ``--check-queries 100000`` checks every question here.
* again, later the same day, with ``--check-queries 100000`` (load average 3.3-7): queries
  0.79 / 1.25 / 1.66, index + queries 0.69 / 0.79 / 0.84 (bm25s numpy on the queries 21.8 /
  28.4 / 32.4); ours bit-equal to ``get_scores`` on all 5,049 of 5,049 questions x 79,981
  chunks (max |diff| 0), our top chunk its argmax on all 5,049 (the check took about 23
  minutes); bm25s's top chunk equals ours on 69.4 % (its idf, above).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from structablate.retrieval.bm25 import BM25Index, bm25_tokenize

FILES = ("qasper-train-v0.3-reconstructed.json", "qasper-dev-v0.3-reconstructed.json",
         "qasper-test-v0.3.json")


def load(data: Path, files: list[str]):
    """(chunk token lists, chunk paper, query token lists, query paper)."""
    chunks, chunk_doc, queries, query_doc = [], [], [], []
    for name in files:
        for pid, paper in json.loads((data / name).read_text(encoding="utf-8")).items():
            for sec in paper.get("full_text") or []:
                for para in sec.get("paragraphs") or []:
                    if para and para.strip():
                        chunks.append(bm25_tokenize(para))
                        chunk_doc.append(pid)
            for qa in paper.get("qas") or []:
                queries.append(bm25_tokenize(qa["question"]))
                query_doc.append(pid)
    return chunks, chunk_doc, queries, query_doc


def ours(chunks, candidates, queries):
    t = time.perf_counter()
    index = BM25Index(chunks)
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    top_corpus, _ = index.top1(queries)
    t_corpus = time.perf_counter() - t
    t = time.perf_counter()
    index.top1(queries, candidates)
    return t_index, t_corpus, time.perf_counter() - t, top_corpus, index


def with_bm25s(chunks, queries, backend: str):
    import bm25s

    t = time.perf_counter()
    retriever = bm25s.BM25(method="robertson", k1=1.5, b=0.75, backend=backend)
    vocab = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in toks] for toks in chunks]
    retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    qtok = [[w for w in q if w in vocab] or [next(iter(vocab))] for q in queries]
    docs, _ = retriever.retrieve(qtok, k=1, show_progress=False, n_threads=1)
    return t_index, time.perf_counter() - t, docs[:, 0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="folder of the QASPER v0.3 files")
    ap.add_argument("--files", nargs="+", default=list(FILES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check-queries", type=int, default=50,
                    help="queries whose scores are checked against get_scores (a sample; "
                    "a number above the count checks all)")
    args = ap.parse_args(argv)
    chunks, chunk_doc, queries, query_doc = load(args.data, args.files)
    by_doc: dict[str, list[int]] = {}
    for i, d in enumerate(chunk_doc):
        by_doc.setdefault(d, []).append(i)
    candidates = [np.asarray(by_doc.get(d, [0]), dtype=np.int64) for d in query_doc]
    try:
        import numba  # noqa: F401

        backends = ["numba", "numpy"]
    except ImportError:
        backends = ["numpy"]
    print(f"{len(chunks)} chunks, {len(queries)} queries; load average "
          f"{os.getloadavg()[0]:.2f}; bm25s backends: {', '.join(backends)}")
    times: dict[str, list[tuple[float, float]]] = {"ours": [], **{b: [] for b in backends}}
    top, doc_scope = {}, []
    for b in backends:  # compile numba's kernels before any timing
        with_bm25s(chunks[:200], queries[:20], b)
    for _ in range(args.rounds):
        ti, tq, td, top["ours"], index = ours(chunks, candidates, queries)
        times["ours"].append((ti, tq))
        doc_scope.append(td)
        for b in backends:
            ti, tq, top[b] = with_bm25s(chunks, queries, b)
            times[b].append((ti, tq))
    print(f"ours, own-paper scope: {statistics.median(doc_scope):.2f} s (median)")
    print("| contender | index s | queries s | query ratio to ours (min / median / max) | "
          "index + queries ratio to ours | top-1 equal to ours |")
    print("| --- | --- | --- | --- | --- | --- |")

    def spread(xs):
        return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"

    for name, ts in times.items():
        q_ratio = [b / o[1] for (_, b), o in zip(ts, times["ours"], strict=True)]
        t_ratio = [(a + b) / sum(o) for (a, b), o in zip(ts, times["ours"], strict=True)]
        same = float(np.mean(np.asarray(top[name]) == top["ours"]))
        print(f"| {name} | {statistics.median(a for a, _ in ts):.2f} | "
              f"{statistics.median(b for _, b in ts):.2f} | {spread(q_ratio)} | "
              f"{spread(t_ratio)} | {100 * same:.1f} % |")
    # the scores, query by query (a dense matrix of all queries would take gigabytes)
    sample = np.random.default_rng(0).choice(len(queries), size=min(args.check_queries,
                                                                     len(queries)),
                                             replace=False)
    equal, same_top, worst = 0, 0, 0.0
    for i in sample:
        got, ref = index.scores([queries[i]])[0], index.okapi.get_scores(queries[i])
        equal += bool(np.array_equal(got, ref))
        same_top += int(top["ours"][i]) == int(np.argmax(ref))
        worst = max(worst, float(np.abs(got - ref).max()))
    print(f"ours vs BM25Okapi.get_scores on {len(sample)} queries x {len(chunks)} chunks: "
          f"bit-equal on {equal} of {len(sample)}, max |diff| {worst:.3g}, top chunk (timed "
          f"run) = argmax on {same_top} of {len(sample)}; load average "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
