"""Which files a user corpus reads: folders, files and glob patterns expanded, each file's
document id.

The listing the plan dates and sizes (:meth:`structablate.plan.Plan.source_files`,
:func:`structablate.plan.resources.corpus_mb`), the rules name as inputs and the readers of
:mod:`structablate.corpus` parse, in one place below all three. A folder is searched for the
extensions of the corpus's ``type`` (:data:`USER_EXTENSIONS`) or its own
``extensions`` key. Every path is as the config gives it (relative to where Snakemake runs).
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import logging
import os
import stat
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

    @property
    def skip_bad_files(self) -> bool: ...

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


@dataclass(frozen=True)
class BadFile:
    """A path the listing found that is not an ordinary readable file (:func:`file_problem`):
    ``where`` is the path as :func:`printable` writes it, ``doc_id`` the id the file would have
    had (None when its name is not UTF-8), ``reason`` why it is not read."""

    where: str
    doc_id: str | None
    reason: str


def printable(path: str | os.PathLike[str]) -> str:
    """``path`` as it can be printed and written to a UTF-8 log or JSON file: a byte of a name
    that is not UTF-8 (which Python holds as a lone surrogate, ``'\\udce9'``) is written
    ``\\xe9``; any other path is itself."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not an ordinary readable file, or None when it is one.

    Looked at without opening it (a FIFO would block the reader until something writes to
    it): a name that is not UTF-8 (Snakemake cannot record it, and a document id is text), a
    missing path, a symbolic link to nothing or a link that loops, a folder, FIFO, socket or
    device, a file this process may not read. A link to an ordinary file is an ordinary file.
    The reason starts with what the path is and ends with what to do, without the advice to
    set ``skip_bad_files`` (the caller adds it where skipping applies)."""
    raw = os.fsencode(path)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (f"the file name is not UTF-8 (byte 0x{raw[exc.start]:02x}, shown as \\x"
                f"{raw[exc.start]:02x}); Snakemake records every input by its name in UTF-8 "
                "and a document id is text: rename the file in UTF-8 (e.g. convmv -f latin1 "
                "-t utf-8 --notest FILE)")
    try:
        st = os.stat(path)
    except OSError as exc:
        if not os.path.islink(path):
            return "no such file"
        target = os.readlink(path)
        if exc.errno == errno.ELOOP:
            return (f"a symbolic link that loops (it points to {target!r}, which leads back "
                    "to it); point it at a file, or delete it")
        return (f"a symbolic link to {target!r}, which does not exist; point it at the file, "
                "or delete it")
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
        return (f"{kind}, not a regular file; it is not read (a FIFO or device would block or "
                "never end): put the document in a regular file, or move this one out of "
                "the corpus folder")
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied); make it readable (chmod a+r)"
    return None


def list_files(spec: str | Sequence[str], extensions: Sequence[str]) -> list[SourceFile]:
    """Expand ``spec`` (a folder, a file, a glob pattern, or a list of them) into the ordinary
    readable files it names (:func:`scan_files` has the rules; :func:`bad_files` the paths it
    names that are not such files, left out here)."""
    return scan_files(spec, extensions)[0]


def bad_files(spec: str | Sequence[str], extensions: Sequence[str]) -> list[BadFile]:
    """The paths ``spec`` names that are not ordinary readable files (:func:`scan_files`)."""
    return scan_files(spec, extensions)[1]


def scan_files(spec: str | Sequence[str], extensions: Sequence[str]
               ) -> tuple[list[SourceFile], list[BadFile]]:
    """Expand ``spec`` (a folder, a file, a glob pattern, or a list of them) into files:
    ``(ordinary readable files, every other path found)``.

    A folder gives every file below it (recursively) whose name ends with one of
    ``extensions``; a glob gives every file it matches (``**`` recursive), whatever its
    extension; a plain file gives itself. The document id is the path relative to the folder
    (for a glob: to the folder before its first wildcard) without its extension, in POSIX
    form (``guide/install`` for ``guide/install.md``). Both lists are sorted by path.

    Whatever is found where a document is expected but is not an ordinary readable file —
    a name that is not UTF-8, a dangling or looping symbolic link, a FIFO, socket or device,
    an unreadable file (:func:`file_problem`) — is never opened and never dropped silently:
    it is a :class:`BadFile` of the second list, which the caller refuses or, under
    ``skip_bad_files``, skips and lists.
    """
    specs = [spec] if isinstance(spec, str) else list(spec)
    out: dict[Path, SourceFile] = {}
    for s in specs:
        p = Path(s).expanduser()
        if p.is_dir():
            root = p
            found = [f for f in walk_files(p) if _has_ext(f, extensions)]
        elif os.path.lexists(p):  # a file, or a link, FIFO, socket or device that says why
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
    good: list[SourceFile] = []
    bad: list[BadFile] = []
    for sf in sorted(out.values(), key=lambda sf: os.fsencode(sf.path)):
        why = file_problem(sf.path)
        if why is None:
            good.append(sf)
        else:
            named = printable(sf.path) == str(sf.path)
            bad.append(BadFile(printable(sf.path), sf.doc_id if named else None, why))
    return good, bad


def refuse_bad_files(bad: Sequence[BadFile], skip: bool) -> None:
    """Refuse the first of ``bad`` (naming how many more there are) unless ``skip``: the
    message of a corpus without ``skip_bad_files``, at plan time and in the build alike."""
    if not bad or skip:
        return
    more = ""
    if len(bad) > 1:
        rest = [b.where for b in bad[1:4]] + (["…"] if len(bad) > 4 else [])
        more = (f" ({len(bad) - 1} more file{'s are' if len(bad) > 2 else ' is'} not an "
                f"ordinary file either: {', '.join(rest)})")
    raise ByoInputError(bad[0].where, f"{bad[0].reason}, or set skip_bad_files: true to leave "
                        f"the file out{more}")


def walk_files(root: Path) -> list[Path]:
    """Every entry below the folder ``root`` that is not a folder (regular files, and the
    links to nothing, FIFOs, sockets and devices :func:`scan_files` names), following symbolic
    links to folders (a linked subfolder is read like a real one), each real folder read
    once, sorted by path.

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
            real = os.path.realpath(f) if f.is_file() else str(f)  # a link to nothing: itself
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
    extensions, raises :class:`~structablate.errors.ByoInputError` naming it; so does a path
    found that is not an ordinary readable file (:func:`scan_files`), unless the corpus sets
    ``skip_bad_files`` (then it is left out here, and the build lists it as skipped)."""
    good, bad = scan_files(corpus.path, extensions(corpus))
    refuse_bad_files(bad, corpus.skip_bad_files)
    return [str(sf.path) for sf in good]


def check_questions_file(path: str | os.PathLike[str]) -> None:
    """Refuse a questions file that is not an ordinary readable file, naming what it is (a
    folder, a FIFO, a link to nothing, …; ``queries file not found`` when nothing is there):
    the plan's check of the questions input and the reader's. A questions file is never
    skipped, whatever ``skip_bad_files`` says: the questions are what is scored."""
    why = file_problem(path)
    if why is None:
        return
    if why == "no such file":
        why = "queries file not found"
    elif os.path.isdir(path):
        why = "a folder, not a questions file; name the .jsonl or .tsv file itself in queries"
    raise ByoInputError(printable(path), why)


def input_files(corpus: UserFileSettings) -> list[str]:
    """Every file a corpus entry reads (documents, then its questions file, if any)."""
    q = corpus.questions_path
    return document_files(corpus) + ([q] if q else [])
