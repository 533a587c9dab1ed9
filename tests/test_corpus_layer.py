"""The corpus layer's shape: no import cycles, an explicit adapter registry, one build result
for QASPER, Wikipedia and user corpora, and one function from it to the tables."""

from __future__ import annotations

import ast
import inspect
import types
import typing
from pathlib import Path

import pytest
from conftest import SAMPLE, build_byo, user_corpus, wiki_build

from structablate.corpus import byo, html, jsonl, markdown, myst, rst
from structablate.corpus.byo import FORMATS, ByoInputError, build_user_corpus
from structablate.corpus.qasper import build_qasper, build_qasper_corpus, read_v03
from structablate.corpus.result import CorpusBuild, corpus_tables
from structablate.settings import UserCorpus
from structablate.tables import check_table
from structablate.user_files import USER_EXTENSIONS

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


def test_format_registry_is_explicit():
    assert set(FORMATS) == {"markdown", "rst", "html", "jsonl"}
    # a Markdown corpus is read as MyST or as CommonMark with the site dialects (myst decides)
    assert FORMATS["markdown"].read is myst.iter_units
    assert FORMATS["markdown"].suffixes == markdown.EXTENSIONS
    assert FORMATS["rst"].read is rst.iter_units
    assert FORMATS["html"].suffixes == html.EXTENSIONS
    assert FORMATS["jsonl"].read is jsonl.iter_units
    with pytest.raises(TypeError):
        FORMATS["asciidoc"] = FORMATS["markdown"]  # read-only


def _shape(fn) -> list[object]:
    """A callable's parameters as ``(kind, annotation)`` then its return annotation; the
    protocols' positional-only parameters match positional-or-keyword ones (a function taking
    them either way satisfies the protocol), ``self`` of a protocol's ``__call__`` is dropped
    and defaults are left out (a reader may have them; the protocol passes every argument)."""
    hints = typing.get_type_hints(fn)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [("positional" if p.kind in positional else p.kind.name,
               p.name if p.kind is inspect.Parameter.KEYWORD_ONLY else None, hints.get(p.name))
              for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    return [*params, hints.get("return")]


def test_every_registered_reader_satisfies_the_protocols():
    """Every format's reader has the :class:`UnitReader` signature, every file parser the
    :class:`DocumentParser` one and every snippet reader the :class:`SnippetReader` one
    (types included), and the names of the formats are the
    settings' ``type`` values and the suffix table's keys: one list of formats."""
    for name, fmt in FORMATS.items():
        assert isinstance(fmt, byo.DocumentFormat) and fmt.name == name
        assert _shape(fmt.read) == _shape(byo.UnitReader.__call__), name
        assert fmt.suffixes == USER_EXTENSIONS[name]
        assert fmt.per_file is bool(fmt.parsers), name  # a JSONL unit is a line, no file
        for parse in fmt.parsers:
            shape = _shape(parse)
            # a parser may take more keyword arguments, with defaults (``roots``)
            extra = [p for p in inspect.signature(parse).parameters.values()
                     if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
                     and p.name not in inspect.signature(byo.DocumentParser.__call__).parameters]
            shape = [x for x in shape if not (isinstance(x, tuple)
                                              and x[1] in {p.name for p in extra})]
            assert shape == _shape(byo.DocumentParser.__call__), (name, parse.__name__)
        for dialect, reader in fmt.snippets.items():
            assert _shape(reader) == _shape(byo.SnippetReader.__call__), (name, dialect)
    assert FORMATS["rst"].snippets and FORMATS["markdown"].snippets  # the check checked some
    assert sum(len(f.parsers) for f in FORMATS.values()) == 4
    assert set(FORMATS) == set(USER_EXTENSIONS)
    assert set(FORMATS) == set(typing.get_args(typing.get_type_hints(UserCorpus)["type"]))


def test_an_unknown_format_is_refused_naming_the_field_and_the_known_formats():
    with pytest.raises(ByoInputError) as err:
        byo.document_format("asciidoc", "mydocs")
    assert err.value.where == "corpora.mydocs.type"
    assert "'asciidoc'" in err.value.reason
    assert "markdown, rst, html, jsonl" in err.value.reason
    with pytest.raises(ByoInputError, match=r"corpora\.mydocs\.type"):
        list(byo.iter_units(types.SimpleNamespace(type="asciidoc"), "mydocs"))


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


def test_markdown_and_myst_number_list_items_with_one_helper():
    """Both Markdown readers follow lists through markdown.ListItems: an ordered item's
    number goes before its first paragraph only, a bullet item gets none, and both readers
    render one list alike."""
    from structablate.corpus.files import DocumentFile

    tokens = markdown._parser().parse("3. first\n\n   second\n4. next\n\n- bullet\n")
    lists, shown = markdown.ListItems(), []
    for t in tokens:
        if not lists.step(t) and t.type == "inline":
            shown.append(lists.take(t.content))
    assert shown == ["3. first", "second", "4. next", "bullet"]
    assert lists.ordered == [] and lists.prefix is None
    text = "# T\n\n## S\n\n1. one\n2. two\n\n- three\n"
    md = markdown.parse_markdown(text, DocumentFile("d", "d", "d.md"))
    my = myst.parse_myst(text, DocumentFile("d", "d", "d.md"))
    assert md.paragraphs == my.paragraphs
    assert [md.paragraph_text(i) for i in range(len(md.paragraphs))] == [
        "1. one", "2. two", "three"]
