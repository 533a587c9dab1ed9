"""Mechanical verification of a flat document's paragraph and section tables.

:func:`verify_document` returns a list of violations (human-readable strings); an empty list
means verified. Builders call it on every document and fail (gold structure) or repair
(induced structure) on a non-empty list; nothing is silently kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from structablate import MAX_LEVEL
from structablate.corpus.flatten import FlatDocument, Paragraph, Section
from structablate.errors import StructablateError


def verify_paragraphs(text: str, paragraphs: Sequence[Paragraph]) -> list[str]:
    """Paragraphs are in order, in bounds, non-empty, trimmed, and separated by whitespace only."""
    out: list[str] = []
    prev_end = 0
    for i, p in enumerate(paragraphs):
        if p.para_idx != i:
            out.append(f"paragraph {i}: para_idx is {p.para_idx}, expected {i}")
        if not (0 <= p.start < p.end <= len(text)):
            out.append(
                f"paragraph {i}: span [{p.start}, {p.end}) out of bounds for text of "
                f"length {len(text)}"
            )
            continue
        if p.start < prev_end:
            out.append(f"paragraph {i}: starts at {p.start}, before previous end {prev_end}")
        elif text[prev_end : p.start].strip():
            out.append(f"paragraph {i}: non-whitespace text in the gap [{prev_end}, {p.start})")
        body = text[p.start : p.end]
        if body != body.strip():
            out.append(f"paragraph {i}: span [{p.start}, {p.end}) has surrounding whitespace")
        prev_end = max(prev_end, p.end)
    if text[prev_end:].strip():
        out.append(f"text after the last paragraph (from {prev_end}) is not whitespace")
    return out


def verify_sections(
    paragraphs: Sequence[Paragraph],
    sections: Sequence[Section],
    *,
    check_level_steps: bool = False,
    max_level: int = MAX_LEVEL,
) -> list[str]:
    """Sections tile the paragraphs exactly and agree with the paragraph table.

    * paragraph ranges are in bounds and non-empty, the first starts at paragraph 0, each
      starts where the previous ended, the last ends at the last paragraph;
    * ``start``/``end`` equal the first paragraph's start and the last paragraph's end
      ("char offsets disagree with paragraph table" otherwise);
    * ``1 <= level <= max_level``; with ``check_level_steps`` (induced structure) the level
      rises by at most one from one section to the next, and the first section has level 1.
    """
    out: list[str] = []
    n = len(paragraphs)
    if n == 0:
        return ["document has no paragraphs"]
    if not sections:
        return ["document has no sections"]
    expected = 0
    prev_level = 0
    for k, s in enumerate(sections):
        tag = f"section {k} ({s.title!r})"
        if s.section_idx != k:
            out.append(f"{tag}: section_idx is {s.section_idx}, expected {k}")
        if not (0 <= s.para_start < s.para_end <= n):
            out.append(
                f"{tag}: paragraph range [{s.para_start}, {s.para_end}) out of bounds "
                f"(document has {n} paragraphs)"
            )
            expected = max(expected, min(s.para_end, n))
            continue
        if s.para_start != expected:
            kind = "gap" if s.para_start > expected else "overlap"
            out.append(
                f"{tag}: starts at paragraph {s.para_start}, expected {expected} ({kind})"
            )
        expected = s.para_end
        if (s.start, s.end) != (paragraphs[s.para_start].start, paragraphs[s.para_end - 1].end):
            out.append(
                f"{tag}: char offsets disagree with paragraph table: [{s.start}, {s.end}) vs "
                f"[{paragraphs[s.para_start].start}, {paragraphs[s.para_end - 1].end})"
            )
        if not (1 <= s.level <= max_level):
            out.append(f"{tag}: level {s.level} outside 1..{max_level}")
        if check_level_steps and s.level > prev_level + 1:
            out.append(f"{tag}: level jumps from {prev_level} to {s.level}")
        if not s.path or any(not isinstance(t, str) for t in s.path):
            out.append(f"{tag}: empty or non-string heading path")
        prev_level = s.level
    if expected != n:
        out.append(f"sections end at paragraph {expected}, document has {n} (gap at end)")
    return out


def verify_document(doc: FlatDocument, *, check_level_steps: bool = False) -> list[str]:
    """All violations of ``doc``'s paragraph and section tables (empty list: verified)."""
    return verify_paragraphs(doc.text, doc.paragraphs) + verify_sections(
        doc.paragraphs, doc.sections, check_level_steps=check_level_steps
    )


class VerificationError(StructablateError, ValueError):
    """A document failed verification; the message names it and lists the violations."""

    def __init__(self, doc_id: str, violations: Sequence[str], source: str = ""):
        self.doc_id = doc_id
        self.violations = list(violations)
        where = f"{source}: " if source else ""
        shown = "\n  ".join(self.violations[:20])
        more = f"\n  … and {len(self.violations) - 20} more" if len(self.violations) > 20 else ""
        super().__init__(f"{where}document {doc_id!r} failed verification:\n  {shown}{more}")
