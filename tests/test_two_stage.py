import numpy as np
import polars as pl
import pytest

from structablate.retrieval.two_stage import (
    STAGE_BACKFILL,
    STAGE_PAD,
    STAGE_ROUTED,
    backfill_counts,
    flat_search,
    score_matrix,
    section_centroids,
    section_recall,
    section_spans,
    section_spans_from_sections,
    stage_labels,
    topk_desc,
    two_stage_search,
)
from structablate.tables import frame


def _unit(a):
    a = np.asarray(a, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def _random_corpus(seed=0, n_docs=6, dim=16, nq=40):
    rng = np.random.default_rng(seed)
    doc_ids, tops = [], []
    for d in range(n_docs):
        for t in range(rng.integers(1, 5)):
            for _ in range(rng.integers(1, 6)):
                doc_ids.append(f"d{d}")
                tops.append(t * 3)  # top_section values need not be contiguous
    x = _unit(rng.normal(size=(len(doc_ids), dim)))
    q = _unit(rng.normal(size=(nq, dim)))
    return x, q, doc_ids, tops


def test_centroids_are_renormalised_means_in_first_appearance_order():
    x = _unit([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [3, 4, 0]])
    keys, cent, sec = section_centroids(x, ["b", "a", "b", "b", "a"], [2, 0, 2, 5, 0])
    assert keys == [("b", 2), ("a", 0), ("b", 5)]
    assert sec.tolist() == [0, 1, 0, 2, 1]
    assert cent.dtype == np.float32
    for s in range(3):
        m = x[sec == s].astype(np.float64).mean(axis=0)
        np.testing.assert_allclose(cent[s], m / np.linalg.norm(m), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(cent, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(cent[0], [2**-0.5, 0, 2**-0.5], rtol=1e-6)


def test_topk_desc_breaks_ties_by_index():
    s = np.array([[0.5, 0.9, 0.5, 0.5, 0.1], [1, 1, 1, 1, 1]], dtype=np.float32)
    assert topk_desc(s, 3).tolist() == [[1, 0, 2], [0, 1, 2]]
    assert topk_desc(s, 10).tolist() == [[1, 0, 2, 3, 4], [0, 1, 2, 3, 4]]
    rng = np.random.default_rng(1)
    big = rng.integers(0, 4, size=(50, 200)).astype(np.float32)  # heavy ties
    ref = np.argsort(-big, axis=1, kind="stable")[:, :17]
    assert (topk_desc(big, 17) == ref).all()


def test_two_stage_equals_flat_when_every_section_is_kept():
    x, q, doc_ids, tops = _random_corpus()
    keys, cent, sec = section_centroids(x, doc_ids, tops)
    k = 15
    f_idx, f_sc = flat_search(q, x, k)
    idx, sc, stage, kept = two_stage_search(q, x, sec, cent, k, top_sections=len(keys))
    assert (idx == f_idx).all()
    assert np.array_equal(sc, f_sc)
    assert (stage == STAGE_ROUTED).all()
    assert sorted(kept[0].tolist()) == list(range(len(keys)))
    # same with the flat ranking handed in (routed scores then come from row-wise products)
    idx2, sc2, stage2, _ = two_stage_search(
        q, x, sec, cent, k, top_sections=len(keys) + 3, global_idx=f_idx
    )
    assert (idx2 == f_idx).all()
    assert np.array_equal(sc2, f_sc)  # float64 accumulation: same float32 either way
    assert (stage2 == STAGE_ROUTED).all()


def test_backfill_fills_to_k_in_global_order():
    x, q, doc_ids, tops = _random_corpus(seed=3, nq=30)
    keys, cent, sec = section_centroids(x, doc_ids, tops)
    k = 20
    g_idx, g_sc = flat_search(q, x, x.shape[0])
    for global_idx in (None, g_idx[:, :k]):
        idx, sc, stage, kept = two_stage_search(q, x, sec, cent, k, 2, global_idx, block=7)
        assert (idx >= 0).all() and (stage != STAGE_PAD).all()
        for i in range(q.shape[0]):
            row = idx[i].tolist()
            assert len(set(row)) == k
            kept_i = set(kept[i].tolist())
            # stage 1 = the two best centroids, score desc then index asc
            c_scores = cent @ q[i]
            assert kept[i].tolist() == np.lexsort((np.arange(len(keys)), -c_scores))[:2].tolist()
            routed = [c for c in range(x.shape[0]) if sec[c] in kept_i]
            n_r = min(len(routed), k)
            assert (stage[i, :n_r] == STAGE_ROUTED).all()
            assert (stage[i, n_r:] == STAGE_BACKFILL).all()
            # routed part = chunks of kept sections by score desc, index asc
            s = x[routed] @ q[i]
            exp = [routed[j] for j in np.lexsort((routed, -s))][:n_r]
            assert row[:n_r] == exp
            # backfill = global order with routed chunks skipped
            exp_bf = [c for c in g_idx[i].tolist() if c not in set(routed)][: k - n_r]
            assert row[n_r:] == exp_bf
            assert np.array_equal(sc[i], score_matrix(q[i : i + 1], x[row])[0])
        assert (backfill_counts(stage) == (stage == STAGE_BACKFILL).sum(1)).all()
    # blocks do not change the result
    a = two_stage_search(q, x, sec, cent, k, 2, block=1)
    b = two_stage_search(q, x, sec, cent, k, 2, block=1000)
    for u, v in zip(a, b, strict=True):
        assert np.array_equal(u, v, equal_nan=True)


def test_padding_when_index_is_smaller_than_k():
    x = _unit([[1, 0], [0, 1], [1, 1]])
    keys, cent, sec = section_centroids(x, ["a", "a", "b"], [0, 1, 0])
    idx, sc, stage, kept = two_stage_search(_unit([[1, 0.1]]), x, sec, cent, 5, top_sections=1)
    assert kept.tolist() == [[0]]  # ("a", 0) is the closest section
    assert idx.tolist() == [[0, 2, 1, -1, -1]]
    assert stage_labels(stage).tolist() == [["routed", "backfill", "backfill", "", ""]]
    assert np.isnan(sc[0, 3:]).all() and not np.isnan(sc[0, :3]).any()


def _hand_built():
    """Two documents; doc a has top-level sections 0 and 2 (2 has a subsection 3)."""
    chunks = frame(
        "chunks",
        {
            "chunk_id": ["a0", "a1", "a2", "a3", "b0", "b1"],
            "doc_id": ["a", "a", "a", "a", "b", "b"],
            "start": [0, 50, 100, 160, 0, 40],
            "end": [48, 98, 150, 200, 38, 90],
            "section_idx": [0, 1, 2, 3, 0, 1],
            "top_section": [0, 0, 2, 2, 0, 1],
            "prefix": [""] * 6,
            "content_tokens": [10] * 6,
            "prefix_tokens": [0] * 6,
        },
    )
    sections = frame(
        "sections",
        {
            "doc_id": ["a", "a", "a", "a", "b", "b"],
            "section_idx": [0, 1, 2, 3, 0, 1],
            "title": ["I", "I.1", "II", "II.1", "X", "Y"],
            "level": [1, 2, 1, 2, 1, 1],
            "para_start": [0, 1, 2, 3, 0, 1],
            "para_end": [1, 2, 3, 4, 1, 2],
            "start": [0, 50, 100, 160, 0, 40],
            "end": [48, 98, 150, 200, 38, 90],
            "path": [["I"], ["I", "I.1"], ["II"], ["II", "II.1"], ["X"], ["Y"]],
        },
    )
    return chunks, sections


def test_section_recall_on_hand_built_case():
    chunks, sections = _hand_built()
    x = _unit([[1, 0, 0], [1, 0.2, 0], [0, 1, 0], [0, 1, 0.2], [0, 0, 1], [0.3, 0, 1]])
    keys, cent, sec = section_centroids(x, chunks["doc_id"], chunks["top_section"])
    assert keys == [("a", 0), ("a", 2), ("b", 0), ("b", 1)]
    spans = section_spans(keys, chunks)
    assert spans.tolist() == [[0, 98], [100, 200], [0, 38], [40, 90]]
    assert section_spans_from_sections(keys, sections).tolist() == spans.tolist()
    # the spans come back in the keys' order, and a key that names no section is refused
    assert section_spans(keys[::-1], chunks).tolist() == spans.tolist()[::-1]
    with pytest.raises(KeyError, match="has no chunk in the chunk table"):
        section_spans([*keys, ("a", 7)], chunks)
    with pytest.raises(KeyError, match="names no section of the sections table"):
        section_spans_from_sections([("c", 0)], sections)

    q = _unit([[1, 0.1, 0], [0, 1, 0], [0, 0, 1]])
    _, _, stage, kept = two_stage_search(q, x, sec, cent, k=3, top_sections=1)
    assert kept[:, 0].tolist() == [0, 1, 2]
    assert backfill_counts(stage).tolist() == [1, 1, 2]
    qrels = frame(
        "qrels",
        {
            # q1: gold in a/II (kept) -> True; q0: gold in a/II only -> False;
            # q2: gold b 30-45 overlaps the kept b/0 [0,38) by 8 chars -> True;
            # q3 (not run) is ignored; q4 has no qrels -> False
            "qid": ["q0", "q1", "q1", "q2", "q3"],
            "doc_id": ["a", "a", "b", "b", "a"],
            "start": [120, 150, 0, 30, 0],
            "end": [140, 170, 10, 45, 10],
        },
    )
    # kept is row-aligned with the qids list: pad a fourth (empty) row for q4
    kept4 = np.vstack([kept, [[-1]]])
    rec = section_recall(kept4, keys, spans, ["q0", "q1", "q2", "q4"], qrels)
    assert rec.tolist() == [False, True, True, False]
    # touching ranges do not overlap (half-open): a span [98, 100) hits neither a/0 nor a/2
    edge = pl.DataFrame({"qid": ["q0"], "doc_id": ["a"], "start": [98], "end": [100]})
    both = np.array([[0, 1]])
    assert section_recall(both, keys, spans, ["q0"], edge).tolist() == [False]


def test_rejects_misaligned_inputs():
    x, q, doc_ids, tops = _random_corpus()
    with pytest.raises(ValueError):
        section_centroids(x, doc_ids[:-1], tops)
    keys, cent, sec = section_centroids(x, doc_ids, tops)
    with pytest.raises(ValueError):
        two_stage_search(q, x, sec[:-1], cent, 5)
    with pytest.raises(ValueError):
        two_stage_search(q, x, sec, cent, 5, global_idx=np.zeros((q.shape[0], 2), np.int64))
