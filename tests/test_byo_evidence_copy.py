"""Evidence as users copy it: snippets copied from the source (inline markup, wraps,
indentation) map through the format's inline rules; partial evidence is dropped (or kept and
listed); drop reasons quote the closest passage; an ambiguous heading maps to nothing and says
which paths resolve it (fast)."""

from __future__ import annotations

import json

from conftest import build_byo

from structablate.corpus.evidence import EvidenceMapper
from structablate.corpus.flatten import DocumentBuilder

MYST = """# Guide

## Install

Run {command}`pip install pkg` and then call {py:func}`pkg.setup` with
a **config** file, see {ref}`the usage section <usage>`.

(usage)=
## Usage

- Open the `settings.toml` file.
- Set `mode` to *fast*.
"""

RST = """Guide
=====

Install
-------

Run :command:`pip install pkg` and then call :func:`pkg.setup` with
a **config** file, see :ref:`the usage section <usage>`.

.. _usage:

Usage
-----

- Open the ``settings.toml`` file.
- Set ``mode`` to *fast*.
"""


def _corpus(tmp_path, name, text, queries, **extra):
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in queries))
    kind = "rst" if name.endswith(".rst") else "markdown"
    return build_byo({"type": kind, "path": str(folder), "queries": str(qfile), **extra}, "c")


def _copied(doc_id, source_lines):
    return [
        {"qid": "wrap", "doc_id": doc_id, "query": "How to set up?",
         "evidence": [source_lines["wrap"]]},
        {"qid": "list", "doc_id": doc_id, "query": "Which mode?",
         "evidence": [source_lines["item"]]},
    ]


def test_snippets_copied_from_myst_source_map(tmp_path):
    qs = _copied("guide", {
        "wrap": "call {py:func}`pkg.setup` with\na **config** file",
        "item": "- Set `mode` to *fast*."})
    docs, questions, report = _corpus(tmp_path, "guide.md", MYST, qs)
    f = report["queries"]
    assert f["kept"] == 2 and f["evidence_rendered"] == 2
    text = docs[0].text
    spans = {q.qid: text[q.spans[0][0]:q.spans[0][1]] for q in questions}
    assert spans["wrap"] == "call pkg.setup() with a config file"
    assert spans["list"] == "Set mode to fast."


def test_snippets_copied_from_rst_source_map(tmp_path):
    qs = _copied("guide", {
        "wrap": "call :func:`pkg.setup` with\n   a **config** file",
        "item": "- Set ``mode`` to *fast*."})
    docs, questions, report = _corpus(tmp_path, "guide.rst", RST, qs)
    assert report["queries"]["kept"] == 2
    text = docs[0].text
    spans = {q.qid: text[q.spans[0][0]:q.spans[0][1]] for q in questions}
    assert spans == {"wrap": "call pkg.setup() with a config file",
                     "list": "Set mode to fast."}


def test_partial_evidence_is_dropped_or_kept_and_listed(tmp_path):
    qs = [{"qid": "half", "doc_id": "guide", "query": "q?",
           "evidence": ["Open the `settings.toml` file.", "Run the installer twice."]}]
    _, questions, report = _corpus(tmp_path, "guide.md", MYST, qs)
    f = report["queries"]
    assert questions == []
    assert f["dropped_partial_evidence"] == 1 and f["kept"] == 0
    assert f["funnel"][-2:] == [["with some evidence mapped", 1],
                                ["with mapped evidence (kept)", 0]]
    reason = f["dropped"][0]["reason"]
    assert "1 of its 2 evidence items map nowhere" in reason
    assert "'Run the installer twice.': not found; closest passage" in reason
    # the closest place is in paragraph 0 ("Run pip install ..."), searched window by window
    assert "(paragraph 0, similarity 0.54 in a window as long as the snippet (the fuzzy " \
           "step compares whole paragraphs), fuzzy_min_ratio 0.85): " \
           "'Run pip install pkg and then call pkg.setup() with a config file, see the usage " \
           "section.'" in reason
    _, questions, report = _corpus(tmp_path, "guide.md", MYST, qs, partial_evidence="keep")
    f = report["queries"]
    assert f["kept"] == 1 and len(questions[0].spans) == 1
    assert f["kept_with_partial_evidence"][0]["qid"] == "half"
    assert "Run the installer twice." in f["kept_with_partial_evidence"][0]["unmapped"][0]


def test_unmapped_reason_quotes_the_closest_passage(tmp_path):
    qs = [{"qid": "none", "doc_id": "guide", "query": "q?",
           "evidence": ["Open the settings.yaml file."]}]
    _, _, report = _corpus(tmp_path, "guide.md", MYST, qs, fuzzy_min_ratio=0.99)
    reason = report["queries"]["dropped"][0]["reason"]
    assert reason.startswith("no evidence found in 'guide': 'Open the settings.yaml file.': "
                             "not found; closest passage (paragraph 1, similarity 0.9")
    assert "'Open the settings.toml file.'" in reason


def _doc(sections):
    b = DocumentBuilder("d", "T")
    for path, text in sections:
        b.add_paragraph(text, path)
    return b.build()


def test_a_heading_used_twice_maps_to_neither_nor_the_range_between():
    # issue 42 item 2: two "Results" sections with "Method" between them
    doc = _doc([(("Results",), "First results."), (("Method",), "The method."),
                (("Results",), "Second results.")])
    m = EvidenceMapper(doc, 0.85)
    assert m.map("Results") == (None, "ambiguous")
    assert "2 separate sections have the heading path 'Results'" in m.ambiguity("Results")
    assert m.map("Method")[1] == "section"


def test_a_title_under_two_parents_never_falls_back_to_the_words():
    doc = _doc([(("Introduction",), "An Example of text."), (("A", "Example"), "a ex."),
                (("B", "Example"), "b ex.")])
    m = EvidenceMapper(doc, 0.85)
    assert m.map("Example") == (None, "ambiguous")
    why = m.ambiguity("Example")
    assert "'A ::: Example'" in why and "'B ::: Example'" in why
    span, step = m.map("A ::: Example")
    assert step == "section" and doc.text[span[0]:span[1]] == "a ex."
    # a title on one path only still maps to its section
    doc = _doc([(("A", "Only"), "x."), (("B",), "y.")])
    span, step = EvidenceMapper(doc, 0.85).map("Only")
    assert step == "section" and doc.text[span[0]:span[1]] == "x."


def test_an_ambiguous_heading_drop_names_the_paths(tmp_path):
    text = "# T\n\n## A\n\n### Example\n\naa\n\n## B\n\n### Example\n\nbb\n"
    qs = [{"qid": "q", "doc_id": "t", "query": "q?", "evidence": ["Example"]}]
    _, _, report = _corpus(tmp_path, "t.md", text, qs)
    reason = report["queries"]["dropped"][0]["reason"]
    assert "the heading 'Example' occurs under 2 heading paths ('A ::: Example'; " \
           "'B ::: Example'): give the path of the one meant" in reason


def test_snippets_cut_out_of_their_context_render_whole():
    """A copied snippet lacks the link definitions and targets of its file, and may cut a
    role: rendered as the page shows it all the same."""
    from structablate.corpus.markdown import render_snippet as md
    from structablate.corpus.myst import render_snippet as myst
    from structablate.corpus.rst import render_snippet as rst

    assert myst("see the GNU [`ftp`\nman pages][netrc-docs] and [pip-tools] [^1].") == \
        "see the GNU ftp man pages and pip-tools ."
    assert md("  [a link][ref] in `code`") == "a link in code"
    assert rst("hosted on `GitHub Actions`_ and `the site <https://x.org>`__, see\n"
               "   :ref:`Archi") == "hosted on GitHub Actions and the site, see Archi"
    assert rst("join ``#pypa`` on `Libera`_ or Sphinx_.") == "join #pypa on Libera or Sphinx."
    # code indexing and escaped brackets are not links
    assert md("use `x[i]` and a\\[b\\]") == "use x[i] and a[b]"
