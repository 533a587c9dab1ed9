"""Gold evidence for the synthetic queries, chosen by the pipeline (never by the model).

Per document and type the sampler draws ``per_doc[type]`` candidates (fewer when the document
has too few eligible spans):

* **factoid** — ``sentences`` (default 1–3) consecutive sentences of one paragraph, between
  ``span_min_chars`` and ``span_max_chars`` characters;
* **underspecified** — the same kind of span that also contains a capitalized word that does not
  start a sentence (a name the query must then avoid), when ``underspecified_require_name``;
* **multihop** — two such spans (``multihop_sentences``, default 1–2 sentences each) in
  **different top-level sections**;
* **structural** — one whole top-level section (the level-1 section with all its subsections,
  :func:`structablate.corpus.flatten.top_section_ids`), between ``structural_min_chars`` and
  ``structural_max_chars``.

Sentence windows never cross a paragraph (sentences from
:func:`structablate.text.sentences.sentence_spans`, trimmed). Within a document the sentence
spans of all candidates are pairwise disjoint (no two queries share an evidence sentence) and
structural candidates are distinct sections. Spans are half-open character offsets on the flat
text; a multihop pair is stored in document order.

Randomness: each document gets its own generator,
``numpy.random.default_rng([seed, int(sha256(doc_id)[:16], 16)])``, so a document's candidates
depend only on the seed, the document and the config — not on which other documents are in the
corpus or in what order. Within a document the types are drawn in the order factoid,
underspecified, multihop, structural, each by a seeded permutation of its eligible spans.

Query ids are ``{qtype}:{doc_id}:{k}`` with whitespace runs of the doc_id replaced by ``_``
(``factoid:Apollo_8:0``), ``k`` the draw index within the document and type.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from structablate.corpus.flatten import FlatDocument, top_section_ids
from structablate.queries.config import QueryGenSettings, per_doc_count
from structablate.text.sentences import sentence_spans

Span = tuple[int, int]

# a capitalized word after a lower-case letter, a digit or a comma/semicolon/colon and a space:
# a name inside a sentence, not a sentence start
_NAME = re.compile(r"(?<=[a-z0-9,;:]) [A-Z][\w'’-]+")


@dataclass(frozen=True)
class Candidate:
    """One query to generate: its type and gold span(s) in one document."""

    qid: str
    doc_id: str
    qtype: str
    spans: tuple[Span, ...]
    top_sections: tuple[int, ...]
    """The top-level section (``section_idx`` of its level-1 head) of each span."""


@dataclass(frozen=True)
class _Window:
    start: int
    end: int
    para_idx: int
    top: int


def doc_rng(seed: int, doc_id: str) -> np.random.Generator:
    """The per-document generator (see the module docstring)."""
    h = int(hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:16], 16)
    return np.random.default_rng([int(seed), h])


def top_level_groups(doc: FlatDocument) -> dict[int, tuple[int, int]]:
    """Top-level section id -> its whole character span (all its subsections)."""
    if not doc.sections:
        return {}
    groups: dict[int, tuple[int, int]] = {}
    for sec, top in zip(doc.sections, top_section_ids(doc.sections), strict=True):
        s, e = groups.get(top, (sec.start, sec.end))
        groups[top] = (min(s, sec.start), max(e, sec.end))
    return groups


def _para_tops(doc: FlatDocument) -> list[int]:
    out = [-1] * len(doc.paragraphs)
    for sec, top in zip(doc.sections, top_section_ids(doc.sections), strict=True):
        for p in range(sec.para_start, sec.para_end):
            out[p] = top
    return out


def sentence_windows(
    doc: FlatDocument, n_range: tuple[int, int], min_chars: int, max_chars: int
) -> list[_Window]:
    """Every run of ``n_range`` consecutive sentences of one paragraph within the size bounds,
    in document order (then by length)."""
    tops = _para_tops(doc)
    out: list[_Window] = []
    lo, hi = n_range
    for p in doc.paragraphs:
        sents = sentence_spans(doc.text, p.start, p.end)
        for i in range(len(sents)):
            for n in range(lo, hi + 1):
                if i + n > len(sents):
                    break
                s, e = sents[i][0], sents[i + n - 1][1]
                if min_chars <= e - s <= max_chars:
                    out.append(_Window(s, e, p.para_idx, tops[p.para_idx]))
    return out


def has_inner_name(text: str) -> bool:
    """Whether ``text`` holds a capitalized word that does not start a sentence."""
    return _NAME.search(text) is not None


def _disjoint(span: Span, used: Sequence[Span]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in used)


def sample_document(doc: FlatDocument, cfg: QueryGenSettings) -> list[Candidate]:
    """The candidates of one document, in type order then draw order."""
    rng = doc_rng(cfg.seed, doc.doc_id)
    qid_doc = "_".join(doc.doc_id.split())  # qids without whitespace (TREC files split on it)
    out: list[Candidate] = []
    used: list[Span] = []

    def add(qtype: str, k: int, spans: Sequence[Span], tops: Sequence[int]) -> None:
        order = sorted(range(len(spans)), key=lambda i: spans[i])
        out.append(Candidate(
            qid=f"{qtype}:{qid_doc}:{k}", doc_id=doc.doc_id, qtype=qtype,
            spans=tuple(spans[i] for i in order), top_sections=tuple(tops[i] for i in order)))

    single = sentence_windows(doc, cfg.sentences, cfg.span_min_chars, cfg.span_max_chars)
    for qtype in ("factoid", "underspecified"):
        if qtype not in cfg.types:
            continue
        pool = single
        if qtype == "underspecified" and cfg.underspecified_require_name:
            pool = [w for w in single if has_inner_name(doc.text[w.start : w.end])]
        k = 0
        for i in rng.permutation(len(pool)) if pool else []:
            if k >= per_doc_count(cfg, qtype):
                break
            w = pool[int(i)]
            if _disjoint((w.start, w.end), used):
                used.append((w.start, w.end))
                add(qtype, k, [(w.start, w.end)], [w.top])
                k += 1

    if "multihop" in cfg.types:
        pool = sentence_windows(doc, cfg.multihop_sentences, cfg.span_min_chars,
                                cfg.span_max_chars)
        order = [pool[int(i)] for i in rng.permutation(len(pool))] if pool else []
        k = 0
        for a in order:
            if k >= per_doc_count(cfg, "multihop"):
                break
            if not _disjoint((a.start, a.end), used):
                continue
            for b in order:
                if b.top != a.top and _disjoint((b.start, b.end), used + [(a.start, a.end)]):
                    used.extend([(a.start, a.end), (b.start, b.end)])
                    add("multihop", k, [(a.start, a.end), (b.start, b.end)], [a.top, b.top])
                    k += 1
                    break

    if "structural" in cfg.types:
        groups = top_level_groups(doc)
        hi = cfg.structural_max_chars
        pool_g = [(top, span) for top, span in sorted(groups.items())
                  if span[1] - span[0] >= cfg.structural_min_chars
                  and (hi is None or span[1] - span[0] <= hi)]
        perm = rng.permutation(len(pool_g)) if pool_g else []
        for k, i in enumerate(perm[: per_doc_count(cfg, "structural")]):
            top, span = pool_g[int(i)]
            add("structural", k, [span], [top])
    return out


def sample_candidates(docs: Sequence[FlatDocument], cfg: QueryGenSettings) -> list[Candidate]:
    """Candidates of every document, in document order."""
    out: list[Candidate] = []
    for doc in docs:
        out.extend(sample_document(doc, cfg))
    seen: set[str] = set()
    for c in out:
        if c.qid in seen:
            raise ValueError(f"duplicate query id {c.qid!r}: two doc_ids differ only in "
                             "whitespace (qids replace whitespace runs with '_')")
        seen.add(c.qid)
    return out
