"""Bring your own corpus: Markdown, HTML or JSONL documents, with optional user queries.

:func:`build_user_corpus` is the entry point; it returns a
:class:`~structablate.corpus.result.CorpusBuild` like the QASPER and Wikipedia builders. A corpus
entry of the config names its ``type``
(``markdown``, ``html`` or ``jsonl``) and where the files are; every file format has its own
adapter (:mod:`~structablate.corpus.markdown`, :mod:`~structablate.corpus.html`,
:mod:`~structablate.corpus.jsonl`), registered by name in :data:`ADAPTERS`, that turns one
input unit (a file, or a JSONL line) into a :class:`~structablate.corpus.flatten.FlatDocument`
through :class:`~structablate.corpus.flatten.DocumentBuilder`; every document is then verified
with :func:`~structablate.corpus.verify.verify_document`, exactly as QASPER and Wikipedia are.

Bad input raises :class:`ByoInputError` whose message starts with the file (and line, for
JSONL and queries) and names the field or the problem. With ``skip_bad_files: true`` the unit
is skipped instead and recorded with its reason in the build report; the rest still builds.

The rules each adapter applies (headings, front matter, code, lists, tables, dropped HTML
elements) are in ``docs/byo.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from structablate.corpus import html, jsonl, markdown
from structablate.corpus.files import (
    DEFAULT_LEAD_HEADING,
    ByoInputError,
    HeadingStack,
    SourceFile,
    Unit,
    list_files,
    read_text,
)
from structablate.corpus.flatten import FlatDocument
from structablate.corpus.questions import MappedQuestion
from structablate.corpus.result import CorpusBuild
from structablate.corpus.user_queries import map_user_queries, read_user_queries
from structablate.corpus.verify import VerificationError, verify_document

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Adapter:
    """A bring-your-own document format: the corpus ``type`` that names it, the file
    extensions a folder is searched for, and the function giving its input units."""

    kind: str
    extensions: tuple[str, ...]
    iter_units: Callable[[Mapping, str], Iterator[Unit]]


ADAPTERS: Mapping[str, Adapter] = MappingProxyType({
    "markdown": Adapter("markdown", markdown.EXTENSIONS, markdown.iter_units),
    "html": Adapter("html", html.EXTENSIONS, html.iter_units),
    "jsonl": Adapter("jsonl", jsonl.EXTENSIONS, jsonl.iter_units),
})
"""The registered adapters by corpus ``type`` (``markdown``, ``html``, ``jsonl``)."""


def adapter(kind: object, source_name: str) -> Adapter:
    """The adapter of corpus ``type`` ``kind``; an unknown type raises :class:`ByoInputError`."""
    found = ADAPTERS.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise ByoInputError(
            f"corpus {source_name}",
            f"type {kind!r} is not a bring-your-own type ({', '.join(ADAPTERS)})")
    return found


def iter_units(corpus_cfg: Mapping, source_name: str) -> Iterator[Unit]:
    """The input units of a corpus entry, from the adapter its ``type`` names."""
    found = adapter(corpus_cfg.get("type"), source_name)
    if "path" not in corpus_cfg:
        raise ByoInputError(f"corpus {source_name}", "missing key 'path' (folder, file or glob)")
    return found.iter_units(corpus_cfg, source_name)


def input_files(corpus_cfg: Mapping) -> list[str]:
    """Every file a corpus entry reads (documents, then the queries file): a rule's ``input``,
    so Snakemake rebuilds the corpus when one of them changes."""
    exts = corpus_cfg.get("extensions") or adapter(corpus_cfg.get("type"), "?").extensions
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


def build_user_corpus(corpus_cfg: Mapping, source_name: str) -> CorpusBuild:
    """Build a bring-your-own corpus.

    ``documents`` are verified :class:`FlatDocument` objects sorted by ``doc_id``;
    ``questions`` are the mapped questions of the optional ``queries`` file (``None`` without
    one: the corpus's queries are then generated); ``report`` is a JSON-able dict (inputs,
    documents, skipped units with reasons, the query funnel under ``queries``).
    """
    docs, skipped, _ = build_documents(corpus_cfg, source_name)
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
    questions: list[MappedQuestion] | None = None
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
    return CorpusBuild(
        documents=tuple(docs),
        questions=None if questions is None else tuple(questions),
        report=report,
        questions_from=None if questions is None else "user",
    )


def build_byo_corpus(
    corpus_cfg: Mapping, source_name: str
) -> tuple[list[FlatDocument], list[MappedQuestion], dict]:
    """Legacy shape of :func:`build_user_corpus`: ``(documents, questions or [], report)``.

    Kept only while ``workflow_scripts/build_byo.py`` unpacks a tuple; remove once the glue
    uses :class:`~structablate.corpus.result.CorpusBuild`.
    """
    b = build_user_corpus(corpus_cfg, source_name)
    return list(b.documents), list(b.questions or ()), b.report


__all__ = [
    "ADAPTERS",
    "DEFAULT_LEAD_HEADING",
    "Adapter",
    "ByoInputError",
    "HeadingStack",
    "SourceFile",
    "adapter",
    "build_byo_corpus",
    "build_documents",
    "build_user_corpus",
    "input_files",
    "iter_units",
    "list_files",
    "queries_path",
    "read_text",
]
