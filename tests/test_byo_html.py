"""HTML adapter: dropping rules, blocks, title rule, bad pages; real Python docs pages."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import build_byo
from workflow_util import glue_config, run_user_build

from structablate.corpus.byo import ByoInputError
from structablate.corpus.files import DocumentFile
from structablate.corpus.html import parse_html
from structablate.corpus.verify import verify_document
from structablate.tables import check_table

PYDOCS = Path("/usr/share/doc/python3.11/html")
REPO = Path(__file__).resolve().parents[1]

PAGE = """<!DOCTYPE html><html><head><title>Page title</title><style>p{}</style>
<script>var x = "<p>not text</p>";</script></head><body>
<header>Site header</header><nav><ul><li>Home</li></ul></nav>
<div role="navigation">Breadcrumbs</div>
<main>
 <p>Lead paragraph with <a href="#">a link</a> and <em>emphasis</em>.</p>
 <h1>Top<a class="headerlink" href="#top">¶</a></h1>
 <p>Under top.<br>Second line.</p>
 loose text in main
 <h2>Sub</h2>
 <ul><li>item one</li><li><p>item two</p><ul><li>nested</li></ul></li></ul>
 <table><tr><th>k</th><th>v</th></tr><tr><td><p>a</p></td><td>1</td></tr></table>
 <pre>def f():
    return 1</pre>
 <div hidden>hidden div</div><span aria-hidden="true">icon</span>
 <form><label>Search</label><input></form><aside>aside text</aside>
 <!-- a comment --><p>after comment</p>
 <h3>Deeper</h3><dl><dt>term</dt><dd>definition</dd></dl>
</main>
<footer>Footer text</footer></body></html>"""


def page(text: str, **kw):
    kw.setdefault("doc_id", "p")
    kw.setdefault("default_title", "stem")
    kw.setdefault("where", "p.html")
    doc = parse_html(text, DocumentFile(**kw))
    assert verify_document(doc) == []
    return doc


def test_dropping_blocks_and_tree():
    doc = page(PAGE)
    # the only h1 is the first heading: the title; text before and under it is the lead
    assert doc.title == "Top"
    paras = [(s.path, doc.paragraph_text(i)) for s in doc.sections
             for i in range(s.para_start, s.para_end)]
    assert paras == [
        (("Introduction",), "Lead paragraph with a link and emphasis."),
        (("Introduction",), "Under top. Second line."),
        (("Introduction",), "loose text in main"),
        (("Sub",), "item one"), (("Sub",), "item two"), (("Sub",), "nested"),
        (("Sub",), "k | v"), (("Sub",), "a | 1"),
        (("Sub",), "def f(): return 1"),
        (("Sub",), "after comment"),
        (("Sub", "Deeper"), "term"), (("Sub", "Deeper"), "definition"),
    ]
    for gone in ("Site header", "Home", "Breadcrumbs", "not text", "hidden", "icon", "Search",
                 "aside", "Footer", "¶", "comment -"):
        assert gone not in doc.text
    assert "def f()" not in page(PAGE, code_blocks="drop").text


def test_title_rule_without_main():
    two_h1 = "<html><head><title> T  1 </title></head><body><h1>A</h1><p>x</p>" \
             "<h1>B</h1><p>y</p></body></html>"
    doc = page(two_h1)
    assert doc.title == "T 1" and [s.path for s in doc.sections] == [("A",), ("B",)]
    doc = page("<body><h2>Only h2</h2><p>x</p></body>")
    assert doc.title == "stem" and [s.path for s in doc.sections] == [("Only h2",)]


def test_bad_pages(tmp_path):
    (tmp_path / "ok.html").write_text("<h1>T</h1><h2>S</h2><p>body</p>")
    (tmp_path / "nav.html").write_text("<body><nav>menu</nav><h1>T</h1><footer>f</footer>")
    (tmp_path / "noheading.htm").write_text("<p>text only</p>")
    (tmp_path / "cp1252.html").write_bytes(b"<h1>T</h1><p>\x93quoted\x94</p>")
    (tmp_path / "empty.html").write_text("  \n")
    cfg = {"type": "html", "path": str(tmp_path)}
    with pytest.raises(ByoInputError, match=r"cp1252\.html:1: not UTF-8 \(byte 0x93"):
        build_byo(cfg, "h")
    docs, _, report = build_byo({**cfg, "skip_bad_files": True}, "h")
    assert [d.doc_id for d in docs] == ["ok"]
    reasons = {s["doc_id"]: s["reason"] for s in report["skipped"]}
    assert reasons["nav"].startswith("no body text: nothing is left once navigation")
    assert reasons["noheading"].startswith("no heading: an HTML page needs h1–h6")
    assert reasons["empty"] == "empty file"
    assert reasons["cp1252"].startswith("not UTF-8")


def _pydocs(*names: str) -> list[Path]:
    if not PYDOCS.is_dir():
        pytest.skip(f"{PYDOCS} absent: install the Debian package python3.11-doc "
                    "(apt-get install -y python3.11-doc)")
    return [PYDOCS / n for n in names]


def test_python_docs_pages(tmp_path):
    pages = _pydocs("tutorial/controlflow.html", "library/json.html", "library/sys.html",
                    "tutorial/appetite.html")
    cfg = {"type": "html", "path": [str(p) for p in pages]}
    docs, _, report = build_byo(cfg, "pydocs")
    by_id = {d.doc_id: d for d in docs}
    assert report["skipped"] == [] and set(by_id) == {"controlflow", "json", "sys", "appetite"}
    cf = by_id["controlflow"]
    assert cf.title == "4. More Control Flow Tools"
    paths = [s.path for s in cf.sections]
    assert ("4.8. More on Defining Functions", "4.8.1. Default Argument Values") in paths
    assert max(len(p) for p in paths) == 3  # 4.8.3.x subsections
    assert any(cf.paragraph_text(i).startswith(">>> x = int(input(")
               for i in range(len(cf.paragraphs)))
    for d in docs:  # sidebars, related-links bars and the footer are gone, as are permalinks
        assert "¶" not in d.text and "Table of Contents" not in d.text
        assert "Previous topic" not in d.text and "Copyright" not in d.text
    js = by_id["json"]
    assert js.title == "json — JSON encoder and decoder"
    assert "Basic Usage" in [s.title for s in js.sections]
    # a page whose only heading is its title is one lead section
    assert [s.path for s in by_id["appetite"].sections] == [("Introduction",)]
    assert [s.path for s in by_id["sys"].sections] == [("Introduction",)]


def test_glue_script_writes_contract_tables(tmp_path, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # the glue sends stderr to its log file
    pages = _pydocs("tutorial/controlflow.html", "tutorial/datastructures.html")
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({
        "qid": "q1", "doc_id": "controlflow", "query": "How do I loop over a range?",
        "evidence": ["If you do need to iterate over a sequence of numbers, the built-in "
                     "function range() comes in handy."]}) + "\n")
    out = {k: str(tmp_path / f"{k}.parquet") for k in
           ("documents", "paragraphs", "sections", "queries", "qrels")}
    out["funnel"] = str(tmp_path / "funnel.json")
    config = glue_config({"pydocs": {"type": "html", "path": [str(p) for p in pages],
                                     "queries": str(qfile)}})
    run_user_build(tmp_path, config=config, corpus="pydocs", output=out)
    docs = check_table(pl.read_parquet(out["documents"]), "documents")
    assert docs["doc_id"].to_list() == ["controlflow", "datastructures"]
    check_table(pl.read_parquet(out["paragraphs"]), "paragraphs")
    check_table(pl.read_parquet(out["sections"]), "sections")
    check_table(pl.read_parquet(out["queries"]), "queries")
    qrels = check_table(pl.read_parquet(out["qrels"]), "qrels")
    text = docs["text"][0]
    assert [text[s:e].startswith("If you do need to iterate") for s, e in
            zip(qrels["start"], qrels["end"], strict=True)] == [True]
    report = json.loads(Path(out["funnel"]).read_text())
    assert report["documents"] == 2 and report["queries"]["kept"] == 1
