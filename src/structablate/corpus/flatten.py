"""One flattening routine for every corpus.

A document's *flat text* is its body paragraphs joined by a fixed separator (``"\\n\\n"``).
Headings and the document title are **not** part of the flat text: they live in the sections
table (``title``, ``path``) and reach a chunk only as an explicit prefix. This keeps the text
identical across conditions (A0 and G2 cut the same string) and lets structure induction see
the paragraphs with every heading stripped.

Offsets are recorded while the string is being built, never recovered by searching for text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from structablate import MAX_LEVEL
from structablate.tables import frame

PARAGRAPH_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Paragraph:
    """A paragraph ``[start, end)`` of the flat text (no surrounding whitespace)."""

    para_idx: int
    start: int
    end: int


@dataclass(frozen=True)
class Section:
    """A section owning paragraphs ``[para_start, para_end)``.

    ``level`` is the stored level, clamped to :data:`MAX_LEVEL`; ``path`` keeps the true
    heading path (root to leaf, document title excluded), so ``len(path)`` is the true depth.
    ``start``/``end`` are the character offsets of the first paragraph's start and the last
    paragraph's end.
    """

    section_idx: int
    title: str
    level: int
    para_start: int
    para_end: int
    start: int
    end: int
    path: tuple[str, ...]


@dataclass
class FlatDocument:
    """A flattened document: text, paragraph table and gold section table."""

    doc_id: str
    title: str
    text: str
    paragraphs: list[Paragraph]
    sections: list[Section]
    topic: str | None = None
    meta: dict = field(default_factory=dict)

    def paragraph_text(self, para_idx: int) -> str:
        p = self.paragraphs[para_idx]
        return self.text[p.start : p.end]


def normalize_paragraph(text: str) -> str:
    """Strip a paragraph and fold every run of whitespace containing a newline to one space.

    Paragraph-internal blank lines would otherwise be indistinguishable from the separator.
    """
    return " ".join(text.split()) if "\n" in text or "\r" in text else text.strip()


class DocumentBuilder:
    """Build a :class:`FlatDocument` one paragraph at a time.

    Call :meth:`add_paragraph` in reading order with the heading path each paragraph sits
    under; consecutive paragraphs with the same path form one gold section. Empty paragraphs
    are skipped (they would give empty spans). A heading with no paragraphs of its own yields
    no section, but its title stays in the paths of its descendants.
    """

    def __init__(self, doc_id: str, title: str, separator: str = PARAGRAPH_SEPARATOR):
        if not separator or separator.strip():
            raise ValueError("the paragraph separator must be non-empty whitespace")
        self.doc_id = doc_id
        self.title = title
        self.separator = separator
        self._parts: list[str] = []
        self._length = 0
        self._paragraphs: list[Paragraph] = []
        self._paths: list[tuple[str, ...]] = []

    def add_paragraph(self, text: str, path: Sequence[str]) -> int | None:
        """Append ``text`` under heading ``path``; return its ``para_idx`` (``None`` if empty)."""
        text = normalize_paragraph(text)
        if not text:
            return None
        path = tuple(p.strip() for p in path)
        if not path:
            raise ValueError(f"{self.doc_id}: a paragraph needs a heading path of depth >= 1")
        if self._parts:
            self._parts.append(self.separator)
            self._length += len(self.separator)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        idx = len(self._paragraphs)
        self._paragraphs.append(Paragraph(idx, start, self._length))
        self._paths.append(path)
        return idx

    def build(self, topic: str | None = None, **meta) -> FlatDocument:
        """Freeze the text and derive the gold sections from the paragraph paths."""
        sections: list[Section] = []
        i = 0
        n = len(self._paragraphs)
        while i < n:
            j = i
            while j < n and self._paths[j] == self._paths[i]:
                j += 1
            path = self._paths[i]
            sections.append(
                Section(
                    section_idx=len(sections),
                    title=path[-1],
                    level=min(len(path), MAX_LEVEL),
                    para_start=i,
                    para_end=j,
                    start=self._paragraphs[i].start,
                    end=self._paragraphs[j - 1].end,
                    path=path,
                )
            )
            i = j
        return FlatDocument(
            doc_id=self.doc_id,
            title=self.title,
            text="".join(self._parts),
            paragraphs=list(self._paragraphs),
            sections=sections,
            topic=topic,
            meta=dict(meta),
        )


def documents_frame(docs: Sequence[FlatDocument], corpus: str) -> pl.DataFrame:
    """The ``documents`` table of ``docs``."""
    return frame(
        "documents",
        {
            "doc_id": [d.doc_id for d in docs],
            "corpus": [corpus] * len(docs),
            "title": [d.title for d in docs],
            "text": [d.text for d in docs],
            "topic": [d.topic for d in docs],
        },
    )


def paragraphs_frame(docs: Sequence[FlatDocument]) -> pl.DataFrame:
    """The ``paragraphs`` table of ``docs``."""
    rows = {"doc_id": [], "para_idx": [], "start": [], "end": []}
    for d in docs:
        for p in d.paragraphs:
            rows["doc_id"].append(d.doc_id)
            rows["para_idx"].append(p.para_idx)
            rows["start"].append(p.start)
            rows["end"].append(p.end)
    return frame("paragraphs", rows)


def sections_frame(doc_sections: Sequence[tuple[str, Sequence[Section]]]) -> pl.DataFrame:
    """The ``sections`` table from ``(doc_id, sections)`` pairs."""
    rows: dict[str, list] = {k: [] for k in (
        "doc_id", "section_idx", "title", "level", "para_start", "para_end", "start", "end",
        "path")}
    for doc_id, sections in doc_sections:
        for s in sections:
            rows["doc_id"].append(doc_id)
            rows["section_idx"].append(s.section_idx)
            rows["title"].append(s.title)
            rows["level"].append(s.level)
            rows["para_start"].append(s.para_start)
            rows["para_end"].append(s.para_end)
            rows["start"].append(s.start)
            rows["end"].append(s.end)
            rows["path"].append(list(s.path))
    return frame("sections", rows)


def sections_from_frame(df: pl.DataFrame) -> dict[str, list[Section]]:
    """Group a ``sections`` table back into :class:`Section` lists per document, in order."""
    out: dict[str, list[Section]] = {}
    for r in df.sort(["doc_id", "section_idx"]).iter_rows(named=True):
        out.setdefault(r["doc_id"], []).append(
            Section(
                section_idx=r["section_idx"],
                title=r["title"],
                level=r["level"],
                para_start=r["para_start"],
                para_end=r["para_end"],
                start=r["start"],
                end=r["end"],
                path=tuple(r["path"]),
            )
        )
    return out


def paragraphs_from_frame(df: pl.DataFrame) -> dict[str, list[Paragraph]]:
    """Group a ``paragraphs`` table back into :class:`Paragraph` lists per document, in order."""
    out: dict[str, list[Paragraph]] = {}
    for doc_id, start, end, idx in zip(
        df["doc_id"].to_list(), df["start"].to_list(), df["end"].to_list(),
        df["para_idx"].to_list(), strict=True,
    ):
        out.setdefault(doc_id, []).append(Paragraph(idx, start, end))
    for paras in out.values():
        paras.sort(key=lambda p: p.para_idx)
    return out


def documents_from_frames(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame | None = None,
) -> list[FlatDocument]:
    """FlatDocuments from ``documents`` + ``paragraphs`` (+ optional gold ``sections``) tables,
    in the documents table's order."""
    paras = paragraphs_from_frame(paragraphs)
    secs = sections_from_frame(sections) if sections is not None else {}
    out = []
    for r in documents.iter_rows(named=True):
        out.append(FlatDocument(
            doc_id=r["doc_id"], title=r["title"] or "", text=r["text"],
            paragraphs=paras.get(r["doc_id"], []), sections=secs.get(r["doc_id"], []),
            topic=r.get("topic"),
        ))
    return out


def top_section_ids(sections: Sequence[Section]) -> list[int]:
    """For every section, the ``section_idx`` of the top-level section it sits in.

    A new top-level group starts at every level-1 section and wherever the first heading of the
    path changes (a gold parent heading without paragraphs of its own has no row, so its
    children open the group).
    """
    out: list[int] = []
    current = -1
    prev_root: str | None = None
    for s in sections:
        root = s.path[0] if s.path else s.title
        if s.level == 1 or current < 0 or root != prev_root:
            current = s.section_idx
        prev_root = root
        out.append(current)
    return out
