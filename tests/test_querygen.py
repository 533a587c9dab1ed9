"""Synthetic query generation: span sampling invariants, balancing, prompts, the funnel with a
scripted backend (fast; the real model is in test_querygen_llm.py)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from structablate.corpus.flatten import DocumentBuilder, top_section_ids
from structablate.llm.backends import Backend, Generation, Request
from structablate.llm.cache import open_cache
from structablate.llm.client import LLMClient
from structablate.queries import (
    QueryGenSettings,
    balance,
    check_leakage,
    generate_queries,
    sample_candidates,
    sample_document,
)
from structablate.queries.config import per_doc_count
from structablate.queries.prompts import (
    cut_text,
    paraphrase_messages,
    parse_query,
    writer_messages,
)
from structablate.queries.spans import has_inner_name, top_level_groups
from structablate.settings import dump, parse
from structablate.tables import check_table

REPO = Path(__file__).resolve().parents[1]
WORDS = ("river harbour mountain valley winter summer merchant soldier painter garden "
         "library tower bridge market festival engine voyage letter treaty harvest").split()
NAMES = ("Marlow", "Ostend", "Velasquez", "Kettering", "Arundel", "Pemberton")
LAYOUT = [  # heading paths, paragraphs per section
    (["Introduction"], 2),
    (["History"], 1),
    (["History", "Early years"], 2),
    (["History", "Later years"], 2),
    (["Legacy"], 1),
    (["Legacy", "Culture"], 2),
    (["Legacy", "Culture", "Films"], 1),
    (["Geography"], 3),
]


def _sentence(k: int) -> str:
    words = [WORDS[(k * 7 + i * 3) % len(WORDS)] for i in range(9)]
    name = NAMES[k % len(NAMES)]
    return f"The {words[0]} near the {words[1]} met {name} and the {' '.join(words[2:])} {k}."


def make_doc(doc_id: str = "Doc", layout=LAYOUT):
    b = DocumentBuilder(doc_id, doc_id)
    k = 0
    for path, n in layout:
        for _ in range(n):
            b.add_paragraph(" ".join(_sentence(k + i) for i in range(4)), path)
            k += 4
    return b.build()


@pytest.fixture(scope="module")
def wiki_docs(tmp_path_factory):
    from conftest import wiki_corpus

    docs, _ = wiki_corpus(
        {"mode": "xml", "path": str(REPO / "resources/wikipedia/sample.xml")}, {},
        tmp_path_factory.mktemp("wcache"))
    return docs


def _check_invariants(doc, cands, cfg):
    groups = top_level_groups(doc)
    tops = dict(zip([s.section_idx for s in doc.sections], top_section_ids(doc.sections),
                    strict=True))
    sentence_spans = []
    for c in cands:
        assert c.doc_id == doc.doc_id and c.qid.startswith(f"{c.qtype}:{doc.doc_id}:".replace(
            " ", "_")) and " " not in c.qid
        for (s, e), top in zip(c.spans, c.top_sections, strict=True):
            assert 0 <= s < e <= len(doc.text)
            assert doc.text[s:e] == doc.text[s:e].strip()
            # every span lies inside its top-level section
            gs, ge = groups[top]
            assert gs <= s and e <= ge
        if c.qtype == "structural":
            assert len(c.spans) == 1 and c.spans[0] == groups[c.top_sections[0]]
            span = c.spans[0]
            # a whole top-level section: starts at a level-1 (top) section's start and ends
            # at the end of the last section of that group
            members = [s for s in doc.sections if tops[s.section_idx] == c.top_sections[0]]
            assert span == (members[0].start, members[-1].end)
            assert span[1] - span[0] >= cfg.structural_min_chars
        else:
            for s, e in c.spans:
                assert cfg.span_min_chars <= e - s <= cfg.span_max_chars
                # within one paragraph
                assert any(p.start <= s and e <= p.end for p in doc.paragraphs)
                sentence_spans.append((s, e))
        if c.qtype == "multihop":
            assert len(c.spans) == 2 and c.top_sections[0] != c.top_sections[1]
            assert c.spans[0] < c.spans[1]
        if c.qtype == "underspecified":
            assert has_inner_name(doc.text[c.spans[0][0] : c.spans[0][1]])
    sentence_spans.sort()
    for (_a, b), (c2, _) in zip(sentence_spans, sentence_spans[1:], strict=False):
        assert b <= c2, "sentence spans of one document overlap"
    structural = [c.spans for c in cands if c.qtype == "structural"]
    assert len(structural) == len(set(structural))


def test_span_invariants_synthetic():
    doc = make_doc()
    cfg = QueryGenSettings(structural_min_chars=200)
    cands = sample_document(doc, cfg)
    counts = Counter(c.qtype for c in cands)
    assert counts == {"factoid": 3, "underspecified": 3, "multihop": 3, "structural": 3}
    _check_invariants(doc, cands, cfg)
    # the top-level groups: Introduction, History (+2 subsections), Legacy (+2), Geography
    assert len(top_level_groups(doc)) == 4


def test_span_invariants_wikipedia_sample(wiki_docs):
    cfg = QueryGenSettings(per_doc=5)
    cands = sample_candidates(wiki_docs, cfg)
    by_doc = {d.doc_id: d for d in wiki_docs}
    for doc_id in by_doc:
        _check_invariants(by_doc[doc_id], [c for c in cands if c.doc_id == doc_id], cfg)
    assert Counter(c.qtype for c in cands) == {t: 25 for t in cfg.types}


def test_sampling_is_deterministic_and_per_document(wiki_docs):
    cfg = QueryGenSettings()
    a = sample_candidates(wiki_docs, cfg)
    assert a == sample_candidates(wiki_docs, cfg)
    # a document's candidates do not depend on the other documents or their order
    rev = sample_candidates(list(reversed(wiki_docs)), cfg)
    assert sorted(a, key=lambda c: c.qid) == sorted(rev, key=lambda c: c.qid)
    assert sample_document(wiki_docs[2], cfg) == [c for c in a if c.doc_id ==
                                                  wiki_docs[2].doc_id]
    other = sample_candidates(wiki_docs, QueryGenSettings(seed=1))
    assert [c.spans for c in other] != [c.spans for c in a]


def test_duplicate_qids_raise():
    with pytest.raises(ValueError, match="duplicate"):
        sample_candidates([make_doc("A B"), make_doc("A  B")], QueryGenSettings())


def test_single_section_document_has_no_multihop():
    doc = make_doc("Flat", [(["Only"], 4)])
    cands = sample_document(doc, QueryGenSettings(structural_min_chars=100))
    counts = Counter(c.qtype for c in cands)
    assert counts["multihop"] == 0 and counts["structural"] == 1 and counts["factoid"] == 3


def test_config_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ValueError, match="'rouge_maxx' was unexpected"):
        parse(QueryGenSettings, {"rouge_maxx": 0.3})
    with pytest.raises(ValueError, match="'essay' is not one of"):
        parse(QueryGenSettings, {"types": ["factoid", "essay"]})
    with pytest.raises(ValueError, match="per_doc: 'essay' is not one of"):
        parse(QueryGenSettings, {"per_doc": {"essay": 2}})
    cfg = parse(QueryGenSettings, {"per_doc": {"multihop": 5}, "sentences": [1, 2]})
    assert per_doc_count(cfg, "multihop") == 5 and per_doc_count(cfg, "factoid") == 3
    assert cfg.sentences == (1, 2)
    assert parse(QueryGenSettings, dump(cfg)) == cfg


def test_balancing_deterministic_and_spread():
    surv = [(f"factoid:d{d}:{k}", f"d{d}", "factoid") for d in range(10) for k in range(3)]
    surv += [(f"multihop:d{d}:0", f"d{d}", "multihop") for d in range(4)]
    a = balance(surv, 12, seed=7)
    assert a == balance(list(reversed(surv)), 12, seed=7)  # input order does not matter
    assert a != balance(surv, 12, seed=8)
    fact = [q for q in a if q.startswith("factoid")]
    mh = [q for q in a if q.startswith("multihop")]
    assert len(fact) == 12 and len(set(fact)) == 12
    assert len(mh) == 4  # fewer survivors than per_type: all of them
    per_doc = Counter(q.split(":")[1] for q in fact)
    assert len(per_doc) == 10 and max(per_doc.values()) == 2  # round-robin over documents
    # a type's draw does not depend on the other types
    only_fact = balance([s for s in surv if s[2] == "factoid"], 12, seed=7)
    assert only_fact == fact


def test_prompts_show_evidence_only():
    doc = make_doc()
    msgs = writer_messages("factoid", ["Some evidence text."], 100)
    assert "Some evidence text." in msgs[1]["content"] and doc.title not in msgs[1]["content"]
    mh = writer_messages("multihop", ["first one", "second one"], 100)[1]["content"]
    assert "Passage A:\nfirst one" in mh and "Passage B:\nsecond one" in mh
    with pytest.raises(ValueError):
        writer_messages("multihop", ["only one"], 100)
    assert "vague" in paraphrase_messages("underspecified", "Who led it?")[1]["content"]
    long = "word " * 100
    cut = cut_text(long, 50)
    assert len(cut) <= 52 and cut.endswith(" …")


@pytest.mark.parametrize("raw, expected", [
    ('{"query": "When did it  start?"}', "When did it start?"),
    ('Sure! {"query": "Who led the \\"army\\"?"} hope it helps', 'Who led the "army"?'),
    ('{"query": "truncated answer', "truncated answer"),
    ("Question: What is it?\nmore", "What is it?"),
    ('"Where is it?"', "Where is it?"),
    ("", None),
    ("{}", None),
    ('{"query": ""}', None),
])
def test_parse_query(raw, expected):
    assert parse_query(raw) == expected


class Scripted(Backend):
    """Writes a query that copies the evidence for some prompts (leaks), an own-words query
    for the others, and paraphrases by rewording; records every request."""

    name = "scripted"

    def __init__(self):
        self.requests: list[Request] = []

    def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        user = request.messages[-1]["content"]
        h = int(hashlib.sha256(user.encode()).hexdigest(), 16)
        if user.startswith("Rewrite"):
            q = user.split("Question: ", 1)[1]
            if h % 5 == 0:
                text = "ok"  # too short: no usable paraphrase
            else:
                text = json.dumps({"query": f"In other words, {q.lower()}"})
        elif h % 3 == 0:
            body = user.split(":\n", 1)[1]
            text = json.dumps({"query": body[:120]})  # copies the evidence: leaks
        else:
            text = json.dumps({"query": f"Which zyxw qwerty number {h % 10**12} occurred?"})
        return Generation(text=text, completion_tokens=5, seconds=0.001)


def test_pipeline_funnel_with_scripted_backend(wiki_docs, tmp_path):
    cfg = QueryGenSettings(per_doc=4, per_type=6)
    backend = Scripted()
    cache = open_cache(tmp_path / "gen.jsonl")
    client = LLMClient("scripted", cache, backend=backend)
    res = generate_queries(wiki_docs, client, cfg)
    f = res.funnel
    n_cand = len(sample_candidates(wiki_docs, cfg))
    assert f["total"]["candidates"] == n_cand == res.candidates.height
    assert len(backend.requests) == n_cand + f["total"]["passed_filter"]
    for t in cfg.types:
        s = f["per_type"][t]
        assert (s["candidates"] >= s["generated"] >= s["passed_filter"] >= s["paraphrased"]
                >= s["survivors"] >= s["finals"])
        assert s["finals"] == min(6, s["survivors"])
    assert f["statuses"].get("query_leak", 0) > 0  # the copying answers were caught
    assert f["statuses"].get("no_paraphrase", 0) > 0
    # shipped queries: the paraphrases, each passing the filter against its gold spans
    q = check_table(res.queries, "queries")
    r = check_table(res.qrels, "qrels")
    assert q.height == f["total"]["finals"] > 0 and q["qid"].n_unique() == q.height
    texts = {d.doc_id: d.text for d in wiki_docs}
    for row in q.iter_rows(named=True):
        assert row["text"] == row["paraphrase"] and row["text"].startswith("In other words")
        spans = r.filter(pl.col("qid") == row["qid"]).select("start", "end").rows()
        assert len(spans) == row["n_spans"] == (2 if row["qtype"] == "multihop" else 1)
        ev = [texts[row["doc_id"]][s:e] for s, e in spans]
        chk = check_leakage(row["text"], ev)
        assert chk.passed and chk.rouge_l == pytest.approx(row["rouge_l"])
    assert set(r["qid"]) == set(q["qid"])
    assert f["rouge_l_finals"]["q100"] <= 0.35
    # a rerun replays the cache: same outputs, no backend call
    client.close()
    backend2 = Scripted()
    client2 = LLMClient("scripted", open_cache(tmp_path / "gen.jsonl"), backend=backend2)
    res2 = generate_queries(wiki_docs, client2, cfg)
    client2.close()
    assert backend2.requests == []
    assert res2.queries.equals(res.queries) and res2.qrels.equals(res.qrels)
    assert res2.candidates.equals(res.candidates)


def test_pipeline_without_paraphrase(tmp_path):
    doc = make_doc()
    cfg = QueryGenSettings(paraphrase=False, structural_min_chars=200)
    backend = Scripted()
    res = generate_queries([doc], LLMClient("scripted", None, backend=backend), cfg)
    assert len(backend.requests) == res.funnel["total"]["candidates"]
    assert (res.queries["text"] == res.queries["original_query"]).all()


def test_unusable_reasons():
    from structablate.queries.pipeline import unusable_reason

    cfg = QueryGenSettings()
    assert unusable_reason(None, cfg) == "unparsable"
    assert unusable_reason("Why so?", cfg) == "too_short"
    assert unusable_reason("word " * 41, cfg) == "too_long"
    assert unusable_reason("The commander, the crew, the crew, the crew, the crew, the crew",
                           cfg) == "repetitive"
    assert unusable_reason("When did the crew first see the far side of the Moon?", cfg) is None
