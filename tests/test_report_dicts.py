"""Bookkeeping classes report through one generated ``as_dict`` (structablate.store.typed.
ReportDict over their ``reported`` fields), with the keys, forms and order their reports and
cache keys have always had."""

import json
from collections import Counter

import pytest

from structablate.corpus.wikitext import TemplateCounts
from structablate.embedding.cache import EmbeddingStats
from structablate.llm.backends import Generation, Sampling
from structablate.llm.client import ClientStats
from structablate.retrieval.rerank import RerankStats
from structablate.store.typed import ReportDict


@pytest.mark.parametrize("cls", [Sampling, Generation, ClientStats, TemplateCounts,
                                 EmbeddingStats, RerankStats])
def test_no_hand_written_as_dict(cls):
    assert issubclass(cls, ReportDict) and "as_dict" not in vars(cls)


def test_sampling_is_its_json_types_in_order():
    d = Sampling(temperature=0, top_p=1, max_tokens=7.0, seed=3, stop=("x",)).as_dict()
    assert json.dumps(d) == ('{"temperature": 0.0, "top_p": 1.0, "max_tokens": 7, "seed": 3, '
                             '"stop": ["x"]}')


def test_generation_rounds_its_seconds():
    assert Generation("t", 3, None, 1.234567, "stop").as_dict() == {
        "text": "t", "prompt_tokens": 3, "completion_tokens": None, "seconds": 1.2346,
        "finish_reason": "stop"}
    with pytest.raises(TypeError):
        Generation()  # the text is required


def test_client_stats_rate_only_with_tokens_and_seconds():
    s = ClientStats(hits=2, generated=1, prompt_tokens=5, completion_tokens=10,
                    generation_seconds=4.00049, keys=["k"])
    assert list(s.as_dict().items()) == [
        ("cache_hits", 2), ("generated", 1), ("prompt_tokens", 5), ("completion_tokens", 10),
        ("generation_seconds", 4.0), ("completion_tokens_per_s", 2.5)]
    assert ClientStats(generation_seconds=2.0).as_dict()["completion_tokens_per_s"] is None
    assert ClientStats(completion_tokens=3).as_dict()["completion_tokens_per_s"] is None


def test_template_counts_most_frequent_first_then_totals():
    c = TemplateCounts(rendered=Counter({"b": 1, "a": 1, "c": 3}))
    c.update(TemplateCounts(dropped=Counter({"ref": 2}), unrecognised_block=Counter({"nav": 1})))
    assert list(c.as_dict().items()) == [
        ("rendered", {"c": 3, "a": 1, "b": 1}), ("dropped", {"ref": 2}), ("unrecognised", {}),
        ("unrecognised_block", {"nav": 1}),
        ("totals", {"rendered": 5, "dropped": 2, "unrecognised": 0, "unrecognised_block": 1})]

