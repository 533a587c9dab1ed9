"""Rule-based sentence and word boundaries with character offsets.

Deterministic and dependency-free. A sentence ends after ``.``, ``!`` or ``?`` (optionally
followed by closing quotes or brackets) when whitespace follows and the next character opens a
sentence (an upper-case letter, a digit, or an opening quote/bracket), unless the word before
the full stop is a known abbreviation (``e.g.``, ``et al.``, ``Fig.`` …) or a single capital
letter (an initial). Paragraph boundaries are always sentence boundaries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

ABBREVIATIONS = frozenset(
    """
    al e.g eg i.e ie etc fig figs eq eqs sec secs tab tabs no nos vol vols pp p dr mr mrs ms
    prof vs cf st jr sr approx resp ref refs ch chap ca c jan feb mar apr jun jul aug sep sept
    oct nov dec inc ltd co corp dept univ est mt ft lt col gen gov sgt capt cmdr adm rev hon
    """.split()
)

_BOUNDARY = re.compile(r"""[.!?]+["')\]’”]*(?=\s+["'(\[‘“]?[A-Z0-9])""")
_LAST_SPACE = re.compile(r"(?s:.*)\s")  # matched from a position: ends after the last whitespace
_BACK = 64  # characters searched for the start of the word before a full stop, before walking

# str.isspace() (= regex \s) as a lookup table over code points; all 29 such code points are
# at most U+3000, so larger ones map to the final False entry (tests check the table)
_IS_SPACE = np.zeros(0x3002, dtype=bool)
_IS_SPACE[[c for c in range(0x3001) if chr(c).isspace()]] = True


def _word_start(text: str, stop: int) -> int:
    """Start of the run of non-whitespace characters that ends at ``stop``."""
    lo = max(0, stop - _BACK)
    m = _LAST_SPACE.match(text, lo, stop)
    if m:
        return m.end()
    while lo > 0 and not text[lo - 1].isspace():  # a word longer than _BACK characters
        lo -= 1
    return lo


def _is_abbreviation(text: str, stop: int) -> bool:
    """Is the full stop at ``text[stop]`` the end of an abbreviation or an initial?"""
    if text[stop] != ".":
        return False
    # the word before the stop: back to the previous whitespace only (not from 0)
    lo = _word_start(text, stop)
    if lo >= stop:
        return False
    word = text[lo:stop].lstrip("(\"'[“‘")
    if len(word) == 1 and word.isalpha() and word.isupper():
        return True
    return word.lower().rstrip(".") in ABBREVIATIONS


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as trimmed half-open spans in ``text`` coordinates."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    cur = start
    for m in _BOUNDARY.finditer(text, start, end):
        if _is_abbreviation(text, m.start()):
            continue
        spans.append((cur, m.end()))
        cur = m.end()
    spans.append((cur, end))
    out = []
    for a, b in spans:
        seg = text[a:b]
        stripped = seg.strip()
        if not stripped:
            continue
        a2 = a + (len(seg) - len(seg.lstrip()))
        out.append((a2, a2 + len(stripped)))
    return out


def document_sentence_spans(
    text: str, paragraph_spans: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Sentences of every paragraph, in document order (never crossing a paragraph)."""
    out: list[tuple[int, int]] = []
    for a, b in paragraph_spans:
        out.extend(sentence_spans(text, a, b))
    return out


def word_starts(text: str, start: int, end: int) -> list[int]:
    """Character positions in ``[start, end)`` where a whitespace-delimited word begins."""
    return word_starts_array(text, start, end).tolist()


def word_starts_array(text: str, start: int, end: int) -> np.ndarray:
    """:func:`word_starts` as an int64 array: positions ``i`` in ``[start, end)`` where
    ``text[i]`` is not whitespace and ``i == 0`` or ``text[i - 1]`` is (``str.isspace``)."""
    start, end = max(start, 0), min(end, len(text))
    if end <= start:
        return np.zeros(0, dtype=np.int64)
    lo = max(start - 1, 0)
    cp = np.frombuffer(text[lo:end].encode("utf-32-le"), dtype=np.uint32)
    space = _IS_SPACE[np.minimum(cp, 0x3001)]
    prev_space = np.empty_like(space)
    prev_space[1:] = space[:-1]
    prev_space[0] = True  # position lo: text start, or before `start` (dropped below)
    hit = np.flatnonzero(~space & prev_space) + lo
    if lo < start:
        hit = hit[hit >= start]
    return hit.astype(np.int64)
