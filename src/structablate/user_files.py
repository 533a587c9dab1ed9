"""Which files a user corpus reads: folders, files and glob patterns expanded, each file's
document id.

The listing the plan dates and sizes (:meth:`structablate.plan.Plan.source_files`,
:func:`structablate.plan.resources.corpus_mb`), the rules name as inputs and the readers of
:mod:`structablate.corpus` parse, in one place below all three. A folder is searched for the
extensions of the corpus's ``type`` (:data:`USER_EXTENSIONS`) or its own
``extensions`` key. Every path is as the config gives it (relative to where Snakemake runs).
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from structablate.errors import StructablateError

log = logging.getLogger(__name__)


class UserFileSettings(Protocol):
    """What the listing reads of a user corpus's settings
    (:class:`structablate.settings.UserCorpus`, which this module does not import, so that it
    stands below the settings and the plan that dates and sizes these files)."""

    @property
    def type(self) -> str: ...

    @property
    def path(self) -> str | Sequence[str]: ...

    @property
    def extensions(self) -> Sequence[str] | None: ...

    @property
    def questions_path(self) -> str | None: ...

USER_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "markdown": (".md", ".markdown"),
    "rst": (".rst", ".rest"),
    "html": (".html", ".htm", ".xhtml"),
    "jsonl": (".jsonl", ".ndjson"),
}
"""A user corpus ``type`` -> the file extensions a folder of it is searched for (matched
without regard to case) when its ``extensions`` key is null: the one table the readers of
:mod:`structablate.corpus` and the plan's listing share."""


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


def corpus_roots(corpus: UserFileSettings) -> tuple[str, ...]:
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


def extensions(corpus: UserFileSettings) -> tuple[str, ...]:
    """The extensions a folder of ``corpus`` is searched for: its ``extensions`` key, else its
    ``type``'s (:data:`USER_EXTENSIONS`)."""
    return tuple(corpus.extensions or USER_EXTENSIONS[corpus.type])


def document_files(corpus: UserFileSettings) -> list[str]:
    """The document files of a corpus entry (its questions file excluded), in the order they
    are read: the ``input`` of the documents build, so that editing a question reruns only
    the jobs that read questions. A path that names nothing, or a folder with no file of the
    extensions, raises :class:`~structablate.errors.ByoInputError` naming it."""
    return [str(sf.path) for sf in list_files(corpus.path, extensions(corpus))]


def input_files(corpus: UserFileSettings) -> list[str]:
    """Every file a corpus entry reads (documents, then its questions file, if any)."""
    q = corpus.questions_path
    return document_files(corpus) + ([q] if q else [])
