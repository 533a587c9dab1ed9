"""User input files: decoding, input units and heading stacks (the listing and
:class:`ByoInputError` are :mod:`structablate.user_files`'s, re-exported here for the
adapters).

The pieces every bring-your-own adapter (:mod:`~structablate.corpus.markdown`,
:mod:`~structablate.corpus.html`, :mod:`~structablate.corpus.jsonl`) and the user-query reader
(:mod:`~structablate.corpus.user_queries`) share. This module imports nothing from those, so the
adapters, the queries reader and :mod:`~structablate.corpus.byo` (which registers the adapters)
form no import cycle.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from structablate.corpus.flatten import FlatDocument
from structablate.settings import LEAD_HEADING, UserCorpus
from structablate.user_files import (
    ByoInputError,
    SourceFile,
    corpus_roots,
    file_problem,
    list_files,
    printable,
    walk_files,
)

__all__ = ["ByoInputError", "HeadingStack", "InputUnit", "SourceFile", "control_problem",
           "corpus_roots", "decode_text", "list_files", "read_bytes", "read_text",
           "walk_files"]

log = logging.getLogger(__name__)


# A unit of input: where it comes from ("file" or "file:line"), the doc_id it will most likely
# get (None when only parsing can tell), and a thunk that parses it.
InputUnit = tuple[str, str | None, Callable[[], FlatDocument]]


BOMS: tuple[tuple[bytes, str, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32 (little endian"),
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32 (big endian"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 (little endian"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 (big endian"),
)
"""The byte-order marks a text file is decoded by (UTF-32 first: its little-endian mark
starts with UTF-16's), with the codec and how a message names it. A file without one is
UTF-8 (its own mark, ``EF BB BF``, is dropped)."""

SKIP = ", or set skip_bad_files: true to leave the file out"
"""The advice a document's refusal ends with (:mod:`structablate.corpus.byo` drops it from
the reason of a file it skips; the questions reader drops it: a questions file is never
skipped)."""

MAX_CONTROL_SHARE = 0.05
"""The largest share of a text's characters that may be control characters (C0, DEL and
C1; tab, line feed, carriage return and NEL excepted: :func:`control_problem`): prose holds
none, and the few that documents carry (a form feed between pages, a terminal's colour
escapes around a word) stay far below it, while text that is not text — UTF-16 without its
byte-order mark read as UTF-8 (every other character NUL: 50 %), a binary file that happens
to decode — is far above (docs/byo.md, "Files that are not ordinary text files")."""


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")
"""A C0 or C1 control character or DEL, other than the line breaks text uses: tab, line feed,
carriage return and NEL (U+0085, a line break in Unicode)."""


def control_problem(text: str, field: str | None = None) -> tuple[int, str] | None:
    """``(line of the first control character, why)`` when more than
    :data:`MAX_CONTROL_SHARE` of ``text``'s characters are C0/C1 control characters other than
    tab, line feed and carriage return; None otherwise (an empty text too). ``why`` places
    the first one by column and character offset (in ``field``, when the text is a JSON
    field, by offset only)."""
    n = len(_CONTROL.findall(text))
    if not text or n <= MAX_CONTROL_SHARE * len(text):
        return None
    found = _CONTROL.search(text)
    assert found is not None
    first = found.start()
    line = text.count("\n", 0, first) + 1
    col = first - (text.rfind("\n", 0, first) + 1) + 1
    at = (f"character offset {first} of field {field!r}" if field else
          f"column {col}, character offset {first}")
    hint = (" (NUL characters: UTF-16 or UTF-32 without a byte-order mark?)"
            if "\x00" in text else "")
    return line, (f"{n} of {len(text)} characters ({100 * n / len(text):.1f}%) are control "
                  f"characters, at most {100 * MAX_CONTROL_SHARE:g}% may be (the first, "
                  f"U+{ord(text[first]):04X}, at {at}): this is not a text document{hint}; "
                  f"save it as UTF-8 text{SKIP}")


def decode_text(data: bytes, where: str) -> str:
    """``data`` decoded by its byte-order mark (UTF-32 or UTF-16, little or big endian; the
    mark dropped), else as UTF-8 (a UTF-8 mark dropped). Bytes the encoding cannot decode
    raise :class:`ByoInputError` naming ``where``'s line and the encoding."""
    for bom, codec, name in BOMS:
        if data.startswith(bom):
            body = data[len(bom):]
            try:
                return body.decode(codec)
            except UnicodeDecodeError as exc:
                line = body[: exc.start].decode(codec, "replace").count("\n") + 1
                raise ByoInputError(
                    f"{where}:{line}",
                    f"not valid {name}, from its byte-order mark) at byte {len(bom) + exc.start}"
                    f" ({exc.reason}); save the file again in UTF-16 or, better, UTF-8{SKIP}",
                ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        hint = ("; a quarter of its bytes or more are NUL: UTF-16 or UTF-32 without a "
                "byte-order mark?" if 4 * data.count(b"\x00") >= len(data) else "")
        raise ByoInputError(
            f"{where}:{line}",
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at column {col}{hint}); "
            f"convert the file to UTF-8{SKIP}",
        ) from None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file ``path``; a file that is not an ordinary readable file
    (:func:`~structablate.user_files.file_problem`: it is never opened) or that the system
    cannot read raises :class:`ByoInputError` naming it."""
    where = printable(path)
    why = file_problem(path)
    if why is not None:
        raise ByoInputError(where, why)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ByoInputError(where, f"cannot be read ({exc.strerror or exc}); check the file "
                            "and its disk") from None


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a text file: UTF-8, or UTF-16/UTF-32 with a byte-order mark (:func:`decode_text`),
    whose characters are not mostly control characters (:func:`control_problem`); anything
    else raises :class:`ByoInputError` naming the file and line (:func:`read_bytes` for a
    path that is not an ordinary file)."""
    where = printable(path)
    text = decode_text(read_bytes(path), where)
    bad = control_problem(text)
    if bad is not None:
        raise ByoInputError(f"{where}:{bad[0]}", bad[1])
    return text


class HeadingStack:
    """Heading paths from a sequence of (level, title) headings.

    A heading closes every open heading of the same or a deeper level, so a skipped level
    (``#`` then ``###``) nests one deep, not two: ``len(path)`` is the depth in the tree.
    With ``separator`` (for example QASPER's ``" ::: "``) a heading text that holds a whole
    path (``Datasets ::: AntiScam``) is split into its parts.
    """

    def __init__(self, separator: str | None = None):
        self.separator = separator
        self._stack: list[tuple[int, tuple[str, ...]]] = []

    def push(self, level: int, title: str) -> tuple[str, ...]:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        title = " ".join(title.split()) or "Untitled"
        if self.separator and self.separator.strip() in title:
            parts = tuple(p.strip() or "Untitled" for p in title.split(self.separator.strip()))
        else:
            parts = (title,)
        parent = self._stack[-1][1] if self._stack else ()
        path = parent + parts
        self._stack.append((level, path))
        return path

    @property
    def path(self) -> tuple[str, ...] | None:
        return self._stack[-1][1] if self._stack else None


@dataclass(frozen=True)
class DocumentFile:
    """One document file as a file parser is given it (besides its text): its ``doc_id``, the
    title it gets when it names none (``default_title``: the file's stem), the file
    (``where``, for messages) and its corpus entry's ``lead_heading``, ``heading_separator``
    and ``code_blocks``."""

    doc_id: str
    default_title: str
    where: str
    lead_heading: str = LEAD_HEADING
    heading_separator: str | None = None
    code_blocks: str = "keep"


def file_units(
    corpus: UserCorpus, extensions: Sequence[str],
    parse: Callable[[str, DocumentFile], FlatDocument],
) -> Iterator[InputUnit]:
    """One unit per file of ``corpus.path`` for the file-per-document adapters (Markdown,
    HTML), deferring parsing to ``parse(text, DocumentFile(...))``; ``extensions`` are the
    adapter's own, used unless the corpus names others."""
    lead, sep, code = corpus.lead_heading, corpus.heading_separator, corpus.code_blocks
    for sf in list_files(corpus.path, tuple(corpus.extensions or extensions)):
        yield str(sf.path), sf.doc_id, _file_reader(parse, sf.path, sf.doc_id, lead, sep, code)


def _file_reader(parse, path: Path, doc_id: str, lead: str, sep: str | None, code: str):
    def read() -> FlatDocument:
        return parse(read_text(path), DocumentFile(doc_id, path.stem, str(path), lead, sep,
                                                   code))

    return read
