"""Structural chunks: one per section, split when over ``t_max``, merged when under ``t_min``.

Works on any sections table (gold or induced, same contract), so the G family and the A
family differ only in which sections they read.

Rules (content tokens of the embedder's tokenizer):

1. Each section's sentences form one piece. A piece over ``t_max`` tokens is split at sentence
   boundaries into the fewest near-equal parts of at most ``t_max`` tokens (a single sentence
   over ``t_max`` is first cut at word starts; a single whitespace-free word over ``t_max``
   stays whole).
2. A piece under ``t_min`` tokens is merged into a neighbouring piece: a neighbour in the same
   top-level section is preferred, then the neighbour whose merge stays within ``t_max``, then
   the smaller neighbour, then the following one. Merging always takes the first piece (in
   document order) under ``t_min`` and repeats until no piece is under ``t_min`` or the
   document is one piece.

What this guarantees:

- Every chunk has at least ``t_min`` tokens, unless its whole document has fewer.
- Every chunk has at most ``t_max + 3·(t_min − 1)`` tokens (527 at the defaults 350/60). If
  the chunk holds a whitespace-free word longer than ``t_max`` (which is never cut), replace
  ``t_max`` by that word's length. ``t_max + t_min − 1`` (409) is *not* a bound.
  Why: the pieces after the first one under ``t_min`` are still unmerged (at most ``t_max``),
  and the ones before it are never under ``t_min`` again. A piece of at most ``t_max`` grows
  past ``t_max`` by absorbing one piece under ``t_min``. Once over ``t_max`` it is never the
  choice of a small piece on its left (that neighbour is unmerged, so at most ``t_max``, and
  wins on size), and a small piece on its right chooses it only (a) when the small piece
  shares its top-level section and the small piece's other neighbour does not, or (b) when
  the small piece is the document's last (or its other neighbour is an unsplit word over
  ``t_max``). After (a) the next right neighbour lies in another top-level section, so only
  (b) can follow: at most three absorptions in all. Example at 350/60: pieces of 59, 350, 59
  tokens in one top-level section and a last 59-token top-level section give one chunk of
  527. Splitting again would undo the merge, so the overshoot is kept.
- Merges cross subsection boundaries within a top-level section (a short subsection joins a
  sibling: by design). A merge crosses a *top-level* boundary only when neither neighbour is
  in the small piece's top-level section, i.e. when all that is left of a top-level section is
  one piece under ``t_min`` tokens (say a one-line "Conclusion"). The merged chunk then carries
  the text of both and the ``top_section`` of its majority section, so for two-stage routing
  (section = document + top-level section) the small top-level section is routed as part of its
  neighbour. This is deliberate: keeping it apart would give routing a centroid built from one
  chunk under ``t_min`` tokens, break the size floor that size matching against the fixed
  windows relies on, and change A3's chunks too (A4 reads A3's chunkset); section recall is
  computed from the chunk table's (doc_id, top_section) ranges, so it judges the sections the
  router really sees. :func:`structablate.chunking.build.chunk_stats` reports how many chunks
  merged across sections and across top-level sections.

A merged chunk belongs to the section that contributes most of its tokens (ties: the earlier
section).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from structablate.chunking.spans import Unit, balanced_groups, make_units
from structablate.corpus.flatten import Paragraph, Section, top_section_ids
from structablate.settings import ChunkingSettings
from structablate.text.sentences import sentence_spans


@dataclass(frozen=True)
class ChunkSpan:
    """A planned chunk: trimmed ``[start, end)`` plus its section and planning token count."""

    start: int
    end: int
    section_idx: int
    top_section: int
    tokens: int


@dataclass
class _Piece:
    units: list[Unit]
    owners: dict[int, int]  # section_idx -> tokens contributed
    top: int
    tokens: int = -1  # sum of the units' tokens (filled in when not given)

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = sum(u.tokens for u in self.units)


def structural_chunks(
    text: str,
    paragraphs: Sequence[Paragraph],
    sections: Sequence[Section],
    token_starts: np.ndarray,
    *,
    t_max: int = ChunkingSettings.t_max,
    t_min: int = ChunkingSettings.t_min,
    paragraph_sentences: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> list[ChunkSpan]:
    """Plan the structural chunks of one document (see module docstring for the rules).

    ``paragraph_sentences[i]`` may hold the sentence spans of ``paragraphs[i]`` (as
    :func:`~structablate.text.sentences.sentence_spans` gives them) when the caller has
    them already.
    """
    if t_min < 0 or t_max <= 0 or t_min > t_max:
        raise ValueError(f"need 0 <= t_min <= t_max and t_max > 0 (got {t_min}, {t_max})")
    tops = top_section_ids(sections)
    pieces: list[_Piece] = []
    for s, top in zip(sections, tops, strict=True):
        spans: list[tuple[int, int]] = []
        if paragraph_sentences is None:
            for p in paragraphs[s.para_start : s.para_end]:
                spans.extend(sentence_spans(text, p.start, p.end))
        else:
            for sents in paragraph_sentences[s.para_start : s.para_end]:
                spans.extend(sents)
        units = make_units(text, spans, token_starts, t_max)
        for group in balanced_groups([u.tokens for u in units], t_max):
            us = [units[i] for i in group]
            pieces.append(_Piece(us, {s.section_idx: sum(u.tokens for u in us)}, top))
    _merge_small(pieces, t_max, t_min)
    out = []
    for p in pieces:
        owner = max(sorted(p.owners), key=lambda k: p.owners[k])
        out.append(
            ChunkSpan(
                start=p.units[0].start,
                end=p.units[-1].end,
                section_idx=owner,
                top_section=tops[owner] if owner < len(tops) else p.top,
                tokens=p.tokens,
            )
        )
    return out


def _merge_small(pieces: list[_Piece], t_max: int, t_min: int) -> None:
    while len(pieces) > 1:
        small = next((i for i, p in enumerate(pieces) if p.tokens < t_min), None)
        if small is None:
            return
        cand = [j for j in (small - 1, small + 1) if 0 <= j < len(pieces)]
        size = pieces[small].tokens

        def key(j: int, small: int = small, size: int = size) -> tuple:
            nb = pieces[j]
            return (
                nb.top != pieces[small].top,
                nb.tokens + size > t_max,
                nb.tokens,
                j < small,
            )

        j = min(cand, key=key)
        a, b = (j, small) if j < small else (small, j)
        merged_owners = dict(pieces[a].owners)
        for k, v in pieces[b].owners.items():
            merged_owners[k] = merged_owners.get(k, 0) + v
        owner = max(sorted(merged_owners), key=lambda k: merged_owners[k])
        top = pieces[a].top if owner in pieces[a].owners else pieces[b].top
        pieces[a] = _Piece(pieces[a].units + pieces[b].units, merged_owners, top,
                           pieces[a].tokens + pieces[b].tokens)
        del pieces[b]
