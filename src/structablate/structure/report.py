"""The induction report (paper Table 9) and the span-identity helper."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from structablate.corpus.flatten import Section
from structablate.structure.induce import STATUSES, InducedStructure


def _spans(items: Sequence[Any]) -> list[tuple[int, int]]:
    out = []
    for it in items:
        if isinstance(it, tuple):
            out.append((int(it[0]), int(it[1])))
        else:
            out.append((int(it.start), int(it.end)))
    return out


def span_identity(gold: Sequence[Any], induced: Sequence[Any]) -> tuple[int, int]:
    """(induced spans byte-identical to some gold span, induced spans) for one document.

    Items are :class:`Section`-like objects with ``start``/``end`` or ``(start, end)`` tuples,
    so the same helper serves sections and chunks (the paper's Appendix H figure is over chunk
    spans: pass the gold and induced chunk tables' spans of one document).
    """
    g = set(_spans(gold))
    ind = _spans(induced)
    return sum(1 for s in ind if s in g), len(ind)


def span_identity_share(
    gold: Mapping[str, Sequence[Any]], induced: Mapping[str, Sequence[Any]]
) -> float | None:
    """Share of all induced spans (over documents in both maps) identical to a gold span."""
    same = total = 0
    for doc_id, ind in induced.items():
        if doc_id not in gold:
            continue
        s, t = span_identity(gold[doc_id], ind)
        same += s
        total += t
    return same / total if total else None


def induction_report(
    results: Sequence[InducedStructure],
    gold: Mapping[str, Sequence[Section]] | None = None,
    *,
    inducer: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Counts per status, usable/repaired documents, mean sections per document (and gold's),
    the share of induced section spans byte-identical to a gold section span, and how much of
    the input the model saw cut: ``truncated_paragraphs`` of ``n_paragraphs`` (their share,
    ``truncated_paragraph_share``) in ``truncated_documents`` documents."""
    n = len(results)
    n_par = sum(r.n_paragraphs for r in results)
    counts = Counter(r.status for r in results)
    report: dict[str, Any] = {
        "inducer": inducer,
        "n_documents": n,
        "usable": n - counts.get("fallback", 0),
        "valid_first_try": counts.get("valid", 0),
        "self_corrected": counts.get("self_corrected", 0),
        "repaired": counts.get("repaired", 0),
        "fallback": counts.get("fallback", 0),
        "windowed": sum(1 for r in results if r.n_windows > 1),
        "truncated_documents": sum(1 for r in results if r.truncated_paragraphs),
        "truncated_paragraphs": sum(r.truncated_paragraphs for r in results),
        "n_paragraphs": sum(r.n_paragraphs for r in results),
        "truncated_paragraph_share": (
            sum(r.truncated_paragraphs for r in results) / n_par if n_par else 0.0),
        "mean_sections_per_doc": (sum(len(r.sections) for r in results) / n) if n else None,
        "max_depth": max((len(s.path) for r in results for s in r.sections), default=0),
        "mean_seconds_per_doc": (sum(r.seconds for r in results) / n) if n else None,
        "statuses": {s: counts.get(s, 0) for s in STATUSES},
    }
    titled = [r for r in results if r.titles_from_llm is not None]
    if titled:
        n_titles = sum(len(r.sections) for r in titled)
        report["titles_from_llm"] = sum(r.titles_from_llm for r in titled)
        report["titles_from_llm_share"] = report["titles_from_llm"] / n_titles if n_titles else 0.0
    if gold is not None:
        gold_counts = [len(gold[r.doc_id]) for r in results if r.doc_id in gold]
        report["mean_gold_sections_per_doc"] = (
            sum(gold_counts) / len(gold_counts) if gold_counts else None)
        report["section_span_identity"] = span_identity_share(
            gold, {r.doc_id: r.sections for r in results})
    if extra:
        report.update(extra)
    return report
