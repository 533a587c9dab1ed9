"""Flat retrieval: exact top-k against brute force, tie rule, HNSW determinism and recall."""

import numpy as np
import polars as pl
import pytest

from structablate.retrieval.flat import exact_search, hnsw_search, search
from structablate.retrieval.runs import retrieve_run
from structablate.settings import RetrievalSettings, parse
from structablate.study import condition


def _unit(rng, n, d=32):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_exact_matches_brute_force():
    rng = np.random.default_rng(1)
    c, q = _unit(rng, 500), _unit(rng, 40)
    idx, sc = exact_search(q, c, 25, block=7)
    full = (q.astype(np.float64) @ c.T.astype(np.float64))
    expect = np.argsort(-full, axis=1, kind="stable")[:, :25]
    assert np.array_equal(idx, expect)
    assert np.allclose(sc, np.take_along_axis(full, expect, axis=1), atol=1e-6)
    # block size does not change a single bit
    idx2, sc2 = exact_search(q, c, 25, block=40)
    assert np.array_equal(idx, idx2) and np.array_equal(sc, sc2)


def test_ties_break_by_row_index():
    c = np.repeat(np.eye(4, dtype=np.float32), 3, axis=0)  # rows 0-2, 3-5, ... identical
    q = np.array([[0, 1, 0, 0]], dtype=np.float32)
    idx, sc = exact_search(q, c, 4)
    assert idx[0].tolist() == [3, 4, 5, 0] and sc[0, :3].tolist() == [1.0, 1.0, 1.0]


def test_k_larger_than_corpus():
    rng = np.random.default_rng(2)
    idx, _ = exact_search(_unit(rng, 3), _unit(rng, 5), 100)
    assert idx.shape == (3, 5) and sorted(idx[0].tolist()) == [0, 1, 2, 3, 4]


def test_hnsw_is_deterministic_and_close_to_exact():
    rng = np.random.default_rng(3)
    c, q = _unit(rng, 2000), _unit(rng, 50)
    a = hnsw_search(q, c, 10, M=16, ef_construction=100, ef_search=100, seed=7)
    b = hnsw_search(q, c, 10, M=16, ef_construction=100, ef_search=100, seed=7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    exact, _ = exact_search(q, c, 10)
    recall = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a[0], exact, strict=True)])
    assert recall > 0.9
    assert np.all(np.diff(a[1], axis=1) <= 0)  # sorted by exact score
    with pytest.raises(ValueError, match="unknown retrieval method"):
        search(q, c, 10, "faiss")


def retrieval(cfg: dict) -> RetrievalSettings:
    return parse(RetrievalSettings, cfg, "retrieval")


def test_run_table_and_stale_vectors_error():
    rng = np.random.default_rng(4)
    chunks = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(6)], "doc_id": ["d"] * 6,
                           "top_section": [0, 0, 1, 1, 2, 2]})
    queries = pl.DataFrame({"qid": ["q1", "q2"], "doc_id": ["d", "d"]})
    run = retrieve_run(condition("G2"), queries, _unit(rng, 2), chunks, _unit(rng, 6),
                       retrieval({"top_k": 4, "method": "exact"}))
    assert run.height == 8 and run["rank"].to_list() == [1, 2, 3, 4] * 2
    assert set(run["stage"]) == {"flat"} and run["section_recall"].null_count() == 8
    with pytest.raises(ValueError, match="stale"):
        retrieve_run(condition("G2"), queries, _unit(rng, 3), chunks, _unit(rng, 6),
                     retrieval({"top_k": 4}))
    two = retrieve_run(condition("G4"), queries, _unit(rng, 2), chunks, _unit(rng, 6),
                       retrieval({"top_k": 6, "method": "exact", "hier_top_sections": 1}))
    # one section of two chunks is routed, the other four rows are backfill
    assert two.filter(pl.col("qid") == "q1")["stage"].to_list() == ["routed"] * 2 + [
        "backfill"] * 4
    assert two["n_backfill"].to_list() == [4] * 12


def test_rerank_run_reorders_only_the_top_n_and_flags_untrained_head():
    from conftest import MODEL

    from structablate.retrieval.runs import rerank_run
    from structablate.settings import RerankerSettings

    rng = np.random.default_rng(5)
    texts = ["the cat sat on the mat", "retrieval with headings", "placebo paths shuffle",
             "two stage routing of sections", "gold structure of papers", "a fixed window"]
    chunks = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(6)], "doc_id": ["d"] * 6,
                           "top_section": [0] * 6})
    queries = pl.DataFrame({"qid": ["q1", "q2"], "doc_id": ["d", "d"],
                            "text": ["where do cats sit", "how are sections routed"]})
    first = retrieve_run(condition("G2"), queries, _unit(rng, 2), chunks, _unit(rng, 6),
                         retrieval({"top_k": 6, "method": "exact"}))
    rr = RerankerSettings(model=MODEL, top_n=3)
    a, report = rerank_run(first, queries, chunks, texts, rr, seed=1)
    b, _ = rerank_run(first, queries, chunks, texts, rr, seed=1)
    assert a.equals(b)
    assert report["dtype"] == "float32" and report["pairs_scored"] == 6
    assert report["pairs_from_cache"] == 0
    assert not a["reranker_trained"].any()
    for q in ("q1", "q2"):
        fa = first.filter(pl.col("qid") == q)["chunk_id"].to_list()
        ra = a.filter(pl.col("qid") == q)
        assert sorted(ra["chunk_id"].to_list()[:3]) == sorted(fa[:3])
        assert ra["chunk_id"].to_list()[3:] == fa[3:]
        assert ra["score"].to_list()[3:] == [None] * 3
        assert ra["first_stage_rank"].to_list()[3:] == [4, 5, 6]


@pytest.mark.parametrize("n,k,group", [(1000, 10, 32), (1003, 10, 7), (50, 5, 3), (40, 40, 1)])
def test_kth_lower_bound_is_reached_by_k_entries_and_never_above_the_kth(n, k, group):
    from structablate.retrieval.flat import kth_lower_bound

    rng = np.random.default_rng(n + k)
    s = rng.standard_normal((9, n)).astype(np.float32)
    s[0, :] = 0.5  # all tied
    s[1, : 3 * k] = 7.0  # the top entries packed into few groups
    bound = kth_lower_bound(s, k, group)
    kth = np.sort(s, axis=1)[:, n - k]
    assert np.all(bound <= kth)
    assert np.all((s >= bound[:, None]).sum(axis=1) >= k)
    assert bound[0] == 0.5 and bound[1] == 7.0


@pytest.mark.parametrize("n,k,group", [(1000, 10, 32), (1003, 10, 7), (50, 5, 3), (40, 40, 1)])
def test_group_candidates_are_exactly_the_entries_at_or_above_the_threshold(n, k, group):
    """The candidates found through the group maxima (the leftover group included) are the
    entries a full-matrix comparison finds, row by row."""
    from structablate.retrieval.flat import group_candidates, group_maxima, kth_of_maxima

    rng = np.random.default_rng(n * k)
    s = rng.standard_normal((9, n)).astype(np.float32)
    s[0, :] = 0.5
    s[1, : 3 * k] = 7.0
    s[2, -1] = 9.0  # the best entry in the leftover group
    maxima = group_maxima(s, group)
    thr = (kth_of_maxima(maxima, k) - np.float32(0.3)).astype(np.float32)
    qi, cj = group_candidates(s, maxima, thr, group)
    want_q, want_c = np.nonzero(s >= thr[:, None])
    assert np.all(np.diff(qi) >= 0)
    got = sorted(zip(qi.tolist(), cj.tolist(), strict=True))
    assert got == sorted(zip(want_q.tolist(), want_c.tolist(), strict=True))


def test_exact_search_scores_a_block_that_overflows_float32_in_float64():
    """Norms near float32's largest value: the float32 pass overflows, the block takes the
    float64 route, and the result still equals it."""
    from structablate.retrieval.flat import _exact_float64

    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 16)).astype(np.float32) * np.float32(1e19)
    q = rng.standard_normal((5, 16)).astype(np.float32) * np.float32(1e19)
    assert not np.isfinite(q @ x.T).all()
    idx, sc = exact_search(q, x, 7)
    ref = _exact_float64(q, x.astype(np.float64), 7, 64)
    assert np.array_equal(idx, ref[0]) and np.array_equal(sc, ref[1], equal_nan=True)


def test_exact_matches_brute_force_when_the_top_share_groups():
    # the best chunks sit in few of the lower bound's strided groups (columns j, j + m, ...),
    # so the bound is far below the k-th score: more candidates, the same result
    from structablate.retrieval.flat import _group_size, group_columns

    rng = np.random.default_rng(5)
    n, k = 3000, 50
    c = _unit(rng, n)
    q = _unit(rng, 12)
    group = _group_size(n, k)
    m = group_columns(n, group)
    best = np.array([j + i * m for j in range(8) for i in range(group) if j + i * m < n])
    assert len(best) >= k
    c[best] = q[0] + 0.01 * _unit(rng, len(best))
    idx, sc = exact_search(q, c, k)
    ref = (q.astype(np.float64) @ c.astype(np.float64).T).astype(np.float32)
    assert set(idx[0].tolist()) <= set(best.tolist())
    for i in range(len(q)):
        order = np.lexsort((np.arange(n), -ref[i]))[:k]
        assert idx[i].tolist() == order.tolist()
        assert np.array_equal(sc[i], ref[i, order])
