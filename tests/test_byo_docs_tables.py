"""docs/byo.md's MyST, reStructuredText, directive and role tables, read against the code: each
construct row is parsed and must show what the table says; each directive category lists
exactly the names the code puts in it; each role row renders as written (fast)."""

from __future__ import annotations

import pytest
from conftest import REPO
from markdown_it import MarkdownIt

from structablate.corpus import render
from structablate.corpus.files import DocumentFile
from structablate.corpus.myst import parse_myst
from structablate.corpus.rst import parse_rst


def _tables() -> dict[str, list[list[tuple[str, list[str]]]]]:
    """Heading text -> the tables under it, each a list of rows, each row a list of cells as
    ``(plain text, [code span contents])``."""
    tokens = MarkdownIt("commonmark").enable("table").parse(
        (REPO / "docs" / "byo.md").read_text("utf-8"))
    out: dict[str, list] = {}
    heading = ""
    rows: list | None = None
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            heading = tokens[i + 1].content.replace("`", "")
        elif t.type == "table_open":
            rows = []
        elif t.type == "table_close":
            out.setdefault(heading, []).append(rows)
            rows = None
        elif t.type == "tr_open" and rows is not None:
            rows.append([])
        elif t.type == "inline" and rows is not None and tokens[i - 1].type in ("td_open",
                                                                              "th_open"):
            codes = [c.content for c in t.children if c.type == "code_inline"]
            rows[-1].append((t.content, codes))
    return out


TABLES = _tables()


def _source(cell) -> str:
    return cell[1][0].replace("\\|", "|").replace("\\n", "\n")


def _shows(cell) -> list[str]:
    text = cell[1][0].replace("\\|", "|") if cell[1] else ""
    return [p.strip() for p in text.split("¶")] if text else []


def _construct_rows(heading: str):
    rows = TABLES[heading][0][1:]
    assert len(rows) >= 15
    return [pytest.param(r[0][0], r[1][0], _source(r[2]), _shows(r[3]), id=r[0][0])
            for r in rows]


def _check(doc, treatment: str, shows: list[str]) -> None:
    got = [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]
    assert got == shows
    markup = doc.meta["markup"]
    if treatment == "handled":
        assert markup == {}
    elif treatment == "dropped":
        assert set(markup) <= {"dropped_directives"}
    else:
        assert treatment == "reported" and set(markup) - {"dropped_directives"}


@pytest.mark.parametrize("construct,treatment,source,shows",
                         _construct_rows("MyST (under type: markdown)"))
def test_myst_table(construct, treatment, source, shows):
    doc = parse_myst(source + "\n\n## End\n", DocumentFile("d", "stem", "/nowhere/d.md"))
    _check(doc, treatment, shows)


@pytest.mark.parametrize("construct,treatment,source,shows",
                         _construct_rows("reStructuredText (type: rst, docutils)"))
def test_rst_table(construct, treatment, source, shows):
    doc = parse_rst(source + "\n\nEnd\n@@@\n", DocumentFile("d", "stem", "/nowhere/d.rst"))
    _check(doc, treatment, shows)


CODE_SETS = {
    "admonition": set(render.ADMONITION_TITLES) | render.TITLED_BY_ARGUMENT,
    "version": set(render.VERSION_LABELS), "container": render.CONTAINERS,
    "object": render.OBJECT_TYPES, "code": render.CODE, "table": render.TABLES,
    "figure": render.FIGURES, "math": render.MATH, "include": render.INCLUDE,
    "eval-rst": {"eval-rst"}, "dropped": render.DROPPED,
}


def test_directive_table_is_the_code():
    rows = TABLES["Directives and roles (MyST and reStructuredText)"][0][1:]
    categories = {r[0][1][0]: r[2][1] for r in rows}
    assert set(categories) == set(CODE_SETS) | {"autodoc", "unknown"}
    for category, names in categories.items():
        for name in names:
            assert render.directive_kind(name) == category, name
        if category in CODE_SETS:
            assert set(names) == set(CODE_SETS[category]), category
    assert render.directive_kind("py:function") == "object"
    assert render.directive_kind("no-such-directive") == "unknown"


def test_role_table_renders_as_written():
    rows = TABLES["Directives and roles (MyST and reStructuredText)"][1][1:]
    assert len(rows) >= 10
    for r in rows:
        name = r[0][1][0]
        assert render.role_text(name, r[1][1][0]) == r[2][1][0], name
        assert ("unknown" in r[0][0]) == (name not in render.KNOWN_ROLES), name
