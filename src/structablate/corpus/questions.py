"""Questions with gold spans, shared by every corpus that brings its own questions.

:class:`MappedQuestion` is what QASPER's annotated questions
(:mod:`~structablate.corpus.qasper`) and user queries (:mod:`~structablate.corpus.user_queries`)
become once their evidence is mapped into a document's flat text; :func:`queries_frame` and
:func:`qrels_frame` write them as the ``queries`` and ``qrels`` tables. Nothing here depends on
where the questions came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from structablate.tables import frame


@dataclass(frozen=True)
class MappedQuestion:
    """A question on one document with its gold spans.

    ``spans`` are half-open ``[start, end)`` character offsets on the document's flat text,
    sorted and distinct; ``steps[i]`` is how ``spans[i]`` was found (``exact``, ``fuzzy``,
    ``section`` or ``span``, see :mod:`structablate.corpus.evidence`).
    """

    qid: str
    doc_id: str
    text: str
    qtype: str
    spans: tuple[tuple[int, int], ...]
    steps: tuple[str, ...]


def queries_frame(questions: Iterable[MappedQuestion]) -> pl.DataFrame:
    """``queries`` table: qid, doc_id, text, qtype, plus ``n_spans`` and ``evidence_steps``."""
    qs = list(questions)
    df = frame(
        "queries",
        {
            "qid": [q.qid for q in qs],
            "doc_id": [q.doc_id for q in qs],
            "text": [q.text for q in qs],
            "qtype": [q.qtype for q in qs],
        },
    )
    return df.with_columns(
        pl.Series("n_spans", [len(q.spans) for q in qs], dtype=pl.Int32),
        pl.Series("evidence_steps", [list(q.steps) for q in qs], dtype=pl.List(pl.String)),
    )


def qrels_frame(questions: Iterable[MappedQuestion]) -> pl.DataFrame:
    """``qrels`` table: one row per (qid, gold span), with the cascade step that mapped it."""
    rows: dict[str, list] = {"qid": [], "doc_id": [], "start": [], "end": [], "step": []}
    for q in questions:
        for (s, e), step in zip(q.spans, q.steps, strict=True):
            rows["qid"].append(q.qid)
            rows["doc_id"].append(q.doc_id)
            rows["start"].append(s)
            rows["end"].append(e)
            rows["step"].append(step)
    return frame("qrels", rows)
