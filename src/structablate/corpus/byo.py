"""Bring your own corpus: Markdown (MyST included), reStructuredText, HTML or JSONL documents,
with optional user queries.

:func:`build_user_corpus` is the entry point; it returns a
:class:`~structablate.corpus.result.CorpusBuild` like the QASPER and Wikipedia builders. A corpus
entry of the config names its ``type``
(``markdown``, ``rst``, ``html`` or ``jsonl``) and where the files are; every file format has
its own adapter (:mod:`~structablate.corpus.markdown` and :mod:`~structablate.corpus.myst`,
:mod:`~structablate.corpus.rst`, :mod:`~structablate.corpus.html`,
:mod:`~structablate.corpus.jsonl`), registered by name in :data:`FORMATS` (a
:class:`DocumentFormat`: its :class:`UnitReader` and :class:`SnippetReader`), that turns one
input unit (a file, or a JSONL line) into a :class:`~structablate.corpus.flatten.FlatDocument`
through :class:`~structablate.corpus.flatten.DocumentBuilder`; every document is then verified
with :func:`~structablate.corpus.verify.verify_document`, exactly as QASPER and Wikipedia are.

Every document's paragraphs are scanned for markup no reader rendered
(:mod:`~structablate.corpus.residue`): a file above ``max_markup_share`` is bad input.

Bad input raises :class:`ByoInputError` whose message starts with the file (and line, for
JSONL and queries) and names the field or the problem. With ``skip_bad_files: true`` the unit
is skipped instead and recorded with its reason in the build report; the rest still builds.

The rules each adapter applies (headings, front matter, code, lists, tables, dropped HTML
elements) are in ``docs/byo.md``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from tqdm import tqdm

from structablate.corpus import html, jsonl, markdown, myst, residue, rst
from structablate.corpus.files import (
    ByoInputError,
    DocumentFile,
    HeadingStack,
    InputUnit,
    SourceFile,
    corpus_roots,
    list_files,
    read_text,
)
from structablate.corpus.flatten import FlatDocument
from structablate.corpus.render import find_document
from structablate.corpus.result import CorpusBuild
from structablate.corpus.user_queries import map_user_queries, read_user_queries
from structablate.corpus.verify import VerificationError, verify_document
from structablate.ids import IdError, check_distinct_tokens, check_doc_id, id_token
from structablate.settings import UserCorpus, questions_file
from structablate.user_files import (
    bad_files,
    document_files,
    extensions,
    input_files,
    refuse_bad_files,
)

log = logging.getLogger(__name__)

class UnitReader(Protocol):
    """What every document format's reader is: ``(corpus entry, corpus name) -> input units``
    (one per file, or one per JSONL line), each a ``(where, doc_id guess, build)`` triple whose
    ``build()`` gives the :class:`~structablate.corpus.flatten.FlatDocument` or raises
    :class:`ByoInputError`."""

    def __call__(self, corpus: UserCorpus, name: str, /) -> Iterator[InputUnit]: ...


class DocumentParser(Protocol):
    """What every file-per-document format's parser is (``parse_markdown``, ``parse_myst``,
    ``parse_rst``, ``parse_html``): one file's text and its
    :class:`~structablate.corpus.files.DocumentFile` (doc_id, default title, where, the
    corpus entry's heading and code settings) -> a
    :class:`~structablate.corpus.flatten.FlatDocument`
    (:func:`structablate.corpus.files.file_units` calls it). A parser may take more
    keyword arguments with defaults (MyST's and reStructuredText's ``roots``)."""

    def __call__(self, text: str, file: DocumentFile, /) -> FlatDocument: ...


class SnippetReader(Protocol):
    """An evidence snippet copied from the source, as its rendered page shows it (inline
    markup gone); ``where`` is the file it came from and ``roots`` the corpus folders (a page
    title of a ``doc`` role is found from them)."""

    def __call__(self, text: str, *, where: str, roots: Sequence[str]) -> str: ...


def _commonmark_snippet(text: str, *, where: str, roots: Sequence[str]) -> str:
    """:func:`structablate.corpus.markdown.render_snippet` as a :class:`SnippetReader`
    (CommonMark needs neither the file nor the folders)."""
    return markdown.render_snippet(text)


def _no_dialect(corpus: UserCorpus) -> str | None:
    return None


@dataclass(frozen=True)
class DocumentFormat:
    """A bring-your-own document format: the corpus ``type`` that names it (``name``), the
    file ``suffixes`` a folder is searched for, the :class:`UnitReader` giving its input
    units, the :class:`DocumentParser` s it reads a file with (``parsers``; none where a unit
    is a JSONL line), whether a unit is a whole file (``per_file``: the progress bar counts
    files), the ``dialect`` a corpus of it is read in (``None``: one only;
    recorded in the build report) and the :class:`SnippetReader` by that dialect (none: an
    evidence snippet is matched as copied)."""

    name: str
    suffixes: tuple[str, ...]
    read: UnitReader
    parsers: tuple[DocumentParser, ...]
    per_file: bool = True
    dialect: Callable[[UserCorpus], str | None] = _no_dialect
    snippets: Mapping[str | None, SnippetReader] = field(default_factory=dict)


FORMATS: Mapping[str, DocumentFormat] = MappingProxyType({f.name: f for f in (
    # a Markdown corpus is read as MyST or as CommonMark with the site dialects (myst decides)
    DocumentFormat("markdown", markdown.EXTENSIONS, myst.iter_units,
                   (markdown.parse_markdown, myst.parse_myst), dialect=myst.corpus_dialect,
                   snippets=MappingProxyType({"myst": myst.render_snippet,
                                              "commonmark": _commonmark_snippet,
                                              None: _commonmark_snippet})),
    DocumentFormat("rst", rst.EXTENSIONS, rst.iter_units, (rst.parse_rst,),
                   snippets=MappingProxyType({None: rst.render_snippet})),
    DocumentFormat("html", html.EXTENSIONS, html.iter_units, (html.parse_html,)),
    DocumentFormat("jsonl", jsonl.EXTENSIONS, jsonl.iter_units, (), per_file=False),
)})
"""The registered document formats by corpus ``type`` (``markdown``, ``rst``, ``html``,
``jsonl``): the only place a format's name is looked at."""


def document_format(kind: object, source_name: str) -> DocumentFormat:
    """The format of corpus ``type`` ``kind``; an unknown one raises :class:`ByoInputError`
    naming the field ``corpora.<source_name>.type`` and the known formats."""
    found = FORMATS.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise ByoInputError(
            f"corpora.{source_name}.type",
            f"{kind!r} is not a bring-your-own type; set it to one of {', '.join(FORMATS)}")
    return found


def iter_units(corpus: UserCorpus, source_name: str) -> Iterator[InputUnit]:
    """The input units of a corpus entry, from the reader of the format its ``type`` names."""
    return document_format(corpus.type, source_name).read(corpus, source_name)


_SKIP_ADVICE = re.compile(r"[,;]?\s*(?:or )?set skip_bad_files: true[^;)]*")


def build_documents(
    corpus: UserCorpus, source_name: str
) -> tuple[list[FlatDocument], list[dict], dict[str, str]]:
    """Parse and verify every unit: ``(documents sorted by doc_id, skipped, doc_id -> where)``.

    ``skipped`` lists ``{"where", "reason"}`` for every unit left out under
    ``skip_bad_files`` (otherwise the first bad unit raises :class:`ByoInputError`).
    """
    skip = corpus.skip_bad_files
    docs: dict[str, FlatDocument] = {}
    origin: dict[str, str] = {}
    tokens: dict[str, str] = {}  # chunk-id form -> doc_id
    # what the listing found that is not an ordinary readable file (a name that is not
    # UTF-8, a link to nothing, a FIFO, …): refused as at plan time, or skipped and listed
    bad = bad_files(corpus.path, extensions(corpus))
    refuse_bad_files(bad, skip)
    skipped: list[dict] = [{"where": b.where, "doc_id": b.doc_id, "reason": b.reason}
                           for b in bad]
    # a progress bar where stderr is a terminal or a workflow job's log (structablate.workflow)
    per_file = document_format(corpus.type, source_name).per_file
    files = len(document_files(corpus)) if per_file else None
    units = tqdm(iter_units(corpus, source_name), total=files, unit="document",
                 desc=f"build {source_name}", disable=None)
    for where, guess, make in units:
        try:
            doc = make()
            if not doc.paragraphs:
                raise ByoInputError(where, "no body text (every block is empty or dropped)")
        except ByoInputError as exc:
            if not skip:
                raise
            # logged once, by the caller that reports the build (workflow_scripts/build_user.py
            # names every skipped unit); the advice to turn skipping on is left out: it is on
            skipped.append({"where": exc.where, "doc_id": guess,
                            "reason": _SKIP_ADVICE.sub("", exc.reason).rstrip("; ,")})
            continue
        if doc.doc_id in docs:  # never skipped: keeping either one would be a silent choice
            raise ByoInputError(
                where, f"doc_id {doc.doc_id!r} is also the id of {origin[doc.doc_id]}: document "
                "ids must be unique (rename a file or change its front-matter id)")
        try:  # the id policy (structablate.ids); never skipped either
            check_doc_id(doc.doc_id, where)
            token = id_token(doc.doc_id)
            if token in tokens:
                check_distinct_tokens([(tokens[token], origin[tokens[token]]),
                                       (doc.doc_id, where)])
        except IdError as exc:
            raise ByoInputError(exc.where, exc.reason) from None
        violations = verify_document(doc)
        if violations:  # an adapter bug, not a user error: never skipped
            raise VerificationError(doc.doc_id, violations, where)
        why = residue.refusal(doc, corpus.max_markup_share)
        if why is not None:  # markup no reader rendered: never scored silently
            if not skip:
                raise ByoInputError(where, why + "; raise max_markup_share, or set "
                                    "skip_bad_files: true to leave the file out")
            skipped.append({"where": where, "doc_id": doc.doc_id, "reason": why})
            continue
        tokens[token] = doc.doc_id
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


def _markup_report(docs: list[FlatDocument]) -> dict:
    """What the MyST and reStructuredText readers dropped or could not render, per corpus
    (counts) and per file (``files``: doc_id -> that file's report)."""
    files = {d.doc_id: d.meta["markup"] for d in docs if d.meta.get("markup")}
    dropped: Counter = Counter()
    unknown_directives: Counter = Counter()
    unknown_roles: Counter = Counter()
    autodoc = refused = unresolved = 0
    for m in files.values():
        dropped.update(m.get("dropped_directives", {}))
        unknown_directives.update(m.get("unknown_directives", {}))
        unknown_roles.update(m.get("unknown_roles", {}))
        autodoc += len(m.get("autodoc", ()))
        refused += len(m.get("includes_refused", ()))
        unresolved += sum(m.get("unresolved_substitutions", {}).values())
    return {"dropped_directives": dict(sorted(dropped.items())), "autodoc": autodoc,
            "unknown_directives": dict(sorted(unknown_directives.items())),
            "unknown_roles": dict(sorted(unknown_roles.items())),
            "includes_refused": refused, "unresolved_substitutions": unresolved,
            "files": dict(sorted(files.items()))}


def snippet_renderer(corpus: UserCorpus, dialect: str | None
                     ) -> Callable[[str, str | None], str] | None:
    """The inline rules an evidence snippet copied from the source is rendered with before it
    is matched again: the corpus format's (Markdown, MyST, reStructuredText); ``None`` for
    HTML and JSONL (their snippets are copied from the text as shown). The renderer takes the
    snippet and the doc_id of its document (``None``: unknown): a ``doc`` role's page title
    is found from the file that doc_id names in the corpus folders, so the workflow (which
    reads the documents back from their tables) renders as the in-process build does."""
    roots = corpus_roots(corpus)

    def source(doc_id: str | None) -> str:
        found = find_document("/" + doc_id, "", roots) if doc_id else None
        return str(found) if found is not None else "<snippet>"

    reader = document_format(corpus.type, "(questions)").snippets.get(dialect)
    if reader is None:
        return None
    return lambda text, doc_id=None: reader(text, where=source(doc_id), roots=roots)


def build_user_documents(corpus: UserCorpus, source_name: str) -> CorpusBuild:
    """Build a bring-your-own corpus's documents, without its questions.

    ``documents`` are verified :class:`FlatDocument` objects sorted by ``doc_id``;
    ``questions`` is ``None``; ``report`` is a JSON-able dict (inputs, documents, skipped units
    with reasons, the markup the readers dropped or left, the Markdown dialect) whose
    ``queries`` is ``None`` until :func:`map_user_questions` fills it. The questions file and
    the settings only questions read (``queries``, ``fuzzy_min_ratio``, ``partial_evidence``)
    play no part here.
    """
    docs, skipped, _ = build_documents(corpus, source_name)
    report: dict = {
        "corpus": source_name,
        "type": corpus.type,
        "path": corpus.path if isinstance(corpus.path, str) else list(corpus.path),
        "inputs": len(docs) + len(skipped),
        "documents": len(docs),
        "paragraphs": sum(len(d.paragraphs) for d in docs),
        "sections": sum(len(d.sections) for d in docs),
        "skipped": skipped,
        "markup": _markup_report(docs),
        "markup_residue": residue.scan_documents(docs),
        "queries": None,
    }
    dialect = document_format(corpus.type, source_name).dialect(corpus)
    if dialect is not None:
        report["dialect"] = dialect
    log.info("%s: %d documents, %d skipped", source_name, len(docs), len(skipped))
    return CorpusBuild(documents=tuple(docs), questions=None, report=report)


def map_user_questions(corpus: UserCorpus, documents: Sequence[FlatDocument],
                       report: dict) -> CorpusBuild:
    """Map a corpus's questions file onto its built documents.

    ``documents`` and ``report`` are what :func:`build_user_documents` returned (or the
    tables and build report it wrote, read back: documents in ``doc_id`` order); the
    returned build carries the same documents, the mapped questions (``None`` when the
    corpus has no questions file) and a copy of ``report`` whose ``queries`` holds the
    question funnel and the file's path.
    """
    report = dict(report)
    qpath = questions_file(corpus)
    if not qpath:
        return CorpusBuild(documents=tuple(documents), questions=None, report=report)
    raw = read_user_queries(qpath)
    questions, funnel = map_user_queries(
        raw,
        documents,
        fuzzy_min_ratio=corpus.fuzzy_min_ratio,
        skip_unknown=corpus.skip_bad_files,
        skipped_doc_ids={s.get("doc_id") for s in report["skipped"] if s.get("doc_id")},
        partial_evidence=corpus.partial_evidence,
        render=snippet_renderer(corpus, report.get("dialect")),
    )
    report["queries"] = funnel.as_dict()
    report["queries"]["path"] = str(qpath)
    log.info("queries: %s", report["queries"]["funnel"])
    return CorpusBuild(documents=tuple(documents), questions=tuple(questions), report=report,
                       questions_from="user")


def build_user_corpus(corpus: UserCorpus, source_name: str) -> CorpusBuild:
    """Build a bring-your-own corpus with its questions: :func:`build_user_documents`, then
    :func:`map_user_questions` (the workflow runs the two as separate jobs)."""
    built = build_user_documents(corpus, source_name)
    return map_user_questions(corpus, built.documents, built.report)


__all__ = [
    "FORMATS",
    "ByoInputError",
    "DocumentFormat",
    "DocumentParser",
    "HeadingStack",
    "SourceFile",
    "build_documents",
    "build_user_corpus",
    "build_user_documents",
    "document_files",
    "document_format",
    "input_files",
    "iter_units",
    "list_files",
    "map_user_questions",
    "read_text",
    "SnippetReader",
    "UnitReader",
]
