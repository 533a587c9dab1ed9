"""JSONL adapter: one document per line.

Each non-blank line is a JSON object with

* ``doc_id`` (non-empty string), ``title`` (string), ``text`` (string) — required;
* ``topic`` (string or null) — optional;
* ``sections`` — optional; how the gold tree is given:

  - **offsets**: a list of ``{"title": str, "level": int >= 1, "start": int, "end": int}``
    (``end`` optional), character offsets into ``text``, sorted by ``start``. Headings are
    *not* in ``text``; a section's ``start`` is where its content begins. Sections may be
    given nested (a parent's ``[start, end)`` encloses its subsections) or flat (each covers
    its own text): a paragraph belongs to the last-listed section whose ``start`` is at or
    before it and whose ``end`` (if given) is at or after it; the path comes from ``level``.
    Text before the first section goes under ``lead_heading``; text after a section's
    ``end`` that no section covers is an error, and so is a ``start`` or ``end`` that falls
    inside a paragraph.
  - **heading markers** (no ``sections`` key): Markdown ATX heading lines in ``text``
    (``#`` … ``######`` then a space) give the tree and are removed from the flat text;
    ``#`` is level 1 (the title is the ``title`` field).

Paragraphs are the blank-line-separated blocks of ``text`` (a heading line also ends one);
whitespace inside a block is folded as everywhere else. A document without sections and
without heading lines is one section titled ``lead_heading`` (like a Markdown file whose only
heading is its title). Every error names the file, the line and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from structablate.corpus.files import (
    BOMS,
    ByoInputError,
    HeadingStack,
    InputUnit,
    control_problem,
    decode_text,
    list_files,
    read_bytes,
)
from structablate.corpus.flatten import DocumentBuilder, FlatDocument
from structablate.ids import IdError, check_doc_id
from structablate.settings import LEAD_HEADING, UserCorpus
from structablate.user_files import USER_EXTENSIONS

EXTENSIONS = USER_EXTENSIONS["jsonl"]
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


def blocks(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every blank-line-separated block of ``text``, trimmed."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in re.finditer(r"\n[ \t\r]*\n", text):
        _add_block(text, pos, m.start(), out)
        pos = m.end()
    _add_block(text, pos, len(text), out)
    return out


def _add_block(text: str, lo: int, hi: int, out: list) -> None:
    seg = text[lo:hi]
    stripped = seg.strip()
    if stripped:
        s = lo + (len(seg) - len(seg.lstrip()))
        out.append((s, s + len(stripped)))


def _require(obj: Mapping, key: str, types, where: str, what: str):
    if key not in obj:
        raise ByoInputError(where, f"missing field {key!r}")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, types):
        raise ByoInputError(where, f"field {key!r} must be {what}, not {type(value).__name__}")
    return value


def parse_record(
    obj: object,
    *,
    where: str,
    lead_heading: str = LEAD_HEADING,
    heading_separator: str | None = None,
) -> FlatDocument:
    """Flatten one JSONL record (see the module docstring)."""
    if not isinstance(obj, dict):
        raise ByoInputError(where, f"expected a JSON object, got {type(obj).__name__}")
    doc_id = str(_require(obj, "doc_id", (str, int), where, "a string")).strip()
    if not doc_id:
        raise ByoInputError(where, "field 'doc_id' is empty")
    try:
        check_doc_id(doc_id, where)
    except IdError as exc:
        raise ByoInputError(exc.where, exc.reason) from None
    title = " ".join(_require(obj, "title", str, where, "a string").split())
    text = _require(obj, "text", str, where, "a string")
    bad = control_problem(text, field="text")
    if bad is not None:
        raise ByoInputError(where, bad[1])
    topic = obj.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise ByoInputError(where, "field 'topic' must be a string or null")
    where = f"{where} (doc_id {doc_id!r})"
    builder = DocumentBuilder(doc_id, title or doc_id)
    if "sections" in obj:
        _from_offsets(builder, text, obj["sections"], where, lead_heading,
                          heading_separator)
    else:
        _from_markers(builder, text, where, lead_heading, heading_separator)
    return builder.build(topic=topic, source=where)


def _from_markers(builder, text, where, lead, sep) -> int:
    stack = HeadingStack(sep)
    block: list[str] = []
    n = 0

    def flush():
        if block:
            builder.add_paragraph("\n".join(block), stack.path or (lead,))
            block.clear()

    for line in text.splitlines():
        m = _ATX.match(line)
        if m:
            flush()
            stack.push(len(m.group(1)), m.group(2) or "")
            n += 1
        elif not line.strip():
            flush()
        else:
            block.append(line)
    flush()
    return n


def _from_offsets(builder, text, sections, where, lead, sep) -> int:
    if not isinstance(sections, list):
        raise ByoInputError(where, "field 'sections' must be a list of objects")
    spans: list[tuple[int, int | None, tuple[str, ...]]] = []
    stack = HeadingStack(sep)
    prev = 0
    for k, s in enumerate(sections):
        at = f"{where}: sections[{k}]"
        if not isinstance(s, dict):
            raise ByoInputError(at, "must be an object {title, level, start, end}")
        title = _require(s, "title", str, at, "a string")
        level = _require(s, "level", int, at, "an integer")
        start = _require(s, "start", int, at, "an integer")
        end = s.get("end")
        if level < 1:
            raise ByoInputError(at, f"level {level} must be >= 1")
        if not 0 <= start <= len(text):
            raise ByoInputError(at, f"start {start} outside the text (length {len(text)})")
        if end is not None:
            if isinstance(end, bool) or not isinstance(end, int):
                raise ByoInputError(at, "field 'end' must be an integer")
            if not start <= end <= len(text):
                raise ByoInputError(
                    at, f"end {end} must lie in [start {start}, text length {len(text)}]")
        if start < prev:
            raise ByoInputError(at, f"start {start} is before the previous section's {prev} "
                                "(sort sections by start)")
        prev = start
        spans.append((start, end, stack.push(level, title)))
    paras = blocks(text)
    for k, (start, end, _) in enumerate(spans):
        for lo, hi in paras:
            for name, pos in (("start", start), ("end", end)):
                if pos is not None and lo < pos < hi:
                    raise ByoInputError(
                        f"{where}: sections[{k}]",
                        f"{name} {pos} falls inside the paragraph at [{lo}, {hi})")
    for lo, hi in paras:
        owner = None
        for start, end, path in spans:
            if start > lo:
                break
            if end is None or hi <= end:
                owner = path
        if owner is None:
            if not spans or lo < spans[0][0]:
                owner = (lead,)
            else:
                raise ByoInputError(
                    where, f"the paragraph at [{lo}, {hi}) lies in no section "
                    f"({text[lo:hi][:40]!r}…)")
        builder.add_paragraph(text[lo:hi], owner)
    return len(spans)


def iter_units(corpus: UserCorpus, name: str) -> Iterator[InputUnit]:
    """One unit per non-blank line of every JSONL file of ``corpus.path``."""
    for sf in list_files(corpus.path, tuple(corpus.extensions or EXTENSIONS)):
        yield from _file_units(sf.path, corpus.lead_heading, corpus.heading_separator)


def _file_units(path: Path, lead: str, sep: str | None) -> Iterator[InputUnit]:
    """Lines are decoded one by one, so a line that is not UTF-8 is bad on its own; a file
    with a UTF-16 or UTF-32 byte-order mark is decoded whole by it (:func:`decode_text`)."""
    try:
        data = read_bytes(path)
        if any(data.startswith(bom) for bom, _, _ in BOMS):
            data = decode_text(data, str(path)).encode("utf-8")
    except ByoInputError as err:
        yield str(path), None, _raiser(err)
        return
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{path}:{lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            err = ByoInputError(where, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                f"{exc.start + 1}); convert the file to UTF-8")
            yield where, None, _raiser(err)
            continue
        if not line.strip():
            continue
        yield where, _guess_id(line), _line_reader(line, where, lead, sep)


def _raiser(err: ByoInputError):
    def fail() -> FlatDocument:
        raise err

    return fail


def _guess_id(line: str) -> str | None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return str(obj["doc_id"]) if isinstance(obj, dict) and "doc_id" in obj else None


def _line_reader(line: str, where: str, lead: str, sep: str | None):
    def read() -> FlatDocument:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ByoInputError(where, f"invalid JSON at column {exc.colno}: {exc.msg}") from None
        return parse_record(obj, where=where, lead_heading=lead, heading_separator=sep)

    return read
