"""User queries for a bring-your-own corpus: read, validate, map evidence to gold spans.

A queries file is JSON lines (``.jsonl``/``.ndjson``) or tab-separated values (``.tsv``):

* JSONL — one query per line: ``qid``, ``doc_id``, ``query`` (required), ``qtype``
  (optional, default ``user``), and evidence as ``evidence`` (a list of text snippets, or one
  string) and/or ``spans`` (a list of ``[start, end]`` pairs).
* TSV — a header row naming the columns ``qid``, ``doc_id``, ``query`` and any of
  ``evidence``, ``start``, ``end``, ``qtype``; one evidence snippet or span per row, and rows
  that share a ``qid`` are one query (their ``doc_id``, ``query`` and ``qtype`` must agree).
  Cells are read with CSV quoting, as pandas and spreadsheets write TSV
  (``"What is the ""X"" dataset?"`` is ``What is the "X" dataset?``).

Snippets go through the same exact → fuzzy → section cascade as QASPER's evidence
(:class:`structablate.corpus.evidence.EvidenceMapper`; a snippet that equals a heading path
such as ``Install ::: Linux`` maps to that section). Spans are half-open character offsets on
the document's **flat text** — ``documents.parquet``'s ``text`` column, not the source file —
and are trimmed of surrounding whitespace. Gold spans are deduplicated and sorted; the qrels
``step`` column records ``exact``, ``fuzzy``, ``section`` or ``span``.

The funnel counts every query: unknown document, document skipped as bad input, no evidence,
no evidence mapped, kept; and every evidence item by cascade step.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structablate.corpus.evidence import EvidenceMapper, fold
from structablate.corpus.files import SKIP, ByoInputError, read_text
from structablate.corpus.flatten import FlatDocument
from structablate.corpus.questions import MappedQuestion
from structablate.ids import IdError, check_doc_id, check_qid
from structablate.user_files import check_questions_file

DEFAULT_QTYPE = "user"


@dataclass
class UserQuery:
    qid: str
    doc_id: str
    query: str
    qtype: str
    evidence: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    where: str = ""


@dataclass
class UserQueryFunnel:
    """Counts after each step of the user-query funnel and of the evidence cascade."""

    queries: int = 0
    unknown_document: int = 0
    skipped_document: int = 0
    no_evidence: int = 0
    unmapped: int = 0
    partial: int = 0
    kept: int = 0
    rendered: int = 0
    """Snippets that mapped only in their rendered form (inline markup of the source gone)."""
    partial_kept: list[dict] = field(default_factory=list)
    """Questions kept under ``partial_evidence: keep`` although some snippets map nowhere:
    ``{"qid", "doc_id", "where", "unmapped"}`` (the snippets and why)."""
    evidence_by_step: Counter = field(default_factory=Counter)
    spans_per_query: list[int] = field(default_factory=list)
    documents_with_queries: int = 0
    dropped: list[dict] = field(default_factory=list)
    """Every dropped query: ``{"qid", "doc_id", "where", "reason"}`` (file:line, and why)."""

    def drop(self, q: UserQuery, reason: str) -> None:
        self.dropped.append({"qid": q.qid, "doc_id": q.doc_id, "where": q.where,
                             "reason": reason})

    def as_dict(self) -> dict:
        n = len(self.spans_per_query)
        known = self.queries - self.unknown_document - self.skipped_document
        snippets = sum(v for k, v in self.evidence_by_step.items()
                       if k in ("exact", "fuzzy", "section"))
        return {
            "queries": self.queries,
            "dropped_unknown_document": self.unknown_document,
            "dropped_skipped_document": self.skipped_document,
            "dropped_no_evidence": self.no_evidence,
            "dropped_unmapped": self.unmapped,
            "dropped_partial_evidence": self.partial,
            "kept": self.kept,
            "kept_with_partial_evidence": list(self.partial_kept),
            "evidence_rendered": self.rendered,
            "documents_with_kept_queries": self.documents_with_queries,
            "funnel": [
                ["all queries", self.queries],
                ["on a document of the corpus", known],
                ["with evidence", known - self.no_evidence],
            ] + ([["with some evidence mapped", known - self.no_evidence - self.unmapped]]
                 if self.partial else []) + [
                ["with mapped evidence (kept)", self.kept],
            ],
            "evidence_by_step": dict(sorted(self.evidence_by_step.items())),
            "evidence_exact_share": (self.evidence_by_step["exact"] / snippets)
            if snippets else 0.0,
            "multi_span_share": (sum(s > 1 for s in self.spans_per_query) / n) if n else 0.0,
            "mean_spans_per_query": (sum(self.spans_per_query) / n) if n else 0.0,
            "dropped": list(self.dropped),
        }


# --------------------------------------------------------------------------------------------
# reading


def read_user_queries(path: str | Path) -> list[UserQuery]:
    """Read a JSONL or TSV queries file (chosen by extension); errors name file and line."""
    path = Path(path)
    check_questions_file(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if suffix in (".tsv", ".tab"):
        return _read_tsv(path)
    raise ByoInputError(str(path), f"unknown queries format {suffix!r} (.jsonl or .tsv)")


def _read(path: Path) -> str:
    """The text of a questions file (:func:`read_text`: UTF-8, or UTF-16/UTF-32 by its
    byte-order mark), refused without the advice to skip it: a questions file is never
    skipped."""
    try:
        return read_text(path)
    except ByoInputError as exc:
        raise ByoInputError(exc.where, exc.reason.replace(SKIP, "")) from None


def _check_visible(query: str, where: str) -> None:
    """Refuse a question made only of whitespace and invisible format characters (Unicode
    category Cf: zero-width space U+200B, joiners U+200C/U+200D, word joiner U+2060,
    U+FEFF, soft hyphen U+00AD, direction marks …), as a whitespace-only one is refused: it
    has no text to embed, yet it would be scored (and counted in every mean)."""
    if any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in query):
        return
    shown = ", ".join(dict.fromkeys(
        f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}" for ch in query
        if not ch.isspace() or ch not in " \t"))
    raise ByoInputError(where, f"field 'query' holds only invisible characters ({shown}); "
                        "write the question's text")


def _id(value: object, key: str, where: str) -> str:
    """A qid or doc_id, stripped, checked by the id policy (:mod:`structablate.ids`)."""
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ByoInputError(where, f"field {key!r} must be a non-empty string")
    value = str(value).strip()
    try:
        return check_qid(value, where) if key == "qid" else check_doc_id(value, where)
    except IdError as exc:
        raise ByoInputError(exc.where, exc.reason) from None


def _span(pair: object, where: str) -> tuple[int, int]:
    if (not isinstance(pair, list | tuple) or len(pair) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in pair)):
        raise ByoInputError(where, f"a span must be [start, end] with integers, not {pair!r}")
    return int(pair[0]), int(pair[1])


def _read_jsonl(path: Path) -> list[UserQuery]:
    out: list[UserQuery] = []
    seen: dict[str, str] = {}
    # lines end at \n (and \r\n) only: U+2028, U+0085 and the like are valid inside a JSON
    # string, and str.splitlines would cut a record there
    for lineno, line in enumerate(_read(path).split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ByoInputError(where, f"invalid JSON at column {exc.colno}: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ByoInputError(where, "expected a JSON object")
        for key in ("qid", "doc_id", "query"):
            if key not in obj:
                raise ByoInputError(where, f"missing field {key!r}")
        qid = _id(obj["qid"], "qid", where)
        if qid in seen:
            raise ByoInputError(where, f"qid {qid!r} already used at {seen[qid]}")
        seen[qid] = where
        query = obj["query"]
        if not isinstance(query, str) or not query.strip():
            raise ByoInputError(where, "field 'query' must be a non-empty string")
        _check_visible(query, where)
        qtype = obj.get("qtype") or DEFAULT_QTYPE
        if not isinstance(qtype, str):
            raise ByoInputError(where, "field 'qtype' must be a string")
        ev = obj.get("evidence") or []
        if isinstance(ev, str):
            ev = [ev]
        if not isinstance(ev, list) or any(not isinstance(e, str) for e in ev):
            raise ByoInputError(where, "field 'evidence' must be a string or a list of strings")
        spans = obj.get("spans") or []
        if not isinstance(spans, list):
            raise ByoInputError(where, "field 'spans' must be a list of [start, end] pairs")
        out.append(UserQuery(qid, _id(obj["doc_id"], "doc_id", where), query, qtype,
                             list(ev), [_span(s, where) for s in spans], where))
    return out


def _tsv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """The rows of a TSV file with the line each starts on, read as spreadsheet programs and
    pandas write TSV (CSV quoting with a tab): a cell that starts with a double quote is quoted
    (``"What is the ""X"" dataset?"`` is ``What is the "X" dataset?``, and a quoted cell may
    hold tabs and line breaks); a quote inside an unquoted cell (``say "hi"``) is kept as
    written. A cell that opens a quote and does not close it where the cell ends is refused
    with its line rather than read some other way."""
    reader = csv.reader(io.StringIO(_read(path), newline=""), delimiter="\t",
                        quotechar='"', doublequote=True, strict=True)
    rows: list[tuple[int, list[str]]] = []
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return rows
        except csv.Error as exc:
            raise ByoInputError(
                f"{path}:{start}",
                f"a cell that starts with a double quote must be quoted as TSV writers quote "
                f"it: the whole cell in \"…\", a quote inside it written twice (\"\") ({exc}); "
                "quote the cell that way, or start it with another character") from None
        rows.append((start, row))
        start = reader.line_num + 1


def _read_tsv(path: Path) -> list[UserQuery]:
    numbered = _tsv_rows(path)
    rows = [row for _, row in numbered]
    if not rows:
        raise ByoInputError(str(path), "empty queries file (expected a header row)")
    header = [h.strip() for h in rows[0]]
    missing = [k for k in ("qid", "doc_id", "query") if k not in header]
    if missing:
        raise ByoInputError(f"{path}:1", f"header lacks column(s) {', '.join(missing)}")
    if ("start" in header) != ("end" in header):
        raise ByoInputError(f"{path}:1", "columns 'start' and 'end' come together")
    col = {h: i for i, h in enumerate(header)}
    by_qid: dict[str, UserQuery] = {}
    for lineno, row in numbered[1:]:
        if not any(c.strip() for c in row):
            continue
        where = f"{path}:{lineno}"
        if len(row) != len(header):
            raise ByoInputError(where, f"{len(row)} fields, the header has {len(header)}")

        def cell(k: str, row=row) -> str:
            return row[col[k]].strip() if k in col else ""

        qid, doc_id, query = cell("qid"), cell("doc_id"), cell("query")
        for k, v in (("qid", qid), ("doc_id", doc_id), ("query", query)):
            if not v:
                raise ByoInputError(where, f"empty field {k!r}")
        _check_visible(query, where)
        qid, doc_id = _id(qid, "qid", where), _id(doc_id, "doc_id", where)
        qtype = cell("qtype") or DEFAULT_QTYPE
        q = by_qid.get(qid)
        if q is None:
            q = by_qid[qid] = UserQuery(qid, doc_id, query, qtype, where=where)
        elif (q.doc_id, q.query, q.qtype) != (doc_id, query, qtype):
            raise ByoInputError(
                where, f"qid {qid!r} has another doc_id, query or qtype than at {q.where}")
        if cell("evidence"):
            q.evidence.append(row[col["evidence"]])
        if cell("start") or cell("end"):
            try:
                q.spans.append((int(cell("start")), int(cell("end"))))
            except ValueError:
                raise ByoInputError(where, "fields 'start' and 'end' must be integers") from None
    return list(by_qid.values())


# --------------------------------------------------------------------------------------------
# mapping


def map_user_queries(
    queries: Iterable[UserQuery],
    docs: Sequence[FlatDocument],
    *,
    fuzzy_min_ratio: float,
    skip_unknown: bool = False,
    skipped_doc_ids: Iterable[str] = (),
    partial_evidence: str = "drop",
    render: Callable[[str, str | None], str] | None = None,
) -> tuple[list[MappedQuestion], UserQueryFunnel]:
    """Map every query's evidence to gold spans; return the kept questions and the funnel.

    A snippet that maps nowhere (or only fuzzily) as written is tried again as ``render``
    shows it (the corpus format's inline rules: a snippet copied from the source with its
    markup; ``render(snippet, doc_id of its document)``). A query some of whose
    snippets still map nowhere is dropped with ``partial_evidence="drop"`` (its reason names
    each such snippet), or kept and listed with ``"keep"``. Every reason for a snippet that
    maps nowhere quotes the closest passage (the place in a long paragraph:
    :meth:`~structablate.corpus.evidence.EvidenceMapper.closest_passage`) and its similarity,
    or names the ambiguous heading and the paths that resolve it.

    A query on a document the corpus lacks raises :class:`ByoInputError` naming its line,
    unless ``skip_unknown`` (then it is counted; a document in ``skipped_doc_ids``, left out
    as bad input, is counted separately). A span outside the text, or on whitespace only,
    raises likewise (or is counted as ``invalid_span`` with ``skip_unknown``).
    """
    by_id = {d.doc_id: d for d in docs}
    skipped = set(skipped_doc_ids)
    mappers: dict[str, EvidenceMapper] = {}
    funnel = UserQueryFunnel()
    out: list[MappedQuestion] = []
    with_queries: set[str] = set()
    for q in queries:
        funnel.queries += 1
        doc = by_id.get(q.doc_id)
        if doc is None:
            if q.doc_id in skipped and skip_unknown:
                funnel.skipped_document += 1
                funnel.drop(q, f"its document {q.doc_id!r} was skipped as bad input")
                continue
            if skip_unknown:
                funnel.unknown_document += 1
                funnel.drop(q, f"no document {q.doc_id!r} in the corpus")
                continue
            near = ", ".join(repr(k) for k in sorted(by_id)[:3])
            raise ByoInputError(
                q.where, f"query {q.qid!r} names doc_id {q.doc_id!r}, which is not a document "
                f"of the corpus ({len(by_id)} documents, e.g. {near})")
        if not q.evidence and not q.spans:
            funnel.no_evidence += 1
            funnel.drop(q, "no evidence given")
            continue
        mapper = mappers.get(doc.doc_id)
        if mapper is None:
            mapper = mappers[doc.doc_id] = EvidenceMapper(doc, fuzzy_min_ratio)
        spans: list[tuple[int, int]] = []
        steps: list[str] = []
        failed: list[str] = []  # why each snippet that maps nowhere does not
        for e in q.evidence:
            span, step = mapper.map(e)
            if (span is None or step == "fuzzy") and render is not None:
                shown = render(e, doc.doc_id)
                if fold(shown) and fold(shown) != fold(e):
                    span2, step2 = mapper.map(shown)
                    if span2 is not None and (span is None or step2 != "fuzzy"):
                        span, step = span2, step2
                        funnel.rendered += 1
            funnel.evidence_by_step[step] += 1
            if span is None:
                failed.append(_why_unmapped(mapper, e, step, render))
            elif span not in spans:
                spans.append(span)
                steps.append(step)
        for s, e in q.spans:
            span = _trim_span(doc.text, s, e)
            if span is None:
                if not skip_unknown:
                    raise ByoInputError(
                        q.where, f"span [{s}, {e}) of query {q.qid!r} is outside the flat "
                        f"text of {doc.doc_id!r} (length {len(doc.text)}) or whitespace only; "
                        "spans are offsets on documents.parquet's text")
                funnel.evidence_by_step["invalid_span"] += 1
                continue
            funnel.evidence_by_step["span"] += 1
            if span not in spans:
                spans.append(span)
                steps.append("span")
        if not spans:
            funnel.unmapped += 1
            funnel.drop(q, f"no evidence found in {q.doc_id!r}" + (
                ": " + "; ".join(failed) if failed else " (every span invalid)"))
            continue
        if failed:
            n = len(q.evidence) + len(q.spans)
            if partial_evidence == "drop":
                funnel.partial += 1
                funnel.drop(q, f"{len(failed)} of its {n} evidence items map nowhere in "
                            f"{q.doc_id!r} (partial_evidence: drop; a question scored against "
                            "part of its gold would be scored wrongly): " + "; ".join(failed))
                continue
            funnel.partial_kept.append({"qid": q.qid, "doc_id": q.doc_id, "where": q.where,
                                        "unmapped": failed})
        order = sorted(range(len(spans)), key=lambda i: spans[i])
        out.append(MappedQuestion(
            qid=q.qid, doc_id=doc.doc_id, text=fold(q.query), qtype=q.qtype,
            spans=tuple(spans[i] for i in order), steps=tuple(steps[i] for i in order)))
        funnel.kept += 1
        funnel.spans_per_query.append(len(spans))
        with_queries.add(doc.doc_id)
    funnel.documents_with_queries = len(with_queries)
    return out, funnel


def _why_unmapped(mapper: EvidenceMapper, evidence: str, step: str,
                  render: Callable[[str, str | None], str] | None) -> str:
    """Why one snippet maps nowhere: the ambiguity of the heading it names, or the closest
    paragraph (cut to 100 characters) with its similarity."""
    shown = repr(evidence if len(evidence) <= 60 else evidence[:57] + "...")
    if step == "ambiguous":
        return f"{shown}: {mapper.ambiguity(evidence)}"
    near = mapper.closest_passage(render(evidence, mapper.doc.doc_id)
                                  if render is not None else evidence)
    if near is None:
        return f"{shown}: not found"
    idx, ratio, start, end = near
    text = " ".join(mapper.doc.paragraph_text(idx).split())
    # a paragraph longer than the snippet is scored by its best window; the fuzzy step
    # compares whole paragraphs, so the window's similarity may pass fuzzy_min_ratio
    window = (" in a window as long as the snippet (the fuzzy step compares whole paragraphs)"
              if end - start < len(text) else "")
    if len(text) > 100:  # the place in a long paragraph, cut to 100 characters
        a = max(0, min(start, len(text) - 94))
        b = min(len(text), a + 94)
        text = ("..." if a else "") + text[a:b] + ("..." if b < len(text) else "")
    return (f"{shown}: not found; closest passage (paragraph {idx}, similarity {ratio:.2f}"
            f"{window}, fuzzy_min_ratio {mapper.fuzzy_min_ratio}): {text!r}")


def _trim_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    if not 0 <= start < end <= len(text):
        return None
    seg = text[start:end]
    lead = len(seg) - len(seg.lstrip())
    body = seg.strip()
    if not body:
        return None
    return start + lead, start + lead + len(body)
