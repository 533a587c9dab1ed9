"""Shared span arithmetic for the chunkers: cut units, token counts, balanced splitting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from structablate.text.sentences import word_starts_array


@dataclass(frozen=True)
class Unit:
    """An uncuttable piece of text ``[start, end)`` (a sentence, or part of a long one)."""

    start: int
    end: int
    tokens: int


def make_units(
    text: str,
    spans: Sequence[tuple[int, int]],
    token_starts: np.ndarray,
    max_tokens: int,
) -> list[Unit]:
    """Units from sentence spans; a sentence over ``max_tokens`` is cut at word starts into
    near-equal parts of at most ``max_tokens`` tokens (a single word longer than that stays
    whole)."""
    if not spans:
        return []
    bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    counts = (np.searchsorted(token_starts, bounds[:, 1])
              - np.searchsorted(token_starts, bounds[:, 0])).tolist()
    units: list[Unit] = []
    for (a, b), n in zip(spans, counts, strict=True):
        if n <= max_tokens:
            units.append(Unit(a, b, n))
            continue
        starts = word_starts_array(text, a, b)
        ends = np.append(starts[1:], b)
        wcounts = (np.searchsorted(token_starts, ends)
                   - np.searchsorted(token_starts, starts)).tolist()
        words = [Unit(s, e, c) for s, e, c in zip(starts.tolist(), ends.tolist(), wcounts,
                                                  strict=True)]
        for group in balanced_groups([w.tokens for w in words], max_tokens):
            first, last = words[group[0]], words[group[-1]]
            end = last.end
            # trim trailing whitespace of the group
            while end > first.start and text[end - 1].isspace():
                end -= 1
            units.append(Unit(first.start, end, sum(words[i].tokens for i in group)))
    return units


def balanced_groups(sizes: Sequence[int], max_size: int) -> list[list[int]]:
    """Split consecutive items into the fewest groups of total size <= ``max_size``, as evenly as
    the item boundaries allow (each cut goes to the boundary nearest the even share, without
    letting any group exceed ``max_size``; an item larger than ``max_size`` stands alone)."""
    n_items = len(sizes)
    if n_items == 0:
        return []
    total = sum(sizes)
    if total <= max_size:
        return [list(range(n_items))]
    groups: list[list[int]] = []
    i = 0
    remaining = total
    while i < n_items:
        if remaining <= max_size:
            groups.append(list(range(i, n_items)))
            break
        pieces = -(-remaining // max_size)
        target = remaining / pieces
        acc = 0
        best_j, best_gap = i, None
        j = i
        while j < n_items:
            if acc + sizes[j] > max_size and j > i:
                break
            acc += sizes[j]
            gap = abs(acc - target)
            if best_gap is None or gap < best_gap:
                best_j, best_gap = j, gap
            j += 1
        groups.append(list(range(i, best_j + 1)))
        remaining -= sum(sizes[i : best_j + 1])
        i = best_j + 1
    return groups
