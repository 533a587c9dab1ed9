"""End to end with the real offline model: SmolLM2-135M through llama.cpp writes and
paraphrases a handful of queries for one Wikipedia article; every shipped query passes the
leakage filter, and a second run replays the cache without a model."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from structablate.llm.client import client_from_config
from structablate.queries import QueryGenSettings, check_leakage, generate_queries

REPO = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m-instruct-q4_1"


@pytest.mark.slow
def test_smollm2_end_to_end_and_replay(tmp_path, smollm2_gguf):
    from conftest import wiki_corpus

    docs, _ = wiki_corpus(
        {"mode": "xml", "path": str(REPO / "resources/wikipedia/sample.xml")},
        {"n_docs": 1}, tmp_path / "wcache")
    assert len(docs) == 1
    # one candidate per type, short evidence: 4 writes + at most 4 paraphrases
    cfg = QueryGenSettings(per_doc=1, per_type=1, max_evidence_chars=1200, max_tokens=48)
    llm = {"backend": "llamacpp", "model": MODEL, "mode": "cached",
           "cache": str(tmp_path / "gen.jsonl"), "seed": 20260710, "temperature": 0.0,
           "llamacpp": {"n_ctx": 2048, "n_threads": 2}}
    client = client_from_config(llm)
    res = generate_queries(docs, client, cfg)
    stats = client.stats.as_dict()
    client.close()
    f = res.funnel
    assert f["total"]["candidates"] == 4
    assert stats["generated"] == f["total"]["candidates"] + f["total"]["passed_filter"]
    text = docs[0].text
    for row in res.queries.iter_rows(named=True):
        spans = res.qrels.filter(pl.col("qid") == row["qid"]).select("start", "end").rows()
        chk = check_leakage(row["text"], [text[s:e] for s, e in spans])
        assert chk.passed, (row, chk)
        assert row["text"] == row["paraphrase"]
        assert check_leakage(row["original_query"], [text[s:e] for s, e in spans]).passed
    # every candidate that reached a status past the first filter had a passing query
    cands = res.candidates
    for row in cands.filter(pl.col("status").is_in(["survivor", "final", "no_paraphrase",
                                                    "paraphrase_leak"])).iter_rows(named=True):
        assert row["query_rouge_l"] <= cfg.rouge_max and not row["query_shared_ngrams"]
    # replay: backend none, replay mode -> identical outputs, every call a cache hit
    replay = client_from_config({**llm, "backend": "none", "mode": "replay"})
    res2 = generate_queries(docs, replay, cfg)
    assert replay.stats.generated == 0 and replay.stats.hits == stats["generated"]
    replay.close()
    assert res2.candidates.equals(cands) and res2.queries.equals(res.queries)
    assert res2.qrels.equals(res.qrels)
