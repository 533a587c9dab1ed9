"""The ``corpora`` block: one settings class per corpus source (QASPER, Wikipedia, a user's
folder), their questions, and the registry :data:`CORPUS_SOURCES` of what each source is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Union

from structablate.settings._core import (
    SEED_MAX,
    setting,
)
from structablate.settings.vocabulary import (
    QTYPES,
    QType,
    frozen,
)

# ============================================================================ corpora


@frozen
class QasperSource:
    """One QASPER input: an AllenAI v0.3 JSON file, or a Hugging Face dataset."""

    path: str = setting(doc="v0.3 JSON file, or a dataset id (allenai/qasper) with format hf")
    format: Literal["v0.3", "hf"] = setting("v0.3", doc="v0.3 file or Hugging Face dataset")
    split: str | None = setting(None, doc="hf only: the split (null: every split)")
    papers: int | None = setting(None, minimum=1, doc="keep N papers of this source, drawn as "
                                 "sample says (null: all)")
    sample: Literal["stratified", "first"] = setting(
        "stratified", doc="how papers: N is drawn: stratified (a sample seeded by the run's "
        "seed, stratified by structure depth, split and year; docs/qasper.md) or first (the N "
        "smallest paper ids, the old slice)")


@frozen
class QasperCorpus:
    """QASPER papers with their questions (paper §4, Appendix G)."""

    type: Literal["qasper"] = setting(doc="corpus kind")
    sources: tuple[QasperSource, ...] = setting(minItems=1, doc="inputs, merged in order")
    data_dir: str | None = setting(
        None, minLength=1, doc="folder that relative v0.3 source paths are read from (null: "
        "the working folder); e.g. --config 'corpora={qasper: {data_dir: DATA/qasper}}'")
    fuzzy_min_ratio: float = setting(0.85, minimum=0.5, maximum=1.0,
                                     doc="least similarity of a fuzzily mapped evidence string")
    keep_papers_without_questions: bool = setting(
        True, doc="keep papers none of whose questions survive (they stay retrievable)")


@frozen
class QueryGenSettings:
    """Synthetic question generation (paper Appendix F; docs/queries.md)."""

    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX,
                        doc="seed of span sampling and balancing")
    types: tuple[QType, ...] = setting(QTYPES, minItems=1, uniqueItems=True,
                                       doc="question types generated")
    per_doc: int | dict[str, int] = setting(
        {t: 3 for t in QTYPES}, propertyNames={"enum": list(QTYPES)}, minimum=0,
        doc="candidate spans per document and type (an int: each type; a type left out of "
            "the mapping keeps its default)")
    per_type: int = setting(250, minimum=0, doc="balanced finals per type")
    rouge_max: float = setting(0.35, minimum=0, maximum=1,
                               doc="leakage filter: largest ROUGE-L F1 against the evidence")
    ngram_block: int = setting(4, minimum=1, doc="leakage filter: shared verbatim n-gram size")
    sentences: tuple[int, int] = setting((1, 3), doc="factoid/underspecified span: sentences")
    multihop_sentences: tuple[int, int] = setting((1, 2), doc="each multihop span: sentences")
    span_min_chars: int = setting(80, minimum=1, doc="shortest sampled span")
    span_max_chars: int = setting(800, minimum=1, doc="longest sampled span")
    structural_min_chars: int = setting(400, minimum=1, doc="shortest structural section")
    structural_max_chars: int | None = setting(None, minimum=1,
                                               doc="longest structural section (null: any)")
    underspecified_require_name: bool = setting(True, doc="an underspecified span names "
                                                          "something the question can avoid")
    max_evidence_chars: int = setting(6000, minimum=1, doc="evidence shown to the model")
    max_tokens: int = setting(96, minimum=1, doc="generation limit per call")
    use_schema: bool = setting(True, doc="constrain decoding to {\"query\": string}")
    paraphrase: bool = setting(True, doc="paraphrase each survivor (the paper's second call)")
    min_query_words: int = setting(3, minimum=1, doc="shortest accepted question")
    max_query_words: int = setting(40, minimum=1, doc="longest accepted question")
    max_query_chars: int = setting(300, minimum=1, doc="longest accepted question")
    min_distinct_ratio: float = setting(0.5, minimum=0, maximum=1,
                                        doc="degenerate-loop filter on long questions")
    llm: dict[str, Any] | None = setting(None, doc="llm settings of this stage over the llm "
                                                   "block (same keys)")


@frozen
class UserQueriesFile:
    """A file of the user's own questions with evidence (JSONL or TSV, docs/byo.md)."""

    path: str = setting(doc="the questions file")


@frozen
class WikipediaXmlSource:
    """A MediaWiki XML export (``.xml`` or ``.xml.bz2``)."""

    mode: Literal["xml"] = setting(doc="read an export")
    path: str = setting(doc="the export file")
    require_template: str | None = setting(None, doc="keep only pages that transclude this "
                                                     "template (e.g. featured article)")


@frozen
class WikipediaApiSource:
    """The MediaWiki API through mwclient (pages cached under {results}/cache/wikipedia)."""

    mode: Literal["api"] = setting(doc="fetch from a MediaWiki API")
    host: str = setting("en.wikipedia.org", doc="API host")
    path: str = setting("/w/", doc="script path on the host")
    scheme: Literal["https", "http"] = setting("https", doc="URL scheme")
    user_agent: str = setting(minLength=1, doc="a descriptive User-Agent with contact "
                                               "information (Wikimedia policy)")
    featured_category: str = setting("Featured articles", doc="category listing the titles")
    rate_limit_s: float = setting(1.0, minimum=0, runtime=True, doc="seconds between requests")
    max_retries: int = setting(5, minimum=0, runtime=True, doc="retries of failed requests")
    retry_timeout_s: float = setting(5, minimum=0, runtime=True, doc="delay between retries")
    maxlag: int = setting(5, minimum=0, runtime=True, doc="MediaWiki maxlag parameter")
    timeout_s: float = setting(60, exclusiveMinimum=0, runtime=True, doc="seconds per request")
    list_chunk_size: int = setting(500, minimum=1, runtime=True,
                                   doc="titles per category-listing request")


LEAD_HEADING = "Introduction"
"""Title given to the text before a document's first heading (Wikipedia lead, user files)."""

DEFAULT_DROP_SECTIONS: tuple[str, ...] = (
    "See also", "References", "Reference", "Notes", "Note", "Further reading", "External links",
    "External link", "Bibliography", "Sources", "Source", "Citations", "Footnotes",
    "Notes and references", "References and notes", "Notes and citations", "Explanatory notes",
    "Works cited", "Cited works", "Cited sources", "General references", "General sources",
    "Other sources",
)
"""Wikipedia headings dropped with their subtree by default (compared case-folded)."""

DEFAULT_TOPIC_KEYWORDS: dict[str, tuple[str, ...]] = {
    "history_war": ("battle", "war", "military", "campaign", "siege", "history", "empire",
                    "dynasty"),
    "biography": ("births", "deaths", "people", "biograph", "politicians", "writers", "actors",
                  "monarchs"),
    "science_nature": ("species", "birds", "mammals", "physics", "chemistry", "biology",
                       "astronom", "geolog"),
    "arts_media": ("albums", "songs", "films", "novels", "paintings", "opera", "television",
                   "video games"),
    "geo_places": ("geography", "cities", "rivers", "mountains", "roads", "buildings",
                   "hurricanes", "storms"),
}
"""Topic buckets in match order, with the example keywords of the paper's Table 7."""


@frozen
class WikipediaSelection:
    """The paper's seeded, topic-capped walk over the Featured Articles (Tables 6 and 11)."""

    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX, doc="seed of the title shuffle")
    n_docs: int = setting(200, minimum=0, doc="stop after this many accepted documents")
    min_words: int = setting(3000, minimum=0, doc="least whitespace words of the flat text")
    min_depth: int = setting(3, minimum=0, doc="least heading depth, counted as depth_measure "
                                               "says")
    depth_measure: Literal["headings", "with_title"] = setting(
        "headings", doc="headings: heading levels below the title (== is 1, the lead is 1); "
                        "with_title: the title counts as level 1 (== is 2), as MediaWiki "
                        "numbers headings; Appendix E reads either way (docs/wikipedia.md)")
    min_sections: int = setting(12, minimum=0, doc="least gold sections (lead counted)")
    max_per_bucket: int | None = setting(60, minimum=1, doc="cap per topic bucket (null: none)")
    topic_keywords: dict[str, tuple[str, ...]] = setting(
        DEFAULT_TOPIC_KEYWORDS, minProperties=1,
        doc="bucket -> category keywords, first match wins (table order)")
    fallback_topic: str = setting("other", doc="bucket of pages no keyword matches")
    lead_heading: str = setting(LEAD_HEADING, minLength=1, doc="title of the lead section")
    drop_sections: tuple[str, ...] = setting(DEFAULT_DROP_SECTIONS,
                                             doc="non-content sections dropped")


@frozen
class WikipediaCorpus:
    """English Wikipedia Featured Articles with synthetic questions (paper §4, Appendix E)."""

    type: Literal["wikipedia"] = setting(doc="corpus kind")
    source: WikipediaXmlSource | WikipediaApiSource = setting(doc="where pages come from")
    selection: WikipediaSelection = setting(WikipediaSelection(), doc="which pages are kept")
    queries: QueryGenSettings = setting(QueryGenSettings(), doc="question generation")


@frozen
class UserCorpus:
    """Your own documents: Markdown (MyST included), reStructuredText, HTML or JSONL files
    (docs/byo.md)."""

    type: Literal["markdown", "rst", "html", "jsonl"] = setting(doc="input format")
    path: str | tuple[str, ...] = setting(doc="folder (recursive), file, glob, or a list")
    queries: str | UserQueriesFile | QueryGenSettings | None = setting(
        None, doc="your questions file (or {path: file}); a mapping without path: generation "
                  "settings; null: questions are generated")
    skip_bad_files: bool = setting(False, doc="record and skip unreadable files")
    lead_heading: str = setting(LEAD_HEADING, minLength=1,
                                doc="title of text before the first heading")
    heading_separator: str | None = setting(None, doc="split flat headings into a path")
    code_blocks: Literal["keep", "drop"] = setting("keep", doc="code blocks as paragraphs")
    extensions: tuple[str, ...] | None = setting(None, doc="file extensions read "
                                                           "(null: the format's)")
    fuzzy_min_ratio: float = setting(0.85, minimum=0.5, maximum=1.0,
                                     doc="least similarity of a fuzzily mapped snippet")
    dialect: Literal["auto", "commonmark", "myst"] = setting(
        "auto", doc="markdown only: auto (MyST when any file uses MyST directives, targets or "
                    "roles), commonmark, or myst")
    max_markup_share: float = setting(
        0.05, minimum=0.0, maximum=1.0,
        doc="largest share of a file's paragraphs (code left out) that may carry markup no "
            "reader rendered; above it (and 2 paragraphs or more) the file is refused, or "
            "skipped with skip_bad_files")
    partial_evidence: Literal["drop", "keep"] = setting(
        "drop", doc="a question some of whose evidence snippets map nowhere: drop it (naming "
                    "the snippet), or keep it scored against the part that maps (listed in "
                    "the funnel)")

    @property
    def questions_path(self) -> str | None:
        """Your questions file (``queries: file`` or ``queries: {path: file}``); None when the
        questions are generated."""
        q = self.queries
        if isinstance(q, str):
            return q
        return q.path if isinstance(q, UserQueriesFile) else None


USER_QUESTION_KEYS: frozenset[str] = frozenset({"queries", "fuzzy_min_ratio", "partial_evidence"})
"""The :class:`UserCorpus` keys only its questions read (their mapping, or their generation):
the documents build neither sees them nor reruns when they change."""


@dataclass(frozen=True)
class SourceFacts:
    """What is known of a kind of corpus from its settings alone.

    ``settings``: its settings class (told apart from the others by its ``type`` key);
    ``brings_questions(corpus)``: its questions come with its documents (QASPER's, a user's
    questions file), else an LLM generates them from the documents (Wikipedia, a user corpus
    without questions). Its reader is in :mod:`structablate.corpus`; the rest says which rules
    of ``rules/corpus.smk`` build it and what they write:

    ``build_rule``: the rule that builds its documents (and QASPER's questions);
    ``questions_rule``: the rule that maps the questions it brings apart from its documents
    (a user's questions file), None where the build rule writes them or they are generated;
    ``build_report``: the build rule writes a document build report (``corpus_report``: the
    Wikipedia selection, a user's files) beside the tables; QASPER's writes the question
    funnel only;
    ``selection_funnel``: that build report holds the funnel of documents selected from a
    larger source (Wikipedia's Featured Articles), the funnel the report draws instead of the
    question funnel;
    ``datasets(corpus)``: (config key below ``corpora.<name>``, hub dataset id) of each Hugging
    Face dataset its build reads, in config order (QASPER's ``hf`` sources).
    """

    settings: type
    brings_questions: Callable[[Any], bool]
    doc: str
    build_rule: str
    questions_rule: str | None
    build_report: bool
    selection_funnel: bool
    datasets: Callable[[Any], list[tuple[str, str]]]


def _no_datasets(corpus: Any) -> list[tuple[str, str]]:
    return []


def _qasper_datasets(corpus: QasperCorpus) -> list[tuple[str, str]]:
    return [(f"sources[{i}]", s.path) for i, s in enumerate(corpus.sources) if s.format == "hf"]


CORPUS_SOURCES: dict[str, SourceFacts] = {
    "qasper": SourceFacts(QasperCorpus, lambda corpus: True,
                          doc="QASPER papers with their questions",
                          build_rule="build_qasper", questions_rule=None, build_report=False,
                          selection_funnel=False, datasets=_qasper_datasets),
    "wikipedia": SourceFacts(WikipediaCorpus, lambda corpus: False,
                             doc="Wikipedia Featured Articles, questions generated",
                             build_rule="build_wikipedia", questions_rule=None,
                             build_report=True, selection_funnel=True, datasets=_no_datasets),
    "user": SourceFacts(UserCorpus, lambda corpus: questions_file(corpus) is not None,
                        doc="your own Markdown/MyST, reStructuredText, HTML or JSONL files "
                            "(docs/byo.md)",
                        build_rule="build_user_documents", questions_rule="map_user_questions",
                        build_report=True, selection_funnel=False, datasets=_no_datasets),
}
"""Corpus kind -> facts (order: the schema's)."""

CorpusSettings = Union[tuple(f.settings for f in CORPUS_SOURCES.values())]  # noqa: UP007
"""A ``corpora.<name>`` block: the settings class of one of :data:`CORPUS_SOURCES`."""


def corpus_kind(corpus: CorpusSettings) -> str:
    """The :data:`CORPUS_SOURCES` name of a corpus's settings (``qasper``, ``wikipedia``,
    ``user``)."""
    return next(k for k, f in CORPUS_SOURCES.items() if isinstance(corpus, f.settings))


def questions_file(corpus: CorpusSettings) -> str | None:
    """A user corpus's own questions file (``queries: file`` or ``{path: file}``), else
    None (:attr:`UserCorpus.questions_path`)."""
    return corpus.questions_path if isinstance(corpus, UserCorpus) else None
