"""Map evidence strings into a flat document: the exact → section → fuzzy cascade.

One implementation for every corpus whose questions point at text by quoting it: QASPER's
annotated evidence (:mod:`structablate.corpus.qasper`) and user-supplied query snippets
(:mod:`structablate.corpus.user_queries`). Per evidence string, whitespace folded on both sides
(every run of spaces, tabs and line breaks counts as one space, so a snippet copied across a
line wrap or a paragraph break matches):

1. ``exact`` — equal to a paragraph: span = that paragraph;
2. ``section`` — equal to a heading: either a heading path joined with ``section_separator``
   (QASPER's ``Experiments ::: Data``; a top-level heading is just its title), or the title of
   exactly one heading path of the document (``Data``, when no other heading is titled so).
   Span = that section with all its subsections (from the first to the last character of every
   section whose path starts with it). This comes before the substring step: an annotator who
   selected a heading such as ``Transformer-NMT`` points at that section, not at the first
   place the same words happen to occur in the text;
3. ``exact`` — a substring of the flat text: span = its first occurrence, whitespace folded
   (``[start, end)`` of the first to the last matched character of the original text);
4. ``fuzzy`` — the best paragraph by :class:`difflib.SequenceMatcher` ratio, if at least
   ``fuzzy_min_ratio``;
5. otherwise ``unmapped`` (span ``None``).
"""

from __future__ import annotations

import difflib

from structablate.corpus.flatten import FlatDocument

SECTION_SEP = " ::: "

STEPS = ("exact", "fuzzy", "section", "unmapped")


def fold(s: str) -> str:
    """Fold every run of whitespace to one space and strip."""
    return " ".join(s.split())


def folded_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run folded to one space (leading and trailing runs
    removed), and for each character of the folded string the index of the character of
    ``text`` it stands for (a folded space stands for the first character of its run)."""
    out: list[str] = []
    where: list[int] = []
    pending: int | None = None
    for i, ch in enumerate(text):
        if ch.isspace():
            if pending is None:
                pending = i
            continue
        if pending is not None and out:
            out.append(" ")
            where.append(pending)
        pending = None
        out.append(ch)
        where.append(i)
    return "".join(out), where


class EvidenceMapper:
    """Map evidence strings of one document to character spans (see the module docstring)."""

    def __init__(
        self,
        doc: FlatDocument,
        fuzzy_min_ratio: float,
        section_separator: str = SECTION_SEP,
    ):
        self.doc = doc
        self.fuzzy_min_ratio = fuzzy_min_ratio
        self._para_by_text: dict[str, int] = {}
        self._folded: list[str] = []
        for p in doc.paragraphs:
            folded = fold(doc.text[p.start : p.end])
            self._folded.append(folded)
            self._para_by_text.setdefault(folded, p.para_idx)
        # heading path joined by the separator -> span of the section and its descendants
        self._section_span: dict[str, tuple[int, int]] = {}
        # heading title -> the distinct heading paths that end with it
        paths_by_title: dict[str, set[tuple[str, ...]]] = {}
        for s in doc.sections:
            for depth in range(1, len(s.path) + 1):
                key = fold(section_separator.join(s.path[:depth]))
                lo, hi = self._section_span.get(key, (s.start, s.end))
                self._section_span[key] = (min(lo, s.start), max(hi, s.end))
                paths_by_title.setdefault(fold(s.path[depth - 1]), set()).add(s.path[:depth])
        self._title_key: dict[str, str] = {
            title: fold(section_separator.join(next(iter(paths))))
            for title, paths in paths_by_title.items()
            if len(paths) == 1
        }
        self._flat: tuple[str, list[int]] | None = None

    def section_span(self, evidence: str) -> tuple[int, int] | None:
        """The span of the section ``evidence`` names (path or unique title), else ``None``."""
        e = fold(evidence)
        span = self._section_span.get(e)
        if span is None and e in self._title_key:
            span = self._section_span[self._title_key[e]]
        return span

    def find(self, evidence: str) -> tuple[int, int] | None:
        """``[start, end)`` of the first whitespace-folded occurrence of ``evidence``."""
        e = fold(evidence)
        if not e:
            return None
        if self._flat is None:
            self._flat = folded_with_offsets(self.doc.text)
        folded, where = self._flat
        pos = folded.find(e)
        if pos < 0:
            return None
        return where[pos], where[pos + len(e) - 1] + 1

    def map(self, evidence: str) -> tuple[tuple[int, int] | None, str]:
        """Return ``(span, step)``; ``span`` is ``None`` and step ``"unmapped"`` on failure."""
        e = fold(evidence)
        if not e:
            return None, "unmapped"
        idx = self._para_by_text.get(e)
        if idx is not None:
            p = self.doc.paragraphs[idx]
            return (p.start, p.end), "exact"
        span = self.section_span(e)
        if span is not None:
            return span, "section"
        span = self.find(e)
        if span is not None:
            return span, "exact"
        best, best_ratio = None, 0.0
        for i, folded in enumerate(self._folded):
            sm = difflib.SequenceMatcher(None, e, folded, autojunk=False)
            if sm.real_quick_ratio() < self.fuzzy_min_ratio:
                continue
            if sm.quick_ratio() < self.fuzzy_min_ratio:
                continue
            r = sm.ratio()
            if r > best_ratio:
                best, best_ratio = i, r
        if best is not None and best_ratio >= self.fuzzy_min_ratio:
            p = self.doc.paragraphs[best]
            return (p.start, p.end), "fuzzy"
        return None, "unmapped"
