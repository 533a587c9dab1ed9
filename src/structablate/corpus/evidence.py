"""Map evidence strings into a flat document: the exact → fuzzy → section cascade.

One implementation for every corpus whose questions point at text by quoting it: QASPER's
annotated evidence (:mod:`structablate.corpus.qasper`) and user-supplied query snippets
(:mod:`structablate.corpus.user_queries`). Per evidence string (whitespace folded on both
sides):

* ``exact`` — equal to a paragraph (span = that paragraph), or else a verbatim substring of the
  flat text (span = the first occurrence);
* ``fuzzy`` — the best paragraph by :class:`difflib.SequenceMatcher` ratio, if at least
  ``fuzzy_min_ratio``;
* ``section`` — the string names a section by its heading path joined with
  ``section_separator`` (QASPER's ``Experiments ::: Data``; a top-level heading is just its
  title): span = that section with all its subsections (from the first to the last character
  of every section whose path starts with it);
* otherwise ``unmapped`` (span ``None``).
"""

from __future__ import annotations

import difflib

from structablate.corpus.flatten import FlatDocument

SECTION_SEP = " ::: "

STEPS = ("exact", "fuzzy", "section", "unmapped")


def fold(s: str) -> str:
    """Fold every run of whitespace to one space and strip."""
    return " ".join(s.split())


class EvidenceMapper:
    """Map evidence strings of one document to character spans (exact → fuzzy → section)."""

    def __init__(
        self,
        doc: FlatDocument,
        fuzzy_min_ratio: float = 0.85,
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
        for s in doc.sections:
            for depth in range(1, len(s.path) + 1):
                key = fold(section_separator.join(s.path[:depth]))
                lo, hi = self._section_span.get(key, (s.start, s.end))
                self._section_span[key] = (min(lo, s.start), max(hi, s.end))

    def map(self, evidence: str) -> tuple[tuple[int, int] | None, str]:
        """Return ``(span, step)``; ``span`` is ``None`` and step ``"unmapped"`` on failure."""
        e = fold(evidence)
        if not e:
            return None, "unmapped"
        idx = self._para_by_text.get(e)
        if idx is not None:
            p = self.doc.paragraphs[idx]
            return (p.start, p.end), "exact"
        pos = self.doc.text.find(evidence.strip())
        if pos >= 0:
            return (pos, pos + len(evidence.strip())), "exact"
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
        span = self._section_span.get(e)
        if span is not None:
            return span, "section"
        return None, "unmapped"
