"""The corpus layer's shape: no import cycles, an explicit adapter registry, one build result
for QASPER, Wikipedia and user corpora, and one function from it to the tables."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import SAMPLE, build_byo, user_corpus, wiki_build

from structablate.corpus import byo, html, jsonl, markdown, myst, rst
from structablate.corpus.byo import ADAPTERS, ByoInputError, build_user_corpus
from structablate.corpus.qasper import build_qasper, build_qasper_corpus, read_v03
from structablate.corpus.result import CorpusBuild, corpus_tables
from structablate.tables import check_table

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "src" / "structablate" / "corpus"


def _corpus_imports(path: Path) -> set[str]:
    """Modules of structablate.corpus that ``path`` imports, at any depth (functions too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "structablate.corpus":
                out.update(a.name for a in node.names)
            elif node.module.startswith("structablate.corpus."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names
                       if a.name.startswith("structablate.corpus."))
    return out


def test_corpus_modules_import_no_cycle_and_load_nothing_by_name():
    graph = {p.stem: _corpus_imports(p) for p in CORPUS.glob("*.py") if p.stem != "__init__"}
    state: dict[str, int] = {}

    def visit(m: str, trail: list[str]) -> None:
        if state.get(m) == 1:
            raise AssertionError("import cycle: " + " -> ".join([*trail, m]))
        if state.get(m) == 2:
            return
        state[m] = 1
        for dep in sorted(graph.get(m, ())):
            visit(dep, [*trail, m])
        state[m] = 2

    for m in sorted(graph):
        visit(m, [])
    for p in CORPUS.glob("*.py"):
        assert "importlib" not in p.read_text(encoding="utf-8"), p.name
    # the pieces the redesign named: queries are not written through the QASPER module
    assert "qasper" not in graph["user_queries"] | graph["byo"]
    assert "byo" not in graph["user_queries"] | graph["markdown"] | graph["html"] | graph["jsonl"]


def test_adapter_registry_is_explicit():
    assert set(ADAPTERS) == {"markdown", "rst", "html", "jsonl"}
    # a Markdown corpus is read as MyST or as CommonMark with the site dialects (myst decides)
    assert ADAPTERS["markdown"].iter_units is myst.iter_units
    assert ADAPTERS["markdown"].extensions == markdown.EXTENSIONS
    assert ADAPTERS["rst"].iter_units is rst.iter_units
    assert ADAPTERS["html"].extensions == html.EXTENSIONS
    assert ADAPTERS["jsonl"].iter_units is jsonl.iter_units
    with pytest.raises(TypeError):
        ADAPTERS["asciidoc"] = ADAPTERS["markdown"]  # read-only
    with pytest.raises(ByoInputError, match="not a bring-your-own type"):
        byo.adapter("asciidoc", "c")


def _check_tables(build: CorpusBuild, name: str) -> None:
    t = corpus_tables(build, name)
    check_table(t.documents, "documents")
    check_table(t.paragraphs, "paragraphs")
    check_table(t.sections, "sections")
    assert t.documents["doc_id"].to_list() == [d.doc_id for d in build.documents]
    assert set(t.documents["corpus"].to_list()) == {name}
    if build.questions is None:
        assert t.queries is None and t.qrels is None and build.questions_from is None
    else:
        check_table(t.queries, "queries")
        check_table(t.qrels, "qrels")
        assert t.queries.height == len(build.questions)
        assert t.qrels.height == sum(len(q.spans) for q in build.questions)


def test_one_build_shape_for_the_three_builders():
    papers = read_v03(SAMPLE)
    q = build_qasper(papers)
    legacy = build_qasper_corpus(papers)
    assert isinstance(q, CorpusBuild) and q.questions_from == "annotated"
    assert q.report == legacy.funnel.as_dict() and list(q.questions) == legacy.questions
    _check_tables(q, "qasper")

    w = wiki_build({"mode": "xml", "path": str(ROOT / "resources/wikipedia/sample.xml")},
                   {"n_docs": 5})
    assert w.questions is None and w.report["n_accepted"] == 5
    _check_tables(w, "wikipedia")

    cfg = {"type": "markdown", "path": str(ROOT / "resources/byo/qasper-markdown"),
           "queries": str(ROOT / "resources/byo/qasper-markdown-queries.jsonl"),
           "heading_separator": " ::: ", "lead_heading": "Front matter"}
    u = build_user_corpus(user_corpus(cfg), "byo_sample")
    assert u.questions_from == "user" and len(u.questions) == 21
    _check_tables(u, "byo_sample")
    docs, qs, report = build_byo(cfg, "byo_sample")  # the legacy tuple, same content
    assert (tuple(docs), tuple(qs), report) == (u.documents, u.questions, u.report)

    # a user corpus without a queries file has no questions of its own (they are generated)
    bare = build_user_corpus(
        user_corpus({k: v for k, v in cfg.items() if k != "queries"}), "bare")
    assert bare.questions is None and bare.report["queries"] is None
    _check_tables(bare, "bare")
    with pytest.raises(ValueError, match="together"):
        CorpusBuild((), (), {}, None)
