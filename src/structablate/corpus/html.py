"""HTML adapter: a folder of HTML pages to flat documents, parsed with lxml.

Rules (``docs/byo.md`` has them with examples):

* **Content root** — the first ``<main>`` element, else the first element with
  ``role="main"``, else ``<body>``.
* **Dropped** (with everything inside): ``script``, ``style``, ``noscript``, ``template``,
  ``nav``, ``header``, ``footer``, ``aside``, ``form`` and form controls (``button``,
  ``input``, ``select``, ``textarea``, ``label``), ``iframe``, ``svg``, ``canvas``,
  ``object``, ``embed``; any element with ``role`` ``navigation``, ``banner``,
  ``contentinfo``, ``complementary`` or ``search``, with the ``hidden`` attribute or with
  ``aria-hidden="true"``; comments; and permalink anchors (an ``<a>`` whose text has no letter
  or digit, such as Sphinx's ``¶`` or a ``#``).
* **Title** — if the content's first heading is an ``h1`` and it is its only ``h1``, it is the
  document title and ``h2`` is level 1; otherwise the ``<title>`` (else the file stem) is the
  title and ``h1`` is level 1.
* **Sections** — ``h1``–``h6`` give the gold tree (a heading closes every open heading of the
  same or a deeper level). Text before the first section heading goes under ``lead_heading``.
  A page without any section heading is bad input, as is a page with no body text left.
* **Paragraphs** — every innermost run of text between block boundaries is one paragraph:
  ``p``, ``li``, ``dt``, ``dd``, ``blockquote``, ``figcaption``, ``div`` … each start and end
  one, so text directly inside a ``div`` next to a ``p`` is a paragraph of its own; each table
  row is one paragraph (cell texts joined by `` | ``, everything inside a cell flattened into
  it); each ``pre`` is one paragraph (``code_blocks: drop`` removes them). ``br`` and line
  breaks become single spaces.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

from structablate.corpus.files import (
    ByoInputError,
    DocumentFile,
    HeadingStack,
    InputUnit,
    file_units,
)
from structablate.corpus.flatten import DocumentBuilder, FlatDocument
from structablate.settings import UserCorpus
from structablate.user_files import USER_EXTENSIONS

EXTENSIONS = USER_EXTENSIONS["html"]

DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "input", "select", "textarea", "label", "iframe", "svg", "canvas", "object",
    "embed", "head", "title", "meta", "link",
})
DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
HEADINGS = {f"h{k}": k for k in range(1, 7)}
BLOCK_TAGS = frozenset({
    "address", "article", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "hgroup", "hr", "html",
    "legend", "li", "main", "menu", "ol", "p", "section", "summary", "table", "tbody", "tfoot",
    "thead", "ul",
})
_ALNUM = re.compile(r"[^\W_]")


def _dropped(el) -> bool:
    if not isinstance(el.tag, str):  # comment, processing instruction, entity
        return True
    tag = el.tag.lower()
    if tag in DROP_TAGS:
        return True
    if (el.get("role") or "").strip().lower() in DROP_ROLES:
        return True
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").lower() == "true":
        return True
    if tag == "a" and not _ALNUM.search(_plain(el, check_self=False)):
        return True  # permalink anchor (¶, #, §)
    return False


def _plain(el, check_self: bool = True) -> str:
    """All text inside ``el`` (not its tail), dropped elements left out, ``br`` as a space."""
    if check_self and _dropped(el):
        return ""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and child.tag.lower() == "br":
            parts.append(" ")
        else:
            parts.append(_plain(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _content_root(tree):
    for xp in ("//main", "//*[@role='main']", "//body"):
        found = tree.xpath(xp)
        if found:
            return found[0]
    return tree


def _live_headings(root) -> list:
    out = []

    def visit(el):
        if _dropped(el):
            return
        if el.tag.lower() in HEADINGS:
            out.append(el)
            return
        for child in el:
            visit(child)

    visit(root)
    return out


def parse_html(text: str, file: DocumentFile) -> FlatDocument:
    """Flatten one HTML page (see the module docstring for the rules)."""
    doc_id, where = file.doc_id, file.where
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)  # lxml refuses str input with a declaration
    if not text.strip():
        raise ByoInputError(where, "empty file")
    try:
        tree = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError) as exc:
        raise ByoInputError(where, f"cannot parse as HTML: {exc}") from None
    root = _content_root(tree)
    headings = _live_headings(root)
    title_el = None
    h1 = [h for h in headings if h.tag.lower() == "h1"]
    if headings and headings[0].tag.lower() == "h1" and len(h1) == 1:
        title_el = headings[0]
    shift = 1 if title_el is not None else 0
    if title_el is not None:
        title = " ".join(_plain(title_el).split())
    else:
        t = tree.find(".//title")
        title = " ".join((t.text_content() if t is not None else "").split())
    title = title or file.default_title

    builder = DocumentBuilder(doc_id, title)
    stack = HeadingStack(file.heading_separator)
    buf: list[str] = []
    n_headings = 0
    n_paragraphs = 0

    def add(body: str) -> None:
        nonlocal n_paragraphs
        if builder.add_paragraph(body, path()) is not None:
            n_paragraphs += 1

    def path() -> tuple[str, ...]:
        return stack.path or (file.lead_heading,)

    def flush() -> None:
        if buf:
            add(" ".join("".join(buf).split()))
            buf.clear()

    def walk(el) -> None:
        nonlocal n_headings
        if _dropped(el):
            return
        tag = el.tag.lower()
        if tag in HEADINGS:
            flush()
            if el is not title_el:
                stack.push(max(HEADINGS[tag] - shift, 1), _plain(el))
                n_headings += 1
        elif tag == "tr":
            flush()
            cells = [" ".join(_plain(c).split()) for c in el
                     if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")
                     and not _dropped(c)]
            if any(cells):
                add(" | ".join(cells))
        elif tag == "pre":
            flush()
            if file.code_blocks == "keep":
                add(_plain(el))
        elif tag == "br":
            buf.append(" ")
        elif tag in BLOCK_TAGS:
            flush()
            buf.append(el.text or "")
            for child in el:
                walk(child)
                buf.append(child.tail or "")
            flush()
        else:  # inline element: its text joins the running paragraph
            buf.append(el.text or "")
            for child in el:
                walk(child)
                buf.append(child.tail or "")

    walk(root)
    flush()
    if not n_paragraphs:
        raise ByoInputError(
            where, "no body text: nothing is left once navigation, scripts, styles, headers, "
            "footers and forms are dropped")
    if n_headings == 0 and title_el is None:
        raise ByoInputError(
            where, "no heading: an HTML page needs h1–h6 headings to have a gold structure; "
            "set skip_bad_files: true to leave it out")
    return builder.build(source=where)


def iter_units(corpus: UserCorpus, name: str) -> Iterator[InputUnit]:
    """One unit per HTML file of ``corpus.path``."""
    return file_units(corpus, EXTENSIONS, parse_html)
