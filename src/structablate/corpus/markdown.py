"""Markdown adapter: ``.md`` files to flat documents, parsed with markdown-it-py.

Rules (``docs/byo.md`` has them with examples):

* **Front matter** — a YAML block between a first line ``---`` and the next ``---`` (or
  ``...``) line is read for ``title``, ``id`` and ``topic`` and removed from the text.
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
  included), each fenced or indented code block (``code_blocks: keep``, the default;
  ``drop`` removes them). Blockquotes are transparent (their paragraphs are paragraphs).
  Raw HTML blocks, HTML comments and thematic breaks are dropped.
* **Inline markup** is rendered to plain text: emphasis and strikethrough markers are
  stripped, a link becomes its text, an image its alt text, inline code its content, inline
  HTML tags are dropped (the text between them stays), entities and backslash escapes are
  resolved. Line breaks inside a block become single spaces (the flat-text contract).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from structablate.corpus.files import (
    DEFAULT_LEAD_HEADING,
    ByoInputError,
    HeadingStack,
    Unit,
    file_units,
)
from structablate.corpus.flatten import DocumentBuilder, FlatDocument

EXTENSIONS = (".md", ".markdown")


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def split_front_matter(text: str, where: str) -> tuple[dict, str]:
    """``(front matter mapping, text)``; the front matter lines are blanked, not removed, so
    line numbers of the rest stay those of the file."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            block = "\n".join(lines[1:i])
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


def inline_text(children: list[Token] | None) -> str:
    """Plain text of an inline token's children (markup stripped, see the module rules)."""
    out: list[str] = []
    for t in children or ():
        if t.type in ("text", "code_inline"):
            out.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif t.type == "image":
            out.append(inline_text(t.children))
        # link_open/close, em/strong/s open/close, html_inline: no text of their own
    return "".join(out)


def parse_markdown(
    text: str,
    *,
    doc_id: str,
    default_title: str,
    where: str,
    lead_heading: str = DEFAULT_LEAD_HEADING,
    heading_separator: str | None = None,
    code_blocks: str = "keep",
) -> FlatDocument:
    """Flatten one Markdown document (see the module docstring for the rules)."""
    meta, text = split_front_matter(text, where)
    for key in ("title", "id", "topic"):
        if key in meta and not isinstance(meta[key], str | int | float):
            raise ByoInputError(f"{where}", f"front matter field {key!r} must be a string")
    tokens = _parser().parse(text)
    blocks = [t for t in tokens if t.level == 0 and not t.type.endswith("_close")]
    h1 = [t for t in tokens if t.type == "heading_open" and t.tag == "h1"]
    title_token = None
    if blocks and blocks[0].type == "heading_open" and blocks[0].tag == "h1" and len(h1) == 1:
        title_token = blocks[0]
    title = default_title
    shift = 0
    if title_token is not None:
        idx = next(k for k, tok in enumerate(tokens) if tok is title_token)
        title = " ".join(inline_text(tokens[idx + 1].children).split()) or default_title
        shift = 1
    if meta.get("title") is not None:
        title = " ".join(str(meta["title"]).split())
    if meta.get("id") is not None:
        doc_id = str(meta["id"]).strip()
        if not doc_id:
            raise ByoInputError(where, "front matter field 'id' is empty")

    builder = DocumentBuilder(doc_id, title)
    stack = HeadingStack(heading_separator)
    n_headings = 0
    list_kinds: list[str] = []  # "ordered" / "bullet" for each open list
    item_prefix: str | None = None  # an ordered item's number, put before its first paragraph
    row: list[str] | None = None

    def path() -> tuple[str, ...]:
        return stack.path or (lead_heading,)

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
        if typ in ("bullet_list_open", "ordered_list_open"):
            list_kinds.append("ordered" if typ == "ordered_list_open" else "bullet")
        elif typ in ("bullet_list_close", "ordered_list_close"):
            list_kinds.pop()
        elif typ == "list_item_open":
            item_prefix = f"{t.info}{t.markup}" if list_kinds and list_kinds[-1] == "ordered" \
                else None
        elif typ == "list_item_close":
            item_prefix = None
        elif typ == "tr_open":
            row = []
        elif typ == "tr_close":
            if row is not None and any(c.strip() for c in row):
                builder.add_paragraph(" | ".join(" ".join(c.split()) for c in row), path())
            row = None
        elif typ == "inline":
            body = inline_text(t.children)
            if row is not None:
                row.append(body)
            else:
                if item_prefix is not None and body.strip():
                    body = f"{item_prefix} {body.strip()}"
                    item_prefix = None
                builder.add_paragraph(body, path())
        elif typ in ("fence", "code_block"):
            if code_blocks == "keep":
                if item_prefix is not None and t.content.strip():
                    builder.add_paragraph(f"{item_prefix} {t.content.strip()}", path())
                    item_prefix = None
                else:
                    builder.add_paragraph(t.content, path())
        # html_block, hr, paragraph/blockquote/table open-close: no text of their own
        i += 1
    if n_headings == 0 and title_token is None:
        raise ByoInputError(
            where,
            "no heading: a Markdown document needs a title ('# …' as its first block) or "
            "section headings ('## …', setext) to have a gold structure; add headings, or set "
            "skip_bad_files: true to leave the file out")
    topic = str(meta["topic"]) if meta.get("topic") is not None else None
    return builder.build(topic=topic, source=where)


def iter_units(cfg: Mapping, name: str) -> Iterator[Unit]:
    """One unit per Markdown file of ``cfg['path']``."""
    return file_units(cfg, name, EXTENSIONS, parse_markdown, DEFAULT_LEAD_HEADING)
