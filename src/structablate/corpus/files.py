"""User input files: listing, decoding, input errors and heading stacks.

The pieces every bring-your-own adapter (:mod:`~structablate.corpus.markdown`,
:mod:`~structablate.corpus.html`, :mod:`~structablate.corpus.jsonl`) and the user-query reader
(:mod:`~structablate.corpus.user_queries`) share. This module imports nothing from those, so the
adapters, the queries reader and :mod:`~structablate.corpus.byo` (which registers the adapters)
form no import cycle.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from structablate.corpus.flatten import FlatDocument
from structablate.errors import StructablateError
from structablate.settings import UserCorpus

log = logging.getLogger(__name__)


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
            found = [f for f in walk_files(p) if _has_ext(f, extensions)]
        elif p.is_file():
            root = p.parent
            found = [p]
        elif glob.has_magic(s):
            root, pattern = _glob_split(s)
            found = [f for f in walk_files(root) if _glob_match(
                pattern, f.relative_to(root).parts)] if root.is_dir() else []
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


def walk_files(root: Path) -> list[Path]:
    """Every file below the folder ``root``, following symbolic links to folders (a linked
    subfolder is read like a real one), each real folder read once, sorted by path.

    A folder reached twice (a link to a folder that is also below ``root``, or two links to
    one folder) is read where it is reached as a real folder, or else through the first link
    in path order; a link back to a folder above it (a loop) is not followed. Both are logged
    as warnings naming the link and its target. A file reached under two names (a link to a
    file) is kept once, under its first name in path order."""
    real_dirs = {os.path.realpath(d) for d, _, _ in os.walk(root)}  # without following links
    seen: set[str] = set()
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = os.path.realpath(dirpath)
        seen.add(here)
        keep = []
        for name in sorted(dirnames):
            sub = os.path.join(dirpath, name)
            if not os.path.islink(sub):
                keep.append(name)
                continue
            target = os.path.realpath(sub)
            if target == here or here.startswith(target.rstrip(os.sep) + os.sep):
                log.warning("%s -> %s: a symbolic link to a folder above it (a loop); not "
                            "followed, so each file is read once", sub, target)
            elif target in seen or target in real_dirs:
                log.warning("%s -> %s: a symbolic link to a folder that is read already; not "
                            "followed, so each file is read once", sub, target)
            else:
                seen.add(target)
                keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            f = Path(dirpath) / name
            if f.is_file():
                real = os.path.realpath(f)
                if real not in files or str(f) < str(files[real]):
                    files[real] = f
    return sorted(files.values(), key=str)


def _glob_match(pattern: Sequence[str], parts: Sequence[str]) -> bool:
    """Whether the path ``parts`` match the glob ``pattern`` parts as :func:`glob.glob` with
    ``recursive=True`` matches them: ``**`` any number of folders, wildcards within one
    name, and a wildcard never matching a name that starts with a dot."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        for i in range(len(parts) + 1):
            if i and parts[i - 1].startswith("."):
                return False
            if _glob_match(rest, parts[i:]):
                return True
        return False
    if not parts:
        return False
    name = parts[0]
    if glob.has_magic(head):
        if name.startswith(".") and not head.startswith(".") or not fnmatch.fnmatchcase(name,
                                                                                      head):
            return False
    elif name != head:
        return False
    return _glob_match(rest, parts[1:])


def _has_ext(path: Path, extensions: Sequence[str]) -> bool:
    name = path.name.lower()
    return any(name.endswith(e.lower()) for e in extensions)


def _strip_ext(rel: str, extensions: Sequence[str]) -> str:
    for e in sorted(extensions, key=len, reverse=True):
        if rel.lower().endswith(e.lower()) and len(rel) > len(e):
            return rel[: -len(e)]
    return rel.rsplit(".", 1)[0] if "." in rel.rsplit("/", 1)[-1] else rel


def _glob_split(pattern: str) -> tuple[Path, tuple[str, ...]]:
    """The folder before the first wildcard of ``pattern`` (``~`` expanded; ``.`` if none)
    and the pattern's parts after it."""
    parts = Path(os.path.expanduser(pattern)).parts
    root: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        root.append(part)
    return (Path(*root) if root else Path(".")), tuple(parts[len(root):])


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


def corpus_roots(corpus: UserCorpus) -> tuple[str, ...]:
    """The folders a corpus entry's ``path`` names (a folder itself; a file's folder; a glob's
    folder before its first wildcard): where an ``include`` may read from."""
    specs = [corpus.path] if isinstance(corpus.path, str) else list(corpus.path)
    out: list[str] = []
    for s in specs:
        p = Path(s).expanduser()
        if p.is_dir():
            root = p
        elif p.is_file():
            root = p.parent
        else:
            root = _glob_split(s)[0]
        out.append(str(root.resolve()))
    return tuple(dict.fromkeys(out))


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
