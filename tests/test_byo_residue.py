"""Markup residue: markup no reader rendered is found, reported per file and per corpus, and a
user file above max_markup_share is refused (or skipped and listed); the bundled corpora carry
none (fast)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO, build_byo

from structablate.corpus.byo import ByoInputError
from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.residue import residue, scan_document, scan_documents

FLAGGED = {
    "```{note} x": "myst fence",
    ":::{tip}": "myst fence",
    "::: closing": "myst colon fence",
    "see {ref}`install` here": "myst role",
    "(my-label)=": "myst target",
    "% a comment": "myst comment",
    ".. note:: text": "rst directive",
    "call :func:`os.path.join` now": "rst role",
    "use ``pip install`` here": "rst inline literal",
    "the |project| name": "rst substitution",
    ":orphan:": "rst field",
    ".. _label: https://x.org": "rst target",
    "Title ======": "rst adornment",
    "import Tabs from '@theme/Tabs';": "mdx import",
    "<Tabs groupId=\"os\">": "mdx component",
    "</TabItem>": "mdx component",
    "<Callout />": "mdx component",
    "Hello {{ site.title }}": "jinja expression",
    "{% include note.html %}": "jinja statement",
    "----": "asciidoc delimiter",
    "[source,python]": "asciidoc block attribute",
    "see <<install,Installing>> first": "asciidoc cross reference",
    "link:https://x.org[the site]": "asciidoc link macro",
    "!!! note \"Title\"": "markdown admonition",
}

CLEAN = [
    "The vocabulary size |V| is 30k, and f(x) = {x: x > 0}.",
    "Results are in Table 3 (see Section 4.2).",
    "Use a <b>bold</b> word, a ratio of 3:1 and time 10:30.",
    "Run pip install --editable <LOCATION> or <PATH>.",
    "Calls find_package(<PackageName>) with <PackageName>_ROOT and <Lang> set.",
    "We quote ``like this'' as LaTeX does.",
    "A dash -- and an em dash --- in prose.",
    "The set {a, b} and the map {'k': 1}.",
    "Email me: a@b.org; the word: colon.",
]


@pytest.mark.parametrize("text,construct", sorted(FLAGGED.items()))
def test_each_dialect_construct_is_found(text, construct):
    assert construct in residue(text)


@pytest.mark.parametrize("text", CLEAN)
def test_prose_is_clean(text):
    assert residue(text) == []


def _doc(paragraphs, code=()):
    b = DocumentBuilder("d", "T")
    for p in paragraphs:
        b.add_paragraph(p, ("S",))
    return b.build(code_paragraphs=tuple(code))


def test_scan_skips_code_and_quotes_the_worst_lines():
    doc = _doc(["Plain.", ":::{note} x", "```{list-table} :header-rows: 1 * - a",
                ".. code-block:: rst"], code=[3])
    r = scan_document(doc, doc.meta["code_paragraphs"])
    assert (r["paragraphs"], r["with_markup"]) == (3, 2)
    assert r["share"] == pytest.approx(2 / 3)
    assert [w["para_idx"] for w in r["worst"]] == [1, 2]
    c = scan_documents([doc, _doc(["clean"])])
    assert (c["paragraphs"], c["with_markup"], c["documents_with_markup"]) == (4, 2, 1)


def _write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_a_user_file_above_the_share_is_refused_or_skipped(tmp_path):
    jinja = "# Page\n\n" + "".join(f"Hello {{{{ user_{k} }}}} there.\n\n" for k in range(3)) \
        + "Plain text.\n"
    _write(tmp_path / "c", "bad.md", jinja)
    _write(tmp_path / "c", "good.md", "# Good\n\nNothing odd here.\n")
    with pytest.raises(ByoInputError, match=r"bad\.md: 3 of 4 paragraphs \(75\.0%\) carry "
                       r"markup.*jinja expression.*Hello \{\{ user_0 \}\} there"):
        build_byo({"type": "markdown", "path": str(tmp_path / "c")}, "c")
    docs, _, report = build_byo({"type": "markdown", "path": str(tmp_path / "c"),
                                 "skip_bad_files": True}, "c")
    assert [d.doc_id for d in docs] == ["good"]
    assert report["skipped"][0]["doc_id"] == "bad"
    assert "max_markup_share 5.0%" in report["skipped"][0]["reason"]
    docs, _, report = build_byo({"type": "markdown", "path": str(tmp_path / "c"),
                                 "max_markup_share": 0.8}, "c")
    assert len(docs) == 2
    r = report["markup_residue"]
    assert (r["paragraphs"], r["with_markup"], r["documents_with_markup"]) == (5, 3, 1)
    assert r["documents"][0]["doc_id"] == "bad" and r["by_construct"] == {
        "jinja expression": 3}
    # one stray line is reported, not refused
    _write(tmp_path / "d", "one.md", "# One\n\nA {{ x }} here.\n\nPlain.\n")
    docs, _, report = build_byo({"type": "markdown", "path": str(tmp_path / "d")}, "d")
    assert report["markup_residue"]["with_markup"] == 1 and len(docs) == 1


def test_the_bundled_corpora_carry_no_markup(tmp_path):
    """QASPER's bundled sample as the default builds it: residue 0 of its paragraphs (the
    report only adds the share; nothing is refused). Wikipedia's bundled sample is measured in
    docs/byo.md (0 of 547 paragraphs)."""
    from structablate.corpus.qasper import build_qasper, read_sources
    from structablate.corpus.result import write_corpus

    build = build_qasper(read_sources([{"format": "v0.3", "path": str(
        REPO / "resources/qasper/qasper-sample-v0.3.json")}]), fuzzy_min_ratio=0.85,
        keep_papers_without_questions=True, source="sample")
    out = {k: str(tmp_path / f"{k}.x") for k in ("documents", "paragraphs", "sections",
                                                  "queries", "qrels", "funnel")}
    write_corpus(build, "qasper", out)
    r = json.loads((tmp_path / "funnel.x").read_text())["markup_residue"]
    assert r["paragraphs"] > 500 and r["with_markup"] == 0
