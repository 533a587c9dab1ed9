"""The measure registry: one declaration per measure; the parser, the config pattern and the
scorer all read it."""

import re

import jsonschema
import numpy as np
import polars as pl
import pytest

from structablate.metrics import (
    MEASURES,
    MeasureDef,
    measure_forms,
    measure_pattern,
    parse_measure,
    score_run,
)
from structablate.metrics.layout import row_relevance
from structablate.metrics.registry import register

NAMES = [
    "covNDCG@10", "covNDCG@1", "covNDCG@100", "nDCG@10", "nDCG@5", "R@50", "R@1", "RR",
    "RR@10", "RR@1", "TokCov@512", "TokCov@4096",
    # rejected
    "RR@0", "R@050", "R@0", "nDCG", "covNDCG", "TokCov", "P@10", "ndcg@10", "R@x", " RR", "RR ",
    "RR@", "@10", "covNDCG@10@5", "R@-1", "R@1.5", "", "MAP",
]


def _parses(name: str) -> bool:
    try:
        parse_measure(name)
    except ValueError:
        return False
    return True


def test_pattern_accepts_exactly_what_the_parser_accepts():
    pat = re.compile(measure_pattern())
    for name in NAMES:
        assert bool(pat.match(name)) == _parses(name), name
    assert _parses("RR@10") and not _parses("R@050")


def test_pattern_works_as_a_json_schema_pattern():
    schema = {"type": "array", "items": {"type": "string", "pattern": measure_pattern()}}
    for name in NAMES:
        ok = True
        try:
            jsonschema.validate([name], schema)
        except jsonschema.ValidationError:
            ok = False
        assert ok == _parses(name), name


def test_registry_lists_every_measure_and_form():
    assert list(MEASURES) == ["covNDCG", "nDCG", "R", "RR", "TokCov"]
    assert measure_forms() == ["covNDCG@k", "nDCG@k", "R@k", "RR", "RR@k", "TokCov@B"]
    with pytest.raises(ValueError, match="expected one of covNDCG@k, nDCG@k, R@k, RR, RR@k"):
        parse_measure("MAP")
    with pytest.raises(ValueError, match="needs a cutoff"):
        parse_measure("TokCov")
    with pytest.raises(ValueError, match="leading zeros"):
        parse_measure("R@050")
    m = parse_measure("RR@10")
    assert (m.kind, m.cutoff, m.definition) == ("RR", 10, MEASURES["RR"])


def test_a_measure_declared_once_is_parsed_and_scored(monkeypatch):
    """A new measure is one MeasureDef: the parser, the pattern and score_run pick it up."""

    def hit_ref(ranked, doc_chunks, gold, k):
        from structablate.metrics import relevant_to_any

        return float(any(r.on_doc and relevant_to_any((r.start, r.end), list(gold))
                         for r in list(ranked)[:k]))

    def hit_fast(lay, br, k):
        rel = row_relevance(lay, br) & (br.r_pos <= k)
        return (np.bincount(br.r_q[rel], minlength=lay.nq) > 0).astype(float)

    monkeypatch.setattr("structablate.metrics.registry.MEASURES", dict(MEASURES))
    register(MeasureDef("Hit", "required", "k", "any relevant chunk in the top k", hit_ref,
                        hit_fast))
    assert "Hit@k" in measure_forms() and re.match(measure_pattern(), "Hit@3")
    chunks = pl.DataFrame({"chunk_id": ["a", "b", "c"], "doc_id": ["d"] * 3,
                           "start": [0, 100, 200], "end": [100, 200, 300],
                           "content_tokens": [10] * 3, "prefix_tokens": [0] * 3})
    run = pl.DataFrame({"qid": ["q"] * 3, "rank": [1, 2, 3], "chunk_id": ["a", "b", "c"]})
    qrels = pl.DataFrame({"qid": ["q"], "doc_id": ["d"], "start": [210], "end": [290]})
    queries = pl.DataFrame({"qid": ["q"], "doc_id": ["d"], "qtype": ["x"]})
    for exact in (False, True):
        out = score_run(run, chunks, qrels, queries, ["Hit@2", "Hit@3", "RR"], exact=exact)
        assert out.row(0, named=True) == {"qid": "q", "doc_id": "d", "qtype": "x",
                                          "Hit@2": 0.0, "Hit@3": 1.0, "RR": 1 / 3}
    with pytest.raises(ValueError, match="registered twice"):
        register(MeasureDef("Hit", "optional", "k", "", hit_ref, hit_fast))
