"""QASPER (Dasigi et al. 2021) corpus builder.

Reads the official v0.3 JSON files (a dict ``paper_id -> paper``; any subset of the train / dev
/ test files, merged as the paper does) or the Hugging Face ``allenai/qasper`` column schema
(through :mod:`datasets`, from the hub or from a local file), flattens every paper with
:class:`~structablate.corpus.flatten.DocumentBuilder` and maps each question's evidence into the
flat text.

Flattening: the abstract is one section titled ``Abstract``; each ``full_text`` section's
paragraphs go under the heading path ``section_name.split(" ::: ")``. The title is not part of
the flat text (it is the breadcrumb's first element).

Question funnel (each step counted in :class:`QasperFunnel`):

1. ``unanswerable`` — every annotator marked the question unanswerable;
2. ``no_evidence`` — no evidence string left once figure/table evidence (strings starting with
   ``FLOAT SELECTED``) is removed;
3. ``numeric_only`` — every remaining evidence string has no letter (a bare number or table
   cell, which cannot be located as prose);
4. ``unmapped`` — no evidence string could be mapped into the flat text.

Evidence mapping cascade, per evidence string (whitespace folded on both sides):

* ``exact`` — equal to a paragraph (span = that paragraph), or else a verbatim substring of the
  flat text (span = the first occurrence);
* ``fuzzy`` — the best paragraph by :class:`difflib.SequenceMatcher` ratio, if at least
  ``fuzzy_min_ratio``;
* ``section`` — the string names a section (QASPER annotators sometimes selected a heading
  such as ``Experiments ::: Data``): span = that section with all its subsections.

The gold spans of a question are the union over annotators, deduplicated by ``(start, end)``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from structablate.corpus.evidence import SECTION_SEP, EvidenceMapper, fold
from structablate.corpus.flatten import DocumentBuilder, FlatDocument
from structablate.corpus.qasper_sample import draw, sample_report, source_split
from structablate.corpus.questions import MappedQuestion, qrels_frame, queries_frame
from structablate.corpus.result import CorpusBuild
from structablate.corpus.verify import VerificationError, verify_document
from structablate.errors import StructablateError
from structablate.settings import QasperCorpus

# MappedQuestion, queries_frame and qrels_frame live in structablate.corpus.questions; they stay
# importable from here for the glue that has not moved to CorpusBuild yet.
__all__ = [
    "FLOAT_PREFIX",
    "MappedQuestion",
    "QasperResult",
    "QasperFormatError",
    "QasperFunnel",
    "build_qasper",
    "build_qasper_corpus",
    "flatten_paper",
    "hf_record_to_v03",
    "map_questions",
    "qrels_frame",
    "queries_frame",
    "question_type",
    "read_hf",
    "read_sources",
    "read_sources_sampled",
    "read_v03",
]

FLOAT_PREFIX = "FLOAT SELECTED"
_LETTER = re.compile(r"[^\W\d_]")


class QasperFormatError(StructablateError, ValueError):
    """A QASPER input file breaks the expected schema; the message names file and field."""


@dataclass
class QasperFunnel:
    """Counts after each step of the question funnel and of the evidence cascade."""

    papers: int = 0
    questions: int = 0
    unanswerable: int = 0
    no_evidence: int = 0
    numeric_only: int = 0
    unmapped: int = 0
    kept: int = 0
    evidence_strings: int = 0
    evidence_float_selected: int = 0
    evidence_by_step: Counter = field(default_factory=Counter)
    spans_per_question: list[int] = field(default_factory=list)
    evidence_per_question: list[int] = field(default_factory=list)
    papers_with_questions: int = 0

    def as_dict(self) -> dict:
        n = len(self.spans_per_question)
        mapped = sum(v for k, v in self.evidence_by_step.items() if k != "unmapped")
        return {
            "papers": self.papers,
            "papers_with_kept_questions": self.papers_with_questions,
            "questions": self.questions,
            "dropped_unanswerable": self.unanswerable,
            "dropped_no_evidence": self.no_evidence,
            "dropped_numeric_only": self.numeric_only,
            "dropped_unmapped": self.unmapped,
            "kept": self.kept,
            "funnel": [
                ["all questions", self.questions],
                ["answerable", self.questions - self.unanswerable],
                ["with text evidence", self.questions - self.unanswerable - self.no_evidence],
                [
                    "with non-numeric evidence",
                    self.questions - self.unanswerable - self.no_evidence - self.numeric_only,
                ],
                ["with mapped evidence (kept)", self.kept],
            ],
            "evidence_strings_text": self.evidence_strings,
            "evidence_strings_float_selected": self.evidence_float_selected,
            "evidence_by_step": dict(sorted(self.evidence_by_step.items())),
            "evidence_exact_share": (self.evidence_by_step["exact"] / mapped) if mapped else 0.0,
            "multi_span_share": (sum(s > 1 for s in self.spans_per_question) / n) if n else 0.0,
            "mean_spans_per_question": (sum(self.spans_per_question) / n) if n else 0.0,
            # the paper's counts: distinct evidence strings of each kept question (two
            # strings may map to one span, so these can exceed the span counts above)
            "multi_evidence_share": (sum(e > 1 for e in self.evidence_per_question) / n)
            if n else 0.0,
            "mean_evidence_per_question": (sum(self.evidence_per_question) / n) if n else 0.0,
        }


# --------------------------------------------------------------------------------------------
# reading


def _raw_json_objects(text: str) -> Iterator[object]:
    """Yield the JSON values of a file holding one value, an array, JSON lines or a
    concatenation of objects (the layout of some Hugging Face exports)."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        obj, i = dec.raw_decode(text, i)
        yield obj


def read_v03(path: str | Path) -> dict[str, dict]:
    """Read one official v0.3 file (``{paper_id: paper}``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is dropped
    except UnicodeDecodeError as exc:
        raise QasperFormatError(f"{path}: not UTF-8 ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise QasperFormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise QasperFormatError(f"{path}: expected a JSON object of papers keyed by paper id")
    for pid, paper in data.items():
        _check_paper(paper, f"{path}: paper {pid}")
    return data


def _check_paper(paper: object, where: str) -> None:
    if not isinstance(paper, dict):
        raise QasperFormatError(f"{where}: expected an object")
    for key, typ in (("title", str), ("abstract", str), ("full_text", list), ("qas", list)):
        if key not in paper:
            raise QasperFormatError(f"{where}: missing field '{key}'")
        if not isinstance(paper[key], typ):
            raise QasperFormatError(f"{where}: field '{key}' should be {typ.__name__}")
    for i, sec in enumerate(paper["full_text"]):
        if not isinstance(sec, dict) or "section_name" not in sec or "paragraphs" not in sec:
            raise QasperFormatError(
                f"{where}: full_text[{i}] needs 'section_name' and 'paragraphs'")
    for i, q in enumerate(paper["qas"]):
        if not isinstance(q, dict) or "question" not in q or "answers" not in q:
            raise QasperFormatError(f"{where}: qas[{i}] needs 'question' and 'answers'")
        for j, a in enumerate(q["answers"]):
            ans = a.get("answer") if isinstance(a, dict) else None
            if not isinstance(ans, dict) or "evidence" not in ans or "unanswerable" not in ans:
                raise QasperFormatError(
                    f"{where}: qas[{i}].answers[{j}].answer needs 'unanswerable' and 'evidence'")


def hf_record_to_v03(rec: Mapping) -> tuple[str, dict]:
    """Convert one row of the Hugging Face ``allenai/qasper`` schema to ``(paper_id, paper)``."""
    ft = rec["full_text"]
    full_text = [
        {"section_name": name if name is not None else "", "paragraphs": list(paras)}
        for name, paras in zip(ft["section_name"], ft["paragraphs"], strict=True)
    ]
    qas_cols = rec["qas"]
    qas = []
    for i, question in enumerate(qas_cols["question"]):
        ans_block = qas_cols["answers"][i]
        answers = [{"answer": dict(a)} for a in ans_block["answer"]]
        qas.append(
            {"question": question, "question_id": qas_cols["question_id"][i], "answers": answers}
        )
    paper = {
        "title": rec["title"],
        "abstract": rec["abstract"],
        "full_text": full_text,
        "qas": qas,
    }
    return str(rec["id"]), paper


def read_hf(path_or_name: str, split: str | None = None) -> dict[str, dict]:
    """Read the Hugging Face schema through :mod:`datasets`.

    ``path_or_name`` is a local file (JSON array, JSON lines, or concatenated objects) or a hub
    dataset name such as ``allenai/qasper`` (needs network; ``split`` then selects the split,
    default all splits merged).
    """
    import datasets

    p = Path(path_or_name)
    if p.exists():
        try:
            text = p.read_text(encoding="utf-8-sig")  # a BOM is dropped
            rows: list = []
            for obj in _raw_json_objects(text):
                rows.extend(obj if isinstance(obj, list) else [obj])
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise QasperFormatError(f"{p}: cannot parse as JSON: {exc}") from exc
        splits = [datasets.Dataset.from_list(rows)]
    else:  # pragma: no cover - needs the hub
        loaded = datasets.load_dataset(path_or_name)
        splits = [loaded[split]] if split else [loaded[k] for k in sorted(loaded)]
    out: dict[str, dict] = {}
    for ds in splits:
        for k, rec in enumerate(ds):
            try:
                pid, paper = hf_record_to_v03(rec)
            except (KeyError, TypeError, ValueError) as exc:
                raise QasperFormatError(f"{path_or_name}: row {k}: bad HF schema ({exc})") from exc
            _check_paper(paper, f"{path_or_name}: row {k} ({pid})")
            out[pid] = paper
    return out


def read_sources(sources: Iterable[Mapping], seed: int | None = None) -> dict[str, dict]:
    """Merge papers from several sources (``{"format": "v0.3"|"hf", "path": ...}``) in order;
    a source's ``papers: N`` keeps N of its papers, drawn as its ``sample`` says
    (:func:`read_sources_sampled`).

    A paper id seen twice is an error (splits are disjoint; a duplicate means a config mistake).
    """
    return read_sources_sampled(sources, seed)[0]


def read_sources_sampled(sources: Iterable[Mapping], seed: int | None = None
                         ) -> tuple[dict[str, dict], dict | None]:
    """:func:`read_sources` and the ``sample`` report of its slices (None when no source has
    ``papers:``). A source's ``papers: N`` keeps a seeded sample stratified by split, structure
    depth and year (``sample: stratified``, the default; ``seed`` is the run's) or its first N
    papers in paper-id order (``sample: first``), :func:`structablate.corpus.qasper_sample.draw`.
    The report (:func:`structablate.corpus.qasper_sample.sample_report`) compares the kept
    papers with every paper of the sources they were drawn from."""
    merged: dict[str, dict] = {}
    splits: dict[str, str] = {}
    whole: dict[str, dict] = {}
    kept: list[str] = []
    methods: list[str] = []
    for src in sources:
        fmt = src.get("format", "v0.3")
        if fmt == "v0.3":
            papers = read_v03(src["path"])
        elif fmt == "hf":
            papers = read_hf(src["path"], src.get("split"))
        else:
            raise QasperFormatError(f"unknown QASPER source format {fmt!r} (v0.3 or hf)")
        n = src.get("papers")
        if n is not None:
            split = source_split(src)
            method = src.get("sample") or "stratified"
            if len(papers) < n:
                raise QasperFormatError(f"{src['path']}: papers: {n} asked for, the source "
                                        f"holds {len(papers)}")
            if method == "stratified" and seed is None:
                raise QasperFormatError(f"{src['path']}: sample: stratified needs the run's "
                                        "seed (or set sample: first)")
            try:
                keep = draw(papers, n, method=method, seed=seed, split=split)
            except ValueError as exc:
                raise QasperFormatError(f"{src['path']}: {exc}") from None
            whole |= papers
            splits |= dict.fromkeys(papers, split)
            kept += keep
            methods.append(method)
            papers = {pid: papers[pid] for pid in keep}
        for pid, paper in papers.items():
            if pid in merged:
                raise QasperFormatError(f"{src['path']}: paper {pid} already read from a source")
            merged[pid] = paper
    if not methods:
        return merged, None
    method = "+".join(dict.fromkeys(methods))
    return merged, sample_report(whole, kept, splits, method=method,
                                 seed=seed if "stratified" in methods else None)


# --------------------------------------------------------------------------------------------
# flattening


def flatten_paper(paper_id: str, paper: Mapping) -> FlatDocument:
    """Flatten one paper: abstract, then every section's paragraphs under its heading path."""
    builder = DocumentBuilder(paper_id, " ".join(paper["title"].split()))
    builder.add_paragraph(paper["abstract"], ["Abstract"])
    for sec in paper["full_text"]:
        name = sec["section_name"] or ""
        path = [p.strip() for p in name.split(SECTION_SEP)] if name.strip() else ["Untitled"]
        path = [p if p else "Untitled" for p in path]
        for para in sec["paragraphs"]:
            if isinstance(para, str):
                builder.add_paragraph(para, path)
    doc = builder.build()
    doc.meta["section_names"] = [
        sec["section_name"] for sec in paper["full_text"] if sec["section_name"]
    ]
    return doc


# --------------------------------------------------------------------------------------------
# evidence mapping


# The cascade lives in structablate.corpus.evidence (shared with user queries); the names stay
# importable from here.
_fold = fold


def question_type(answers: Iterable[Mapping]) -> str:
    """QASPER's native answer type by majority over answerable annotations.

    ``boolean`` (yes/no), ``extractive`` (extractive spans), ``abstractive`` (free form);
    ties are broken in that order of listing: extractive, abstractive, boolean.
    """
    votes: Counter = Counter()
    for a in answers:
        if a.get("unanswerable"):
            continue
        if a.get("yes_no") is not None:
            votes["boolean"] += 1
        elif a.get("extractive_spans"):
            votes["extractive"] += 1
        elif (a.get("free_form_answer") or "").strip():
            votes["abstractive"] += 1
    if not votes:
        return "none"
    order = ["extractive", "abstractive", "boolean"]
    return max(order, key=lambda t: (votes[t], -order.index(t)))


def map_questions(
    paper_id: str,
    paper: Mapping,
    doc: FlatDocument,
    funnel: QasperFunnel,
    fuzzy_min_ratio: float,
) -> list[MappedQuestion]:
    """Apply the funnel and the evidence cascade to one paper's questions."""
    mapper = EvidenceMapper(doc, fuzzy_min_ratio)
    out: list[MappedQuestion] = []
    for k, q in enumerate(paper["qas"]):
        funnel.questions += 1
        answers = [a["answer"] for a in q["answers"]]
        if not answers or all(a["unanswerable"] for a in answers):
            funnel.unanswerable += 1
            continue
        evidence: list[str] = []
        for a in answers:
            if a["unanswerable"]:
                continue
            for e in a["evidence"]:
                if e.startswith(FLOAT_PREFIX):
                    funnel.evidence_float_selected += 1
                elif e.strip() and e not in evidence:
                    evidence.append(e)
        if not evidence:
            funnel.no_evidence += 1
            continue
        if all(not _LETTER.search(e) for e in evidence):
            funnel.numeric_only += 1
            continue
        spans: list[tuple[int, int]] = []
        steps: list[str] = []
        for e in sorted(evidence):
            funnel.evidence_strings += 1
            span, step = mapper.map(e)
            funnel.evidence_by_step[step] += 1
            if span is not None and span not in spans:
                spans.append(span)
                steps.append(step)
        if not spans:
            funnel.unmapped += 1
            continue
        qid = str(q.get("question_id") or f"{paper_id}#{k}")
        order = sorted(range(len(spans)), key=lambda i: spans[i])
        out.append(
            MappedQuestion(
                qid=qid,
                doc_id=paper_id,
                text=" ".join(q["question"].split()),
                qtype=question_type(answers),
                spans=tuple(spans[i] for i in order),
                steps=tuple(steps[i] for i in order),
            )
        )
        funnel.kept += 1
        funnel.spans_per_question.append(len(spans))
        funnel.evidence_per_question.append(len(evidence))
    return out


# --------------------------------------------------------------------------------------------
# corpus


@dataclass
class QasperResult:
    documents: list[FlatDocument]
    questions: list[MappedQuestion]
    funnel: QasperFunnel


def build_qasper_corpus(
    papers: Mapping[str, Mapping],
    *,
    fuzzy_min_ratio: float = QasperCorpus.fuzzy_min_ratio,
    keep_papers_without_questions: bool = QasperCorpus.keep_papers_without_questions,
    source: str = "",
) -> QasperResult:
    """Flatten, verify and map every paper (sorted by paper id, for determinism).

    A document that fails verification raises :class:`VerificationError` naming it: gold
    structure is built, never repaired. Papers whose questions all drop stay in the corpus
    (they are retrieval distractors) unless ``keep_papers_without_questions`` is false.
    """
    funnel = QasperFunnel()
    docs: list[FlatDocument] = []
    questions: list[MappedQuestion] = []
    seen_qids: set[str] = set()
    for pid in sorted(papers):
        paper = papers[pid]
        doc = flatten_paper(pid, paper)
        violations = verify_document(doc)
        if violations:
            raise VerificationError(pid, violations, source)
        funnel.papers += 1
        qs = map_questions(pid, paper, doc, funnel, fuzzy_min_ratio)
        for q in qs:
            if q.qid in seen_qids:
                raise QasperFormatError(f"{source}: question id {q.qid} occurs twice")
            seen_qids.add(q.qid)
        if qs:
            funnel.papers_with_questions += 1
        if qs or keep_papers_without_questions:
            docs.append(doc)
            questions.extend(qs)
    return QasperResult(docs, questions, funnel)


def build_qasper(
    papers: Mapping[str, Mapping],
    *,
    fuzzy_min_ratio: float = QasperCorpus.fuzzy_min_ratio,
    keep_papers_without_questions: bool = QasperCorpus.keep_papers_without_questions,
    source: str = "",
    sample: Mapping | None = None,
) -> CorpusBuild:
    """:func:`build_qasper_corpus` as a :class:`~structablate.corpus.result.CorpusBuild`:
    documents sorted by paper id, the kept questions, and the funnel (``QasperFunnel.as_dict``,
    what ``funnel.json`` holds) as the report, with ``sample`` (the slice beside the whole,
    :func:`read_sources_sampled`) under its ``sample`` key when given."""
    c = build_qasper_corpus(
        papers,
        fuzzy_min_ratio=fuzzy_min_ratio,
        keep_papers_without_questions=keep_papers_without_questions,
        source=source,
    )
    report = c.funnel.as_dict()
    if sample is not None:
        report["sample"] = dict(sample)
    return CorpusBuild(tuple(c.documents), tuple(c.questions), report, "annotated")
