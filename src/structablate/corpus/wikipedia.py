"""The Wikipedia Featured Articles corpus (paper, Appendix E).

:func:`build_wikipedia` is the whole builder: take the title list of a source (the
MediaWiki API through ``mwclient``, or a MediaWiki XML export), sort it, shuffle it with the
seed, and walk it. Each candidate is fetched (cached on disk), flattened by the one canonical
normalizer (:func:`structablate.corpus.wikitext.normalize_wikitext`), verified
(:func:`structablate.corpus.verify.verify_document`), filtered (``min_words``, ``min_depth``,
``min_sections``), assigned a topic bucket from its categories, and accepted unless its bucket
already holds ``max_per_bucket`` documents. The walk stops at ``n_docs`` accepted documents.
Every rejected candidate is recorded with its reason in the report; nothing is dropped silently.

Choices (``docs/wikipedia.md`` has the long version):

* ``doc_id`` is the page title with spaces (``"Apollo 8"``); the page id is kept in the report.
* The shuffle is ``numpy.random.default_rng(seed).permutation`` over the title list sorted by
  code point, so the walk order depends on the seed and the set of titles only.
* Words are whitespace-separated tokens of the flat text; depth is the longest gold heading path
  (``len(path)``, lead included as depth 1); sections are the gold sections (headings with at
  least one paragraph, the lead counted), all after non-content sections are dropped.
* Topic: the first bucket of the keyword table (in table order) with a keyword that starts a
  word of any of the page's categories (case-insensitive); ``other`` otherwise. Word-start
  matching keeps ``war`` from matching ``award``, ``Edward`` or ``software`` while stems such as
  ``biograph`` or ``astronom`` still match their derived words.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from structablate.corpus.flatten import FlatDocument
from structablate.corpus.mediawiki_fetch import (
    ApiSource,
    PageRecord,
    WikipediaSourceError,
    iter_xml_pages,
)
from structablate.corpus.result import CorpusBuild
from structablate.corpus.verify import verify_document
from structablate.corpus.wikitext import (
    TemplateCounts,
    WikitextError,
    heading_depth,
    is_redirect,
    normalize_wikitext,
    transcludes,
    word_count,
)
from structablate.settings import (
    WikipediaApiSource,
    WikipediaSelection,
    WikipediaXmlSource,
    dump,
)

log = logging.getLogger(__name__)

__all__ = [
    "Outcome",
    "Source",
    "TopicClassifier",
    "WikipediaSourceError",
    "assess_page",
    "build_wikipedia",
    "select_documents",
    "walk_order",
]

Source = WikipediaXmlSource | WikipediaApiSource


class TopicClassifier:
    """First bucket (table order) with a keyword starting a word of some category."""

    def __init__(self, table: Sequence[tuple[str, Sequence[str]]], fallback: str = "other"):
        self.fallback = fallback
        self.buckets = [b for b, _ in table]
        self._rules = [
            (bucket, [(kw, re.compile(r"(?<!\w)" + re.escape(kw.strip()), re.I)) for kw in kws])
            for bucket, kws in table
        ]

    @property
    def all_buckets(self) -> list[str]:
        return [*self.buckets, self.fallback]

    def classify(self, categories: Iterable[str]) -> tuple[str, str | None, str | None]:
        """``(bucket, matched category, matched keyword)``; ``(fallback, None, None)`` if none."""
        cats = list(categories)
        for bucket, rules in self._rules:
            for kw, rx in rules:
                for cat in cats:
                    if rx.search(cat):
                        return bucket, cat, kw
        return self.fallback, None, None


@dataclass
class Outcome:
    """The assessment of one candidate page, before the bucket cap."""

    title: str
    doc: FlatDocument | None = None
    reason: str | None = None
    detail: str | None = None
    stats: dict = field(default_factory=dict)


def assess_page(record: PageRecord, sel: WikipediaSelection,
                classifier: TopicClassifier) -> Outcome:
    """Normalize, verify and filter one page by the ``sel`` criteria."""
    out = Outcome(record.title, stats={"page_id": record.pageid, "rev_id": record.revid})
    if record.missing:
        out.reason, out.detail = "missing", "the page does not exist"
        return out
    if record.ns != 0:
        out.reason, out.detail = "not_article", f"namespace {record.ns}"
        return out
    if record.redirect or is_redirect(record.wikitext):
        out.reason, out.detail = "redirect", "the page is a redirect"
        return out
    if not record.wikitext.strip():
        out.reason, out.detail = "empty_page", "the page has no wikitext"
        return out
    topic, cat, kw = classifier.classify(record.categories)
    try:
        doc = normalize_wikitext(
            record.title, record.title, record.wikitext,
            lead_heading=sel.lead_heading, drop_sections=sel.drop_sections, topic=topic,
            page_id=record.pageid, rev_id=record.revid, timestamp=record.timestamp,
            categories=list(record.categories), categories_source=record.categories_source,
        )
    except WikitextError as exc:
        out.reason, out.detail = exc.code, exc.detail
        return out
    except Exception as exc:  # a normalizer bug: fail loudly, naming the page
        raise RuntimeError(f"normalizing {record.title!r} failed: {exc!r}") from exc
    if not doc.paragraphs:
        out.reason, out.detail = "no_content", "no body paragraph (heading-only or empty article)"
        return out
    violations = verify_document(doc)
    if violations:
        out.reason = "verification_failed"
        out.detail = "; ".join(violations[:10])
        return out
    words, depth, n_sections = word_count(doc.text), heading_depth(doc), len(doc.sections)
    counts = doc.meta.get("templates")
    out.stats.update(words=words, depth=depth, sections=n_sections,
                     paragraphs=len(doc.paragraphs), topic=topic,
                     matched_category=cat, matched_keyword=kw,
                     templates_unrecognised=sum(counts.unrecognised.values()) if counts else 0)
    doc.meta.update(words=words, depth=depth)
    measured_depth = depth + 1 if sel.depth_measure == "with_title" else depth
    for key, value, reason in (("min_words", words, "too_few_words"),
                               ("min_depth", measured_depth, "too_shallow"),
                               ("min_sections", n_sections, "too_few_sections")):
        least = getattr(sel, key)
        if value < least:
            out.reason, out.detail = reason, f"{key.split('_', 1)[1]} {value} < {least}"
            return out
    out.doc = doc
    return out


def walk_order(titles: Iterable[str], seed: int) -> list[str]:
    """Unique titles sorted by code point, then permuted by ``default_rng(seed)``."""
    ordered = sorted(set(titles))
    perm = np.random.default_rng(seed).permutation(len(ordered))
    return [ordered[i] for i in perm]


def select_documents(
    titles: Iterable[str],
    outcome_of: Callable[[str], Outcome],
    sel: WikipediaSelection,
    classifier: TopicClassifier,
) -> tuple[list[FlatDocument], dict]:
    """Walk the shuffled titles until ``n_docs`` are accepted; return documents and report."""
    order = walk_order(titles, sel.seed)
    cap = sel.max_per_bucket
    counts = dict.fromkeys(classifier.all_buckets, 0)
    docs: list[FlatDocument] = []
    rows: list[dict] = []
    rejects: list[dict] = []
    examined = 0
    for rank, title in enumerate(order):
        if len(docs) >= sel.n_docs:
            break
        examined += 1
        out = outcome_of(title)
        if out.reason is None and cap is not None and counts[out.doc.topic] >= cap:
            out.reason = "bucket_full"
            out.detail = f"bucket {out.doc.topic!r} already holds {cap} documents"
        if out.reason is not None:
            rejects.append({"rank": rank, "title": title, "reason": out.reason,
                            "detail": out.detail, **out.stats})
            continue
        counts[out.doc.topic] += 1
        docs.append(out.doc)
        rows.append({"rank": rank, "doc_id": out.doc.doc_id, **out.stats})
        if examined % 50 == 0:
            log.info("wikipedia walk: %d examined, %d accepted", examined, len(docs))
    reject_counts: dict[str, int] = {}
    for r in rejects:
        reject_counts[r["reason"]] = reject_counts.get(r["reason"], 0) + 1
    n = len(docs)
    templates = TemplateCounts()
    for d in docs:
        if isinstance(d.meta.get("templates"), TemplateCounts):
            templates.update(d.meta["templates"])
    listed = templates.as_dict()
    if templates.unrecognised:
        top = ", ".join(f"{k} ({v})" for k, v in list(listed["unrecognised"].items())[:10])
        log.warning("templates inside running text the normaliser could not render (their "
                    "text is missing; see report 'templates.unrecognised'): %s", top)
    if templates.unrecognised_block:
        top = ", ".join(f"{k} ({v})" for k, v in
                        list(listed["unrecognised_block"].items())[:10])
        log.info("templates alone on their line without a rule (navigation boxes, sidebars, "
                 "hatnotes most of the time; dropped, see report "
                 "'templates.unrecognised_block'): %s", top)
    report = {
        "n_candidates": len(order),
        "n_examined": examined,
        "n_accepted": n,
        "stopped": "n_docs reached" if n >= sel.n_docs else "title list exhausted",
        "distribution": counts,
        "shares": {b: (c / n if n else 0.0) for b, c in counts.items()},
        "reject_counts": dict(sorted(reject_counts.items())),
        "documents": rows,
        "rejects": rejects,
        "templates": templates.as_dict(),
        "selection": {**dump(sel),
                      "topic_keywords": [[b, list(k)] for b, k in sel.topic_keywords.items()]},
    }
    return docs, report


def classifier_of(sel: WikipediaSelection) -> TopicClassifier:
    """The topic classifier of a selection (its keyword table, in order, and fallback)."""
    return TopicClassifier(list(sel.topic_keywords.items()), sel.fallback_topic)


def _xml_outcomes(
    src: WikipediaXmlSource, sel: WikipediaSelection, classifier: TopicClassifier
) -> tuple[dict[str, Outcome], dict]:
    """Assess every candidate of an export in one streaming pass (keeps no wikitext)."""
    outcomes: dict[str, Outcome] = {}
    skipped = {"non_article_namespace": 0, "without_required_template": 0}
    for record in iter_xml_pages(src.path):
        if record.ns != 0:
            skipped["non_article_namespace"] += 1
            continue
        if src.require_template and not transcludes(record.wikitext, src.require_template):
            skipped["without_required_template"] += 1
            continue
        outcomes[record.title] = assess_page(record, sel, classifier)
    return outcomes, skipped


def build_wikipedia(
    source: Source,
    selection: WikipediaSelection,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
) -> CorpusBuild:
    """Build the Wikipedia-FA corpus from ``source`` (an XML export, or the MediaWiki API with
    its page cache in ``cache_dir``) by the ``selection`` walk: the accepted documents in walk
    order, no questions of its own (they are generated), and the selection report (with
    ``corpus`` = ``name`` when given)."""
    classifier = classifier_of(selection)
    if isinstance(source, WikipediaXmlSource):
        outcomes, skipped = _xml_outcomes(source, selection, classifier)
        docs, report = select_documents(outcomes, outcomes.__getitem__, selection, classifier)
        report["source"] = {"mode": "xml", "path": str(source.path),
                            "require_template": source.require_template,
                            "categories": "[[Category:...]] links in the wikitext",
                            "skipped": skipped}
    else:
        src = ApiSource(source, cache_dir)
        titles = src.titles()

        def outcome_of(title: str) -> Outcome:
            return assess_page(src.fetch(title), selection, classifier)

        docs, report = select_documents(titles, outcome_of, selection, classifier)
        report["source"] = {"mode": "api", "api": src.label,
                            "featured_category": source.featured_category,
                            "user_agent": source.user_agent,
                            "categories": "non-hidden categories (clshow=!hidden)",
                            "pages_fetched": src.n_fetched, "pages_from_cache": src.n_cached,
                            "cache_dir": str(cache_dir) if cache_dir else None}
    if name is not None:
        report["corpus"] = name
    return CorpusBuild(tuple(docs), None, report)
