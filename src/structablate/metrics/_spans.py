"""Exact interval arithmetic on half-open character spans, shared by the per-query reference
implementations of every measure.

A ranked chunk is a :class:`RankedChunk`; ``on_doc`` is False for a chunk of another document
(its offsets live in another coordinate space, so it overlaps nothing). Gold spans and chunk
spans are ``(start, end)`` pairs of ints with ``start < end``.
"""

from __future__ import annotations

from typing import NamedTuple

Span = tuple[int, int]


class RankedChunk(NamedTuple):
    """One retrieved chunk, in rank order."""

    start: int
    end: int
    on_doc: bool = True
    content_tokens: int = 0
    prefix_tokens: int = 0


def overlap(a: Span, b: Span) -> int:
    """Number of characters shared by two half-open spans."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


class Coverage:
    """The covered part of one gold span: a sorted list of disjoint intervals inside it."""

    __slots__ = ("span", "intervals")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.intervals: list[Span] = []

    def new_chars(self, chunk: Span) -> int:
        """Characters of ``chunk ∩ span`` not covered yet (does not change the state)."""
        s, e = max(chunk[0], self.span[0]), min(chunk[1], self.span[1])
        if s >= e:
            return 0
        return (e - s) - sum(overlap((s, e), iv) for iv in self.intervals)

    def add(self, chunk: Span) -> int:
        """Cover ``chunk ∩ span``; return the number of newly covered characters."""
        s, e = max(chunk[0], self.span[0]), min(chunk[1], self.span[1])
        if s >= e:
            return 0
        new = (e - s) - sum(overlap((s, e), iv) for iv in self.intervals)
        merged: list[Span] = []
        for iv in self.intervals:
            if iv[1] < s or iv[0] > e:  # disjoint and not touching
                merged.append(iv)
            else:
                s, e = min(s, iv[0]), max(e, iv[1])
        merged.append((s, e))
        merged.sort()
        self.intervals = merged
        return new

    @property
    def covered(self) -> int:
        return sum(e - s for s, e in self.intervals)


def check_spans(gold: list[Span]) -> None:
    if not gold:
        raise ValueError("a query needs at least one gold span")
    for s, e in gold:
        if not s < e:
            raise ValueError(f"gold span [{s}, {e}) is empty")
