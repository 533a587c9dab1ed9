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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from structablate.corpus.flatten import FlatDocument
from structablate.settings import UserCorpus
from structablate.user_files import (
    ByoInputError,
    SourceFile,
    corpus_roots,
    list_files,
    walk_files,
)

__all__ = ["ByoInputError", "HeadingStack", "InputUnit", "SourceFile", "corpus_roots",
           "list_files", "read_text", "walk_files"]

log = logging.getLogger(__name__)


# A unit of input: where it comes from ("file" or "file:line"), the doc_id it will most likely
# get (None when only parsing can tell), and a thunk that parses it.
InputUnit = tuple[str, str | None, Callable[[], FlatDocument]]


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a UTF-8 file (a leading BOM is dropped); not UTF-8 -> :class:`ByoInputError`
    naming the line and byte of the first bad byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ByoInputError(
            f"{path}:{line}",
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at column {col}); "
            "convert the file to UTF-8",
        ) from None


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


def file_units(
    corpus: UserCorpus, extensions: Sequence[str], parse: Callable[..., FlatDocument],
) -> Iterator[InputUnit]:
    """One unit per file of ``corpus.path`` for the file-per-document adapters (Markdown,
    HTML), deferring parsing to ``parse(text, doc_id=..., default_title=..., where=...,
    lead_heading=..., heading_separator=..., code_blocks=...)``; ``extensions`` are the
    adapter's own, used unless the corpus names others."""
    lead, sep, code = corpus.lead_heading, corpus.heading_separator, corpus.code_blocks
    for sf in list_files(corpus.path, tuple(corpus.extensions or extensions)):
        yield str(sf.path), sf.doc_id, _file_reader(parse, sf.path, sf.doc_id, lead, sep, code)


def _file_reader(parse, path: Path, doc_id: str, lead: str, sep: str | None, code: str):
    def read() -> FlatDocument:
        return parse(read_text(path), doc_id=doc_id, default_title=path.stem, where=str(path),
                     lead_heading=lead, heading_separator=sep, code_blocks=code)

    return read
