"""Parse, validate and repair an LLM's section list; turn a legal tiling into ``Section``s.

The model answers with JSON ``{"sections": [{"title", "level", "first_paragraph",
"last_paragraph"}, …]}``. Paragraph numbers are the 0-based indices it was shown and the range
is **inclusive** (``first_paragraph`` … ``last_paragraph``: small models handle "paragraphs 3
to 7" better than half-open ranges). :func:`entries_to_sections` converts to the contract's
half-open ``[para_start, para_end)``.

* :func:`parse_output` extracts the list (tolerating code fences, prose around the JSON, and
  output cut off mid-list, whose complete section objects are salvaged).
* :func:`validate_output` returns a list of violations (empty: legal) for the paragraph window
  ``[lo, hi)``: parsable JSON, well-typed fields, ranges in bounds, exact tiling, ``level >=
  1``, first level 1, level steps of at most +1.
* :func:`repair_output` snaps anything usable to a legal tiling, deterministically:

  1. keep items with a usable start (``first_paragraph``, else ``last_paragraph``) inside the
     window; a start below ``lo`` is clamped to ``lo``; titles are cleaned (whitespace folded,
     at most :data:`MAX_TITLE_CHARS`), an empty one becomes ``"Section k"``;
  2. sort by (start, level, original order); among items with the same start keep the first —
     the shallowest, i.e. the parent heading, so its children below still nest under it;
  3. each section runs from its start to the next section's start: a gap is closed by
     extending the previous section, an overlap is resolved by cutting the previous section at
     the next start; the first section starts at ``lo``, the last ends at ``hi``;
  4. levels below 1 become 1, the first section gets level 1, a jump of more than +1 is
     clamped to previous + 1;
  5. nothing usable (unparsable, no item with a start in range): one fallback section over the
     whole window.

A :class:`Entry` list (title, true level, start) is the repaired form. Paths follow the levels:
a section's path is the titles of its open ancestors (the latest section of each lower level)
plus its own title; the stored level is clamped at :data:`~structablate.MAX_LEVEL` while the
path keeps the true depth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from structablate import MAX_LEVEL
from structablate.corpus.flatten import Paragraph, Section

FIRST = "first_paragraph"
LAST = "last_paragraph"
MAX_TITLE_CHARS = 120

def sections_schema(max_items: int | None = None) -> dict[str, Any]:
    """JSON schema of the answer, passed to backends that constrain decoding.

    ``max_items`` (the number of paragraphs shown) bounds the list so a weak model cannot loop
    forever; titles are bounded by :data:`MAX_TITLE_CHARS`. Paragraph numbers are not bounded
    in the schema (grammar converters ignore integer bounds); validation checks them.
    """
    sections: dict[str, Any] = {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
                "level": {"type": "integer"},
                FIRST: {"type": "integer"},
                LAST: {"type": "integer"},
            },
            "required": ["title", "level", FIRST, LAST],
            "additionalProperties": False,
        },
    }
    if max_items:
        sections["maxItems"] = int(max_items)
    return {
        "type": "object",
        "properties": {"sections": sections},
        "required": ["sections"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Entry:
    """A repaired section: title, true level (>= 1, unclamped) and first paragraph."""

    title: str
    level: int
    start: int


_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_output(text: str) -> tuple[list[Any] | None, list[str]]:
    """The section items of a model answer and the parse problems met (empty: clean JSON)."""
    s = _FENCE.sub("", text.strip())
    obj: Any = None
    problems: list[str] = []
    try:
        obj = json.loads(s)
    except ValueError as exc:
        starts = [i for i in (s.find("{"), s.find("[")) if i >= 0]
        if starts:
            try:
                obj, _ = json.JSONDecoder().raw_decode(s[min(starts):])
                problems.append("output has text around the JSON")
            except ValueError:
                obj = None
        if obj is None:
            salvaged = []
            for m in _FLAT_OBJECT.finditer(s):
                try:
                    item = json.loads(m.group(0))
                except ValueError:
                    continue
                if isinstance(item, dict) and ("title" in item or FIRST in item):
                    salvaged.append(item)
            msg = f"output is not valid JSON ({exc.msg} at character {exc.pos})"
            if salvaged:
                return salvaged, [msg + f"; {len(salvaged)} complete section objects salvaged"]
            return None, [msg]
    if isinstance(obj, dict):
        if isinstance(obj.get("sections"), list):
            return obj["sections"], problems
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0], problems + ["the section list is not under the key 'sections'"]
        return None, problems + ["JSON has no 'sections' list"]
    if isinstance(obj, list):
        return obj, problems + ["output is a bare list, not {\"sections\": [...]}"]
    return None, problems + ["JSON is neither an object nor a list"]


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        return int(v)
    return None


def clean_title(title: Any) -> str:
    """Whitespace-folded title, cut to :data:`MAX_TITLE_CHARS` (``""`` for non-strings)."""
    if not isinstance(title, str):
        return ""
    t = " ".join(title.split())
    if len(t) > MAX_TITLE_CHARS:
        t = t[:MAX_TITLE_CHARS].rsplit(" ", 1)[0] or t[:MAX_TITLE_CHARS]
    return t


def validate_output(text: str, lo: int, hi: int) -> list[str]:
    """Violations of an answer for paragraphs ``[lo, hi)`` (empty list: legal)."""
    items, problems = parse_output(text)
    if items is None:
        return problems
    return problems + validate_items(items, lo, hi)


def validate_items(items: Sequence[Any], lo: int, hi: int) -> list[str]:
    """Violations of parsed section items for paragraphs ``[lo, hi)`` (inclusive ranges)."""
    out: list[str] = []
    if not items:
        return ["the section list is empty"]
    expected = lo
    prev_level = 0
    last_seen = lo - 1
    for k, it in enumerate(items):
        if not isinstance(it, dict):
            out.append(f"section {k}: not a JSON object")
            continue
        title = it.get("title")
        tag = f"section {k} ({title!r})" if isinstance(title, str) else f"section {k}"
        if not clean_title(title):
            out.append(f"{tag}: missing or empty title")
        level = _as_int(it.get("level"))
        if level is None or not isinstance(it.get("level"), int):
            out.append(f"{tag}: level must be an integer, got {it.get('level')!r}")
        elif level < 1:
            out.append(f"{tag}: level {level} is below 1")
        first = it.get(FIRST)
        last = it.get(LAST)
        if not (isinstance(first, int) and not isinstance(first, bool)
                and isinstance(last, int) and not isinstance(last, bool)):
            out.append(f"{tag}: {FIRST} and {LAST} must be integers, got {first!r} and {last!r}")
            continue
        if first > last:
            out.append(f"{tag}: {FIRST} {first} is after {LAST} {last}")
        if first < lo or last > hi - 1:
            out.append(f"{tag}: paragraph range {first}..{last} is out of bounds "
                       f"(paragraphs are numbered {lo} to {hi - 1})")
        if first != expected:
            kind = "gap" if first > expected else "overlap"
            out.append(f"{tag}: starts at paragraph {first} but should start at {expected} "
                       f"({kind})")
        expected = last + 1
        last_seen = last
        if level is not None and isinstance(it.get("level"), int):
            if k == 0 and level != 1:
                out.append(f"{tag}: the first section must have level 1, got {level}")
            elif level > prev_level + 1:
                out.append(f"{tag}: level jumps from {prev_level} to {level} (at most +1)")
            prev_level = level
    if expected != hi:
        out.append(f"the sections end at paragraph {last_seen}, but the last paragraph is "
                   f"{hi - 1}")
    return out


def repair_items(
    items: Sequence[Any] | None, lo: int, hi: int, fallback_title: str = "Document"
) -> tuple[list[Entry], bool]:
    """A legal tiling of ``[lo, hi)`` from ``items``; the flag is False for the fallback."""
    cands: list[tuple[int, int, int, str]] = []
    for order, it in enumerate(items or []):
        if not isinstance(it, dict):
            continue
        start = _as_int(it.get(FIRST))
        if start is None:
            start = _as_int(it.get(LAST))
        if start is None or start > hi - 1:
            continue
        start = max(start, lo)
        level = _as_int(it.get("level"))
        level = 1 if level is None or level < 1 else level
        cands.append((start, level, order, clean_title(it.get("title"))))
    if not cands:
        return [Entry(clean_title(fallback_title) or "Document", 1, lo)], False
    cands.sort()
    entries: list[Entry] = []
    prev_level = 0
    for start, level, _, title in cands:
        if entries and start == entries[-1].start:
            continue
        if not entries:
            start = lo
        level = min(level, prev_level + 1)
        entries.append(Entry(title or f"Section {len(entries) + 1}", level, start))
        prev_level = level
    return entries, True


def repair_output(
    text: str, lo: int, hi: int, fallback_title: str = "Document"
) -> tuple[list[Entry], bool]:
    """:func:`repair_items` on the parsed answer ``text``."""
    items, _ = parse_output(text)
    return repair_items(items, lo, hi, fallback_title)


def items_to_entries(items: Sequence[dict[str, Any]]) -> list[Entry]:
    """Entries of items that :func:`validate_items` accepts (no repair needed)."""
    return [Entry(clean_title(it["title"]), int(it["level"]), int(it[FIRST])) for it in items]


def clamp_level_steps(entries: Sequence[Entry]) -> list[Entry]:
    """Entries with the first level 1 and every step at most +1 (used after stitching)."""
    out: list[Entry] = []
    prev = 0
    for e in entries:
        level = max(1, min(e.level, prev + 1))
        out.append(Entry(e.title, level, e.start))
        prev = level
    return out


def entries_to_sections(
    paragraphs: Sequence[Paragraph], entries: Sequence[Entry], max_level: int = MAX_LEVEL
) -> list[Section]:
    """Contract ``Section``s (half-open ranges, char offsets, clamped level, true-depth path)."""
    n = len(paragraphs)
    entries = clamp_level_steps(entries)
    if not entries or entries[0].start != 0:
        raise ValueError("entries must start at paragraph 0")
    sections: list[Section] = []
    stack: list[str] = []
    for k, e in enumerate(entries):
        end = entries[k + 1].start if k + 1 < len(entries) else n
        if not (e.start < end <= n):
            raise ValueError(f"entry {k} ({e.title!r}): empty or out-of-range [{e.start}, {end})")
        stack = stack[: e.level - 1] + [e.title]
        sections.append(Section(
            section_idx=k,
            title=e.title,
            level=min(e.level, max_level),
            para_start=e.start,
            para_end=end,
            start=paragraphs[e.start].start,
            end=paragraphs[end - 1].end,
            path=tuple(stack),
        ))
    return sections
