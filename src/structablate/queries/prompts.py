"""Prompts for query writing and paraphrasing, the answer schema, and the answer parser.

The writer sees only the evidence text (never the rest of the document, its title or its
headings); the paraphraser sees only the query. Both answer ``{"query": "..."}``; with
``use_schema`` the backend constrains decoding to that schema, and :func:`parse_query` also
accepts plain text (a model or backend that ignores the schema).
"""

from __future__ import annotations

import json
import re
from typing import Any

SYSTEM_PROMPT = (
    "You write search queries for a retrieval benchmark. You answer with JSON only: "
    '{"query": "..."}.'
)

NO_COPY = (
    "Use your own words: do not copy any phrase of three or more words from the text, and "
    "prefer synonyms and a different sentence structure."
)

INSTRUCTIONS = {
    "factoid": (
        "Write one specific question that the passage below answers. A reader must be able to "
        "answer it from this passage alone. " + NO_COPY
    ),
    "underspecified": (
        "Write one question that the passage below answers, but refer to its main person, "
        "place, organisation or thing only vaguely (for example \"the commander\", \"the "
        "spacecraft\", \"the city\"), never by its name. " + NO_COPY
    ),
    "multihop": (
        "Write one question that can only be answered by combining facts from both passages "
        "below (Passage A and Passage B). " + NO_COPY
    ),
    "structural": (
        "Below is one whole section of a longer text. Write one question whose answer is this "
        "section as a whole (what it is about overall), not a single detail of it. " + NO_COPY
    ),
}

PARAPHRASE = (
    "Rewrite this search question with different words and a different sentence structure. "
    "Keep its meaning exactly; add no information{vague}. Answer with JSON only: "
    '{{"query": "..."}}.\n\nQuestion: {query}'
)
VAGUE = " and keep vague references vague (do not introduce names)"


def query_schema(max_chars: int = 300) -> dict[str, Any]:
    """JSON schema of an answer: one string field ``query``."""
    return {
        "type": "object",
        "properties": {"query": {"type": "string", "maxLength": int(max_chars)}},
        "required": ["query"],
        "additionalProperties": False,
    }


def cut_text(text: str, max_chars: int | None) -> str:
    """``text`` cut at a word boundary to at most ``max_chars`` characters, marked " …"."""
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut.rstrip() + " …"


def writer_messages(qtype: str, evidence: list[str], max_chars: int | None) -> list[dict]:
    """Messages asking for one ``qtype`` query about ``evidence`` (one text, two for
    multihop)."""
    if qtype == "multihop":
        if len(evidence) != 2:
            raise ValueError("a multihop query needs exactly two evidence texts")
        half = None if max_chars is None else max_chars // 2
        body = (f"Passage A:\n{cut_text(evidence[0], half)}\n\n"
                f"Passage B:\n{cut_text(evidence[1], half)}")
    else:
        if len(evidence) != 1:
            raise ValueError(f"a {qtype} query needs exactly one evidence text")
        label = "Section" if qtype == "structural" else "Passage"
        body = f"{label}:\n{cut_text(evidence[0], max_chars)}"
    user = f"{INSTRUCTIONS[qtype]}\n\n{body}\n\nAnswer with JSON only: {{\"query\": \"...\"}}."
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def paraphrase_messages(qtype: str, query: str) -> list[dict]:
    """Messages asking for a paraphrase of ``query`` (the evidence is not shown)."""
    user = PARAPHRASE.format(query=query, vague=VAGUE if qtype == "underspecified" else "")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_FIELD = re.compile(r'"query"\s*:\s*"((?:[^"\\]|\\.)*)"?', re.S)
_LABEL = re.compile(r"^\s*(?:query|question|paraphrase|rewritten question)\s*:\s*", re.I)


def parse_query(text: str | None) -> str | None:
    """The query in a model answer, whitespace-folded; ``None`` when there is none.

    Order: the ``query`` field of a JSON object; else a ``"query": "…"`` field found by regex
    (a truncated or chatty answer); else the first non-empty line, without a ``Query:`` /
    ``Question:`` label and wrapping quotes.
    """
    if not text or not text.strip():
        return None
    raw = text.strip()
    q: str | None = None
    try:
        obj = json.loads(raw)
        if isinstance(obj, dict) and isinstance(obj.get("query"), str):
            q = obj["query"]
        elif isinstance(obj, str):
            q = obj
    except json.JSONDecodeError:
        m = _FIELD.search(raw)
        if m:
            try:
                q = json.loads(f'"{m.group(1)}"')
            except json.JSONDecodeError:
                q = m.group(1)
        elif not raw.startswith("{"):
            line = next(ln for ln in raw.splitlines() if ln.strip())
            q = _LABEL.sub("", line).strip().strip("\"'“”‘’`")
    if q is None:
        return None
    q = " ".join(q.split())
    return q or None
