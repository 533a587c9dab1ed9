"""The fenced code blocks of the project's Markdown documentation (README.md, docs/*.md), read
with markdown-it (the parser the Markdown corpus adapter uses), so tests can run or validate
exactly what a reader copies."""

from __future__ import annotations

from dataclasses import dataclass

from conftest import REPO
from markdown_it import MarkdownIt

DOC_FILES = ("README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")))
"""Every documentation file whose blocks are checked, relative to the repository."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its file, first line (1-based, the fence line), language tag, text,
    and the titles of the headings it sits under (outermost first)."""

    file: str
    line: int
    lang: str
    text: str
    headings: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def section(self) -> str:
        return self.headings[-1] if self.headings else ""


def blocks(file: str) -> list[Block]:
    """The fenced code blocks of ``file`` (relative to the repository), in order."""
    text = (REPO / file).read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").parse(text)
    out: list[Block] = []
    stack: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            title = tokens[i + 1].content.strip()
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, title)]
        elif tok.type == "fence":
            lang = (tok.info or "").split()[0] if tok.info else ""
            out.append(Block(file, tok.map[0] + 1, lang, tok.content,
                             tuple(t for _, t in stack)))
    return out


def all_blocks() -> list[Block]:
    return [b for f in DOC_FILES for b in blocks(f)]


def section_blocks(file: str, heading: str) -> list[Block]:
    """The blocks under the heading titled ``heading`` (at any depth) of ``file``."""
    found = [b for b in blocks(file) if heading in b.headings]
    if not found:
        raise AssertionError(f"{file}: no code block under a heading {heading!r}")
    return found
