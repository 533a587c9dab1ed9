"""Exact search at float32 speed gives the float64 ranking bit for bit (real embedder vectors,
ties, near-ties, adversarial cancellation); tuned HNSW reaches its recall target or says why
not; two-stage retrieval scores exactly like flat search."""

import numpy as np
import polars as pl
import pytest
from conftest import MODEL

from structablate.chunking.build import build_chunks, chunk_texts
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.corpus.qasper import queries_frame
from structablate.retrieval.flat import (
    _exact_float64,
    exact_is_faster,
    exact_search,
    float32_error_bound,
    recall_at_k,
    search_with_report,
    tuned_hnsw_search,
)
from structablate.retrieval.runs import retrieve_run
from structablate.settings import ChunkingSettings, HnswSettings, RetrievalSettings, parse
from structablate.study import condition


def reference(q, x, k, block=64):
    """The float64 route for every chunk (score_matrix + topk_desc): today's definition."""
    q32, x32 = np.asarray(q, np.float32), np.asarray(x, np.float32)
    return _exact_float64(q32, x32.astype(np.float64), min(k, x32.shape[0]), block)


def assert_same(a, b):
    assert np.array_equal(a[0], b[0])
    assert np.array_equal(a[1], b[1])
    assert a[1].dtype == np.float32 and a[0].dtype == np.int64


@pytest.fixture(scope="module")
def real_vectors(sample_corpus, counter):
    """MiniLM vectors (first 64 tokens) of 160 of the QASPER sample's G3 chunks (prefix +
    content) and of its questions; every fifth chunk text is embedded twice so identical
    vectors tie exactly."""
    from structablate.embedding import Embedder
    from structablate.settings import EmbedderSettings

    docs = sample_corpus.documents
    d = documents_frame(docs, "qasper")
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    g3 = build_chunks(condition("G3"), d, paragraphs_frame(docs), s, counter, ChunkingSettings(),
                      progress=False)
    texts = chunk_texts(g3, d)[:160]
    n_orig = len(texts)
    texts = texts + texts[::5]
    queries = queries_frame(sample_corpus.questions)["text"].to_list()
    emb = Embedder(EmbedderSettings(model=MODEL, batch_size=16, length_bucket=32,
                                  max_seq_length=64))
    return emb.encode(queries), emb.encode(texts), n_orig


@pytest.mark.parametrize("k", [1, 10, 100])
def test_real_vectors_equal_the_float64_route(real_vectors, k):
    q, x, n_orig = real_vectors
    n = x.shape[0]
    assert n == 192
    for block in (7, 256):
        assert_same(exact_search(q, x, k, block=block), reference(q, x, k))
    # exact ties (a text embedded twice) break by row: the original's row comes first
    assert np.array_equal(x[n_orig:], x[:n_orig:5])
    idx, sc = exact_search(q, x, n - 1)
    checked = 0
    for i in range(len(q)):
        pos = {int(c): j for j, c in enumerate(idx[i])}
        for j, dup in enumerate(range(n_orig, n)):
            orig = 5 * j
            if dup in pos and orig in pos:
                assert sc[i, pos[dup]] == sc[i, pos[orig]] and pos[orig] == pos[dup] - 1 or (
                    sc[i, pos[orig]: pos[dup] + 1] == sc[i, pos[orig]]).all()
                assert pos[orig] < pos[dup]
                checked += 1
    assert checked > 50


def test_ties_near_ties_and_cancellation_equal_the_float64_route():
    rng = np.random.default_rng(7)
    d = 384
    x = rng.standard_normal((3000, d)).astype(np.float32)
    x[100:400] = x[50]  # 300 exact copies: the top k is decided by row order alone
    # near-ties: copies nudged below float32 resolution of the score
    x[500:800] = x[60] + rng.standard_normal((300, d)).astype(np.float32) * 1e-7
    # cancellation: large opposite components, a small true score
    x[900:1000] = rng.standard_normal((100, d)).astype(np.float32) * 1e3
    q = np.vstack([x[50], x[60], rng.standard_normal((30, d)).astype(np.float32),
                   x[900] + 1e-3])
    # integer-valued vectors: many exact score ties among different chunks
    xi = rng.integers(-2, 3, size=(2000, 16)).astype(np.float32)
    qi = rng.integers(-2, 3, size=(40, 16)).astype(np.float32)
    for qq, xx in ((q, x), (qi, xi)):
        for k in (1, 5, 100, 999):
            assert_same(exact_search(qq, xx, k, block=16), reference(qq, xx, k))


def test_threads_blocks_and_batch_change_no_bit(monkeypatch):
    """The float32 product runs per block, the ranking in tasks on threads: any block size,
    thread count and batch gives every query the float64 route's list and scores, near-ties
    included, and a query searched alone gets its row of the batch."""
    from structablate.retrieval import flat

    rng = np.random.default_rng(11)
    d, n = 64, 2500
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[10:200] = x[5]  # exact copies: row order decides
    x[300:600] = x[7] + rng.standard_normal((300, d)).astype(np.float32) * 1e-7  # near-ties
    q = np.vstack([x[5], x[7], rng.standard_normal((90, d)).astype(np.float32)])
    want = reference(q, x, 40)
    monkeypatch.setattr(flat, "_THREADED_MIN_SCORES", 0)  # threads even at this small size
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        assert flat._search_threads() == int(threads)
        for block in (5, 33, 512):
            assert_same(exact_search(q, x, 40, block=block), want)
    for i in (0, 1, 50, 91):
        alone = exact_search(q[i : i + 1], x, 40)
        assert_same((alone[0][0], alone[1][0]), (want[0][i], want[1][i]))


def test_pair_scores_do_not_depend_on_the_batch(monkeypatch):
    """Each pair's score is the same bits whatever other pairs share the call, in any order,
    when the gather buffer splits one query's pairs over pieces, and equal to the float64 dot
    product rounded to float32."""
    from structablate.retrieval import flat

    rng = np.random.default_rng(12)
    d = 96
    x = rng.standard_normal((700, d)).astype(np.float32)
    q = rng.standard_normal((9, d)).astype(np.float32)
    qrow = rng.integers(0, len(q), 1500)
    crow = rng.integers(0, len(x), 1500)
    alone = np.array([flat.pair_scores(q, x, qrow[t : t + 1], crow[t : t + 1])[0]
                      for t in range(len(qrow))])
    assert np.array_equal(flat.pair_scores(q, x, qrow, crow), alone)
    monkeypatch.setattr(flat, "_PAIR_BUFFER_BYTES", 8 * d * 7)  # 7 pairs per piece
    assert np.array_equal(flat.pair_scores(q, x, qrow, crow), alone)
    srt = np.argsort(qrow, kind="stable")
    assert np.array_equal(flat.pair_scores(q, x, qrow[srt], crow[srt]), alone[srt])
    ref = np.einsum("ij,ij->i", q[qrow].astype(np.float64), x[crow].astype(np.float64))
    assert np.array_equal(alone, ref.astype(np.float32))


def test_threshold_below_float32_range_keeps_to_the_chunks():
    """Huge orthogonal vectors: every score is a finite 0 but the error margin passes float32's
    range, so the candidate threshold is clamped (the score buffer's -inf padding columns past
    the last chunk are never candidates) and every chunk ties, ranked by row."""
    n = 37  # not a multiple of the group size: the buffer has padding columns
    q = np.array([[1e38, 0.0]], dtype=np.float32)
    x = np.tile(np.array([[0.0, 1e38]], dtype=np.float32), (n, 1))
    from structablate.retrieval.flat import _group_size, group_columns

    k = 2
    assert group_columns(n, _group_size(n, k)) * _group_size(n, k) > n
    idx, sc = exact_search(q, x, k)
    assert idx.tolist() == [[0, 1]] and (sc == 0).all()
    assert_same((idx, sc), reference(q, x, k))


def test_error_bound_holds():
    rng = np.random.default_rng(3)
    for d in (8, 384, 1024):
        x = (rng.standard_normal((500, d)) * rng.lognormal(0, 2, (500, 1))).astype(np.float32)
        q = (rng.standard_normal((20, d)) * rng.lognormal(0, 2, (20, 1))).astype(np.float32)
        s32 = q @ x.T
        ref = (q.astype(np.float64) @ x.astype(np.float64).T).astype(np.float32)
        bound = float32_error_bound(d) * np.outer(np.linalg.norm(q.astype(np.float64), axis=1),
                                                  np.linalg.norm(x.astype(np.float64), axis=1))
        assert (np.abs(s32.astype(np.float64) - ref) <= bound).all()


def test_non_finite_inputs_take_the_float64_route():
    x = np.eye(6, dtype=np.float32)
    x[3, 0] = np.nan
    q = np.ones((2, 6), dtype=np.float32)
    a, b = exact_search(q, x, 3), reference(q, x, 3)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1], equal_nan=True)


# -- HNSW ----------------------------------------------------------------------------------------

def _uniform(rng, n, d):
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_tuned_hnsw_reaches_its_recall_target_deterministically():
    rng = np.random.default_rng(11)
    x, q = _uniform(rng, 4000, 64), _uniform(rng, 300, 64)
    st = HnswSettings(M=8, ef_construction=40, ef_search=20, recall_sample=120,
                      prefer_exact=False, target_recall=0.99)
    idx, sc, rep = tuned_hnsw_search(q, x, 50, st)
    assert rep["method"] == "hnsw" and rep["recall_at_k"] >= 0.99
    efs = [t["ef_search"] for t in rep["recall_tried"]]
    assert efs[0] == 50 and all(b == min(2 * a, 8192) for a, b in zip(efs, efs[1:],
                                                                        strict=False))
    assert all(t["recall"] < 0.99 for t in rep["recall_tried"][:-1])  # first beam that makes it
    # the recall reported is the recall of the returned ranking on the sampled queries
    sample = np.sort(np.random.default_rng(st.seed).choice(300, size=120, replace=False))
    truth = exact_search(q[sample], x, 50)[0]
    assert recall_at_k(idx[sample], truth) == pytest.approx(rep["recall_at_k"], abs=1e-6)
    # scores are the exact ones, rows ordered score desc then row asc
    ref = reference(q, x, 4000)
    for i in range(0, 300, 37):
        exact_of = dict(zip(ref[0][i].tolist(), ref[1][i].tolist(), strict=True))
        assert sc[i].tolist() == [exact_of[c] for c in idx[i].tolist()]
    again = tuned_hnsw_search(q, x, 50, st)
    assert np.array_equal(again[0], idx) and np.array_equal(again[1], sc) and again[2] == rep


def test_hnsw_falls_back_to_exact_or_raises():
    rng = np.random.default_rng(12)
    x, q = _uniform(rng, 3000, 64), _uniform(rng, 100, 64)
    low = dict(M=4, ef_construction=8, ef_search=8, max_ef_search=16, recall_sample=50,
               prefer_exact=False)
    idx, sc, rep = tuned_hnsw_search(q, x, 40, HnswSettings(**low))
    assert rep["method"] == "exact" and "searched exactly instead" in rep["reason"]
    assert_same((idx, sc), exact_search(q, x, 40))
    with pytest.raises(RuntimeError, match="on_shortfall: raise"):
        tuned_hnsw_search(q, x, 40, HnswSettings(**low, on_shortfall="raise"))
    # where exact search is predicted faster it runs, and says so
    idx, sc, rep = tuned_hnsw_search(q, x, 40, HnswSettings())
    assert rep["method"] == "exact" and "predicted faster" in rep["reason"]
    assert_same((idx, sc), exact_search(q, x, 40))
    with pytest.raises(ValueError, match="'ef' was unexpected"):
        parse(HnswSettings, {"ef": 10}, "retrieval.hnsw")


def test_cost_model_crossover():
    st = HnswSettings()
    # the paper's sizes: exact is faster at any corpus size for 4,301 queries
    assert exact_is_faster(4301, 36217, st) == (True, None)
    fast, n_star = exact_is_faster(1_000_000, 10_000_000, st)
    assert not fast and n_star is not None
    assert exact_is_faster(1_000_000, n_star - 1, st)[0]
    assert not exact_is_faster(1_000_000, n_star + 1, st)[0]


def test_run_reports_the_search(real_vectors):
    q, x, _ = real_vectors
    n = x.shape[0]
    chunks = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(n)], "doc_id": ["d"] * n,
                           "top_section": [i // 10 for i in range(n)]})
    queries = pl.DataFrame({"qid": [f"q{i:03d}" for i in range(len(q))],
                            "doc_id": ["d"] * len(q)})
    rep: dict = {}
    run = retrieve_run(condition("G2"), queries, q, chunks, x,
                       parse(RetrievalSettings, {"top_k": 20, "method": "exact"}), report=rep)
    assert rep["retrieval"] == {"requested": "exact", "method": "exact", "k": 20}
    ref = reference(q, x, 20)
    assert run["chunk_id"].to_list() == [f"c{i}" for i in ref[0].ravel()]
    assert run["score"].to_numpy().tolist() == ref[1].ravel().tolist()
    rep = {}
    retrieve_run(condition("G4"), queries, q, chunks, x,
                 parse(RetrievalSettings, {"top_k": 20, "method": "hnsw", "hier_top_sections": 3,
                                           "hnsw": {"prefer_exact": False,
                                                    "recall_sample": 20}}), report=rep)
    assert rep["retrieval"]["requested"] == "hnsw" and rep["retrieval"]["recall_tried"]
    _, _, direct = search_with_report(q, x, 20, "hnsw", HnswSettings(prefer_exact=False,
                                                                     recall_sample=20))
    assert direct == rep["retrieval"]
