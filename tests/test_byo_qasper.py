"""The Markdown adapter on real QASPER papers, against the QASPER builder.

``qasper-papers-markdown.tar.gz`` holds every QASPER paper as Markdown: ``#`` title, a
``**Paper ID:** <id>`` line, ``## Abstract``, then one ``##`` heading per ``full_text`` section
whose text keeps QASPER's ``A ::: B`` path form. Built with ``heading_separator: " ::: "``, the
Markdown adapter must give the QASPER builder's documents, sections and qrels, with these
documented differences (docs/byo.md):

* one extra first paragraph ``Paper ID: <id>`` in a lead section (``lead_heading``), which
  shifts every offset by its length plus the separator;
* the papers' text was written into Markdown unescaped, so ``_``, ``*``, ``\\``, backticks and
  ``<…>`` in it are read as Markdown: such a paragraph is the plain-text *rendering* of the
  QASPER paragraph, and evidence quoting it maps fuzzily (same paragraph) instead of exactly.
"""

from __future__ import annotations

import json
import tarfile

import pytest
from conftest import build_byo, shared_file

from structablate.corpus.flatten import normalize_paragraph
from structablate.corpus.markdown import _parser, inline_text
from structablate.corpus.qasper import FLOAT_PREFIX, build_qasper_corpus

IDENTICAL = ["1605.05156", "1908.07491", "1908.11049"]  # flat and nested sections, section evidence
RENDERED = "1909.00091"  # LaTeX and underscores read as Markdown emphasis
PAPERS = IDENTICAL + [RENDERED]
LEAD = "Front matter"


def user_queries(papers: dict, qasper_corpus) -> list[dict]:
    """QASPER's kept questions as user queries: the text evidence strings it maps."""
    kept = {q.qid for q in qasper_corpus.questions}
    rows = []
    for pid in sorted(papers):
        for q in papers[pid]["qas"]:
            if q["question_id"] not in kept:
                continue
            ev = sorted({e for a in q["answers"] if not a["answer"]["unanswerable"]
                         for e in a["answer"]["evidence"]
                         if e.strip() and not e.startswith(FLOAT_PREFIX)})
            rows.append({"qid": q["question_id"], "doc_id": pid, "query": q["question"],
                         "evidence": ev})
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tar = shared_file("qasper", "qasper-papers-markdown.tar.gz")
    test = json.loads(shared_file("qasper", "qasper-test-v0.3.json").read_text("utf-8"))
    papers = {pid: test[pid] for pid in PAPERS}
    root = tmp_path_factory.mktemp("qasper_md")
    wanted = {f"papers/test/{pid}.txt" for pid in PAPERS}
    with tarfile.open(tar) as tf:
        members = [m for m in tf if m.name in wanted]
        tf.extractall(root, members=members, filter="data")
    assert len(members) == len(PAPERS)
    qasper = build_qasper_corpus(papers)
    qfile = root / "queries.jsonl"
    qfile.write_text("".join(json.dumps(r) + "\n" for r in user_queries(papers, qasper)))
    cfg = {"type": "markdown", "path": str(root / "papers" / "test" / "*.txt"),
           "queries": str(qfile), "heading_separator": " ::: ", "lead_heading": LEAD}
    return qasper, build_byo(cfg, "qasper_md"), cfg


def _render(text: str) -> str:
    tokens = _parser().parseInline(text)
    return normalize_paragraph(inline_text(tokens[0].children))


def _paras_of(doc, start: int, end: int) -> tuple[int, int]:
    """First and last index of the paragraphs that ``[start, end)`` touches."""
    hit = [p.para_idx for p in doc.paragraphs if p.start < end and start < p.end]
    return hit[0], hit[-1]


def test_documents_and_sections_match_qasper(built):
    qasper, (docs, _, report), _ = built
    assert [d.doc_id for d in docs] == [d.doc_id for d in qasper.documents] == sorted(PAPERS)
    assert report["skipped"] == []
    for m, q in zip(docs, qasper.documents, strict=True):
        assert m.title == q.title
        lead = f"Paper ID: {q.doc_id}"
        assert m.paragraph_text(0) == lead and m.sections[0].path == (LEAD,)
        shift = len(lead) + 2
        m_paras = [m.paragraph_text(i) for i in range(1, len(m.paragraphs))]
        q_paras = [q.paragraph_text(i) for i in range(len(q.paragraphs))]
        if q.doc_id in IDENTICAL:
            assert m.text[shift:] == q.text
        else:
            assert m_paras != q_paras and m_paras == [_render(p) for p in q_paras]
        # the same tree over the same paragraphs (the abstract included: '## Abstract')
        assert [(s.path, s.level, s.para_start - 1, s.para_end - 1) for s in m.sections[1:]] \
            == [(s.path, s.level, s.para_start, s.para_end) for s in q.sections]
        if q.doc_id in IDENTICAL:
            assert [(s.start - shift, s.end - shift) for s in m.sections[1:]] \
                == [(s.start, s.end) for s in q.sections]
    assert any(len(s.path) > 1 for d in docs for s in d.sections)


def test_qrels_match_qasper(built):
    qasper, (docs, questions, report), _ = built
    by_doc = {d.doc_id: d for d in docs}
    qdocs = {d.doc_id: d for d in qasper.documents}
    assert [q.qid for q in questions] == [q.qid for q in qasper.questions]
    steps = {"exact": 0, "section": 0, "fuzzy": 0}
    for m, q in zip(questions, qasper.questions, strict=True):
        assert (m.doc_id, m.text, len(m.spans)) == (q.doc_id, q.text, len(q.spans))
        shift = len(f"Paper ID: {q.doc_id}") + 2
        if q.doc_id in IDENTICAL:
            assert [(s - shift, e - shift) for s, e in m.spans] == list(q.spans)
            assert m.steps == q.steps
        else:
            # the same paragraphs; evidence quoting a paragraph whose Markdown rendering
            # differs maps fuzzily (to the whole paragraph), every other evidence as before
            md, qd = by_doc[m.doc_id], qdocs[q.doc_id]
            for (ms, me), mstep, (qs, qe), qstep in zip(
                    m.spans, m.steps, q.spans, q.steps, strict=True):
                first, last = _paras_of(qd, qs, qe)
                assert _paras_of(md, ms, me) == (first + 1, last + 1)
                if mstep == "exact":
                    assert qstep == "exact"
                    assert md.text[ms:me] == _render(qd.text[qs:qe])
                elif mstep != qstep:
                    assert (qstep, mstep) == ("exact", "fuzzy") and first == last
                    assert qd.paragraph_text(first) != md.paragraph_text(first + 1)
                    assert (ms, me) == (md.paragraphs[first + 1].start,
                                        md.paragraphs[first + 1].end)
        for s in m.steps:
            steps[s] += 1
    f = report["queries"]
    assert f["kept"] == len(qasper.questions) and f["dropped_unmapped"] == 0
    # evidence quoting a paragraph whose Markdown rendering differs (``_x_``, ``*``) maps
    # exactly once the snippet is rendered by the same inline rules (it mapped fuzzily, to
    # the whole paragraph, before snippets were rendered)
    assert steps["section"] > 0 and f["evidence_rendered"] > 0
    assert f["funnel"][-1] == ["with mapped evidence (kept)", len(qasper.questions)]


def test_without_separator_heading_paths_stay_joined(built):
    qasper, _, cfg = built
    docs, _, _ = build_byo({**cfg, "heading_separator": None, "queries": None}, "x")
    for m, q in zip(docs, qasper.documents, strict=True):
        assert [s.path for s in m.sections[1:]] == [(" ::: ".join(s.path),) for s in q.sections]
