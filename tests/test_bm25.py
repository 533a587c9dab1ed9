"""BM25 gold-top-1 (paper, Appendix I) on a hand-checked tiny corpus, and the vectorized
scores against rank-bm25's own ``get_scores``."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from rank_bm25 import BM25Okapi

from structablate.retrieval.bm25 import (
    BM25_REPORT_KEYS,
    BM25Index,
    bm25_gold_top1,
    bm25_report,
    bm25_tokenize,
    evidence_rouge,
)
from structablate.tables import frame

A = "apple banana cherry.\n\nzebra yak walrus.\n\nkiwi lemon mango."
B = "apple banana grape.\n\nsun moon star."


def _paras(text):
    out, pos = [], 0
    for p in text.split("\n\n"):
        out.append((pos, pos + len(p)))
        pos += len(p) + 2
    return out


@pytest.fixture()
def tiny():
    docs = frame("documents", {"doc_id": ["A", "B"], "corpus": ["t", "t"], "title": ["A", "B"],
                               "text": [A, B], "topic": [None, None]})
    rows = []
    for d, text in (("A", A), ("B", B)):
        for k, (s, e) in enumerate(_paras(text)):
            rows.append({"chunk_id": f"G2:{d}:{k}", "doc_id": d, "start": s, "end": e,
                         "section_idx": k, "top_section": k, "prefix": "",
                         "content_tokens": 3, "prefix_tokens": 0})
    chunks = frame("chunks", rows)
    pa, pb = _paras(A), _paras(B)
    queries = frame("queries", {
        "qid": ["q1", "q2", "q3", "q4", "q5"], "doc_id": ["A", "A", "A", "B", "B"],
        "text": ["Zebra, walrus?", "apple banana grape", "kiwi", "MOON", "xyzzy"],
        "qtype": ["f", "f", "f", "f", "u"]})
    qrels = frame("qrels", {
        "qid": ["q1", "q2", "q3", "q4", "q5"], "doc_id": ["A", "A", "A", "B", "B"],
        # q3's gold span is paragraph 1 plus "kiwi": chunk A:2 holds 4 of its 23 characters
        # (< 50%) and 4 of its own 17 (< 80%), so A:2 is not relevant
        "start": [pa[1][0], pa[0][0], pa[1][0], pb[1][0], pb[0][0]],
        "end": [pa[1][1], pa[0][1], pa[2][0] + 4, pb[1][1], pb[0][1]]})
    return chunks, docs, queries, qrels


def test_gold_top1_hand_checked(tiny):
    chunks, docs, queries, qrels = tiny
    s, pq = bm25_gold_top1(chunks, docs, queries, qrels)
    top = dict(pq.select("qid", "top_chunk_id").iter_rows())
    hit = dict(pq.select("qid", "hit").iter_rows())
    # q1: A:1 holds zebra and walrus -> hit
    assert top["q1"] == "G2:A:1" and hit["q1"]
    # q2: B:0 matches all three words (A:0 only two) -> other document -> miss
    assert top["q2"] == "G2:B:0" and not hit["q2"]
    # q3: A:2 is the only "kiwi" chunk, but fails both relevance ratios -> miss
    assert top["q3"] == "G2:A:2" and not hit["q3"]
    # q4: case-folded "moon" -> B:1 -> hit
    assert top["q4"] == "G2:B:1" and hit["q4"]
    # q5: no known token: all scores 0, first chunk (A:0) wins the tie -> miss
    assert top["q5"] == "G2:A:0" and not hit["q5"]
    assert s["n_queries"] == 5 and s["hits"] == 2 and s["gold_top1"] == pytest.approx(0.4)
    assert s["n_zero_score"] == 1 and s["scope"] == "corpus"
    assert s["by_qtype"] == {"f": {"n": 4, "gold_top1": 0.5}, "u": {"n": 1, "gold_top1": 0.0}}


def test_gold_top1_document_scope(tiny):
    chunks, docs, queries, qrels = tiny
    s, pq = bm25_gold_top1(chunks, docs, queries, qrels, scope="document")
    top = dict(pq.select("qid", "top_chunk_id").iter_rows())
    assert top["q2"] == "G2:A:0"  # restricted to A, A:0 wins
    assert top["q5"] == "G2:B:0"  # all zero in B: its first chunk, which is gold
    assert s["hits"] == 4 and s["gold_top1"] == pytest.approx(0.8)
    with pytest.raises(ValueError):
        bm25_gold_top1(chunks, docs, queries, qrels, scope="section")


def test_queries_without_qrels_are_counted(tiny):
    chunks, docs, queries, qrels = tiny
    s, _ = bm25_gold_top1(chunks, docs, queries, qrels.filter(pl.col("qid") != "q5"))
    assert s["n_queries"] == 4 and s["queries_without_qrels"] == 1


def test_vectorized_scores_equal_rank_bm25():
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(30)]
    corpus = [list(rng.choice(vocab, size=int(rng.integers(1, 25)))) for _ in range(40)]
    corpus.append(["w0"] * 3)
    for d in corpus[:25]:  # w1 in more than half the chunks: negative idf, floored
        d.append("w1")
    queries = [["w0", "w1", "w1", "w5"], ["unknown"], ["w29", "w7", "w7", "w7"], []]
    idx = BM25Index(corpus)
    ref = BM25Okapi(corpus)
    # long queries in an order unlike the vocabulary's, with repeats: the summation order
    # decides the last bits, and it is get_scores's (query order)
    queries += [list(rng.choice(vocab + ["unknown"], size=12)) for _ in range(60)]
    got = idx.scores(queries)
    for q, row in zip(queries, got, strict=True):
        assert np.array_equal(row, ref.get_scores(q)), q
    top, best = idx.top1(queries)
    assert top.tolist() == [int(np.argmax(ref.get_scores(q))) for q in queries]
    assert best.tolist() == [float(np.max(ref.get_scores(q))) for q in queries]
    # a corpus where every term is dense (in every chunk) and one where none is
    for corp in ([["a", "b", "a"], ["b", "a"], ["a", "b", "b", "b"]],
                 [[f"u{i}", f"v{i}"] for i in range(12)]):
        ix, rf = BM25Index(corp), BM25Okapi(corp)
        for q in (["a", "b", "a"], ["b"], ["u3", "v3", "u4"], ["v11", "u0"]):
            assert np.array_equal(ix.scores([q])[0], rf.get_scores(q))


def test_tokenize_for_bm25():
    assert bm25_tokenize("État-major's 2nd Army") == ["etat", "major", "s", "2nd", "army"]


def test_evidence_rouge(tiny):
    _, docs, queries, qrels = tiny
    summary, pq = evidence_rouge(docs, queries, qrels)
    vals = dict(pq.select("qid", "rouge_l").iter_rows())
    # q4 "moon" vs "sun moon star": P = 1, R = 1/3, F1 = 0.5
    assert vals["q4"] == pytest.approx(0.5)
    assert vals["q5"] == 0.0
    assert summary["q100"] == pytest.approx(max(vals.values()), abs=1e-4)
    assert set(summary["by_qtype"]) == {"f", "u"}


def test_report_headlines_the_within_document_figure(tiny):
    """The JSON the report reads: explicit keys, the within-document figure (comparable to the
    paper's) as headline, the corpus-wide one beside it; per-query hits of both scopes."""
    chunks, docs, queries, qrels = tiny
    out, pq = bm25_report(chunks, docs, queries, qrels, corpus="t", chunkset="G2")
    assert tuple(out) == BM25_REPORT_KEYS
    assert out["headline"] == "gold_top1_within_document"
    # hand-checked in the two tests above: 4 of 5 within the document, 2 of 5 corpus-wide
    assert out["gold_top1_within_document"] == pytest.approx(0.8)
    assert out["gold_top1_corpus_wide"] == pytest.approx(0.4)
    assert out["bm25_document"]["scope"] == "document" and out["chunkset"] == "G2"
    assert pq.columns == ["qid", "top_chunk_corpus", "hit_corpus", "top_chunk_document",
                          "hit_document", "rouge_l"]
    assert pq["hit_document"].sum() == 4 and pq["hit_corpus"].sum() == 2


@pytest.mark.parametrize("n_chunks,floor", [(60, False), (3, True), (4, True)])
def test_top1_is_the_dense_argmax_in_both_scopes(n_chunks, floor):
    """Ties (repeated chunks), queries with no known term, and tiny corpora where every idf is
    floored at or below 0 (the mean idf is negative), so matched chunks can score < 0 and an
    unmatched chunk (score 0) wins; the scores equal ``BM25Okapi.get_scores`` to the bit."""
    rng = np.random.default_rng(n_chunks)
    vocab = [f"w{i}" for i in range(6 if floor else 40)]
    corpus = [list(rng.choice(vocab, size=int(rng.integers(1, 8)))) for _ in range(n_chunks)]
    corpus += [list(corpus[0]), list(corpus[1])]  # exact ties with earlier chunks
    if floor:
        corpus = [["a", "b"], ["a", "b"], ["a"], ["c"]][: n_chunks] + [["a", "b"]]
    queries = [[w] for w in (*vocab[:8], "a", "b", "c")] + [["nope"], []]
    queries += [list(rng.choice(vocab, size=3)) for _ in range(20)]
    index = BM25Index(corpus)
    dense = index.scores(queries)
    assert np.array_equal(dense, np.stack([index.okapi.get_scores(q) for q in queries]))
    top, best = index.top1(queries)
    assert top.tolist() == dense.argmax(axis=1).tolist()
    assert best.tolist() == dense.max(axis=1).tolist()
    cands = [np.sort(rng.choice(len(corpus), size=int(rng.integers(1, len(corpus) + 1)),
                                replace=False)) for _ in queries]
    top, best = index.top1(queries, cands)
    want = [int(c[int(row[c].argmax())]) for row, c in zip(dense, cands, strict=True)]
    assert top.tolist() == want
    assert best.tolist() == [row[i] for row, i in zip(dense, want, strict=True)]


@pytest.mark.parametrize("dense_fraction", [0.0, 0.125, 0.3, 2.0])
def test_dense_and_sparse_term_layouts_equal_rank_bm25(dense_fraction):
    """Frequent terms are added as dense rows, rare ones from posting lists, in the query's
    token order either way: every split of the vocabulary between the two (all dense, the
    default, more sparse, all sparse) gives ``get_scores``'s bits, with repeated query terms
    interleaving the layouts, a term absent from the index, an empty query, a one-chunk corpus
    and floored (negative) idfs; the top chunk is the first maximum."""
    rng = np.random.default_rng(7)
    common = [f"c{i}" for i in range(4)]  # in most chunks (negative idf, floored)
    rare = [f"r{i}" for i in range(60)]  # in a few chunks each
    corpus = [list(rng.choice(common, size=int(rng.integers(1, 6))))
              + list(rng.choice(rare, size=int(rng.integers(0, 4)))) for _ in range(50)]
    corpus += [list(corpus[3]), ["r0"] * 4]  # a tie with an earlier chunk; a repeated term
    queries = [["c0", "r3", "c0", "r3", "c1", "r7", "c0"], ["r0", "c2", "r0", "nope", "r0"],
               ["nope"], [], ["c3"], ["r59", "r58"], list(corpus[3])]
    queries += [list(rng.choice(common + rare + ["nope"], size=9)) for _ in range(40)]
    one = [["solo", "word", "solo"]]
    for corp, qs in ((corpus, queries), (one, [["solo", "solo"], ["word", "x"], ["x"], []])):
        index = BM25Index(corp, dense_fraction=dense_fraction)
        n_dense = len(index._dense)
        if corp is corpus and dense_fraction == 0.125:
            assert 0 < n_dense < len(index.vocab)  # both layouts in play
        assert n_dense == (len(index.vocab) if dense_fraction == 0 else
                           0 if dense_fraction > 1 else n_dense)
        ref = BM25Okapi(corp)
        dense = index.scores(qs)
        for q, row in zip(qs, dense, strict=True):
            assert np.array_equal(row, ref.get_scores(q)), q
        top, best = index.top1(qs)
        assert top.tolist() == [int(np.argmax(ref.get_scores(q))) for q in qs]
        assert best.tolist() == [float(np.max(ref.get_scores(q))) for q in qs]
        cands = [np.arange(len(corp))[len(corp) // 2:] for _ in qs]
        top, _ = index.top1(qs, cands)
        assert top.tolist() == [int(c[np.argmax(ref.get_scores(q)[c])])
                                for q, c in zip(qs, cands, strict=True)]
