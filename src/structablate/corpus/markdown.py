"""Markdown adapter: ``.md`` files to flat documents, parsed with markdown-it-py.

The flat text is what a reader sees on the rendered page: CommonMark plus the dialect markup
of documentation sites (MkDocs / Python-Markdown, PHP Markdown Extra, kramdown, Pandoc,
GitLab). Rules (``docs/byo.md`` has them with examples):

* **Front matter** — a YAML block between a first line ``---`` and the next ``---`` (or
  ``...``) line, or a TOML block between ``+++`` lines (Hugo), is read for ``title``, ``id``
  and ``topic`` and removed from the text.
* **Title** — if the first block of the file is a level-1 heading (ATX ``#`` or setext
  ``===``) and it is the file's only level-1 heading, it is the document title and ``##``
  headings are level 1. Otherwise the front matter ``title`` (else the file name stem) is the
  title and ``#`` headings are level 1. A front matter ``title`` always wins as the title.
* **Sections** — ATX and setext headings give the gold tree; a heading closes every open
  heading of the same or a deeper level, so a skipped level nests one deep. Text before the
  first section heading goes under ``lead_heading`` (default ``Introduction``), so a file
  whose only heading is its title is one lead section. A file without any heading is bad
  input.
* **Paragraphs** — every block of running text is one paragraph: a paragraph, each list
  item's text (an ordered item keeps its number, ``3.``; bullets are dropped; nested items
  are paragraphs of their own), each table row (cells joined by `` | ``, header row
  included), each definition-list term and each of its definitions' paragraphs, each fenced or
  indented code block (``code_blocks: keep``, the default; ``drop`` removes them).
  Blockquotes are transparent (their paragraphs are paragraphs).
* **Admonitions** (``!!! note "Title"``, collapsible ``??? note`` / ``???+ note``, body
  indented by four spaces) — the title is a paragraph of its own (the type capitalised when no
  title is given, none for ``""``), then the body's blocks as above: what the rendered box
  shows, not an indented code block.
* **pymdown blocks** (``/// admonition | Title`` … ``///``, ``/// details | Summary``,
  ``/// html | div.result`` …) — the fence lines are dropped; the header is a paragraph of
  its own where the box shows it as a title (for ``html`` it is a selector and is dropped);
  the body's blocks as above.
* **Footnotes** (``[^1]``) — the reference marker is dropped; each definition's paragraphs stay
  where the definition is written.
* **Dropped** — raw HTML blocks, HTML comments, thematic breaks, link reference definitions,
  abbreviation definitions (``*[HTML]: Hyper Text Markup Language``, Markdown Extra),
  table-of-contents markers (``[TOC]``, ``[[_TOC_]]``) and attribute lists (``{: #id .class
  key=value}``, ``{#id}``, ``{.class}``) after a heading, at the end of a block, on a line of
  their own or right after an inline element, so they reach neither the text nor a heading
  path.
* **Inline markup** is rendered to plain text: emphasis and strikethrough markers are
  stripped, a link becomes its text, a reference link whose label is defined nowhere in the
  file (``[text][id]``, ``[text][]``: cross-references that MkDocs plugins resolve at build
  time) its text too, an image its alt text, inline code its content, inline HTML tags are
  dropped (the text between them stays), entities and backslash escapes are resolved. Line
  breaks inside a block become single spaces (the flat-text contract).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin

from structablate.corpus.files import (
    ByoInputError,
    DocumentFile,
    HeadingStack,
    InputUnit,
    file_units,
)
from structablate.corpus.flatten import DocumentBuilder, FlatDocument
from structablate.corpus.render import snippet_source
from structablate.settings import UserCorpus
from structablate.user_files import USER_EXTENSIONS

EXTENSIONS = USER_EXTENSIONS["markdown"]

# One attribute of an attribute list: #id, .class or key=value (value bare or quoted); ids,
# classes and keys start with a letter and keys have two characters or more, so LaTeX such
# as {i=1} or {.5} is never read as one.
_ATTR = (r"""(?:\#[A-Za-z_][^\s{}#]*|\.[A-Za-z_-][\w-]*"""
         r"""|[A-Za-z][\w:-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s{}"']+))""")
# ``{: …}`` (Python-Markdown, kramdown) may also hold bare words of two letters or more
# (``{: checked }``);
# ``{…}`` without the colon (Pandoc, Python-Markdown) only #id, .class and key=value.
ATTR_LIST = (r"\{(?::[ \t]*(?:" + _ATTR + r"|[A-Za-z][\w-]+)(?:[ \t]+(?:" + _ATTR
             + r"|[A-Za-z][\w-]+))*|[ \t]*" + _ATTR + r"(?:[ \t]+" + _ATTR + r")*)[ \t]*\}")
_ATTR_TRAILING = re.compile(r"[ \t\n]*" + ATTR_LIST + r"[ \t]*$")
_ATTR_LEADING = re.compile(r"^" + ATTR_LIST)
# A reference link whose label no definition in the file resolves: [text][id], [text][]
# (the two brackets may sit on either side of a line break). The id is a dotted name, an
# anchor slug or a word, and the first bracket does not follow a word character, so indexing
# (x[i][j], tfl[word][i]) and character classes ([A-Z][a-z]) stay as written.
_REF_ID = (r"(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # a dotted name: markdown.Markdown
           r"|[A-Za-z0-9]{2,}(?:-[A-Za-z0-9]{2,})+"  # an anchor slug: third-party-extensions
           r"|[A-Za-z_]\w{2,})?")  # a word of three characters or more, or nothing: [text][]
_UNRESOLVED_REF = re.compile(
    r"(?<![\w\]\\])\[([^\[\]\n]*[^\[\]\s][^\[\]\n]*)\](?:\n[ \t]*)?\[(" + _REF_ID + r")\]")
_PLACEHOLDER = re.compile("\ue000([0-9]+)\ue001")
_ABBREVIATION = re.compile(r"^[ \t]*\*\[[^\]\n]+\]:")
_TOC_MARKERS = frozenset({"[toc]", "[[_toc_]]", "[[toc]]"})
# inline tokens after which an attribute list applies to that element (Python-Markdown)
_INLINE_ELEMENT_ENDS = frozenset({"link_close", "strong_close", "em_close", "s_close",
                                  "image", "code_inline"})


def _parser() -> MarkdownIt:
    md = (MarkdownIt("commonmark", {"html": True})
          .enable(["table", "strikethrough"])
          .use(admon_plugin)
          .use(deflist_plugin)
          .use(footnote_plugin))
    # footnote definitions stay where they are written; escapes stay separate tokens, so an
    # escaped brace (\{) is never read as the start of an attribute list
    md.disable(["footnote_tail", "text_join"])
    return md


_BLOCK_OPEN = re.compile(r"^[ \t]*/{3,}[ \t]*([A-Za-z][\w-]*)[ \t]*(?:\|[ \t]*(.*?))?[ \t]*$")
_BLOCK_CLOSE = re.compile(r"^[ \t]*/{3,}[ \t]*$")
_BLOCK_OPTION = re.compile(r"^(?: {4,}|\t)[A-Za-z][\w-]*:(?:[ \t]|$)")
_CODE_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
# pymdown block types whose box shows a title (the type capitalised when none is given)
_TITLED_BLOCKS = frozenset({
    "admonition", "note", "attention", "caution", "danger", "error", "hint", "important",
    "tip", "warning", "info", "question", "success", "failure", "bug", "example", "quote",
    "abstract", "seealso", "details"})
# pymdown block types whose header is markup, not text (``/// html | div.result``)
_UNTITLED_BLOCKS = frozenset({"html", "define"})


def pymdown_blocks(text: str) -> str:
    """Rewrite pymdown-extensions generic blocks (``/// type | header`` … ``///``) outside
    fenced code: the fence lines go; the header becomes a paragraph of its own where the
    rendered box shows it as a title (admonitions, ``details``, ``tab``, ``caption``; the type
    capitalised for an admonition without a title), and goes for ``html`` (a selector) and
    ``define``; the indented ``key: value`` options under a header go. The body's blocks
    stay as they are. Each fence line is replaced by lines of
    its own, so the body keeps its line breaks."""
    out: list[str] = []
    fence: str | None = None
    depth = 0
    options = False  # right after a header: the block's indented YAML options
    for line in text.split("\n"):
        if options and _BLOCK_OPTION.match(line):
            out.append("")
            continue
        options = False
        m = _CODE_FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        opening = _BLOCK_OPEN.match(line)
        if opening:
            depth += 1
            kind, header = opening.group(1).lower(), (opening.group(2) or "").strip()
            if len(header) >= 2 and header[0] == header[-1] and header[0] in "\"'":
                header = header[1:-1].strip()
            if kind in _UNTITLED_BLOCKS:
                header = ""
            elif not header and kind in _TITLED_BLOCKS:
                header = kind.capitalize()
            out.extend(["", header, ""] if header else [""])
            options = True
            continue
        if depth and _BLOCK_CLOSE.match(line):
            depth -= 1
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def split_front_matter(text: str, where: str) -> tuple[dict, str]:
    """``(front matter mapping, text)``; the front matter lines are blanked, not removed, so
    line numbers of the rest stay those of the file."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() not in ("---", "+++"):
        return {}, text
    toml = lines[0].rstrip() == "+++"
    ends = ("+++",) if toml else ("---", "...")
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ends:
            block = "\n".join(lines[1:i])
            if toml:
                try:
                    meta = tomllib.loads(block)
                except tomllib.TOMLDecodeError as exc:
                    raise ByoInputError(where, f"front matter is not valid TOML: {exc}") from None
                return meta, "\n" * (i + 1) + "\n".join(lines[i + 1 :])
            try:
                meta = yaml.safe_load(block) if block.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = f":{mark.line + 2}" if mark is not None else ""
                raise ByoInputError(f"{where}{line}", f"front matter is not valid YAML: "
                                    f"{getattr(exc, 'problem', exc)}") from None
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                raise ByoInputError(f"{where}:2", "front matter must be a YAML mapping")
            return meta, "\n" * i + "\n".join(lines[i + 1 :])
    return {}, text  # no closing line: an ordinary thematic break, not front matter


def inline_text(children: list[Token] | None, extra=None,
                literals: list[str] | None = None) -> str:
    """Plain text of an inline token's children (markup stripped, see the module rules).

    ``extra(token)`` renders token types of plugins this module does not enable (MyST roles,
    math, substitutions: :mod:`~structablate.corpus.myst`); ``None`` from it, or no
    ``extra``, gives no text.

    Attribute lists are removed where the dialects read them: right after an inline element
    (``**x**{#id}``) and at the end of the block (``Heading {: #id }``, or a last line of its
    own); a reference link left unresolved renders as its text. The text of every code span
    is appended to ``literals`` when given (left out of the markup-residue scan).
    """
    parts: list[tuple[str, str]] = []  # (kind, text); only "text" parts hold markup to read
    prev: str | None = None
    for t in children or ():
        if t.type == "text":
            body = t.content
            if prev in _INLINE_ELEMENT_ENDS:
                body = _ATTR_LEADING.sub("", body)
            if prev == "html_inline" and parts and parts[-1][1][-1:].isspace():
                body = body.lstrip(" \t")  # a dropped tag or comment leaves one space, not two
            parts.append(("text", body))
        elif t.type in ("text_special", "code_inline"):
            parts.append(("literal", t.content))
            if literals is not None and t.type == "code_inline":
                literals.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            parts.append(("text", "\n"))
        elif t.type == "image":
            parts.append(("literal", inline_text(t.children, extra)))
        elif extra is not None and (rendered := extra(t)) is not None:
            parts.append(("literal", rendered))
        # link_open/close, em/strong/s open/close, html_inline, footnote_ref: no text
        prev = t.type
    # a trailing attribute list (in the last text part, after any trailing line breaks)
    for k in range(len(parts) - 1, -1, -1):
        kind, body = parts[k]
        if kind == "text" and not body.strip():
            continue
        if kind == "text":
            parts[k] = (kind, _ATTR_TRAILING.sub("", body))
        break
    # unresolved reference links, with literal parts (code, escapes) held as placeholders so
    # that ``[`code`][id]`` resolves and a bracket inside code is never read as markup
    joined = "".join(p if kind == "text" else f"\ue000{k}\ue001"
                     for k, (kind, p) in enumerate(parts))
    if "[" in joined:
        joined = _UNRESOLVED_REF.sub(r"\1", joined)
    return _PLACEHOLDER.sub(lambda m: parts[int(m.group(1))][1], joined)


def block_text(children: list[Token] | None, literals: list[str] | None = None) -> str:
    """:func:`inline_text` of a paragraph-like block, less the lines a reader never sees:
    abbreviation definitions (``*[HTML]: …``) and a table-of-contents marker (``[TOC]``);
    code spans' text appended to ``literals`` when given."""
    text = inline_text(children, literals=literals)
    if "*[" in text:
        text = "\n".join(ln for ln in text.split("\n") if not _ABBREVIATION.match(ln))
    if " ".join(text.split()).casefold() in _TOC_MARKERS:
        return ""
    return text


class ListItems:
    """The lists open at a point of a markdown-it token stream (whether each is ordered) and
    the number (``3.``) of an ordered item whose first paragraph is still to come: that
    paragraph starts with it (:meth:`take`), as the rendered list shows it."""

    def __init__(self) -> None:
        self.ordered: list[bool] = []
        self.prefix: str | None = None

    def step(self, t: Token) -> bool:
        """Follow ``t`` where it opens or closes a list or an item; ``False`` for any other
        token."""
        typ = t.type
        if typ in ("bullet_list_open", "ordered_list_open"):
            self.ordered.append(typ == "ordered_list_open")
        elif typ in ("bullet_list_close", "ordered_list_close"):
            self.ordered.pop()
        elif typ == "list_item_open":
            self.prefix = f"{t.info}{t.markup}" if self.ordered and self.ordered[-1] else None
        elif typ == "list_item_close":
            self.prefix = None
        else:
            return False
        return True

    def take(self, text: str) -> str:
        """``text`` stripped and after the pending item number, which is used up; ``text``
        unchanged where none is pending or it is blank."""
        if self.prefix is None or not text.strip():
            return text
        text, self.prefix = f"{self.prefix} {text.strip()}", None
        return text


def parse_markdown(text: str, file: DocumentFile) -> FlatDocument:
    """Flatten one Markdown document (see the module docstring for the rules; MyST is read
    by :func:`structablate.corpus.myst.parse_myst`)."""
    doc_id, where = file.doc_id, file.where
    meta, text = split_front_matter(text, where)
    for key in ("title", "id", "topic"):
        if key in meta and not isinstance(meta[key], str | int | float):
            raise ByoInputError(f"{where}", f"front matter field {key!r} must be a string")
    tokens = _parser().parse(pymdown_blocks(text) if "///" in text else text)
    blocks = [t for t in tokens if t.level == 0 and not t.type.endswith("_close")]
    h1 = [t for t in tokens if t.type == "heading_open" and t.tag == "h1"]
    title_token = None
    if blocks and blocks[0].type == "heading_open" and blocks[0].tag == "h1" and len(h1) == 1:
        title_token = blocks[0]
    title = file.default_title
    shift = 0
    if title_token is not None:
        idx = next(k for k, tok in enumerate(tokens) if tok is title_token)
        title = " ".join(inline_text(tokens[idx + 1].children).split()) or file.default_title
        shift = 1
    if meta.get("title") is not None:
        title = " ".join(str(meta["title"]).split())
    if meta.get("id") is not None:
        doc_id = str(meta["id"]).strip()
        if not doc_id:
            raise ByoInputError(where, "front matter field 'id' is empty")

    builder = DocumentBuilder(doc_id, title)
    stack = HeadingStack(file.heading_separator)
    n_headings = 0
    lists = ListItems()
    row: list[str] | None = None
    code: list[int] = []  # para_idx of code blocks (left out of the markup-residue scan)
    literals: list[str] = []  # code spans of the paragraph being read
    inline_literals: dict[int, tuple[str, ...]] = {}  # para_idx -> its code spans (likewise)

    def add(body: str) -> None:
        idx = builder.add_paragraph(body, path())
        if idx is not None and literals:
            inline_literals[idx] = tuple(literals)
        literals.clear()

    def path() -> tuple[str, ...]:
        return stack.path or (file.lead_heading,)

    i = 0
    while i < len(tokens):
        t = tokens[i]
        typ = t.type
        if typ == "heading_open":
            if t is not title_token:
                level = int(t.tag[1]) - shift
                stack.push(max(level, 1), inline_text(tokens[i + 1].children))
                n_headings += 1
            i += 3  # heading_open, inline, heading_close
            continue
        if lists.step(t):
            pass
        elif typ == "tr_open":
            row = []
        elif typ == "tr_close":
            if row is not None and any(c.strip() for c in row):
                add(" | ".join(" ".join(c.split()) for c in row))
            literals.clear()
            row = None
        elif typ == "inline":
            body = block_text(t.children, literals)
            if row is not None:
                row.append(body)
            else:
                add(lists.take(body))
        elif typ in ("fence", "code_block"):
            if file.code_blocks == "keep":
                idx = builder.add_paragraph(lists.take(t.content), path())
                if idx is not None:
                    code.append(idx)
        # html_block, hr, paragraph/blockquote/table open-close: no text of their own
        i += 1
    if n_headings == 0 and title_token is None:
        raise ByoInputError(
            where,
            "no heading: a Markdown document needs a title ('# …' as its first block) or "
            "section headings ('## …', setext) to have a gold structure; add headings, or set "
            "skip_bad_files: true to leave the file out")
    topic = str(meta["topic"]) if meta.get("topic") is not None else None
    return builder.build(topic=topic, source=where, code_paragraphs=tuple(code),
                         inline_literals=inline_literals)


def render_snippet(text: str) -> str:
    """An evidence snippet copied from Markdown source, as the rendered page shows it: its
    blocks' text (inline markup, list markers and indentation gone) joined by spaces."""
    tokens = _parser().parse(snippet_source(text))
    parts = [block_text(t.children) if t.type == "inline" else t.content
             for t in tokens if t.type in ("inline", "fence", "code_block")]
    return " ".join(" ".join(parts).split())


def iter_units(corpus: UserCorpus, name: str) -> Iterator[InputUnit]:
    """One unit per Markdown file of ``corpus.path`` (a corpus in MyST goes through
    :func:`structablate.corpus.myst.iter_units` instead)."""
    return file_units(corpus, EXTENSIONS, parse_markdown)
