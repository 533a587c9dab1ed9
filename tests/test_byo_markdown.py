"""Markdown adapter rules, bad inputs and skip_bad_files (synthetic files, fast)."""

from __future__ import annotations

import logging

import pytest
from conftest import build_byo, user_corpus

from structablate.corpus.byo import ByoInputError
from structablate.corpus.files import DocumentFile
from structablate.corpus.markdown import parse_markdown
from structablate.corpus.verify import verify_document
from structablate.errors import ConfigError


def md(text: str, **kw):
    kw.setdefault("doc_id", "d")
    kw.setdefault("default_title", "stem")
    kw.setdefault("where", "f.md")
    doc = parse_markdown(text, DocumentFile(**kw))
    assert verify_document(doc) == []
    return doc


def paras(doc):
    return [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]


def secs(doc):
    return [(s.path, s.level, s.para_end - s.para_start) for s in doc.sections]


def test_title_rule_front_matter_and_lead():
    text = "---\ntitle: From YAML\nid: custom-id\ntopic: manuals\n---\n# Heading One\n\nlead\n\n" \
           "## A\n\nalpha\n\n### A1\n\nbeta\n"
    doc = md(text)
    # the single h1 at the start is the title heading (front matter title wins as the title)
    assert (doc.doc_id, doc.title, doc.topic) == ("custom-id", "From YAML", "manuals")
    assert secs(doc) == [(("Introduction",), 1, 1), (("A",), 1, 1), (("A", "A1"), 2, 1)]
    assert paras(doc) == ["lead", "alpha", "beta"]
    # two h1 headings: the file stem is the title and '#' is level 1
    doc = md("# One\n\nx\n\n# Two\n\ny\n\n## Two-a\n\nz\n", lead_heading="Lead")
    assert doc.title == "stem"
    assert secs(doc) == [(("One",), 1, 1), (("Two",), 1, 1), (("Two", "Two-a"), 2, 1)]
    # text before the only h1: the h1 is not at the start, so it is a section
    doc = md("preface\n\n# Only\n\nbody\n")
    assert doc.title == "stem" and secs(doc) == [(("Introduction",), 1, 1), (("Only",), 1, 1)]


def test_setext_skipped_levels_and_heading_separator():
    doc = md("Title\n=====\n\nSection\n-------\n\ntext\n\n#### Deep\n\nmore\n")
    assert doc.title == "Title"
    # '####' directly under '##' nests one deep: len(path) is the depth in the tree
    assert secs(doc) == [(("Section",), 1, 1), (("Section", "Deep"), 2, 1)]
    doc = md("# T\n\n## A ::: B\n\nx\n\n## A ::: C\n\ny\n", heading_separator=" ::: ")
    assert [s.path for s in doc.sections] == [("A", "B"), ("A", "C")]
    doc = md("# T\n\n## A ::: B\n\nx\n")
    assert [s.path for s in doc.sections] == [("A ::: B",)]


def test_blocks_and_inline_rendering():
    text = (
        "# T\n\n## S\n\n"
        "Some *emphasis*, __strong__, ~~gone~~, a [link](http://x.org \"t\"), "
        "![an image](i.png), `code`, <b>html</b> &amp; \\*escaped\\*\nsoft break.\n\n"
        "- first item\n- second *item*\n  - nested item\n\n"
        "3. third\n4. fourth\n\n"
        "> quoted paragraph\n\n"
        "| h1 | h2 |\n| --- | --- |\n| a | b |\n\n"
        "```python\nx = 1\ny = 2\n```\n\n"
        "    indented code\n\n"
        "<div>raw html block</div>\n\n---\n\nend\n"
    )
    doc = md(text)
    assert paras(doc) == [
        "Some emphasis, strong, gone, a link, an image, code, html & *escaped* soft break.",
        "first item", "second item", "nested item",
        "3. third", "4. fourth",
        "quoted paragraph",
        "h1 | h2", "a | b",
        "x = 1 y = 2",
        "indented code",
        "end",
    ]
    dropped = md(text, code_blocks="drop")
    assert "x = 1 y = 2" not in paras(dropped) and "indented code" not in paras(dropped)


def test_title_only_is_one_lead_section_and_no_heading_is_bad():
    doc = md("# Just a title\n\nbody one\n\nbody two\n")
    assert doc.title == "Just a title" and secs(doc) == [(("Introduction",), 1, 2)]
    with pytest.raises(ByoInputError, match=r"^f\.md: no heading: a Markdown document needs"):
        md("plain text\n\nwithout any heading\n")


def test_skipped_files_logged_once_without_advice_to_turn_skipping_on(tmp_path, caplog):
    (tmp_path / "good.md").write_text("# Good\n\n## S\n\ntext\n")
    (tmp_path / "flat.md").write_text("no headings here\n")
    (tmp_path / "page.html").write_text("<p>no headings in this page</p>\n")
    for name in ("flat.md", "page.html"):
        cfg = {"type": "markdown" if name.endswith(".md") else "html",
               "path": str(tmp_path / name), "skip_bad_files": False}
        with pytest.raises(ByoInputError, match="skip_bad_files: true"):  # advice while off
            build_byo(cfg, "mine")
    with caplog.at_level(logging.INFO):
        _, _, report = build_byo({"type": "markdown", "path": str(tmp_path),
                                  "skip_bad_files": True}, "mine")
    [skip] = report["skipped"]
    assert skip["reason"].startswith("no heading") and "skip_bad_files" not in skip["reason"]
    # the build itself names no skipped file: the workflow's glue logs each one, once
    assert "flat.md" not in caplog.text


def test_bad_files_named_and_skipped(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\n## S\n\ntext\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "also.md").write_text("# Also\n\n## S\n\nmore text\n")
    (tmp_path / "latin1.md").write_bytes("# T\n\n## S\n\ncaf\xe9\n".encode("latin-1"))
    (tmp_path / "flat.md").write_text("no headings here\n")
    (tmp_path / "empty.md").write_text("# Title\n\n## Heading only\n")
    (tmp_path / "ignored.txt").write_text("not markdown")
    cfg = {"type": "markdown", "path": str(tmp_path)}
    with pytest.raises(ByoInputError) as exc:
        build_byo(cfg, "mine")
    assert str(exc.value).startswith(f"{tmp_path / 'empty.md'}: no body text")
    with pytest.raises(ByoInputError, match=r"latin1\.md:5: not UTF-8 \(byte 0xe9 at column 4\)"):
        build_byo({**cfg, "path": str(tmp_path / "latin1.md")}, "mine")
    docs, questions, report = build_byo({**cfg, "skip_bad_files": True}, "mine")
    assert [d.doc_id for d in docs] == ["good", "sub/also"]
    assert questions == [] and report["queries"] is None
    assert report["inputs"] == 5 and report["documents"] == 2
    reasons = {s["doc_id"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"empty", "flat", "latin1"}
    assert reasons["latin1"].startswith("not UTF-8")
    assert reasons["flat"].startswith("no heading")
    assert reasons["empty"].startswith("no body text")


def test_glob_ids_and_duplicates(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("# X\n\n## S\n\none\n")
    (tmp_path / "a" / "y.txt").write_text("---\nid: a/x\n---\n# Y\n\n## S\n\ntwo\n")
    cfg = {"type": "markdown", "path": str(tmp_path / "*" / "*.txt")}
    with pytest.raises(ByoInputError, match=r"y\.txt: doc_id 'a/x' is also the id of .*x\.txt"):
        build_byo(cfg, "g")
    # a duplicate id is never skipped: keeping either file would be a silent choice
    with pytest.raises(ByoInputError, match=r"y\.txt: doc_id 'a/x' is also the id of .*x\.txt"):
        build_byo({**cfg, "skip_bad_files": True}, "g")
    (tmp_path / "a" / "y.txt").write_text("# Y\n\n## S\n\ntwo\n")
    docs, _, _ = build_byo(cfg, "g")
    assert [d.doc_id for d in docs] == ["a/x", "a/y"]
    with pytest.raises(ByoInputError, match="the pattern matches no file"):
        build_byo({**cfg, "path": str(tmp_path / "*.md")}, "g")
    with pytest.raises(ByoInputError, match="no such file or folder"):
        build_byo({**cfg, "path": str(tmp_path / "missing")}, "g")
    with pytest.raises(ConfigError, match="type: 'pdf' is not one of"):
        build_byo({"type": "pdf", "path": "x"}, "g")


def test_bundled_example_builds():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "resources" / "byo"
    cfg = {"type": "markdown", "path": str(root / "qasper-markdown"),
           "queries": str(root / "qasper-markdown-queries.jsonl"),
           "heading_separator": " ::: ", "lead_heading": "Front matter"}
    docs, questions, report = build_byo(cfg, "byo_sample")
    assert [d.doc_id for d in docs] == ["1605.05156", "1908.07491", "1908.11049"]
    assert report["queries"]["kept"] == len(questions) == 21
    assert report["queries"]["evidence_by_step"].get("unmapped", 0) == 0
    from structablate.corpus.byo import input_files

    files = input_files(user_corpus(cfg))
    assert len(files) == 4 and files[-1].endswith("qasper-markdown-queries.jsonl")
