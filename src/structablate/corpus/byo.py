"""Bring your own corpus: Markdown, HTML or JSONL documents, with optional user queries.

:func:`build_byo_corpus` is the entry point. A corpus entry of the config names its ``type``
(``markdown``, ``html`` or ``jsonl``) and where the files are; every file format has its own
adapter (:mod:`~structablate.corpus.markdown`, :mod:`~structablate.corpus.html`,
:mod:`~structablate.corpus.jsonl`) that turns one input unit (a file, or a JSONL line) into a
:class:`~structablate.corpus.flatten.FlatDocument` through
:class:`~structablate.corpus.flatten.DocumentBuilder`; every document is then verified with
:func:`~structablate.corpus.verify.verify_document`, exactly as QASPER and Wikipedia are.

Bad input raises :class:`ByoInputError` whose message starts with the file (and line, for
JSONL and queries) and names the field or the problem. With ``skip_bad_files: true`` the unit
is skipped instead and recorded with its reason in the build report; the rest still builds.

The rules each adapter applies (headings, front matter, code, lists, tables, dropped HTML
elements) are in ``docs/byo.md``.
"""

from __future__ import annotations

import glob
import importlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from structablate.corpus.flatten import FlatDocument
from structablate.corpus.verify import VerificationError, verify_document

log = logging.getLogger(__name__)

DEFAULT_LEAD_HEADING = "Introduction"
ADAPTERS = {
    "markdown": "structablate.corpus.markdown",
    "html": "structablate.corpus.html",
    "jsonl": "structablate.corpus.jsonl",
}


class ByoInputError(ValueError):
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
Unit = tuple[str, str | None, Callable[[], FlatDocument]]


# --------------------------------------------------------------------------------------------
# helpers shared by the adapters


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


def option(cfg: Mapping, key: str, default, types: type | tuple[type, ...], name: str):
    """``cfg[key]`` (or ``default``), checked against ``types``; a wrong type names the key."""
    value = cfg.get(key, default)
    if value is not None and not isinstance(value, types):
        raise ByoInputError(f"corpus {name}", f"option {key!r} has the wrong type: {value!r}")
    return value


# --------------------------------------------------------------------------------------------
# entry point


def file_units(
    cfg: Mapping, name: str, extensions: Sequence[str], parse: Callable[..., FlatDocument],
    default_lead: str,
) -> Iterator[Unit]:
    """One unit per file of ``cfg['path']`` for the file-per-document adapters (Markdown,
    HTML): reads the shared options once and defers parsing to ``parse(text, doc_id=...,
    default_title=..., where=..., lead_heading=..., heading_separator=..., code_blocks=...)``."""
    lead = option(cfg, "lead_heading", default_lead, str, name)
    sep = option(cfg, "heading_separator", None, str, name)
    code = option(cfg, "code_blocks", "keep", str, name)
    if code not in ("keep", "drop"):
        raise ByoInputError(f"corpus {name}", f"code_blocks must be keep or drop, not {code!r}")
    exts = tuple(option(cfg, "extensions", list(extensions), list, name))
    for sf in list_files(cfg["path"], exts):
        yield str(sf.path), sf.doc_id, _file_reader(parse, sf.path, sf.doc_id, lead, sep, code)


def _file_reader(parse, path: Path, doc_id: str, lead: str, sep: str | None, code: str):
    def read() -> FlatDocument:
        return parse(read_text(path), doc_id=doc_id, default_title=path.stem, where=str(path),
                     lead_heading=lead, heading_separator=sep, code_blocks=code)

    return read


def iter_units(corpus_cfg: Mapping, source_name: str) -> Iterator[Unit]:
    """The input units of a corpus entry, from the adapter its ``type`` names."""
    kind = corpus_cfg.get("type")
    if kind not in ADAPTERS:
        raise ByoInputError(
            f"corpus {source_name}",
            f"type {kind!r} is not a bring-your-own type ({', '.join(ADAPTERS)})")
    if "path" not in corpus_cfg:
        raise ByoInputError(f"corpus {source_name}", "missing key 'path' (folder, file or glob)")
    module = importlib.import_module(ADAPTERS[kind])
    return module.iter_units(corpus_cfg, source_name)


def input_files(corpus_cfg: Mapping) -> list[str]:
    """Every file a corpus entry reads (documents, then the queries file): a rule's ``input``,
    so Snakemake rebuilds the corpus when one of them changes."""
    module = importlib.import_module(ADAPTERS[corpus_cfg["type"]])
    exts = corpus_cfg.get("extensions") or module.EXTENSIONS
    files = [str(sf.path) for sf in list_files(corpus_cfg["path"], tuple(exts))]
    q = queries_path(corpus_cfg)
    return files + ([q] if q else [])


def build_documents(
    corpus_cfg: Mapping, source_name: str
) -> tuple[list[FlatDocument], list[dict], dict[str, str]]:
    """Parse and verify every unit: ``(documents sorted by doc_id, skipped, doc_id -> where)``.

    ``skipped`` lists ``{"where", "reason"}`` for every unit left out under
    ``skip_bad_files`` (otherwise the first bad unit raises :class:`ByoInputError`).
    """
    skip = bool(corpus_cfg.get("skip_bad_files", False))
    docs: dict[str, FlatDocument] = {}
    origin: dict[str, str] = {}
    skipped: list[dict] = []
    for where, guess, make in iter_units(corpus_cfg, source_name):
        try:
            doc = make()
            if not doc.paragraphs:
                raise ByoInputError(where, "no body text (every block is empty or dropped)")
            if doc.doc_id in docs:
                raise ByoInputError(
                    where, f"doc_id {doc.doc_id!r} already used by {origin[doc.doc_id]}")
        except ByoInputError as exc:
            if not skip:
                raise
            log.warning("skipped %s", exc)
            skipped.append({"where": exc.where, "doc_id": guess, "reason": exc.reason})
            continue
        violations = verify_document(doc)
        if violations:  # an adapter bug, not a user error: never skipped
            raise VerificationError(doc.doc_id, violations, where)
        docs[doc.doc_id] = doc
        origin[doc.doc_id] = where
    if not docs:
        raise ByoInputError(
            f"corpus {source_name}",
            f"no document could be built ({len(skipped)} inputs skipped"
            + (f"; first: {skipped[0]['where']}: {skipped[0]['reason']}" if skipped else "")
            + ")")
    ordered = [docs[k] for k in sorted(docs)]
    return ordered, skipped, origin


def queries_path(corpus_cfg: Mapping) -> str | None:
    """The user-queries file of a corpus entry: ``queries: file`` or ``queries: {path: file}``
    (the mapping form leaves room for query-generation settings beside it); ``None`` without."""
    q = corpus_cfg.get("queries")
    if isinstance(q, Mapping):
        q = q.get("path")
    if q is not None and not isinstance(q, str | os.PathLike):
        raise ByoInputError("queries", f"expected a file path, got {q!r}")
    return str(q) if q else None


def build_byo_corpus(corpus_cfg: Mapping, source_name: str):
    """Build a bring-your-own corpus: ``(documents, questions, report)``.

    ``documents`` are verified :class:`FlatDocument` objects sorted by ``doc_id``;
    ``questions`` are :class:`~structablate.corpus.qasper.MappedQuestion` objects from the
    optional ``queries`` file (empty without one), so
    :func:`~structablate.corpus.qasper.queries_frame` and
    :func:`~structablate.corpus.qasper.qrels_frame` write them; ``report`` is a JSON-able dict
    (inputs, documents, skipped units with reasons, the query funnel).
    """
    from structablate.corpus.user_queries import map_user_queries, read_user_queries

    docs, skipped, origin = build_documents(corpus_cfg, source_name)
    report: dict = {
        "corpus": source_name,
        "type": corpus_cfg["type"],
        "path": corpus_cfg["path"],
        "inputs": len(docs) + len(skipped),
        "documents": len(docs),
        "paragraphs": sum(len(d.paragraphs) for d in docs),
        "sections": sum(len(d.sections) for d in docs),
        "skipped": skipped,
        "queries": None,
    }
    questions: list = []
    qpath = queries_path(corpus_cfg)
    if qpath:
        skip = bool(corpus_cfg.get("skip_bad_files", False))
        raw = read_user_queries(qpath)
        questions, funnel = map_user_queries(
            raw,
            docs,
            fuzzy_min_ratio=float(corpus_cfg.get("fuzzy_min_ratio", 0.85)),
            skip_unknown=skip,
            skipped_doc_ids={s.get("doc_id") for s in skipped if s.get("doc_id")},
        )
        report["queries"] = funnel.as_dict()
        report["queries"]["path"] = str(qpath)
        log.info("queries: %s", report["queries"]["funnel"])
    log.info("%s: %d documents, %d skipped", source_name, len(docs), len(skipped))
    return docs, questions, report
