"""Coverage-nDCG (paper, Appendix B) on hand-computed cases."""

import math

import polars as pl
import pytest

from structablate.metrics import RankedChunk as R
from structablate.metrics import cov_ndcg, score_run
from structablate.metrics.cov_ndcg import coverage_gains, ideal_gains

L3 = math.log2(3)


def test_appendix_b3_worked_example_is_one():
    ranked = [R(0, 60), R(40, 100), R(100, 160)]
    doc = [(0, 60), (40, 100), (100, 160)]
    assert coverage_gains(ranked, [(0, 100)]) == pytest.approx([0.6, 0.4, 0.0])
    dcg = 0.6 + 0.4 / L3
    assert dcg == pytest.approx(0.852, abs=5e-4)
    assert cov_ndcg(ranked, doc, [(0, 100)], 10) == pytest.approx(1.0)


def test_appendix_b3_with_a_whole_span_chunk_scores_below_one():
    ranked = [R(0, 60), R(40, 100), R(100, 160)]
    doc = [(0, 60), (40, 100), (100, 160), (0, 100)]
    # the greedy ideal puts [0,100) first (gain 1.0) and nothing else adds coverage
    assert ideal_gains(doc, [(0, 100)], 10) == pytest.approx([1.0])
    assert cov_ndcg(ranked, doc, [(0, 100)], 10) == pytest.approx(0.6 + 0.4 / L3)


def _frames(chunks, run_ids, gold, doc="d"):
    ch = pl.DataFrame(
        {
            "chunk_id": [c[0] for c in chunks],
            "doc_id": [c[3] if len(c) > 3 else doc for c in chunks],
            "start": [c[1] for c in chunks],
            "end": [c[2] for c in chunks],
            "content_tokens": [10] * len(chunks),
            "prefix_tokens": [0] * len(chunks),
        }
    )
    run = pl.DataFrame(
        {
            "qid": ["q"] * len(run_ids),
            "rank": list(range(1, len(run_ids) + 1)),
            "chunk_id": run_ids,
            "score": [0.0] * len(run_ids),
            "stage": ["flat"] * len(run_ids),
        }
    )
    qrels = pl.DataFrame(
        {
            "qid": ["q"] * len(gold),
            "doc_id": [doc] * len(gold),
            "start": [g[0] for g in gold],
            "end": [g[1] for g in gold],
        }
    )
    queries = pl.DataFrame({"qid": ["q"], "doc_id": [doc], "text": ["?"], "qtype": ["f"]})
    return run, ch, qrels, queries


def _score(chunks, run_ids, gold, measures, **kw):
    out = score_run(*_frames(chunks, run_ids, gold), measures, **kw)
    return out.row(0, named=True)


@pytest.mark.parametrize("exact", [False, True])
def test_b3_through_score_run_takes_the_general_path(exact):
    chunks = [("a", 0, 60), ("b", 40, 100), ("z", 100, 160)]
    assert _score(chunks, ["a", "b", "z"], [(0, 100)], ["covNDCG@10"], exact=exact)[
        "covNDCG@10"
    ] == pytest.approx(1.0)
    chunks.append(("w", 0, 100))
    assert _score(chunks, ["a", "b", "z"], [(0, 100)], ["covNDCG@10"], exact=exact)[
        "covNDCG@10"
    ] == pytest.approx(0.6 + 0.4 / L3)


def test_small_chunks_cannot_bank_a_span_twice():
    # A small-chunk condition: gold [0,100) sits in chunks [0,50) and [50,100), and a third,
    # overlapping chunk [0,100) repeats it. Binary gains would bank the span three times.
    chunks = [("a", 0, 50), ("b", 50, 100), ("c", 0, 100), ("x", 100, 400)]
    row = _score(chunks, ["c", "a", "b", "x"], [(0, 100)], ["covNDCG@10", "nDCG@10"])
    assert row["covNDCG@10"] == pytest.approx(1.0)  # c covers all; a, b add nothing new
    # binary nDCG: a, b, c are each relevant -> 3 relevant, perfect order
    assert row["nDCG@10"] == pytest.approx(1.0)
    row = _score(chunks, ["a", "c", "b", "x"], [(0, 100)], ["covNDCG@10"])
    # a: 0.5 at rank 1; c: 0.5 new at rank 2; b: 0. Ideal: c first (1.0)
    assert row["covNDCG@10"] == pytest.approx(0.5 + 0.5 / L3)


def test_two_gold_spans_mean_and_discount():
    # gold g1 = [0,100), g2 = [200,250); tiling chunks
    chunks = [("a", 0, 100), ("b", 100, 200), ("c", 200, 225), ("d", 225, 300)]
    row = _score(chunks, ["b", "c", "a", "d"], [(0, 100), (200, 250)], ["covNDCG@3"])
    # gains: b 0; c (0 + 25/50)/2 = .25; a (1 + 0)/2 = .5 ; cutoff 3 drops d (.25)
    dcg = 0.25 / L3 + 0.5 / 2
    idcg = 0.5 + 0.25 / L3 + 0.25 / 2
    assert row["covNDCG@3"] == pytest.approx(dcg / idcg)


def test_overlapping_gold_spans_are_each_credited():
    # g1 = [0,100), g2 = [50,150) share [50,100); chunk [0,150) covers both fully
    chunks = [("a", 0, 150), ("b", 150, 300)]
    row = _score(chunks, ["b", "a"], [(0, 100), (50, 150)], ["covNDCG@10"])
    assert row["covNDCG@10"] == pytest.approx((1.0 / L3) / 1.0)
    # split chunks: [0,75) gives g1 .75, g2 .25; [75,150) gives g1 .25, g2 .75
    chunks = [("a", 0, 75), ("b", 75, 150)]
    row = _score(chunks, ["b", "a"], [(0, 100), (50, 150)], ["covNDCG@10"])
    assert row["covNDCG@10"] == pytest.approx(1.0)  # equal gains .5 and .5


def test_chunks_of_other_documents_gain_nothing():
    chunks = [("a", 0, 100), ("o", 0, 100, "other")]
    row = _score(chunks, ["o", "a"], [(0, 100)], ["covNDCG@10"])
    assert row["covNDCG@10"] == pytest.approx(1.0 / L3)


def test_zero_ideal_scores_zero():
    # the condition has no chunk of the query's document at all
    chunks = [("o", 0, 100, "other")]
    row = _score(chunks, ["o"], [(0, 100)], ["covNDCG@10", "nDCG@10", "RR", "R@50"])
    assert row == {
        "qid": "q",
        "doc_id": "d",
        "qtype": "f",
        "covNDCG@10": 0.0,
        "nDCG@10": 0.0,
        "RR": 0.0,
        "R@50": 0.0,
    }


def test_greedy_ideal_picks_largest_marginal_gain_under_overlap():
    # chunks [0,60), [30,100), [60,100): greedy picks [30,100) (.7) then [0,60) (.3 new)
    doc = [(0, 60), (30, 100), (60, 100)]
    assert ideal_gains(doc, [(0, 100)], 10) == pytest.approx([0.7, 0.3])
    ranked = [R(60, 100), R(0, 60)]
    assert cov_ndcg(ranked, doc, [(0, 100)], 10) == pytest.approx(
        (0.4 + 0.6 / L3) / (0.7 + 0.3 / L3)
    )


def test_greedy_ideal_can_be_beaten_when_chunks_overlap():
    # Documented limitation: with overlapping chunks the greedy ideal is not the DCG optimum.
    # g1 = [0,40), g2 = [50,100). Greedy: E (23,65) .3625; C (79,102) .21; B (53,83) .14
    doc = [(79, 102), (70, 91), (23, 65), (12, 41), (53, 83)]
    gold = [(0, 40), (50, 100)]
    assert ideal_gains(doc, gold, 3) == pytest.approx([0.3625, 0.21, 0.14])
    # A (12,41) .35, B .3, then C adds [83,100): 17/50/2 = .17
    ranked = [R(12, 41), R(53, 83), R(79, 102)]
    value = cov_ndcg(ranked, doc, gold, 3)
    assert value == pytest.approx((0.35 + 0.3 / L3 + 0.17 / 2) / (0.3625 + 0.21 / L3 + 0.14 / 2))
    assert value > 1.0
