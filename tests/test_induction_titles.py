"""The hybrid inducer: TextTiling boundaries and levels, headings written by an LLM."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_induction_texttiling import synthetic_doc, topic_embed

from structablate.corpus.verify import verify_sections
from structablate.llm.backends import Backend, Generation, Request
from structablate.llm.client import LLMClient
from structablate.settings import ConfigError, InductionSettings, TextTilingSettings
from structablate.structure import induce_documents, make_inducer
from structablate.structure.texttiling import TextTilingInducer
from structablate.structure.tiling import Entry
from structablate.structure.titles import (
    LLMTitler,
    parse_titles,
    section_numbers,
    titles_schema,
)

CFG = InductionSettings(context_tokens=8192, max_tokens=512)


class Scripted(Backend):
    name = "scripted"

    def __init__(self, fn):
        self.fn = fn
        self.requests: list[Request] = []

    def generate(self, request):
        self.requests.append(request)
        return Generation(text=self.fn(request), completion_tokens=5)


def sections_in(request) -> list[str]:
    return re.findall(r"^Section ([\d.]+):$", request.messages[1]["content"], re.M)


def test_section_numbers_follow_the_levels():
    levels = [1, 2, 2, 1, 2, 3, 1]
    entries = [Entry("t", lv, k) for k, lv in enumerate(levels)]
    assert section_numbers(entries) == ["1", "1.1", "1.2", "2", "2.1", "2.1.1", "3"]


def test_parse_titles():
    assert parse_titles('{"titles": ["  Method\\n", "Results"]}') == ["Method", "Results"]
    assert parse_titles('Sure: {"titles": ["A"]} done') == ["A"]
    assert parse_titles("no json") is None and parse_titles('{"x": 1}') is None
    # an answer cut off mid-list keeps its complete headings
    assert parse_titles('{"titles": ["Method", "Res\\"ults\\"", "Discus') == [
        "Method", 'Res"ults"']
    schema = titles_schema(3)["properties"]["titles"]
    assert schema["minItems"] == schema["maxItems"] == 3


def _hybrid(fn, cfg=CFG):
    doc = synthetic_doc([4, 5, 4])
    embed = topic_embed(lambda t: int(t[1]))
    backend = Scripted(fn)
    titler = LLMTitler(LLMClient("m", None, backend=backend), cfg)
    tt = TextTilingSettings(levels=1)
    return doc, backend, TextTilingInducer(tt, embed=embed, titler=titler), TextTilingInducer(
        tt, embed=embed)


def test_llm_headings_replace_tfidf_ones_and_boundaries_stay():
    def fn(r):
        return json.dumps({"titles": [f"Topic {n}" for n in sections_in(r)]})

    doc, backend, hybrid, plain = _hybrid(fn)
    res, base = hybrid.induce(doc), plain.induce(doc)
    assert [(s.para_start, s.para_end, s.level) for s in res.sections] == [
        (s.para_start, s.para_end, s.level) for s in base.sections]
    assert [s.title for s in res.sections] == ["Topic 1", "Topic 2", "Topic 3"]
    assert res.titles_from_llm == 3 and res.inducer == "texttiling+llm-titles"
    assert res.para_char_cap is None and res.truncated_paragraphs == 0
    assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []
    req = backend.requests[0]
    assert len(backend.requests) == 1 and req.json_schema["properties"]["titles"]["maxItems"] == 3
    prompt = req.messages[1]["content"]
    assert "[12] t2 paragraph 12 about charlie things" in prompt  # whole paragraphs, numbered
    assert "Synthetic" not in prompt  # no document title, as in induction


def test_short_or_broken_answers_keep_tfidf_headings():
    doc, _, hybrid, plain = _hybrid(lambda r: json.dumps({"titles": ["Only one", ""]}))
    res, base = hybrid.induce(doc), plain.induce(doc)
    assert [s.title for s in res.sections] == ["Only one"] + [s.title for s in base.sections[1:]]
    assert res.titles_from_llm == 1
    doc, _, hybrid, plain = _hybrid(lambda r: "I cannot help with that.")
    assert [s.title for s in hybrid.induce(doc).sections] == [
        s.title for s in plain.induce(doc).sections]


def test_a_small_budget_splits_the_sections_into_groups():
    def fn(r):
        return json.dumps({"titles": [f"H{n}" for n in sections_in(r)]})

    small = InductionSettings(max_prompt_chars=200, para_char_caps=(20,))
    doc, backend, hybrid, _ = _hybrid(fn, small)
    res = hybrid.induce(doc)
    covered = [n for r in backend.requests for n in sections_in(r)]
    assert len(backend.requests) > 1 and covered == ["1", "2", "3"]
    assert [s.title for s in res.sections] == ["H1", "H2", "H3"]
    assert all("…" in r.messages[1]["content"] for r in backend.requests)
    assert res.para_char_cap == 20 and res.truncated_paragraphs == 13  # all cut


def test_config_builds_the_hybrid_and_its_report(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no llm config block"):
        make_inducer({"inducer": "texttiling", "texttiling": {"titles": "llm"}}, None)
    with pytest.raises(ConfigError, match="induction.texttiling.titles"):
        make_inducer({"inducer": "texttiling", "texttiling": {"titles": "gpt"}})
    embed = topic_embed(lambda t: int(t[1]))
    monkeypatch.setattr("structablate.structure.texttiling.sentence_embedder",
                        lambda *a, **k: embed)
    llm = {"model": "m", "backend": "none", "cache": str(tmp_path / "t.jsonl")}
    ind = make_inducer({"inducer": "texttiling", "context_tokens": 4096,
                        "texttiling": {"titles": "llm", "levels": 1}}, llm)
    ind.titler.client._backend = Scripted(
        lambda r: json.dumps({"titles": [f"T{n}" for n in sections_in(r)]}))
    doc = synthetic_doc([4, 5, 4])
    first = ind.induce_many([doc])
    ind.titler.client.close()
    # the report replays from the recording and names the hybrid
    pairs, rep = induce_documents(
        [doc], {"inducer": "texttiling", "context_tokens": 4096,
                "texttiling": {"titles": "llm", "levels": 1}}, {**llm, "mode": "replay"})
    assert pairs[0][1] == first[0].sections
    assert rep["inducer"] == "texttiling+llm-titles" and rep["titles_from_llm"] == 3
    assert rep["titles_from_llm_share"] == 1.0 and rep["llm"]["generated"] == 0
    assert rep["context_tokens"] == 4096 and rep["listing_budget_chars"] > 1000
    assert np.isclose(rep["mean_sections_per_doc"], 3.0)


def test_a_call_covers_no_more_sections_than_its_answer_can_hold():
    def fn(r):
        return json.dumps({"titles": [f"H{n}" for n in sections_in(r)]})

    # max_tokens 80: (80 - 32) // 24 = 2 headings per call, whatever the listing budget
    cfg = InductionSettings(context_tokens=8192, max_tokens=80)
    doc, backend, hybrid, _ = _hybrid(fn, cfg)
    assert hybrid.titler.max_sections_per_call() == 2
    res = hybrid.induce(doc)
    assert [len(sections_in(r)) for r in backend.requests] == [2, 1]
    assert [s.title for s in res.sections] == ["H1", "H2", "H3"]
