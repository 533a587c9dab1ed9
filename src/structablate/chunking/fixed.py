"""Size-matched fixed windows (conditions A0 and A1).

Per document, the target window is ``target_tokens`` (the mean content-token length of that
document's structural chunks, computed by the caller). The document's ``N`` tokens are cut into
``n = max(1, round(N / target_tokens))`` windows whose ideal edges sit at ``i * N / n`` tokens;
each edge snaps to the nearest sentence start within ``snap_tokens`` tokens (ties: the earlier
one), or else to the nearest word start. Windows ignore paragraph and section boundaries
(paragraph starts are sentence starts, so they are candidates like any other). Because ``n``
follows from the structural mean, a document gets as many windows as it has structural chunks
up to rounding, which is what makes the sizes match.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from structablate.chunking.structural import ChunkSpan
from structablate.text.sentences import word_starts_array


def fixed_windows(
    text: str,
    sentence_spans: Sequence[tuple[int, int]],
    token_starts: np.ndarray,
    target_tokens: float,
    *,
    snap_tokens: int = 15,
    section_bounds: Sequence[tuple[int, int, int, int]] = (),
) -> list[ChunkSpan]:
    """Plan the fixed windows of one document.

    ``sentence_spans`` are the document's trimmed sentences in order; ``section_bounds`` holds
    ``(start, end, section_idx, top_section)`` per section and assigns each window to the
    section holding most of its characters (for bookkeeping; A0 ignores sections).
    """
    if target_tokens <= 0:
        raise ValueError(f"target window must be positive, got {target_tokens}")
    if not sentence_spans:
        return []
    doc_start, doc_end = sentence_spans[0][0], sentence_spans[-1][1]
    total = int(np.searchsorted(token_starts, doc_end) - np.searchsorted(token_starts, doc_start))
    n = max(1, round(total / target_tokens))
    # candidate cut positions as token indices
    sent_pos = np.asarray([a for a, _ in sentence_spans[1:]], dtype=np.int64)
    sent_tok = np.searchsorted(token_starts, sent_pos)
    words = word_starts_array(text, doc_start, doc_end)[1:]
    word_tok = np.searchsorted(token_starts, words)
    base = int(np.searchsorted(token_starts, doc_start))
    cuts: list[int] = []  # character positions
    last_tok = base
    for i in range(1, n):
        ideal = base + i * total / n
        pos = _snap(ideal, sent_tok, sent_pos, snap_tokens, last_tok)
        if pos is None:
            pos = _snap(ideal, word_tok, words, None, last_tok)
        if pos is None:
            continue
        cuts.append(pos)
        last_tok = int(np.searchsorted(token_starts, pos))
    edges = [doc_start, *cuts, doc_end]
    out: list[ChunkSpan] = []
    for a, b in zip(edges, edges[1:], strict=False):
        seg = text[a:b]
        end = a + len(seg.rstrip())
        if end <= a:
            continue
        if section_bounds:
            idx, top = _majority_section(a, end, section_bounds)
        else:
            idx, top = 0, 0
        ntok = int(np.searchsorted(token_starts, end) - np.searchsorted(token_starts, a))
        out.append(ChunkSpan(a, end, idx, top, ntok))
    return out


def _snap(
    ideal: float,
    cand_tok: np.ndarray,
    cand_pos: np.ndarray,
    window: int | None,
    after_tok: int,
) -> int | None:
    """The candidate position nearest ``ideal`` (in tokens), strictly after ``after_tok``."""
    ok = cand_tok > after_tok
    if window is not None:
        ok &= np.abs(cand_tok - ideal) <= window
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    dist = np.abs(cand_tok[idx] - ideal)
    best = idx[np.argmin(dist)]  # argmin returns the first (earliest) on ties
    return int(cand_pos[best])


def _majority_section(
    start: int, end: int, section_bounds: Sequence[tuple[int, int, int, int]]
) -> tuple[int, int]:
    best, best_overlap = None, -1
    for s, e, idx, top in section_bounds:
        ov = min(end, e) - max(start, s)
        if ov > best_overlap:
            best, best_overlap = (idx, top), ov
    assert best is not None
    return best
