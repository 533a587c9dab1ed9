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
from structablate.errors import StructablateError

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
      source, none survived the funnel": :func:`write_corpus` refuses it with the funnel;
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


class EmptyCorpusError(StructablateError, ValueError):
    """A corpus has no document, or no question survived its funnel: there is nothing to
    retrieve for or to score. The message shows the funnel and names the config key."""


def funnel_text(steps: Sequence[Sequence]) -> str:
    """A funnel (``[[label, count], …]``, as every build report holds it) on one line:
    ``all questions 12 → answerable 10 → … → with mapped evidence (kept) 0``."""
    return " → ".join(f"{label} {count}" for label, count in steps)


def _largest_drop(steps: Sequence[Sequence]) -> str | None:
    """The step that lost the most questions, as ``label (−n)``; None for an empty funnel."""
    drops = [(int(a[1]) - int(b[1]), b[0]) for a, b in zip(steps, steps[1:], strict=False)]
    if not drops:
        return None
    lost, label = max(drops, key=lambda d: d[0])
    return f"{label} (−{lost})" if lost > 0 else None


def require_questions(n_questions: int, funnel: Sequence[Sequence], corpus: str, *,
                      key: str, advice: str = "") -> None:
    """Raise :class:`EmptyCorpusError` when ``n_questions`` is 0: the message names the
    corpus and its config ``key``, shows ``funnel`` (``[[label, count], …]``) and the step
    that lost most, then ``advice``. Called by :func:`write_corpus` for a corpus's own
    questions, and by the query-generation glue for generated ones, before anything is
    written, so a failed rule leaves no output behind."""
    if n_questions > 0:
        return
    drop = _largest_drop(funnel)
    raise EmptyCorpusError(
        f"corpus {corpus!r} ({key}): no question survived the funnel, so there is nothing to "
        f"retrieve for or score. Funnel: {funnel_text(funnel) or '(empty)'}"
        + (f"; the largest loss is at '{drop}'" if drop else "") + "."
        + (f" {advice}" if advice else ""))


def _question_advice(build: CorpusBuild, corpus: str) -> tuple[list, str]:
    """The question funnel of a build with its own questions, and what to check."""
    r = build.report
    if build.questions_from == "user":
        q = r.get("queries") or {}
        advice = [f"Check the questions file {q.get('path', '')}:"]
        if q.get("dropped_unknown_document") or q.get("dropped_skipped_document"):
            advice.append(f"{q.get('dropped_unknown_document', 0)} question(s) name a doc_id "
                          "the corpus does not have and "
                          f"{q.get('dropped_skipped_document', 0)} one of a skipped file "
                          "(the build report lists document ids and skipped files);")
        if q.get("dropped_unmapped"):
            advice.append(f"{q['dropped_unmapped']} question(s) have evidence that is not in "
                          "the document's text (lower "
                          f"corpora.{corpus}.fuzzy_min_ratio, or give spans);")
        if q.get("dropped_no_evidence"):
            advice.append(f"{q['dropped_no_evidence']} question(s) have no evidence or spans;")
        return q.get("funnel") or [], " ".join(advice).rstrip(";:") + "."
    advice = []
    if r.get("papers", 1) and r.get("dropped_unmapped"):
        advice.append(f"{r['dropped_unmapped']} question(s) have evidence that was not found "
                      f"in the paper's text: are the sources QASPER v0.3 with full_text (lower "
                      f"corpora.{corpus}.fuzzy_min_ratio to accept looser matches)?")
    if not r.get("questions"):
        advice.append("The sources hold no question at all.")
    return r.get("funnel") or [], " ".join(advice)


def check_build(build: CorpusBuild, corpus: str) -> None:
    """Refuse a build that cannot be evaluated (:class:`EmptyCorpusError`): no document, or
    questions of its own of which none survived (QASPER, a user questions file). A corpus
    whose questions are generated later is checked after generation (:func:`require_questions`
    in the query-generation glue)."""
    key = f"corpora.{corpus}"
    if not build.documents:
        r = build.report
        if "n_accepted" in r:  # Wikipedia's selection report
            why = (f"the selection accepted none of {r.get('n_candidates', 0)} candidate "
                   f"page(s) ({r.get('stopped', '')}); check {key}.source and "
                   f"{key}.selection (the report's 'rejected' reasons say why)")
        elif "skipped" in r:  # a user corpus
            why = (f"{r.get('inputs', 0)} input(s), {len(r['skipped'])} skipped as bad input "
                   "(skip_bad_files): " + "; ".join(
                       f"{x.get('where')}: {x.get('reason')}" for x in r["skipped"][:3])
                   + (" …" if len(r["skipped"]) > 3 else ""))
        else:
            why = (f"the sources hold {r.get('papers', 0)} paper(s); check {key}.sources")
        raise EmptyCorpusError(f"corpus {corpus!r} ({key}): no document to index: {why}.")
    if build.questions is not None:
        funnel, advice = _question_advice(build, corpus)
        require_questions(len(build.questions), funnel, corpus,
                          key=key + (".queries" if build.questions_from == "user" else ""),
                          advice=advice)


def write_corpus(build: CorpusBuild, corpus: str, output: Mapping[str, str]) -> None:
    """Write a build's tables and report to the named ``output`` paths of a corpus rule:
    ``documents``, ``paragraphs``, ``sections``; ``queries`` and ``qrels`` when the corpus
    brings its own questions; the report to ``funnel`` (question funnel) or ``report``
    (the build report of a corpus whose questions come later).

    A build without documents, or whose own questions all fell out of the funnel, is refused
    first (:func:`check_build`), before any file is written."""
    from structablate.io import write_json, write_parquet

    check_build(build, corpus)
    t = corpus_tables(build, corpus)
    write_parquet(t.documents, output["documents"])
    write_parquet(t.paragraphs, output["paragraphs"])
    write_parquet(t.sections, output["sections"])
    if t.queries is not None:
        write_parquet(t.queries, output["queries"])
        write_parquet(t.qrels, output["qrels"])
    report = build.report
    if "markup_residue" not in report:  # QASPER, Wikipedia: reported, never refused
        from structablate.corpus.residue import scan_documents
        report = dict(report, markup_residue=scan_documents(build.documents))
    write_json(report, output["funnel"] if "funnel" in output.keys() else output["report"])


def write_questions(build: CorpusBuild, corpus: str, output: Mapping[str, str]) -> None:
    """Write a build's own questions (``queries``, ``qrels``) and its question funnel
    (``funnel``: the build report with the funnel under ``queries``) to the named ``output``
    paths of the question-mapping rule; the document tables were written by the documents
    build (:func:`write_corpus`) and are not written again. Refused like :func:`write_corpus`
    (:func:`check_build`) before any file is written."""
    from structablate.io import write_json, write_parquet

    if build.questions is None:
        raise ValueError(f"corpus {corpus!r}: write_questions needs a build with questions")
    check_build(build, corpus)
    write_parquet(queries_frame(build.questions), output["queries"])
    write_parquet(qrels_frame(build.questions), output["qrels"])
    write_json(build.report, output["funnel"])


def check_generated_questions(n_questions: int, funnel: Mapping, corpus: str) -> None:
    """Refuse (:class:`EmptyCorpusError`) a query generation that kept no question, showing
    its funnel (``generated → survivors → finals``) and the candidates' statuses; ``funnel``
    is the query-generation funnel report (:func:`structablate.queries.pipeline.funnel_report`).
    The glue calls it before writing anything."""
    statuses = funnel.get("statuses") or {}
    advice = []
    if not funnel.get("documents"):
        advice.append("The corpus has no document to write questions about.")
    elif not funnel.get("documents_with_candidates"):
        advice.append(f"None of its {funnel['documents']} document(s) offered an evidence span "
                      f"(see corpora.{corpus}.queries.span_min_chars / span_max_chars).")
    if statuses:
        advice.append("Candidate statuses: " + ", ".join(f"{k} {v}" for k, v in
                                                         sorted(statuses.items())) + ".")
    if statuses.get("query_leak") or statuses.get("paraphrase_leak"):
        advice.append("The lexical-leakage filter rejected candidates (docs/queries.md); a "
                      "model that copies its evidence cannot pass it.")
    require_questions(n_questions, funnel.get("funnel") or [], corpus,
                      key=f"corpora.{corpus}.queries", advice=" ".join(advice))
