"""The reStructuredText and MyST readers on what a user's Sphinx documentation holds (issue
52, item 5): docutils errors that lose or move text are named per file and line (skipped with
``skip_bad_files``), inline literals that show syntax are not markup residue, a drop reason's
closest passage is searched inside long paragraphs, the corpus page lists the questions kept
with part of their evidence and the markup the readers left out, and icons, multi-line
directive options, intersphinx links and ``doc`` roles render as the built page shows them.
Every document here is written by hand from the formats' specifications (fast)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import build_byo

from structablate.corpus.byo import ByoInputError
from structablate.corpus.evidence import EvidenceMapper
from structablate.corpus.files import DocumentFile
from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.myst import parse_myst
from structablate.corpus.residue import refusal, scan_document
from structablate.corpus.rst import parse_rst
from structablate.corpus.verify import verify_document


def _rst(text: str, where: str = "/nowhere/f.rst", **kw):
    doc = parse_rst(text, DocumentFile("d", "stem", where), **kw)
    assert verify_document(doc) == []
    return doc


def _myst(text: str, where: str = "/nowhere/f.md", **kw):
    doc = parse_myst(text, DocumentFile("d", "stem", where), **kw)
    assert verify_document(doc) == []
    return doc


def _paras(doc):
    return [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]


def _tree(doc):
    return [(s.path, [doc.paragraph_text(i) for i in range(s.para_start, s.para_end)])
            for s in doc.sections]


def _write(folder, files: dict[str, str]):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _queries(path, queries):
    path.write_text("".join(json.dumps(q) + "\n" for q in queries))
    return str(path)


# ------------------------------------------------------------------ 1. docutils errors

# (source, line, message) of markup the reStructuredText specification rejects; today each
# one builds, its heading gone and its text under the section before
BROKEN = {
    # an underline shorter than its title and than four characters: not a title at all
    # ("Section ===" becomes a paragraph of the section before)
    "underline shorter than the title": (
        "Title\n=====\n\nLead.\n\nSection\n===\n\nText of the section.\n", 7,
        "Possible title underline, too short for the title"),
    # '~' met first under level 2 ('-'): a level-3 style right after a level-1 section
    "inconsistent title adornment": (
        "Title\n=====\n\nA\n-----\n\ntext a\n\nB\n~~~~~\n\ntext b\n\nC\n=====\n\ntext c\n\n"
        "D\n~~~~~\n\ntext d\n", 19, "Inconsistent title style"),
    "overline and underline differ": (
        "=====\nTitle\n======\n\nLead.\n\nSec\n---\n\nText.\n", 1,
        "Title overline & underline mismatch"),
    # a section title inside a directive's body: the specification allows none there
    "heading inside a note": (
        "Title\n=====\n\nIntro.\n\nSec\n---\n\n.. note::\n\n   Inner\n   -----\n\n"
        "   Inside note.\n\nAfter note.\n\nSec2\n----\n\nText 2.\n", 12,
        "Unexpected section title"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_markup_that_loses_headings_is_refused_with_file_line_and_message(case):
    src, line, message = BROKEN[case]
    with pytest.raises(ByoInputError) as err:
        _rst(src, where="/docs/broken.rst")
    text = str(err.value)
    assert text.startswith("/docs/broken.rst: ")
    assert f"line {line}: " in text and message in text
    assert "skip_bad_files" in text


def test_an_underline_only_shorter_than_its_title_is_a_warning_and_keeps_the_heading():
    # four characters or more: docutils warns ("Title underline too short.") and the
    # section stands as written; nothing lost, so nothing refused
    doc = _rst("Title\n=====\n\nLead.\n\nA longer section title\n------\n\nIts text.\n")
    assert _tree(doc) == [(("Introduction",), ["Lead."]),
                          (("A longer section title",), ["Its text."])]


def test_a_paragraph_ending_in_a_literal_marker_line_is_no_lost_heading():
    # "yields\n::" is docutils INFO "possible title underline", but a paragraph followed by
    # the literal-block marker, as CMake's help writes it: nothing lost, nothing refused
    doc = _rst("T\n=\n\nA\n-\n\nThe loop\n\nyields\n::\n\n  -- X=0\n")
    assert _paras(doc) == ["The loop", "yields", "-- X=0"]


def test_sections_inside_only_join_the_page_tree():
    # Sphinx's ``only`` allows section titles; its sections stand where the directive does
    # (CMake's index.rst); today they vanish and their text moves under the section before
    src = ("Title\n=====\n\nPart A\n------\n\nText a.\n\n.. only:: html\n\n   Part B\n"
           "   ------\n\n   Text b.\n\nPart C\n------\n\nText c.\n")
    assert _tree(_rst(src)) == [(("Part A",), ["Text a."]), (("Part B",), ["Text b."]),
                                (("Part C",), ["Text c."])]
    src = ("# Title\n\n## Part A\n\nText a.\n\n:::{only} html\n## Part B\n\nText b.\n:::\n\n"
           "## Part C\n\nText c.\n")
    assert _tree(_myst(src)) == [(("Part A",), ["Text a."]), (("Part B",), ["Text b."]),
                                 (("Part C",), ["Text c."])]


def test_references_defined_elsewhere_are_not_errors():
    # docutils' reference errors where the page text is intact: a substitution from
    # conf.py's rst_prolog, a target defined in another file
    doc = _rst("T\n=\n\nThe |project| tool, see Install_ and `the guide`_.\n")
    assert _paras(doc) == ["The tool, see Install and the guide."]


def test_skip_bad_files_skips_the_broken_file_and_lists_its_line_and_message(tmp_path):
    folder = tmp_path / "docs"
    _write(folder, {"good.rst": "Good\n====\n\nPart\n----\n\nGood text.\n",
                    "bad.rst": BROKEN["heading inside a note"][0]})
    cfg = {"type": "rst", "path": str(folder)}
    with pytest.raises(ByoInputError, match=r"bad\.rst: .*line 12: ERROR: Unexpected "
                                            r"section title"):
        build_byo(cfg, "c")
    docs, _, report = build_byo({**cfg, "skip_bad_files": True}, "c")
    assert [d.doc_id for d in docs] == ["good"]
    [skipped] = report["skipped"]
    assert skipped["where"].endswith("bad.rst") and skipped["doc_id"] == "bad"
    assert "line 12: ERROR: Unexpected section title" in skipped["reason"]


def test_eval_rst_errors_name_the_line_of_the_myst_file():
    src = ("# Page\n\n## Part\n\nText.\n\n```{eval-rst}\n.. note::\n\n   Inner\n   -----\n\n"
           "   Inside.\n```\n")
    with pytest.raises(ByoInputError, match=r"f\.md: .*line 11: ERROR: Unexpected section"):
        _myst(src)


# ------------------------------------------------------------------ 2. inline literals

RST_SYNTAX_PAGE = """Writing roles
=============

Cross references
----------------

Write ``:ref:`label``` to link a section and ``:doc:`page``` to link a page.

Directives
----------

Start a note with ``.. note::`` and a code sample with ``.. code-block:: python``.

Use :code:`.. _label:` before a title to make ``label`` a target.
"""

MYST_SYNTAX_PAGE = """# Writing MyST

## Roles

Write `` {ref}`label` `` to link a section, `(label)=` to set a target.

## Directives

Open a box with ```` ```{note} ```` or `:::{tip}` and close it with `:::`.
"""


def test_a_page_documenting_syntax_in_inline_literals_is_not_refused(tmp_path):
    folder = tmp_path / "docs"
    _write(folder, {"roles.rst": RST_SYNTAX_PAGE})
    qfile = _queries(tmp_path / "q.jsonl", [
        {"qid": "q1", "doc_id": "roles", "query": "How do I link a section?",
         "evidence": ["to link a section"]},
        {"qid": "q2", "doc_id": "roles", "query": "How do I start a note?",
         "evidence": ["Start a note with"]}])
    docs, questions, report = build_byo({"type": "rst", "path": str(folder),
                                         "queries": qfile}, "c")
    assert [q.qid for q in questions] == ["q1", "q2"]
    assert report["markup_residue"]["with_markup"] == 0
    doc = docs[0]
    assert "Write :ref:`label` to link a section" in doc.text  # shown, as the page shows it
    myst_folder = tmp_path / "myst"
    _write(myst_folder, {"page.md": MYST_SYNTAX_PAGE})
    docs, _, report = build_byo({"type": "markdown", "path": str(myst_folder)}, "m")
    assert report["dialect"] == "myst" and report["markup_residue"]["with_markup"] == 0
    assert "Open a box with ```{note} or :::{tip}" in docs[0].text


def test_markup_outside_literals_is_still_residue():
    # a Markdown page with rst directives left in its prose (outside code) is still refused;
    # the same directive inside a code span is not counted
    from structablate.corpus.markdown import parse_markdown

    src = ("# Page\n\n## A\n\n.. note:: Keep backups.\n\n.. warning:: Old settings go.\n\n"
           "Write `.. note::` to open a note, `|name|` for a substitution.\n\nPlain.\n")
    doc = parse_markdown(src, DocumentFile("p", "p", "/x/p.md"))
    r = scan_document(doc, doc.meta.get("code_paragraphs", ()))
    assert r["with_markup"] == 2 and [w["para_idx"] for w in r["worst"]] == [0, 1]
    assert refusal(doc, 0.10) is not None
    # the same text with the literals not left out (what the scan read before)
    assert scan_document(doc, literals={})["with_markup"] == 3


# ------------------------------------------------------------------ 3. the closest passage


def test_the_closest_passage_is_searched_inside_long_paragraphs():
    b = DocumentBuilder("d", "T")
    b.add_paragraph("Restart the service.", ("Intro",))
    b.add_paragraph(
        "Upgrading takes a few steps that every operator should follow in order: stop the "
        "scheduler, back up the database, install the new package from the release page, "
        "run the migration command, then restart the server twice after upgrading so that "
        "the new configuration is loaded by every worker, and finally check the logs for "
        "warnings about deprecated settings that a later release will remove.", ("Upgrade",))
    b.add_paragraph("See the changelog.", ("Upgrade",))
    doc = b.build()
    mapper = EvidenceMapper(doc, fuzzy_min_ratio=0.85)
    assert mapper.closest("then restart the servers twice after the upgrade")[0] == 1
    idx, ratio, start, end = mapper.closest_passage(
        "then restart the servers twice after the upgrade")
    assert idx == 1 and ratio > 0.8
    assert "restart the server twice" in " ".join(doc.paragraph_text(1).split())[start:end]


def test_a_drop_reason_quotes_the_place_in_the_long_paragraph(tmp_path):
    folder = tmp_path / "docs"
    long = ("Upgrading takes a few steps that every operator should follow in order: stop "
            "the scheduler, back up the database, install the new package from the release "
            "page, run the migration command, then restart the server twice after upgrading "
            "so that the new configuration is loaded by every worker.")
    _write(folder, {"up.rst": f"Upgrade\n=======\n\nRestart the service.\n\n{long}\n"})
    qfile = _queries(tmp_path / "q.jsonl", [
        {"qid": "q", "doc_id": "up", "query": "How often to restart?",
         "evidence": ["then restart the servers twice after the upgrade"]}])
    _, _, report = build_byo({"type": "rst", "path": str(folder), "queries": qfile,
                              "fuzzy_min_ratio": 0.99}, "c")
    reason = report["queries"]["dropped"][0]["reason"]
    assert "closest passage (paragraph 1, similarity 0.8" in reason
    assert "restart the server twice after upgrading" in reason


# ------------------------------------------------------------------ 4. the corpus page

def test_the_corpus_page_lists_partial_evidence_and_the_markup_report(tmp_path):
    from structablate.report import render
    from structablate.report.page import CellData, CorpusData, PageSettings, build_page
    from structablate.report.summary import summarize_cell
    from structablate.stats import condition_mean_cis, section_recall_cis, size_matching

    folder = tmp_path / "docs"
    _write(folder, {"api.rst": "API\n===\n\nThe calls.\n\n.. automodule:: mypkg.core\n\n"
                               ".. include:: ../../outside.rst\n\nUsage\n-----\n\n"
                               "Call setup first.\n"})
    qfile = _queries(tmp_path / "q.jsonl", [
        {"qid": "half", "doc_id": "api", "query": "What to call first?",
         "evidence": ["Call setup first.", "A sentence nowhere in the page."]}])
    _, questions, report = build_byo({"type": "rst", "path": str(folder), "queries": qfile,
                                      "partial_evidence": "keep"}, "mydocs")
    assert [q.qid for q in questions] == ["half"]
    scores = {c: pl.DataFrame({"qid": ["q0", "q1", "q2"], "doc_id": ["a", "b", "b"],
                               "qtype": ["x"] * 3, "covNDCG@10": [0.1, 0.3, 0.2]})
              for c in ("A0", "G2")}
    contrasts = pl.DataFrame([{
        "corpus": "mydocs", "embedder": "small", "reranker": "none", "n_queries": 3,
        "n_docs": 2, "metric": "covNDCG@10", "contrast": "G2-A0", "cond_a": "G2",
        "cond_b": "A0", "delta": 0.0, "ci_low": -0.1, "ci_high": 0.1, "p": 1.0, "p_holm": 1.0,
        "dz": 0.0, "p_mixedlm": float("nan"), "p_mixedlm_query": float("nan"),
        "primary": False, "family": "exploratory"}])
    cell = CellData(("mydocs", "small", "none"), summarize_cell(scores), contrasts,
                    condition_mean_cis(scores, n_boot=50),
                    section_recall_cis({}, pl.DataFrame({"qid": ["q0"], "doc_id": ["a"]})),
                    pl.DataFrame(), None, {})
    sm = size_matching({"A0": pl.DataFrame({"chunk_id": ["c0", "c1"], "doc_id": ["a", "b"],
                                            "content_tokens": [10, 12],
                                            "prefix_tokens": [0, 0]})},
                       {("small", "A0"): {"truncation_rate": 0.0}}, ["A0"])
    corpus = CorpusData("mydocs", "rst", report, sm, {})
    intro, sections = build_page([cell], [corpus], PageSettings(
        embedders={"small": {"model": "m"}}, rerankers={"none": {}}, conditions=["A0", "G2"],
        measures=["covNDCG@10"],
        primary={"metric": "covNDCG@10", "embedder": "small", "reranker": "none"},
        stage_conditions={"induction": [], "contexts": ["A1"]}))
    md = render.page_markdown("t", sections, intro)
    html = render.page_html("t", sections, intro)
    assert "Questions of mydocs kept with part of their evidence" in md
    assert "half on api" in md and "A sentence nowhere in the page." in md
    assert "Markup of mydocs the readers left out" in md
    assert "automodule mypkg.core" in md
    assert "../../outside.rst (outside the corpus folder)" in md
    assert 'id="partial-evidence-mydocs"' in html and 'id="markup-mydocs"' in html


# ------------------------------------------------------------------ 5. rendering


def test_icon_roles_in_directive_titles_render_as_nothing():
    # sphinx-design: {octicon} is an SVG icon with no text
    src = ("# T\n\n## Box\n\n:::{dropdown} {octicon}`alert;1em;sd-text-info` Read this\n"
           "Body text with {octicon}`check` done.\n:::\n\n"
           "::::{tab-set}\n:::{tab-item} {octicon}`code` Python\nCode tab.\n:::\n::::\n")
    assert _paras(_myst(src)) == ["Read this", "Body text with done.", "Python", "Code tab."]
    src = ("T\n=\n\n.. dropdown:: :octicon:`alert` Read this\n\n   Body text.\n\n"
           ".. card:: :octicon:`rocket` Launch\n\n   Card body.\n")
    assert _paras(_rst(src)) == ["Read this", "Body text.", "Launch", "Card body."]


def test_multi_line_directive_options_are_options():
    # MyST reads a directive's ``:key: value`` lines as YAML: a folded (``>``) or literal
    # (``|``) block, or a plain value going on over indented lines, is one option
    src = ("# T\n\n## A\n\n:::{dropdown} Details\n:class-container: >\n  sd-border-0\n"
           "  sd-shadow-none\n:open:\n\nThe body.\n:::\n\n"
           "```{csv-table} Prices\n:header: >\n    \"Item\", \"Price\"\n:widths: 30\n"
           "  70\n\n\"Apple\", \"1.00\"\n```\n")
    assert _paras(_myst(src)) == ["Details", "The body.", "Prices", "Item | Price",
                                  "Apple | 1.00"]


def test_intersphinx_links_show_their_text_or_the_targets_name():
    src = ("# T\n\n## A\n\nSee <inv:python#os.path.join>, [the tutorial](inv:sphinx#tutorial) "
           "and [](inv:python:py:function#len).\n")
    assert _paras(_myst(src)) == ["See os.path.join, the tutorial and len."]


def test_doc_roles_show_the_page_title_of_the_document_they_name(tmp_path):
    folder = tmp_path / "docs"
    _write(folder, {
        "index.rst": "Home\n====\n\nStart with :doc:`guide/install`, then :doc:`usage`, "
                     ":doc:`/guide/install`, :doc:`your own words <usage>` and "
                     ":doc:`guide/missing`.\n",
        "usage.md": "# Using the tool\n\nSee {doc}`guide/install` and {doc}`index`.\n",
        "guide/install.rst": "Installing the tool\n===================\n\nSee :doc:`../index`."
                             "\n"})
    rst_docs, _, _ = build_byo({"type": "rst", "path": str(folder)}, "r")
    home = next(d for d in rst_docs if d.doc_id == "index")
    assert _paras(home) == ["Start with Installing the tool, then Using the tool, Installing "
                            "the tool, your own words and missing."]
    install = next(d for d in rst_docs if d.doc_id == "guide/install")
    assert _paras(install) == ["See Home."]
    md_docs, _, _ = build_byo({"type": "markdown", "path": str(folder)}, "m")
    assert _paras(md_docs[0]) == ["See Installing the tool and Home."]


def test_a_snippet_copied_with_a_doc_role_maps_in_the_build_and_in_the_workflow(tmp_path):
    # the snippet is rendered with the page title its doc role names, both when the
    # documents come from the build and when the workflow reads them back from their tables
    from conftest import user_corpus

    from structablate.corpus.byo import build_user_documents, map_user_questions
    from structablate.corpus.flatten import documents_from_frames
    from structablate.corpus.result import corpus_tables

    folder = tmp_path / "docs"
    _write(folder, {
        "guide/index.rst": "Guide\n=====\n\nStart with :doc:`install`, then read the rest.\n",
        "guide/install.rst": "Installing the tool\n===================\n\nRun the installer.\n"})
    qfile = _queries(tmp_path / "q.jsonl", [
        {"qid": "q", "doc_id": "guide/index", "query": "Where to start?",
         "evidence": ["Start with :doc:`install`, then"]}])
    corpus = user_corpus({"type": "rst", "path": str(folder), "queries": qfile})
    built = build_user_documents(corpus, "c")
    t = corpus_tables(built, "c")
    read_back = documents_from_frames(t.documents, t.paragraphs, t.sections)
    for docs in (built.documents, read_back):
        mapped = map_user_questions(corpus, docs, built.report)
        [q] = mapped.questions
        doc = next(d for d in docs if d.doc_id == "guide/index")
        assert doc.text[q.spans[0][0]:q.spans[0][1]] == "Start with Installing the tool, then"
        assert mapped.report["queries"]["evidence_rendered"] == 1
