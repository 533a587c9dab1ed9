"""LLM headings for sections whose boundaries and levels come from elsewhere (TextTiling).

The hybrid inducer (``induction.inducer: texttiling`` with ``texttiling.titles: llm``) keeps
TextTiling's boundaries and levels and asks an LLM only for the headings: one call per
document shows the sections, numbered hierarchically (``1``, ``1.1``, ``2``, …), each with its
paragraphs, and the model answers ``{"titles": [...]}`` with exactly one heading per section,
in order (a JSON schema fixes the count where the backend constrains decoding). The task is
deliberately easier than full induction: the model never places a boundary or a level.

Input size follows the induction's rule (:func:`structablate.structure.induce.listing_budget`):
whole paragraphs when the document fits the model's context, else every paragraph cut to the
first cap of ``para_char_caps`` that fits, else (as induction's windows) the sections are split
into consecutive groups that fit at the smallest cap, one call per group. A call also covers
at most ``(max_tokens - 32) // 24`` sections, so its answer is never cut off. A missing, empty or
surplus answer keeps the TF-IDF heading for the sections it does not cover, and the counts say
how many headings came from the model.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from structablate.corpus.flatten import FlatDocument
from structablate.llm.backends import ContextOverflowError
from structablate.settings import InductionSettings
from structablate.structure.induce import (
    count_truncated,
    listing_budget,
    para_caps,
    truncate_paragraph,
)
from structablate.structure.tiling import MAX_TITLE_CHARS, Entry, clean_title

log = logging.getLogger(__name__)

TITLE_SYSTEM = "You write the missing headings of documents. You answer with JSON only."

TITLE_INSTRUCTIONS = """\
Below are the sections of {what}, numbered {first} to {last} (a number like 2.1 marks a \
subsection of section 2). Their headings have been removed. Each section lists its \
paragraphs.

Write the heading of every section: a few words (at most eight) that name the section's \
topic, as the author would write it. Do not copy a sentence from the text.

Answer with JSON only, in this form, with exactly {n} headings in section order:
{{"titles": ["<heading of section {first}>", ..., "<heading of section {last}>"]}}

{listing}"""


TOKENS_PER_TITLE = 24
"""Answer tokens reserved per heading (at most eight words, quoted, comma): a call covers at
most ``(max_tokens - 32) // TOKENS_PER_TITLE`` sections, so its answer is never cut off."""

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def titles_schema(n: int) -> dict[str, Any]:
    """JSON schema of the answer: exactly ``n`` non-empty headings."""
    return {
        "type": "object",
        "properties": {"titles": {
            "type": "array", "minItems": n, "maxItems": n,
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_CHARS},
        }},
        "required": ["titles"],
        "additionalProperties": False,
    }


def section_numbers(entries: Sequence[Entry]) -> list[str]:
    """Hierarchical numbers (``1``, ``1.1``, ``2``) of sections with the given levels."""
    counters: list[int] = []
    out = []
    for e in entries:
        depth = max(1, e.level)
        counters = counters[:depth] + [0] * max(0, depth - len(counters))
        counters[depth - 1] += 1
        out.append(".".join(str(c) for c in counters[:depth]))
    return out


def parse_titles(text: str) -> list[str] | None:
    """The headings of an answer (cleaned), or ``None`` when it holds no list of strings. An
    answer cut off mid-list keeps its complete headings."""
    s = text.strip()
    try:
        obj = json.loads(s)
    except ValueError:
        start = s.find("{")
        try:
            obj, _ = json.JSONDecoder().raw_decode(s[start:]) if start >= 0 else (None, 0)
        except ValueError:
            obj = None
        if obj is None:
            m = re.search(r'"titles"\s*:\s*\[', s)
            if not m:
                return None
            tail = s[m.end():]
            items = []
            for q in _STRING.finditer(tail):
                rest = tail[q.end():].lstrip()
                if not rest or rest[0] not in ",]":
                    break  # the last string was cut off
                items.append(json.loads(f'"{q.group(1)}"'))
            return [clean_title(t) for t in items] or None
    if isinstance(obj, dict):
        obj = obj.get("titles")
    if not isinstance(obj, list):
        return None
    return [clean_title(t) for t in obj]


@dataclass
class TitledDocument:
    """Headings for one document: the final titles, how many the model supplied, the calls,
    and the paragraph cap the model saw the document with (``None``: whole paragraphs) with
    the number of paragraphs it cut."""

    titles: list[str]
    from_llm: int
    calls: int
    para_char_cap: int | None = None
    truncated_paragraphs: int = 0


class LLMTitler:
    """Headings for given sections from an :class:`~structablate.llm.client.LLMClient`."""

    def __init__(self, client, config: InductionSettings):
        self.client = client
        self.config = config

    def _fixed_chars(self) -> int:
        return len(TITLE_SYSTEM) + len(TITLE_INSTRUCTIONS)

    def _listing(self, doc: FlatDocument, entries: Sequence[Entry], numbers: Sequence[str],
                 ends: Sequence[int], idx: Sequence[int], cap: int | None) -> str:
        blocks = []
        for k in idx:
            lines = [f"Section {numbers[k]}:"]
            lines += [f"[{i}] {truncate_paragraph(doc.paragraph_text(i), cap)}"
                      for i in range(entries[k].start, ends[k])]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def budget(self) -> int:
        """Characters the section listing of one call may take."""
        return listing_budget(self.config, fixed_chars=self._fixed_chars(), correction=False)

    def plan(self, doc: FlatDocument, entries: Sequence[Entry]
             ) -> tuple[int | None, list[list[int]]]:
        """The paragraph cap and the groups of section indices, one call each."""
        n = len(doc.paragraphs)
        ends = [e.start for e in entries[1:]] + [n]
        numbers = section_numbers(entries)
        budget = self.budget()
        most = self.max_sections_per_call()
        caps = para_caps(self.config)
        for cap in (None, *caps):  # one call, if any cap allows it
            groups = self._groups(doc, entries, numbers, ends, cap, budget, most)
            if groups is not None and len(groups) == 1:
                return cap, groups
        cap = caps[-1]  # else several calls at the smallest cap
        return cap, self._groups(doc, entries, numbers, ends, cap, None, most)

    def max_sections_per_call(self) -> int:
        return max(1, (self.config.max_tokens - 32) // TOKENS_PER_TITLE)

    def _groups(self, doc, entries, numbers, ends, cap, budget, most) -> list[list[int]] | None:
        """Consecutive sections packed into calls of at most ``most`` sections and ``budget``
        listing characters; ``None`` when one section alone exceeds the budget (``budget``
        ``None``: no character limit, a section then goes alone)."""
        hard = budget if budget is not None else self.budget()
        groups: list[list[int]] = [[]]
        size = 0
        for k in range(len(entries)):
            block = len(self._listing(doc, entries, numbers, ends, [k], cap)) + 2
            if budget is not None and block > budget:
                return None
            if groups[-1] and (size + block > hard or len(groups[-1]) >= most):
                groups.append([])
                size = 0
            groups[-1].append(k)
            size += block
        return groups

    def requests(self, doc: FlatDocument, entries: Sequence[Entry]):
        """The requests for one document, with the section indices each one covers."""
        cap, groups = self.plan(doc, entries)
        n = len(doc.paragraphs)
        ends = [e.start for e in entries[1:]] + [n]
        numbers = section_numbers(entries)
        out = []
        for g in groups:
            what = "a document" if len(groups) == 1 else "one part of a document"
            user = TITLE_INSTRUCTIONS.format(
                what=what, first=numbers[g[0]], last=numbers[g[-1]], n=len(g),
                listing=self._listing(doc, entries, numbers, ends, g, cap))
            messages = [{"role": "system", "content": TITLE_SYSTEM},
                        {"role": "user", "content": user}]
            req = self.client.request(
                messages, json_schema=titles_schema(len(g)) if self.config.use_schema else None,
                max_tokens=min(self.config.max_tokens,
                               32 + self.config.tokens_per_section * len(g)))
            out.append((g, req))
        return cap, out

    def titles_many(self, docs: Sequence[FlatDocument],
                    entries: Sequence[Sequence[Entry]]) -> list[TitledDocument]:
        """Headings for every document's sections; TF-IDF ones (``entries``' titles) stay
        where the model gives none."""
        jobs = []
        caps = []
        for d, (doc, ents) in enumerate(zip(docs, entries, strict=True)):
            cap, reqs = self.requests(doc, ents)
            caps.append(cap)
            jobs.extend((d, g, r) for g, r in reqs)
        try:
            answers: list[str | None] = list(self.client.generate_many([r for _, _, r in jobs]))
        except ContextOverflowError:
            answers = []
            for _, _, r in jobs:
                try:
                    answers.append(self.client.generate_many([r])[0])
                except ContextOverflowError as exc:
                    log.warning("%s", exc)
                    answers.append(None)
        out = [TitledDocument([e.title for e in ents], 0, 0, cap, count_truncated(doc, cap))
               for doc, ents, cap in zip(docs, entries, caps, strict=True)]
        for (d, g, _), text in zip(jobs, answers, strict=True):
            out[d].calls += 1
            got = parse_titles(text) if text is not None else None
            if not got:
                continue
            for k, title in zip(g, got, strict=False):  # surplus answers are ignored
                if title:
                    out[d].titles[k] = title
                    out[d].from_llm += 1
        return out
