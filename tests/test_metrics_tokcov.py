"""Token-budget coverage, including the chunk that crosses the budget."""

import polars as pl
import pytest

from structablate.metrics import RankedChunk as R
from structablate.metrics import score_run, tokcov


def _frames(prefix_b):
    # gold [0,400) spans chunks a [0,300) (300 tok) and b [300,500) (200 tok)
    ch = pl.DataFrame(
        {
            "chunk_id": ["a", "b", "c"],
            "doc_id": ["d", "d", "d"],
            "start": [0, 300, 500],
            "end": [300, 500, 600],
            "content_tokens": [300, 200, 10],
            "prefix_tokens": [0, prefix_b, 0],
        }
    )
    run = pl.DataFrame(
        {
            "qid": ["q"] * 3,
            "rank": [1, 2, 3],
            "chunk_id": ["a", "b", "c"],
            "score": [3.0, 2.0, 1.0],
            "stage": ["flat"] * 3,
        }
    )
    qrels = pl.DataFrame({"qid": ["q"], "doc_id": ["d"], "start": [0], "end": [400]})
    queries = pl.DataFrame({"qid": ["q"], "doc_id": ["d"], "text": ["?"], "qtype": ["f"]})
    return run, ch, qrels, queries


@pytest.mark.parametrize("exact", [False, True])
def test_prefix_pushes_chunk_past_budget(exact):
    # no prefix: a (300) + b (200) = 500 <= 512: b fits whole, gold fully covered
    out = score_run(*_frames(0), ["TokCov@512"], exact=exact)
    assert out["TokCov@512"].to_list() == [1.0]
    # a 40-token prefix on b: cost 240 > 212 left. Prefix paid, 172 of 200 content tokens
    # remain -> the leading floor(200*172/200) = 172 chars [300,472): 100 gold chars of [300,400)
    out = score_run(*_frames(40), ["TokCov@512"], exact=exact)
    assert out["TokCov@512"].to_list() == [1.0]
    # a 150-token prefix: 62 content tokens left -> 62 chars [300,362) of gold [300,400)
    out = score_run(*_frames(150), ["TokCov@512", "TokCov@1024"], exact=exact)
    assert out["TokCov@512"].to_list() == [362 / 400]
    assert out["TokCov@1024"].to_list() == [1.0]
    # a 220-token prefix: it alone exceeds the 212 left -> b contributes nothing
    out = score_run(*_frames(220), ["TokCov@512"], exact=exact)
    assert out["TokCov@512"].to_list() == [300 / 400]
    # a 120-token prefix with budget 400: a leaves 100, prefix 120 > 100 -> 0 from b
    # budget 450: 150 left, 30 content tokens -> 30 chars [300,330)
    out = score_run(*_frames(120), ["TokCov@400", "TokCov@450"], exact=exact)
    assert out.row(0, named=True)["TokCov@400"] == pytest.approx(300 / 400)
    assert out.row(0, named=True)["TokCov@450"] == pytest.approx(330 / 400)


def test_partial_credit_is_the_leading_content():
    gold = [(150, 200)]  # in the tail of the crossing chunk
    ranked = [R(0, 200, True, 100, 10)]
    # 60 budget: 10 prefix, 50 of 100 content tokens -> chars [0,100): no gold
    assert tokcov(ranked, gold, 60) == 0.0
    # 110 budget: whole chunk
    assert tokcov(ranked, gold, 110) == 1.0
    # 95 budget: 85 tokens -> floor(200*85/100) = 170 chars: [150,170) = 20 of 50
    assert tokcov(ranked, gold, 95) == pytest.approx(0.4)


def test_walk_stops_at_the_crossing_chunk_and_other_docs_pay():
    gold = [(0, 10), (1000, 1010)]
    ranked = [R(500, 600, False, 50, 0), R(0, 100, True, 80, 0), R(1000, 1010, True, 1, 0)]
    # 100 budget: foreign chunk pays 50; 50 of 80 tokens -> 62 chars covers [0,10);
    # the walk stops, the tiny third chunk is not used though it would fit
    assert tokcov(ranked, gold, 100) == pytest.approx(0.5)
    # 131 budget: all fit exactly (50 + 80 + 1)
    assert tokcov(ranked, gold, 131) == pytest.approx(1.0)
