"""Benchmark: score all measures for 4,303 queries x 11 conditions x top-100.

Synthetic runs over realistic chunk sizes: chunk character lengths are drawn from the paragraph
lengths of the QASPER dev papers (``--qasper``, default
``$STRUCTABLATE_DATA/qasper/qasper-dev-v0.3-reconstructed.json``; ``--synthetic-lengths`` draws
them from a log-normal instead), ~1,508 documents of ~40 chunks,
a different random tiling per condition; 4,303 queries with 1-4 gold spans each (mean ~2.1);
each run holds 100 chunks, half from the query's own document. Also times binary nDCG@10 and
RR beside ranx and ir_measures, and checks they agree.

    python bench/bench_metrics.py [--qasper PATH | --synthetic-lengths] [--conditions 11]
        [--queries 4303]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import polars as pl
from benchdata import default_data_file, require_file

from structablate.metrics import DEFAULT_MEASURES, score_run

QASPER = ("qasper", "qasper-dev-v0.3-reconstructed.json")


def paragraph_lengths(qasper: Path | None) -> np.ndarray:
    """Paragraph character lengths (>= 40) of the QASPER file; ``None``: log-normal draws."""
    if qasper is not None:
        papers = json.loads(qasper.read_text())
        lens = [
            len(p)
            for paper in papers.values()
            for sec in paper["full_text"]
            for p in sec["paragraphs"]
            if p and p.strip()
        ]
        return np.asarray([n for n in lens if n >= 40], dtype=np.int64)
    return np.random.default_rng(0).lognormal(6.6, 0.7, size=20000).astype(np.int64) + 40


def build(n_docs: int, n_queries: int, n_cond: int, depth: int, seed: int = 0,
          qasper: Path | None = None):
    rng = np.random.default_rng(seed)
    plen = paragraph_lengths(qasper)
    doc_len = np.zeros(n_docs, dtype=np.int64)
    conds = []
    for k in range(n_cond):
        ids, dd, ss, ee = [], [], [], []
        for d in range(n_docs):
            if k == 0:  # the document length is fixed by the first tiling
                sizes = rng.choice(plen, size=40) + 2
                doc_len[d] = sizes.sum()
            else:
                sizes = rng.choice(plen, size=60) + 2
                sizes = sizes[np.cumsum(sizes) < doc_len[d]]
            cuts = np.concatenate([[0], np.cumsum(sizes)])
            cuts[-1] = doc_len[d] if k == 0 else cuts[-1]
            cuts = np.concatenate([cuts[cuts < doc_len[d]], [doc_len[d]]])
            n = len(cuts) - 1
            ss.append(cuts[:-1])
            ee.append(cuts[1:] - 2 * (np.arange(n) < n - 1))  # 2-char gaps between chunks
            dd.append(np.full(n, d))
            ids.extend(f"c{k}-{d}-{i}" for i in range(n))
        s, e = np.concatenate(ss), np.concatenate(ee)
        chunks = pl.DataFrame(
            {
                "chunk_id": ids,
                "doc_id": [f"D{x}" for x in np.concatenate(dd)],
                "start": s,
                "end": e,
                "section_idx": np.zeros(len(s), dtype=np.int32),
                "top_section": np.zeros(len(s), dtype=np.int32),
                "prefix": [""] * len(s),
                "content_tokens": ((e - s) // 4.3).astype(np.int32),
                "prefix_tokens": rng.integers(0, 30 if k % 2 else 1, size=len(s)).astype(np.int32),
            }
        )
        conds.append(chunks)
    qdoc = rng.integers(0, n_docs, size=n_queries)
    qids = [f"q{i:05d}" for i in range(n_queries)]
    queries = pl.DataFrame(
        {
            "qid": qids,
            "doc_id": [f"D{d}" for d in qdoc],
            "text": [""] * n_queries,
            "qtype": rng.choice(["a", "b", "c"], size=n_queries),
        }
    )
    # QASPER profile: 43.9% multi-span, mean ~2.1 spans
    n_sp = rng.choice([1, 2, 3, 4, 5, 6], p=[0.561, 0.13, 0.1, 0.09, 0.06, 0.059], size=n_queries)
    qi = np.repeat(np.arange(n_queries), n_sp)
    glen = rng.choice(plen, size=len(qi))
    gstart = (rng.random(len(qi)) * np.maximum(doc_len[qdoc[qi]] - glen, 1)).astype(np.int64)
    qrels = pl.DataFrame(
        {
            "qid": [qids[i] for i in qi],
            "doc_id": [f"D{qdoc[i]}" for i in qi],
            "start": gstart,
            "end": np.minimum(gstart + glen, doc_len[qdoc[qi]]),
        }
    )
    runs = []
    for chunks in conds:
        by_doc = chunks.group_by("doc_id", maintain_order=True).agg("chunk_id")
        own = dict(zip(by_doc["doc_id"].to_list(), by_doc["chunk_id"].to_list(), strict=True))
        all_ids = chunks["chunk_id"].to_numpy()
        rq, rc = [], []
        for i, d in enumerate(qdoc):
            mine = own[f"D{d}"]
            take = rng.permutation(mine)[: depth // 2]
            rest = all_ids[rng.integers(0, len(all_ids), size=depth - len(take))]
            picked = list(dict.fromkeys(list(take) + list(rest)))[:depth]
            rng.shuffle(picked)
            rq.extend([qids[i]] * len(picked))
            rc.extend(picked)
        run = pl.DataFrame({"qid": rq, "chunk_id": rc}).with_columns(
            rank=pl.int_range(1, pl.len() + 1).over("qid").cast(pl.Int32)
        )
        run = run.with_columns(score=(1.0 / pl.col("rank")).cast(pl.Float32), stage=pl.lit("flat"))
        runs.append(run.select("qid", "rank", "chunk_id", "score", "stage"))
    return conds, runs, qrels, queries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1508)
    ap.add_argument("--queries", type=int, default=4303)
    ap.add_argument("--conditions", type=int, default=11)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--qasper", default=default_data_file(*QASPER),
                    help="QASPER v0.3 JSON whose paragraph lengths size the chunks "
                         "(default: $STRUCTABLATE_DATA/qasper/...)")
    ap.add_argument("--synthetic-lengths", action="store_true",
                    help="draw paragraph lengths from a log-normal instead of reading QASPER")
    args = ap.parse_args()
    qasper = None if args.synthetic_lengths else require_file(
        args.qasper, what="bench_metrics", flag="--qasper PATH (or --synthetic-lengths)",
        parts=QASPER)
    t0 = time.perf_counter()
    conds, runs, qrels, queries = build(args.docs, args.queries, args.conditions, args.depth,
                                        qasper=qasper)
    n_chunks = np.mean([c.height for c in conds])
    print(
        f"built synthetic data in {time.perf_counter() - t0:.1f}s: {args.docs} docs, "
        f"{n_chunks / args.docs:.1f} chunks/doc, {qrels.height / args.queries:.2f} spans/query, "
        f"{runs[0].height} run rows per condition"
    )
    measures = list(DEFAULT_MEASURES)
    score_run(runs[0].head(1000), conds[0], qrels, queries, measures)  # warm-up
    t0 = time.perf_counter()
    scored = [score_run(r, c, qrels, queries, measures) for r, c in zip(runs, conds, strict=True)]
    dt = time.perf_counter() - t0
    print(
        f"score_run, {len(measures)} measures, {args.conditions} conditions: {dt:.2f}s total, "
        f"{dt / args.conditions * 1000:.0f} ms per condition"
    )
    print("means (condition 0):", {m: round(scored[0][m].mean(), 4) for m in measures})

    # exact reference path on a slice, for scale
    sub = queries.head(200)
    t0 = time.perf_counter()
    exact = score_run(runs[0], conds[0], qrels, sub, measures, exact=True)
    dt_exact = time.perf_counter() - t0
    fast = scored[0].head(200)
    worst = max(float((fast[m] - exact[m]).abs().max()) for m in measures)
    print(
        f"exact reference path: {dt_exact:.2f}s for 200 queries "
        f"(~{dt_exact / 200 * args.queries * args.conditions:.0f}s for the grid); "
        f"max |fast - exact| = {worst:.1e}"
    )

    binary_compare(runs[0], conds[0], qrels, queries, scored[0])


def binary_compare(run, chunks, qrels, queries, ours) -> None:
    from structablate.metrics.trec import chunk_qrels

    t0 = time.perf_counter()
    ours2 = score_run(run, chunks, qrels, queries, ["nDCG@10", "RR"])
    t_ours = time.perf_counter() - t0
    cq = chunk_qrels(qrels, chunks, include_nonrelevant=True)
    r = run.sort("qid", "rank")
    try:
        import ir_measures
        from ir_measures import RR, Qrel, ScoredDoc, nDCG

        iq = [Qrel(a, b, int(c)) for a, b, c in cq.iter_rows()]
        ir = [
            ScoredDoc(a, c, float(-k))
            for a, k, c in r.select("qid", "rank", "chunk_id").iter_rows()
        ]
        t0 = time.perf_counter()
        res = {
            (m.query_id, str(m.measure)): m.value
            for m in ir_measures.iter_calc([nDCG @ 10, RR], iq, ir)
        }
        t_irm = time.perf_counter() - t0
        diff = max(
            abs(res[(q, "nDCG@10")] - a) + abs(res[(q, "RR")] - b)
            for q, a, b in ours2.select("qid", "nDCG@10", "RR").iter_rows()
            if (q, "RR") in res
        )
        print(
            f"ir_measures nDCG@10+RR: {t_irm:.2f}s (ours {t_ours:.2f}s incl. validation); "
            f"max diff {diff:.1e}"
        )
    except ImportError:
        print("ir_measures not installed")
    try:
        from ranx import Qrels, Run, evaluate
    except ImportError:
        print("ranx not installed (pip install ranx)")
        return
    qd: dict[str, dict[str, int]] = {}
    for a, b, c in cq.filter(pl.col("relevance") > 0).iter_rows():
        qd.setdefault(a, {})[b] = int(c)
    rd: dict[str, dict[str, float]] = {}
    for a, k, c in r.select("qid", "rank", "chunk_id").iter_rows():
        if a in qd:
            rd.setdefault(a, {})[c] = float(-k)
    t0 = time.perf_counter()
    qrels_r, run_r = Qrels(qd), Run(rd)
    t_build = time.perf_counter() - t0
    evaluate(qrels_r, run_r, ["ndcg@10", "mrr"])  # numba warm-up / compile
    run_r = Run(rd)
    t0 = time.perf_counter()
    vals = evaluate(qrels_r, run_r, ["ndcg@10", "mrr"], return_mean=False)
    t_ranx = time.perf_counter() - t0
    sub = ours2.filter(pl.col("qid").is_in(list(qd)))
    order = {q: i for i, q in enumerate(run_r.keys())}
    idx = np.array([order[q] for q in sub["qid"].to_list()])
    diff = max(
        float(np.abs(vals["ndcg@10"][idx] - sub["nDCG@10"].to_numpy()).max()),
        float(np.abs(vals["mrr"][idx] - sub["RR"].to_numpy()).max()),
    )
    print(
        f"ranx nDCG@10+MRR: {t_ranx:.3f}s evaluate (+{t_build:.2f}s building Qrels/Run "
        f"from dicts, compile excluded); ours {t_ours:.2f}s from frames; max diff {diff:.1e} "
        f"over {len(idx)} queries with a relevant chunk"
    )


if __name__ == "__main__":
    main()
