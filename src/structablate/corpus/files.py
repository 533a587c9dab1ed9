"""User input files: listing, decoding, input errors and heading stacks.

The pieces every bring-your-own adapter (:mod:`~structablate.corpus.markdown`,
:mod:`~structablate.corpus.html`, :mod:`~structablate.corpus.jsonl`) and the user-query reader
(:mod:`~structablate.corpus.user_queries`) share. This module imports nothing from those, so the
adapters, the queries reader and :mod:`~structablate.corpus.byo` (which registers the adapters)
form no import cycle.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from structablate.corpus.flatten import FlatDocument
from structablate.errors import StructablateError
from structablate.settings import UserCorpus


class ByoInputError(StructablateError, ValueError):
    """A user input (document file, JSONL line, query line) is unusable.

    ``where`` is ``"file"`` or ``"file:line"``; the message is ``"{where}: {reason}"``.
    """

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class SourceFile:
    """An input file and the document id its path gives (relative path without extension)."""

    path: Path
    doc_id: str


# A unit of input: where it comes from ("file" or "file:line"), the doc_id it will most likely
# get (None when only parsing can tell), and a thunk that parses it.
InputUnit = tuple[str, str | None, Callable[[], FlatDocument]]


def list_files(spec: str | Sequence[str], extensions: Sequence[str]) -> list[SourceFile]:
    """Expand ``spec`` (a folder, a file, a glob pattern, or a list of them) into files.

    A folder gives every file below it (recursively) whose name ends with one of
    ``extensions``; a glob gives every file it matches (``**`` recursive), whatever its
    extension; a plain file gives itself. The document id is the path relative to the folder
    (for a glob: to the folder before its first wildcard) without its extension, in POSIX
    form (``guide/install`` for ``guide/install.md``). Files are returned sorted by path.
    """
    specs = [spec] if isinstance(spec, str) else list(spec)
    out: dict[Path, SourceFile] = {}
    for s in specs:
        p = Path(s).expanduser()
        if p.is_dir():
            root = p
            found = [f for f in p.rglob("*") if f.is_file() and _has_ext(f, extensions)]
        elif p.is_file():
            root = p.parent
            found = [p]
        elif glob.has_magic(s):
            root = _glob_root(s)
            found = [Path(f) for f in glob.glob(os.path.expanduser(s), recursive=True)]
            found = [f for f in found if f.is_file()]
        else:
            raise ByoInputError(str(s), "no such file or folder")
        if not found:
            raise ByoInputError(
                str(s), f"no input files found (extensions {', '.join(extensions)})"
                if p.is_dir() else "the pattern matches no file")
        for f in found:
            rel = f.relative_to(root).as_posix()
            out.setdefault(f, SourceFile(f, _strip_ext(rel, extensions)))
    return sorted(out.values(), key=lambda sf: str(sf.path))


def _has_ext(path: Path, extensions: Sequence[str]) -> bool:
    name = path.name.lower()
    return any(name.endswith(e.lower()) for e in extensions)


def _strip_ext(rel: str, extensions: Sequence[str]) -> str:
    for e in sorted(extensions, key=len, reverse=True):
        if rel.lower().endswith(e.lower()) and len(rel) > len(e):
            return rel[: -len(e)]
    return rel.rsplit(".", 1)[0] if "." in rel.rsplit("/", 1)[-1] else rel


def _glob_root(pattern: str) -> Path:
    parts = Path(os.path.expanduser(pattern)).parts
    root: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        root.append(part)
    return Path(*root) if root else Path(".")


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
