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
   place the same words happen to occur in the text. A heading that is **ambiguous** — a title
   several paths end with (``Example`` under two parents), or one path shared by separate
   sections (two ``Results``) — maps to nothing (step ``ambiguous``,
   :meth:`EvidenceMapper.ambiguity` says why and what resolves it): never the range between
   them, never the first place its words occur;
3. ``exact`` — a substring of the flat text: span = its first occurrence, whitespace folded
   (``[start, end)`` of the first to the last matched character of the original text);
4. ``fuzzy`` — the best paragraph by :class:`difflib.SequenceMatcher` ratio, if at least
   ``fuzzy_min_ratio``;
5. otherwise ``unmapped`` (span ``None``).
"""

from __future__ import annotations

import difflib
from collections import Counter

from structablate.corpus.flatten import FlatDocument

SECTION_SEP = " ::: "

STEPS = ("exact", "fuzzy", "section", "ambiguous", "unmapped")


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


def best_window(snippet: str, text: str, tries: int = 32) -> tuple[float, int, int]:
    """``(ratio, start, end)`` of the window of ``text`` (as long as ``snippet``, which is
    shorter) most like ``snippet``: windows aligned on the ``tries`` longest blocks the two
    share (:meth:`difflib.SequenceMatcher.get_matching_blocks`), each scored by
    :class:`difflib.SequenceMatcher`'s ratio; character offsets in ``text``."""
    n = len(snippet)
    blocks = difflib.SequenceMatcher(None, snippet, text, autojunk=False).get_matching_blocks()
    blocks = sorted((b for b in blocks if b.size), key=lambda b: (-b.size, b.b))[:tries]
    best = (0.0, 0, min(n, len(text)))
    seen: set[int] = set()
    for b in blocks:
        start = min(max(b.b - b.a, 0), len(text) - n)
        if start in seen:
            continue
        seen.add(start)
        r = difflib.SequenceMatcher(None, snippet, text[start:start + n],
                                    autojunk=False).ratio()
        if r > best[0]:
            best = (r, start, start + n)
    return best


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
        # heading path joined by the separator -> the spans of the sections it heads: one
        # span per run of consecutive sections under that path (a path used by two headings
        # apart, such as two "Results" sections, gives two runs)
        self._section_runs: dict[str, list[tuple[int, int]]] = {}
        last: dict[str, int] = {}  # key -> section_idx of the last section under it
        # heading title -> the distinct heading paths that end with it
        self._paths_by_title: dict[str, list[tuple[str, ...]]] = {}
        for k, s in enumerate(doc.sections):
            for depth in range(1, len(s.path) + 1):
                key = fold(section_separator.join(s.path[:depth]))
                runs = self._section_runs.setdefault(key, [])
                if runs and last[key] == k - 1:
                    lo, hi = runs[-1]
                    runs[-1] = (min(lo, s.start), max(hi, s.end))
                else:
                    runs.append((s.start, s.end))
                last[key] = k
                paths = self._paths_by_title.setdefault(fold(s.path[depth - 1]), [])
                if s.path[:depth] not in paths:
                    paths.append(s.path[:depth])
        self._separator = section_separator
        self._flat: tuple[str, list[int]] | None = None

    def _key_of(self, evidence: str) -> str | None:
        """The heading-path key ``evidence`` names: itself, or the path of the one heading
        titled so; ``None`` when it names no heading or a title several paths end with."""
        e = fold(evidence)
        if e in self._section_runs:
            return e
        paths = self._paths_by_title.get(e, ())
        if len(paths) == 1:
            return fold(self._separator.join(paths[0]))
        return None

    def ambiguity(self, evidence: str) -> str | None:
        """Why a heading named by ``evidence`` is ambiguous (``None`` if it is not): the title
        of headings on several paths (each path named, any of which resolves it), or one path
        used by several separate sections (where each starts)."""
        e = fold(evidence)
        paths = self._paths_by_title.get(e, ())
        if e not in self._section_runs and len(paths) > 1:
            named = "; ".join(repr(self._separator.join(p)) for p in paths)
            return (f"the heading {e!r} occurs under {len(paths)} heading paths ({named}): "
                    f"give the path of the one meant")
        key = self._key_of(e)
        runs = self._section_runs.get(key, ()) if key is not None else ()
        if len(runs) > 1:
            at = ", ".join(f"[{a}, {b})" for a, b in runs)
            return (f"{len(runs)} separate sections have the heading path {key!r} (at "
                    f"characters {at}): quote a sentence of the one meant, or give its span")
        return None

    def section_span(self, evidence: str) -> tuple[int, int] | None:
        """The span of the one section ``evidence`` names (a path, or a title only one path
        ends with) with its subsections; ``None`` when it names no heading or an ambiguous
        one (:meth:`ambiguity`)."""
        key = self._key_of(evidence)
        runs = self._section_runs.get(key, ()) if key is not None else ()
        return runs[0] if len(runs) == 1 else None

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

    def closest(self, evidence: str) -> tuple[int, float] | None:
        """``(para_idx, similarity)`` of the passage most like ``evidence``
        (:meth:`closest_passage`): what a drop reason quotes. ``None`` for a document without
        paragraphs or an empty snippet."""
        found = self.closest_passage(evidence)
        return None if found is None else (found[0], found[1])

    def closest_passage(self, evidence: str) -> tuple[int, float, int, int] | None:
        """``(para_idx, similarity, start, end)`` of the passage most like ``evidence``, no
        threshold; ``[start, end)`` are offsets in the paragraph's whitespace-folded text.

        A paragraph no longer than the folded snippet is compared whole; a longer one by its
        best window of the snippet's length (:func:`best_window`), so a snippet inside a long
        paragraph finds that paragraph and the place in it. Similarity is
        :class:`difflib.SequenceMatcher`'s ratio; the first paragraph wins a tie."""
        e = fold(evidence)
        if not e or not self._folded:
            return None
        best: tuple[int, float, int, int] = (0, -1.0, 0, 0)
        chars = Counter(e)
        for i, folded in enumerate(self._folded):
            if len(folded) <= len(e):
                sm = difflib.SequenceMatcher(None, e, folded, autojunk=False)
                if sm.real_quick_ratio() <= best[1] or sm.quick_ratio() <= best[1]:
                    continue
                r, start, end = sm.ratio(), 0, len(folded)
            else:
                # a window's ratio is at most the snippet's characters the paragraph holds
                # over the snippet's length
                if sum((chars & Counter(folded)).values()) / len(e) <= best[1]:
                    continue
                r, start, end = best_window(e, folded)
            if r > best[1]:
                best = (i, r, start, end)
        return best



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
        if self.ambiguity(e) is not None:  # never the words, never the range between
            return None, "ambiguous"
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
