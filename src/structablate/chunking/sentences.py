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

ABBREVIATIONS = frozenset(
    """
    al e.g eg i.e ie etc fig figs eq eqs sec secs tab tabs no nos vol vols pp p dr mr mrs ms
    prof vs cf st jr sr approx resp ref refs ch chap ca c jan feb mar apr jun jul aug sep sept
    oct nov dec inc ltd co corp dept univ est mt ft lt col gen gov sgt capt cmdr adm rev hon
    """.split()
)

_BOUNDARY = re.compile(r"""[.!?]+["')\]’”]*(?=\s+["'(\[‘“]?[A-Z0-9])""")
_WORD_BEFORE = re.compile(r"(\S+)$")
_WORD_START = re.compile(r"(?<!\S)\S")


def _is_abbreviation(text: str, stop: int) -> bool:
    """Is the full stop at ``text[stop]`` the end of an abbreviation or an initial?"""
    if text[stop] != ".":
        return False
    # the word before the stop: scan back to the previous whitespace only (not from 0)
    lo = stop
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    m = _WORD_BEFORE.search(text, lo, stop)
    if not m:
        return False
    word = m.group(1).lstrip("(\"'[“‘")
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
    return [m.start() for m in _WORD_START.finditer(text, start, end)]
