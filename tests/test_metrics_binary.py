"""Binary relevance rule, RR, binary nDCG, R@k, measure names, score_run contract."""

import math

import polars as pl
import pytest

from structablate.metrics import RankedChunk as R
from structablate.metrics import is_relevant, ndcg, parse_measure, recall, rr, score_run


def test_relevance_thresholds_are_inclusive():
    assert is_relevant((0, 50), (0, 100))  # exactly half the span
    # a chunk wholly inside the span is relevant by the 80% arm, however small
    assert is_relevant((10, 20), (0, 100))
    # 49 chars of the span (49%) with 49/62 < 80% of the chunk inside: not relevant
    assert not is_relevant((51, 113), (0, 100))
    # 50 of 62: still under 80% of the chunk, but half the span
    assert is_relevant((50, 112), (0, 100))
    # a big chunk holding 49% of the span, 49/200 of itself inside: not relevant
    assert not is_relevant((51, 251), (0, 100))
    # 80% of the chunk inside, under half the span
    assert is_relevant((0, 50), (10, 1000))  # 40/50 = .8 inside
    assert not is_relevant((0, 50), (11, 1000))  # 39/50
    assert not is_relevant((0, 10), (10, 20))  # touching, no overlap


def test_rr_and_ndcg_hand_values():
    gold = [(0, 100), (500, 520)]
    ranked = [R(200, 300), R(500, 600), R(0, 60), R(60, 100)]
    # (500,600): 20/20 of span 2 -> relevant at rank 2
    assert rr(ranked, gold) == 0.5
    assert rr(ranked, gold, k=1) == 0.0
    doc = [(0, 60), (60, 100), (100, 200), (200, 300), (300, 500), (500, 600)]
    # relevant chunks: (0,60), (60,100) [inside], (500,600): R = 3; retrieved at 2, 3, 4
    dcg = 1 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / 2
    assert ndcg(ranked, doc, gold, 10) == pytest.approx(dcg / idcg)
    assert ndcg(ranked, doc, gold, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # a relevant chunk of another document counts 0
    assert rr([R(0, 100, on_doc=False)], gold) == 0.0


def test_recall_union_threshold():
    gold = [(0, 100), (200, 300)]
    # two chunks cover 30 + 20 = 50 chars of span 1: reaches 50% only together
    ranked = [R(0, 30), R(300, 400), R(80, 100), R(200, 240)]
    assert recall(ranked, gold, 2) == 0.0
    assert recall(ranked, gold, 3) == 0.5
    assert recall(ranked, gold, 4) == 0.5  # span 2 only 40%
    # overlapping chunks are a union, not a sum
    assert recall([R(0, 30), R(0, 30), R(10, 40)], [(0, 100)], 3) == 0.0


def test_measure_names():
    assert parse_measure("covNDCG@10").cutoff == 10
    assert parse_measure("RR").cutoff is None
    assert parse_measure("RR@5").kind == "RR"
    assert parse_measure("R@50").kind == "R"
    assert parse_measure("TokCov@2048").cutoff == 2048
    for bad in ["nDCG", "covNDCG@0", "P@10", "TokCov", "ndcg@10", "R@x"]:
        with pytest.raises(ValueError):
            parse_measure(bad)


def _tiny():
    chunks = pl.DataFrame(
        {
            "chunk_id": ["a", "b", "c", "d"],
            "doc_id": ["D1", "D1", "D2", "D2"],
            "start": [0, 100, 0, 100],
            "end": [100, 200, 100, 200],
            "content_tokens": [20, 20, 20, 20],
            "prefix_tokens": [0, 0, 0, 0],
        }
    )
    queries = pl.DataFrame(
        {
            "qid": ["q3", "q1", "q2"],
            "doc_id": ["D2", "D1", "D2"],
            "text": ["", "", ""],
            "qtype": ["x", "y", "z"],
        }
    )
    qrels = pl.DataFrame(
        {
            "qid": ["q1", "q2", "q3"],
            "doc_id": ["D1", "D2", "D2"],
            "start": [100, 0, 150],
            "end": [200, 100, 200],
        }
    )
    # ranks are authoritative: scores deliberately disagree with them
    run = pl.DataFrame(
        {
            "qid": ["q1", "q1", "q3", "q3"],
            "rank": [2, 1, 1, 2],
            "chunk_id": ["b", "a", "c", "d"],
            "score": [9.0, 1.0, 5.0, 6.0],
            "stage": ["flat"] * 4,
        }
    )
    return run, chunks, qrels, queries


def test_score_run_layout_missing_run_and_rank_order():
    out = score_run(*_tiny(), ["RR", "covNDCG@10"])
    assert out.columns == ["qid", "doc_id", "qtype", "RR", "covNDCG@10"]
    assert out["qid"].to_list() == ["q1", "q2", "q3"]
    assert out["qtype"].to_list() == ["y", "z", "x"]
    assert out.schema["RR"] == pl.Float64
    assert out["RR"].to_list() == [0.5, 0.0, 0.5]  # q2 has no run rows -> 0
    assert out["covNDCG@10"].to_list() == pytest.approx([1 / math.log2(3), 0.0, 1 / math.log2(3)])


def test_score_run_errors():
    run, chunks, qrels, queries = _tiny()
    with pytest.raises(ValueError, match="q2"):
        score_run(run, chunks, qrels.filter(pl.col("qid") != "q2"), queries, ["RR"])
    bad = run.with_columns(pl.col("chunk_id") + "zz")
    with pytest.raises(ValueError, match="absent from the chunk table"):
        score_run(bad, chunks, qrels, queries, ["RR"])
    dup = run.with_columns(pl.lit(1).alias("rank"))
    with pytest.raises(ValueError, match="repeats a rank"):
        score_run(dup, chunks, qrels, queries, ["RR"])
    twice = run.with_columns(pl.lit("a").alias("chunk_id"))
    with pytest.raises(ValueError, match="twice"):
        score_run(twice, chunks, qrels, queries, ["RR"])
    with pytest.raises(ValueError, match="unknown measure"):
        score_run(run, chunks, qrels, queries, ["MAP"])
    wrong = qrels.with_columns(pl.lit("D1").alias("doc_id"))
    with pytest.raises(ValueError, match="another document"):
        score_run(run, chunks, wrong, queries, ["RR"])
