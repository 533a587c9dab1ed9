"""Markdown dialect markup read as the rendered page shows it, on synthetic files and on ten
real pages of the Python-Markdown 3.11.3 documentation (resources/byo/python-markdown-docs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import user_corpus

from structablate.corpus.byo import build_documents, build_user_corpus
from structablate.corpus.files import DocumentFile
from structablate.corpus.markdown import parse_markdown
from structablate.corpus.verify import verify_document

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "resources" / "byo" / "python-markdown-docs"
QUERIES = REPO / "resources" / "byo" / "python-markdown-queries.jsonl"


def md(text: str, **kw):
    kw.setdefault("doc_id", "d")
    kw.setdefault("default_title", "stem")
    kw.setdefault("where", "f.md")
    doc = parse_markdown(text, DocumentFile(**kw))
    assert verify_document(doc) == []
    return doc


def paras(doc):
    return [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]


def test_admonitions_render_title_and_body():
    doc = md(
        "# T\n\n## S\n\n"
        '!!! info "Heads up"\n\n    Body with __strong__ and a [ref].\n\n'
        "    Second paragraph.\n\n    [ref]: http://example.org\n\n"
        "!!! note\n    Default title.\n\n"
        '!!! important ""\n    No title at all.\n\n'
        "??? tip\n    Collapsed.\n\n"
        '???+ danger highlight "Open one"\n    Expanded.\n\n'
        "After the boxes.\n")
    assert paras(doc) == [
        "Heads up", "Body with strong and a ref.", "Second paragraph.",
        "Note", "Default title.",
        "No title at all.",
        "Tip", "Collapsed.",
        "Open one", "Expanded.",
        "After the boxes.",
    ]
    assert {s.path for s in doc.sections} == {("S",)}


def test_pymdown_blocks_keep_their_content_not_their_fences():
    doc = md(
        "# T\n\n## S\n\nBefore.\n\n"
        "/// html | div.result\nThe result text.\n///\n\n"
        "/// admonition | Some Title\n    type: warning\n\nBody of the box.\n///\n\n"
        "/// details | Summary line\n/// note\nNested body.\n///\n///\n\n"
        "```\n/// inside code\n```\nAfter.\n")
    assert paras(doc) == ["Before.", "The result text.", "Some Title", "Body of the box.",
                          "Summary line", "Note", "Nested body.", "/// inside code", "After."]
    assert all("|" not in p and not p.startswith("///") for p in paras(doc)[:-2])


def test_attribute_lists_never_reach_text_or_headings():
    doc = md(
        "# Title {: #top }\n\n"
        "## Using Git {: #git .x data-k='v' }\n\nplain\n\n"
        "### Pandoc style {#pandoc .c}\n\n"
        "A paragraph\nwith a last line of attributes\n{: .note }\n\n"
        "## Class only {.wide}\n\n"
        "* **`lang_prefix`**{#lang_prefix}: The prefix.\n"
        "* an item {: .cls }\n\n"
        "{: #block-ial }\n\n"
        "Kept: `{: #in-code }`, \\{#escaped}, a set {x} and {#id text}.\n")
    assert doc.title == "Title"
    assert [s.path for s in doc.sections] == [
        ("Using Git",), ("Using Git", "Pandoc style"), ("Class only",)]
    assert paras(doc) == [
        "plain",
        "A paragraph with a last line of attributes",
        "lang_prefix: The prefix.",
        "an item",
        "Kept: {: #in-code }, {#escaped}, a set {x} and {#id text}.",
    ]


def test_front_matter_comments_links_and_other_dialect_markup():
    doc = md(
        "+++\ntitle = \"From TOML\"\nid = \"toml-id\"\n+++\n"
        "<!-- a comment block\nover lines -->\n\n"
        "# Only\n\n[TOC]\n\n"
        "Text <!-- inline\ncomment --> goes on, a [defined link][d], an [autoref][pkg.mod.Cls], "
        "a [collapsed][] one and [`code`]\n[pkg.fn].\n\n"
        "[d]: https://example.org \"title\"\n\n"
        "The HTML spec.\n\n*[HTML]: Hyper Text Markup Language\n\n"
        "Apple\n:   A fruit.\n\n"
        "A claim[^1].\n\n[^1]: The footnote text.\n")
    assert (doc.doc_id, doc.title) == ("toml-id", "From TOML")
    assert paras(doc) == [
        "Text goes on, a defined link, an autoref, a collapsed one and code.",
        "The HTML spec.",
        "Apple", "A fruit.",
        "A claim.", "The footnote text.",
    ]
    # what stays literal: a lone bracket pair (no second label), prose brackets with spaces,
    # indexing and character classes, and LaTeX braces after emphasis (QASPER's Markdown)
    doc = md("# T\n\nSee [sic] and [a b] [c d] here.\n\n"
             "Index x[i][j], tfl[word][i], class [A-Z][a-z]{1,}.\n\n"
             "Sum *x*{i=1} and *U*{:j} and *y*{.5}.\n")
    assert paras(doc) == ["See [sic] and [a b] [c d] here.",
                          "Index x[i][j], tfl[word][i], class [A-Z][a-z]{1,}.",
                          "Sum x{i=1} and U{:j} and y{.5}."]


def test_real_docs_headings_and_text_carry_no_dialect_markup():
    docs, skipped, _ = build_documents(user_corpus({"type": "markdown", "path": str(DOCS)}), "pm")
    assert skipped == [] and len(docs) == 10
    for d in docs:
        assert verify_document(d) == []
        for s in d.sections:
            for title in s.path:
                assert not re.search(r"\{[:#.]", title), (d.doc_id, s.path)
        for i in range(len(d.paragraphs)):
            t = d.paragraph_text(i)
            assert not t.startswith(("!!! ", "??? ")), (d.doc_id, t[:80])
            assert "__maintenance mode__" not in t
    install = next(d for d in docs if d.doc_id == "install")
    assert [s.path for s in install.sections] == [("The Easy Way",), ("Using the Git Repository",)]
    api = next(d for d in docs if d.doc_id == "extensions/api")
    assert ("Phases of processing", "Preprocessors") in {s.path for s in api.sections}
    # the admonition's body is the paragraphs a reader sees, under the section holding the box
    adm = next(d for d in docs if d.doc_id == "extensions/admonition")
    body = [adm.paragraph_text(i) for i in range(len(adm.paragraphs))]
    k = body.index("Note")
    assert body[k + 1].startswith("This extension is in maintenance mode. We will continue")
    assert body[k + 2] == "We recommend PyMdown Admonition as an actively developed alternative."


def test_real_docs_match_python_markdown_rendering():
    """Every heading Python-Markdown renders (with the extensions the docs site enables) is a
    heading of ours, and its paragraphs, list items, terms, definitions and table cells are
    in our flat text (whitespace folded). Python-Markdown alone differs from the site where the
    site adds plugins: fenced code inside admonitions (superfences) and cross-references
    ``[text][id]`` (autorefs) — the reference rendering is normalised for the second, and the
    first leaves a few code fragments that may not match."""
    markdown = pytest.importorskip("markdown")
    lxml_html = pytest.importorskip("lxml.html")
    docs, _, _ = build_documents(user_corpus({"type": "markdown", "path": str(DOCS)}), "pm")
    total = missing = 0
    for d in docs:
        src = (DOCS / f"{d.doc_id}.md").read_text(encoding="utf-8")
        src = re.sub(r"\A---\n.*?\n---\n", "", src, flags=re.S)  # MkDocs strips front matter
        html = markdown.markdown(src, extensions=[
            "admonition", "attr_list", "def_list", "footnotes", "abbr", "tables",
            "fenced_code", "toc", "md_in_html"])
        root = lxml_html.fragment_fromstring(html, create_parent="div")
        flat = " ".join(d.text.split())
        names = {t for s in d.sections for t in s.path}
        for h in root.iter("h2", "h3", "h4", "h5", "h6"):
            assert " ".join(h.text_content().split()) in names, (d.doc_id, h.text_content())
        for el in root.iter("p", "li", "dt", "dd", "td", "th"):
            if el.tag == "li" and el.find("p") is not None:
                continue
            if el.xpath("ancestor::pre") or el.xpath(".//code[contains(., '```')]"):
                continue
            txt = " ".join(el.text_content().split())
            txt = re.sub(r"\[([^\[\]]+)\] ?\[([^\[\]\s]*)\]", r"\1", txt)
            if not txt or txt.startswith("```"):
                continue
            total += 1
            missing += txt not in flat
    assert total > 450
    assert missing / total < 0.03, (missing, total)


def test_hand_written_queries_on_real_docs_all_map():
    b = build_user_corpus(
        user_corpus({"type": "markdown", "path": str(DOCS), "queries": str(QUERIES)}), "pm")
    funnel = b.report["queries"]
    assert funnel["queries"] == 24 and funnel["kept"] == 24
    assert funnel["evidence_by_step"] == {"exact": 23, "section": 4}
    docs = {d.doc_id: d for d in b.documents}
    raw = {o["qid"]: o for o in map(json.loads, QUERIES.read_text().splitlines())}
    for q in b.questions:
        doc = docs[q.doc_id]
        for (s, e), step in zip(q.spans, q.steps, strict=True):
            got = " ".join(doc.text[s:e].split())
            if step == "exact":  # the span is the evidence, whitespace folded
                assert any(" ".join(ev.split()) in got for ev in raw[q.qid]["evidence"])
            else:  # the span is the whole section the snippet names
                names = [ev for ev in raw[q.qid]["evidence"]
                         if any(sec.path[-1] == ev for sec in doc.sections)]
                assert names, (q.qid, got[:60])
                sec = [x for x in doc.sections if x.path[-1] == names[0]]
                assert s == sec[0].start
    # a snippet copied from the source across a line wrap (pm02) and admonition text (pm03)
    by_qid = {q.qid: q for q in b.questions}
    assert by_qid["pm02"].steps == ("exact",) and by_qid["pm03"].steps == ("exact",)
