"""Binary relevance rule of the secondary metrics (paper, Appendix C).

A chunk ``c`` is relevant to a gold span ``g`` iff ``|c∩g|/|g| >= 0.5`` (the chunk holds at
least half of the evidence) or ``|c∩g|/|c| >= 0.8`` (at least 80% of the chunk lies inside the
evidence), on content-only character offsets, so a prefix never creates relevance. A chunk is
relevant to a query iff it is relevant to any of its gold spans. Both thresholds are compared
in exact integer arithmetic (``2·|c∩g| >= |g|``, ``5·|c∩g| >= 4·|c|``).
"""

from __future__ import annotations

import numpy as np

from ._spans import Span, overlap


def relevant_pairs(ov: np.ndarray, chunk_len: np.ndarray, gold_len: np.ndarray) -> np.ndarray:
    """Vectorized rule: ``ov`` overlaps, ``chunk_len`` |c|, ``gold_len`` |g| (integer arrays)."""
    ov = np.asarray(ov, dtype=np.int64)
    return (ov > 0) & ((2 * ov >= gold_len) | (5 * ov >= 4 * np.asarray(chunk_len)))


def is_relevant(chunk: Span, gold: Span) -> bool:
    """Whether ``chunk`` is relevant to one gold span."""
    ov = overlap(chunk, gold)
    return ov > 0 and (2 * ov >= gold[1] - gold[0] or 5 * ov >= 4 * (chunk[1] - chunk[0]))


def relevant_to_any(chunk: Span, gold: list[Span]) -> bool:
    """Whether ``chunk`` is relevant to at least one of the query's gold spans."""
    return any(is_relevant(chunk, g) for g in gold)
