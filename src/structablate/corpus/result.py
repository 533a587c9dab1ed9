"""One result shape for every corpus builder, and the one function that turns it into tables.

:func:`structablate.corpus.qasper.build_qasper`,
:func:`structablate.corpus.wikipedia.build_wikipedia` and
:func:`structablate.corpus.byo.build_user_corpus` all return a :class:`CorpusBuild`;
:func:`corpus_tables` turns any of them into the ``documents`` / ``paragraphs`` / ``sections``
tables and, when the corpus brings its own questions, the ``queries`` / ``qrels`` tables. The
glue writes those and ``report`` (JSON) and needs no per-corpus code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from structablate.corpus.flatten import (
    FlatDocument,
    documents_frame,
    paragraphs_frame,
    sections_frame,
)
from structablate.corpus.questions import MappedQuestion, qrels_frame, queries_frame

QuestionOrigin = Literal["annotated", "user"]
"""Where a corpus's own questions come from: ``annotated`` (QASPER's readers) or ``user`` (a
bring-your-own queries file). A corpus without questions of its own has ``None``: its queries
are generated afterwards (``generate_queries``)."""


@dataclass(frozen=True)
class CorpusBuild:
    """What a corpus builder returns.

    * ``documents`` — verified flat documents, in the builder's documented order (QASPER and
      user corpora: sorted by ``doc_id``; Wikipedia: walk order);
    * ``questions`` — the corpus's own questions with gold spans, or ``None`` when it has none
      (Wikipedia; a user corpus without a queries file). An empty tuple means "has a questions
      source, none survived the funnel" and still writes (empty) queries / qrels tables;
    * ``report`` — the JSON-able build report (QASPER: the question funnel; Wikipedia: the
      selection report; user corpora: inputs, skipped units and the query funnel);
    * ``questions_from`` — :data:`QuestionOrigin` of ``questions`` (``None`` with them).
    """

    documents: tuple[FlatDocument, ...]
    questions: tuple[MappedQuestion, ...] | None
    report: dict
    questions_from: QuestionOrigin | None = None

    def __post_init__(self) -> None:
        if (self.questions is None) != (self.questions_from is None):
            raise ValueError("CorpusBuild: questions and questions_from are given together")


@dataclass(frozen=True)
class CorpusTables:
    """The tables of a :class:`CorpusBuild` (``queries`` / ``qrels`` are ``None`` without
    questions of its own)."""

    documents: pl.DataFrame
    paragraphs: pl.DataFrame
    sections: pl.DataFrame
    queries: pl.DataFrame | None
    qrels: pl.DataFrame | None


def corpus_tables(build: CorpusBuild, corpus: str) -> CorpusTables:
    """The tables of ``build`` for the corpus named ``corpus`` (the ``documents.corpus``
    column)."""
    docs: Sequence[FlatDocument] = build.documents
    qs = build.questions
    return CorpusTables(
        documents=documents_frame(docs, corpus),
        paragraphs=paragraphs_frame(docs),
        sections=sections_frame([(d.doc_id, d.sections) for d in docs]),
        queries=queries_frame(qs) if qs is not None else None,
        qrels=qrels_frame(qs) if qs is not None else None,
    )


def write_corpus(build: CorpusBuild, corpus: str, output: Mapping[str, str]) -> None:
    """Write a build's tables and report to the named ``output`` paths of a corpus rule:
    ``documents``, ``paragraphs``, ``sections``; ``queries`` and ``qrels`` when the corpus
    brings its own questions; the report to ``funnel`` (question funnel) or ``report``
    (the build report of a corpus whose questions come later)."""
    from structablate.io import write_json, write_parquet

    t = corpus_tables(build, corpus)
    write_parquet(t.documents, output["documents"])
    write_parquet(t.paragraphs, output["paragraphs"])
    write_parquet(t.sections, output["sections"])
    if t.queries is not None:
        write_parquet(t.queries, output["queries"])
        write_parquet(t.qrels, output["qrels"])
    write_json(build.report, output["funnel"] if "funnel" in output.keys() else output["report"])
