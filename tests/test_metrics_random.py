"""Randomized cross-checks: the vectorized path equals the exact interval reference, and the
binary measures equal ir_measures on the TREC export."""

import ir_measures
import numpy as np
import polars as pl
import pytest
from ir_measures import RR, nDCG

from structablate.metrics import DEFAULT_MEASURES, score_run
from structablate.metrics.trec import chunk_qrels, write_trec_qrels, write_trec_run


def synth(seed, n_docs=12, n_queries=40, depth=15, overlap=False):
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        cuts = np.sort(rng.choice(np.arange(1, 2000), size=rng.integers(3, 25), replace=False))
        bounds = np.concatenate([[0], cuts, [2000]])
        for i, (s, e) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            s2 = s + int(rng.integers(0, 3))  # whitespace gaps
            if s2 >= e:
                s2 = s
            rows.append((f"D{d}-c{i}", f"D{d}", int(s2), int(e)))
        if overlap and d % 2 == 0:
            for j in range(4):
                s = int(rng.integers(0, 1900))
                rows.append((f"D{d}-o{j}", f"D{d}", s, s + int(rng.integers(5, 300))))
    chunks = pl.DataFrame(
        rows, schema=["chunk_id", "doc_id", "start", "end"], orient="row"
    ).with_columns(
        content_tokens=((pl.col("end") - pl.col("start")) // 4).cast(pl.Int64),
        prefix_tokens=pl.Series(rng.integers(0, 30, size=len(rows))),
    )
    ids = chunks["chunk_id"].to_list()
    docs = chunks["doc_id"].to_list()
    queries, qrels, run = [], [], []
    for q in range(n_queries):
        d = f"D{int(rng.integers(0, n_docs))}"
        queries.append((f"q{q:03d}", d, "text", ["a", "b"][q % 2]))
        for _ in range(int(rng.integers(1, 4))):
            s = int(rng.integers(0, 1950))
            qrels.append((f"q{q:03d}", d, s, s + int(rng.integers(1, 400))))
        if q % 7 == 3:
            continue  # no run rows
        own = [i for i, dd in zip(ids, docs, strict=True) if dd == d]
        other = [i for i, dd in zip(ids, docs, strict=True) if dd != d]
        pool = own + list(rng.choice(other, size=len(own), replace=False))
        picked = rng.permutation(pool)[: min(depth, len(pool))]
        ranks = rng.permutation(np.arange(1, 3 * len(picked)))[: len(picked)]  # gaps
        for cid, r in zip(picked, ranks, strict=True):
            run.append((f"q{q:03d}", int(r), str(cid), float(-r), "flat"))
    queries = pl.DataFrame(queries, schema=["qid", "doc_id", "text", "qtype"], orient="row")
    qrels = pl.DataFrame(qrels, schema=["qid", "doc_id", "start", "end"], orient="row")
    qrels = qrels.with_columns(pl.min_horizontal("end", pl.lit(2000)).alias("end"))
    run = pl.DataFrame(run, schema=["qid", "rank", "chunk_id", "score", "stage"], orient="row")
    return run, chunks, qrels, queries


MEASURES = list(DEFAULT_MEASURES) + ["covNDCG@3", "R@5", "RR@3", "nDCG@5", "TokCov@100"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_path_equals_exact_reference(seed):
    data = synth(seed)
    fast = score_run(*data, MEASURES)
    exact = score_run(*data, MEASURES, exact=True)
    assert fast["qid"].to_list() == exact["qid"].to_list()
    for m in MEASURES:
        np.testing.assert_allclose(fast[m].to_numpy(), exact[m].to_numpy(), atol=1e-12, err_msg=m)
    # sanity: the synthetic data is not degenerate
    assert (fast["covNDCG@10"] > 0).sum() > 10
    assert ((fast["covNDCG@10"] > 0) & (fast["covNDCG@10"] < 1)).sum() > 5
    assert (fast["TokCov@512"] > 0).sum() > 5


def test_overlapping_documents_use_the_general_path():
    data = synth(7, overlap=True)
    mixed = score_run(*data, MEASURES)
    exact = score_run(*data, MEASURES, exact=True)
    for m in MEASURES:
        np.testing.assert_allclose(mixed[m].to_numpy(), exact[m].to_numpy(), atol=1e-12)


@pytest.mark.parametrize("seed", [4, 5])
def test_binary_measures_match_ir_measures(seed, tmp_path):
    run, chunks, qrels, queries = synth(seed, n_queries=60, depth=25)
    ours = score_run(run, chunks, qrels, queries, ["nDCG@10", "RR", "nDCG@5"])
    write_trec_run(run, tmp_path / "run.trec")
    write_trec_qrels(qrels, chunks, tmp_path / "qrels.trec")
    theirs = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc(
            [nDCG @ 10, RR, nDCG @ 5],
            ir_measures.read_trec_qrels(str(tmp_path / "qrels.trec")),
            ir_measures.read_trec_run(str(tmp_path / "run.trec")),
        )
    }
    in_run = set(run["qid"].to_list())
    n = 0
    for row in ours.iter_rows(named=True):
        for name, key in (("nDCG@10", "nDCG@10"), ("RR", "RR"), ("nDCG@5", "nDCG@5")):
            if row["qid"] in in_run:
                assert row[name] == pytest.approx(theirs[(row["qid"], key)], abs=1e-9)
                n += 1
            else:
                assert row[name] == 0.0
    assert n > 100
    assert 0 < ours["RR"].mean() < 1


def test_chunk_qrels_grades():
    _, chunks, qrels, _ = synth(9, n_queries=5)
    q = chunk_qrels(qrels, chunks)
    assert set(q["relevance"].unique().to_list()) <= {0, 1}
    assert q.filter(pl.col("relevance") == 1).height > 0
