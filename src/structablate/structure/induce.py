"""LLM structure induction (paper §3.3, Appendix H).

The model sees a document's paragraphs, numbered, with every heading stripped (the paper's
input; the document title is shown only with ``show_title``) and answers with a JSON section
list (see :mod:`structablate.structure.tiling` for the format: 0-based, inclusive paragraph
ranges). The answer is validated mechanically; a failing answer gets **one** self-correction
round that quotes the violations back; whatever still fails is snapped to a legal tiling by the
deterministic repair. The result verifies with ``verify_sections(check_level_steps=True)``.

Long documents. The model sees whole paragraphs whenever the document fits the model's context;
only a document that does not fit is shown with truncated paragraphs, and only one that does
not fit even then is split into windows. The budget is in characters, so the prompt (and its
cache key) does not depend on a tokenizer: :func:`listing_budget` turns the context length in
tokens (``context_tokens``, by default what the stage's llm block states:
:func:`structablate.settings.context_tokens`) into characters with ``chars_per_token`` (3.0,
conservative: whole documents of the bundled QASPER and Wikipedia samples hold 4.0-5.1
characters per token with the Qwen2.5 and SmolLM2 tokenizers, their numbered prompts 3.3-4.7,
densest with 120-character caps, and the correction message 3.6), after reserving the answers
(``max_tokens`` per round, two rounds with self-correction), the correction message and the
fixed prompt text. A document whose numbered listing exceeds the budget has each paragraph cut
to the first ``cap`` characters (at a word boundary, marked with " …"), trying the caps of
``para_char_caps`` in order; if even the smallest cap does not fit, the document is split into
consecutive, non-overlapping windows of paragraphs that each fit at the smallest cap, each
window is induced on its own (paragraph numbers stay global) and the windows' sections are
concatenated (a window boundary is always a section boundary; level steps are re-clamped across
the seam).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from structablate.corpus.flatten import FlatDocument, Section
from structablate.corpus.verify import verify_sections
from structablate.llm.backends import ContextOverflowError
from structablate.llm.budget import prompt_char_budget
from structablate.settings import InductionSettings
from structablate.structure.tiling import (
    FIRST,
    LAST,
    Entry,
    clamp_level_steps,
    entries_to_sections,
    items_to_entries,
    parse_output,
    repair_items,
    sections_schema,
    validate_items,
)

log = logging.getLogger(__name__)

OVERFLOW = "the prompt does not fit the model's context window"

STATUSES = ("valid", "self_corrected", "repaired", "fallback")
"""Per-document outcome: legal at once, legal after the correction round, repaired, or no
usable output at all (one fallback section)."""

SYSTEM_PROMPT = (
    "You recover the section structure of documents whose headings were removed. "
    "You answer with JSON only."
)

INSTRUCTIONS = """\
Below are the paragraphs of {what}, numbered {lo} to {last}. Its headings have been removed. \
Divide the paragraphs into sections as the author would have, give each section a short \
title, and give each section a nesting level.

Rules:
1. Answer with JSON only, in this form:
{{"sections": [{{"title": <title>, "level": <level>, "{first}": <number>, "{lastk}": <number>}}, \
...]}}
2. "{first}" and "{lastk}" are the numbers of the section's first and last paragraph \
(both included).
3. Every paragraph belongs to exactly one section. List the sections in order: the first \
starts at paragraph {lo}, each next one starts right after the previous one's last \
paragraph, and the last one ends at paragraph {last}. No gaps, no overlaps.
4. Level 1 is a top-level section, level 2 a subsection of the level-1 section before it, and \
so on. The first section has level 1, and a section's level is at most one more than the \
level of the section before it. A document has several level-1 sections.
5. A section that has subsections keeps at least its first paragraph for itself.
6. A title names the section's topic in at most eight words; it is not a sentence copied \
from a paragraph.

Paragraphs:
{listing}"""

CORRECTION = """\
Your answer breaks these rules:
{violations}
Answer again with the corrected JSON for paragraphs {lo} to {last}, and nothing else."""


MESSAGE_OVERHEAD_TOKENS = 12
"""Tokens a chat template adds per message (role markers), reserved in the budget."""

MAX_VIOLATION_CHARS = 160
"""Characters reserved per quoted violation in the correction message."""


def para_caps(cfg: InductionSettings) -> tuple[int, ...]:
    """The per-paragraph character caps of ``cfg.para_char_caps`` tried in order when whole
    paragraphs do not fit (``null`` entries, the old explicit "whole paragraphs first" step
    that is now implicit, are skipped). Raises ``ValueError`` when none is left or one is not
    positive."""
    caps = tuple(int(c) for c in cfg.para_char_caps if c is not None and c != 0)
    if not caps or any(c < 0 for c in caps):
        raise ValueError("induction.para_char_caps must be a non-empty list of positive "
                         f"character counts, got {list(cfg.para_char_caps)}")
    return caps


def listing_budget(cfg: InductionSettings, title: str = "", *, fixed_chars: int | None = None,
                   correction: bool | None = None) -> int:
    """Characters the numbered paragraph listing may take in one prompt.

    ``max_prompt_chars`` when set; else the context (``context_tokens``) minus the answers
    (``max_tokens`` per round, two rounds with self-correction) and the chat template's
    per-message tokens, converted with ``chars_per_token``, minus the characters of the fixed
    prompt text, the title line and (with self-correction) the correction message quoting at
    most ``max_quoted_violations`` violations. Raises ``ValueError`` when the context is
    unknown or leaves no room.
    """
    if cfg.max_prompt_chars is not None:
        return int(cfg.max_prompt_chars)
    correction = cfg.self_correction if correction is None else correction
    rounds = 2 if correction else 1
    messages = 4 if correction else 2
    if fixed_chars is None:
        fixed_chars = len(SYSTEM_PROMPT) + len(INSTRUCTIONS)
    fixed = fixed_chars + len(title) + 200  # + the formatted fields
    if correction:
        fixed += len(CORRECTION) + (cfg.max_quoted_violations + 1) * MAX_VIOLATION_CHARS
    return prompt_char_budget(
        "induction", context_tokens=cfg.context_tokens,
        reserved_tokens=rounds * cfg.max_tokens + messages * MESSAGE_OVERHEAD_TOKENS,
        chars_per_token=cfg.chars_per_token, fixed_chars=fixed,
        fixed_budget_key="max_prompt_chars",
        shown=f"for the paragraphs after {rounds} answer(s) of max_tokens={cfg.max_tokens} "
              "(or lower induction.max_tokens)")


@dataclass
class InducedStructure:
    """One document's induced sections and how they came about.

    ``para_char_cap``: the cap the paragraphs were shown with (``None``: whole);
    ``truncated_paragraphs``: how many of the ``n_paragraphs`` were actually cut by it.
    ``titles_from_llm``: for the hybrid inducer, how many headings the LLM wrote (the rest
    are TF-IDF headings); ``None`` for the other inducers.
    """

    doc_id: str
    sections: list[Section]
    status: str
    inducer: str
    n_windows: int = 1
    para_char_cap: int | None = None
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0
    n_paragraphs: int = 0
    truncated_paragraphs: int = 0
    titles_from_llm: int | None = None


def truncate_paragraph(text: str, cap: int | None) -> str:
    """``text`` cut to at most ``cap`` characters at a word boundary, marked with " …"."""
    if cap is None or len(text) <= cap:
        return text
    cut = text[:cap]
    if " " in cut[cap // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + " …"


def paragraph_listing(doc: FlatDocument, lo: int, hi: int, cap: int | None) -> str:
    return "\n".join(
        f"[{i}] {truncate_paragraph(doc.paragraph_text(i), cap)}" for i in range(lo, hi)
    )


def _title(doc: FlatDocument, cfg: InductionSettings) -> str:
    return " ".join(doc.title.split()) if cfg.show_title else ""


def plan_windows(
    doc: FlatDocument, cfg: InductionSettings
) -> tuple[int | None, list[tuple[int, int]]]:
    """The paragraph cap (``None``: whole paragraphs) and the windows ``[lo, hi)`` the
    document is induced in: whole paragraphs when the listing fits :func:`listing_budget`,
    else the first cap of ``para_char_caps`` that fits, else windows at the smallest cap."""
    n = len(doc.paragraphs)
    budget = listing_budget(cfg, _title(doc, cfg))
    caps = para_caps(cfg)
    for cap in (None, *caps):
        if len(paragraph_listing(doc, 0, n, cap)) <= budget:
            return cap, [(0, n)]
    cap = caps[-1]
    windows: list[tuple[int, int]] = []
    lo, size = 0, 0
    for i in range(n):
        line = len(f"[{i}] {truncate_paragraph(doc.paragraph_text(i), cap)}") + 1
        if i > lo and size + line > budget:
            windows.append((lo, i))
            lo, size = i, 0
        size += line
    windows.append((lo, n))
    return cap, windows


def count_truncated(doc: FlatDocument, cap: int | None) -> int:
    """Paragraphs of ``doc`` that ``cap`` cuts."""
    if cap is None:
        return 0
    return sum(1 for i in range(len(doc.paragraphs)) if len(doc.paragraph_text(i)) > cap)


def build_messages(
    doc: FlatDocument, lo: int, hi: int, cap: int | None, cfg: InductionSettings
) -> list[dict[str, str]]:
    """The first-round prompt for paragraphs ``[lo, hi)``."""
    title = _title(doc, cfg)
    what = f'the document "{title}"' if title else "a document"
    if (lo, hi) != (0, len(doc.paragraphs)):
        what = f"one part of {what} (paragraphs {lo} to {hi - 1} of {len(doc.paragraphs)})"
    user = INSTRUCTIONS.format(
        what=what, lo=lo, last=hi - 1, first=FIRST, lastk=LAST,
        listing=paragraph_listing(doc, lo, hi, cap),
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def correction_messages(
    first: list[dict[str, str]], answer: str, violations: Sequence[str], lo: int, hi: int,
    cfg: InductionSettings,
) -> list[dict[str, str]]:
    """The self-correction round: the first exchange plus the violations quoted back."""
    shown = list(violations[: cfg.max_quoted_violations])
    if len(violations) > len(shown):
        shown.append(f"... and {len(violations) - len(shown)} more")
    msg = CORRECTION.format(violations="\n".join(f"- {v}" for v in shown), lo=lo, last=hi - 1)
    return [*first, {"role": "assistant", "content": answer}, {"role": "user", "content": msg}]


def _check(text: str, lo: int, hi: int) -> tuple[list[Any] | None, list[str]]:
    items, problems = parse_output(text)
    if items is None:
        return None, problems
    return items, problems + validate_items(items, lo, hi)


class LLMInducer:
    """Induce sections with an :class:`~structablate.llm.client.LLMClient` (Appendix H)."""

    name = "llm"

    def __init__(self, client, config: InductionSettings | None = None):
        """``config``: the induction settings with ``context_tokens`` resolved (None there
        makes :func:`listing_budget` refuse unless ``max_prompt_chars`` is set;
        :func:`structablate.structure.make_inducer` fills it from the stage's llm block)."""
        self.client = client
        self.config = config or InductionSettings()

    def _request(self, messages, lo: int, hi: int):
        """A request for window ``[lo, hi)``: at most one section per paragraph, and a token
        limit of ``min(max_tokens, 64 + tokens_per_section * (hi - lo))``."""
        cfg = self.config
        return self.client.request(
            messages, json_schema=sections_schema(hi - lo) if cfg.use_schema else None,
            max_tokens=min(cfg.max_tokens, 64 + cfg.tokens_per_section * (hi - lo)),
        )

    def induce(self, doc: FlatDocument) -> InducedStructure:
        return self.induce_many([doc])[0]

    def _generate(self, requests) -> list[str | None]:
        """Answers in order; ``None`` for a prompt the backend finds too long for its context
        (that window then falls back to one section instead of failing the run)."""
        try:
            return self.client.generate_many(requests)
        except ContextOverflowError as exc:
            if len(requests) == 1:
                log.warning("%s", exc)
                return [None]
            return [self._generate([r])[0] for r in requests]

    def induce_many(self, docs: Sequence[FlatDocument]) -> list[InducedStructure]:
        """Induce every document, in groups of ``doc_batch`` documents: each group's first
        rounds go to the client as one batch, then its correction rounds. With llama.cpp the
        group is one document, so a correction prompt directly follows the first prompt it
        extends and reuses its KV cache."""
        group = 1 if getattr(self.client, "backend_name", None) == "llamacpp" else max(
            1, self.config.doc_batch)
        out: list[InducedStructure] = []
        for g in range(0, len(docs), group):
            out.extend(self._induce_group(docs[g : g + group]))
        return out

    def _induce_group(self, docs: Sequence[FlatDocument]) -> list[InducedStructure]:
        cfg = self.config
        t0 = time.perf_counter()
        jobs: list[dict[str, Any]] = []
        plans = []
        for d, doc in enumerate(docs):
            if not doc.paragraphs:
                raise ValueError(f"{doc.doc_id}: document has no paragraphs")
            cap, windows = plan_windows(doc, cfg)
            plans.append((cap, windows))
            for lo, hi in windows:
                jobs.append({"doc": d, "lo": lo, "hi": hi,
                             "messages": build_messages(doc, lo, hi, cap, cfg)})
        answers = self._generate([self._request(j["messages"], j["lo"], j["hi"]) for j in jobs])
        retry = []
        for j, text in zip(jobs, answers, strict=True):
            if text is None:
                j["items"], j["violations"], j["status"] = None, [OVERFLOW], None
                continue
            j["items"], j["violations"] = _check(text, j["lo"], j["hi"])
            j["answer"] = text
            j["status"] = "valid" if not j["violations"] else None
            if j["violations"] and cfg.self_correction:
                j["messages2"] = correction_messages(
                    j["messages"], text, j["violations"], j["lo"], j["hi"], cfg)
                retry.append(j)
        if retry:
            answers2 = self._generate(
                [self._request(j["messages2"], j["lo"], j["hi"]) for j in retry])
            for j, text in zip(retry, answers2, strict=True):
                if text is None:
                    continue
                items2, viol2 = _check(text, j["lo"], j["hi"])
                if not viol2:
                    j["items"], j["status"] = items2, "self_corrected"
                elif items2 is not None and (
                        j["items"] is None or len(viol2) <= len(j["violations"])):
                    j["items"] = items2
        by_doc: dict[int, list[dict[str, Any]]] = {}
        for j in jobs:
            by_doc.setdefault(j["doc"], []).append(j)
        elapsed = (time.perf_counter() - t0) / max(1, len(docs))
        out = []
        for d, doc in enumerate(docs):
            entries: list[Entry] = []
            statuses = []
            for j in by_doc[d]:
                if j["status"] is not None:
                    entries.extend(items_to_entries(j["items"]))
                    statuses.append(j["status"])
                    continue
                repaired, usable = repair_items(j["items"], j["lo"], j["hi"], doc.title)
                entries.extend(repaired)
                statuses.append("repaired" if usable else "fallback")
            sections = entries_to_sections(doc.paragraphs, clamp_level_steps(entries))
            bad = verify_sections(doc.paragraphs, sections, check_level_steps=True)
            if bad:  # a bug in the repair, never the model's fault
                raise AssertionError(f"{doc.doc_id}: induced sections fail verification: {bad}")
            status = max(statuses, key=STATUSES.index)
            cap, windows = plans[d]
            out.append(InducedStructure(
                doc_id=doc.doc_id, sections=sections, status=status, inducer=self.name,
                n_windows=len(windows), para_char_cap=cap, n_paragraphs=len(doc.paragraphs),
                truncated_paragraphs=count_truncated(doc, cap),
                violations=[v for j in by_doc[d] for v in j["violations"]],
                seconds=elapsed,
            ))
        return out
