"""What each rule's job is given: one frozen, typed dataclass per rule's job (:class:`Job` and
its subclasses, each declared once, here; the rule table :mod:`structablate.plan.rules` pairs
each rule with its class and the builder of its instance), :func:`rule_settings` mapping a
rule name and a job's wildcards to the rule's instance, holding the typed values that job uses
and nothing else (a key a job does not use is reset to its default by :func:`only`, so
changing it reruns nothing), and :func:`structablate.plan.rules.trigger` turning the same
instance, without its ``runtime`` keys and with the sha256 of the files the job reads that no
job writes (each rule's ``reads``), the digest of the model folders it computes with
(:func:`job_models`) and the fingerprint of the code the job runs, into the rule's ``params``,
so Snakemake reruns a job
exactly when something that can change its outputs changes, whatever the files' modification
times say. The glue reads the instance by attribute (``settings.chunking``;
:func:`structablate.workflow.setup`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from structablate.settings import (
    ChunkingSettings,
    ContextsSettings,
    EmbedderSettings,
    GuardSettings,
    InductionSettings,
    LLMSettings,
    PrimaryCell,
    QasperCorpus,
    QueryGenSettings,
    RerankerSettings,
    RetrievalSettings,
    Settings,
    StatisticsSettings,
    UserCorpus,
    WikipediaApiSource,
    WikipediaSelection,
    WikipediaXmlSource,
    dump,
)

if TYPE_CHECKING:
    from structablate.plan import Cell, Plan

__all__ = ["Job", "job_models", "only", "qasper_files", "rule_settings", "wikipedia_export",
           "wildcards_dict"]


def only(obj: Any, keep: Iterable[str]) -> Any:
    """``obj`` (a settings object) with every field not in ``keep`` reset to its default, so a
    job that does not use a key neither sees it nor reruns when it changes."""
    keep = set(keep)
    reset = {}
    for f in dataclasses.fields(obj):
        if f.name in keep:
            continue
        if f.default is not dataclasses.MISSING:
            reset[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            reset[f.name] = f.default_factory()
    return replace(obj, **reset)


def wildcards_dict(w: Any) -> dict[str, str]:
    """A job's wildcards as a plain ``name -> value`` dict (``None``: no wildcards)."""
    if w is None:
        return {}
    if isinstance(w, Mapping):
        return dict(w)
    return {k: str(v) for k, v in w.items()} if hasattr(w, "items") else dict(vars(w))


# ------------------------------------------------------------------------------ job classes

_ABSENT_WHEN_NONE = "structablate.plan.jobs.absent_when_none"


def absent_when_none() -> Any:
    """A field a job is given only where its builder fills it (the placebo's ``seed`` of a
    chunk job): left ``None``, the job's params and :meth:`Job.dump` hold no such key at all,
    so the jobs that never read it keep the params they always had. A field declared plainly
    keeps its key with ``None`` (an induction without an LLM: ``llm: None``)."""
    return dataclasses.field(default=None, metadata={_ABSENT_WHEN_NONE: True})


@dataclass(frozen=True)
class Job:
    """The settings one job of a rule is given: a subclass per rule (or per glue script two
    rules share), whose fields, in order, are the keys of the rule's ``params`` (less
    ``code``) and the attributes its glue reads. Values are the plan's typed settings objects,
    names and numbers, sliced to what the job's outputs depend on."""

    def given(self) -> dict[str, Any]:
        """``field -> value`` of what the job is given, in field order: every field but an
        :func:`absent_when_none` one that holds ``None``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if not (f.metadata.get(_ABSENT_WHEN_NONE) and getattr(self, f.name) is None)}

    def dump(self, *, outputs_only: bool = False) -> dict[str, Any]:
        """Plain data (dicts, lists, scalars) of :meth:`given`; with ``outputs_only`` the
        ``runtime`` settings fields are left out at every depth (the rule's trigger)."""
        return {k: dump(v, outputs_only=outputs_only) for k, v in self.given().items()}


@dataclass(frozen=True)
class InputsOnlyJob(Job):
    """``bm25_check`` and ``trec_export``: nothing from the config. The BM25 check reads the G2
    chunks without their prefix with fixed parameters, and the TREC export writes a run and its
    qrels as they are, so only their inputs (and code) rerun them."""


@dataclass(frozen=True)
class BuildQasperJob(Job):
    """``build_qasper``: the QASPER corpus block with its ``sources`` resolved against
    ``data_dir`` and ``data_dir`` itself dropped (``None``): the files read are the rule's
    inputs, so moving the same files under another folder reruns nothing."""

    corpus: QasperCorpus
    seed: int | None = absent_when_none()
    """The run's seed, given only where a source draws a stratified sample (``papers:`` with
    ``sample: stratified``): a full corpus or a first-N slice does not read it, so a seed
    edit reruns only stratified slices."""


@dataclass(frozen=True)
class BuildWikipediaJob(Job):
    """``build_wikipedia``: where pages come from and which are kept, not the corpus's
    ``queries`` block (question generation is :class:`GenerateQueriesJob`'s), so a question
    setting reruns no page selection."""

    source: WikipediaXmlSource | WikipediaApiSource
    selection: WikipediaSelection


@dataclass(frozen=True)
class BuildUserDocumentsJob(Job):
    """``build_user_documents``: the user corpus block with the keys only its questions read
    (:data:`~structablate.settings.corpora.USER_QUESTION_KEYS`) reset to their defaults, so a
    question edit reruns only :class:`MapUserQuestionsJob`'s rule."""

    corpus: UserCorpus


@dataclass(frozen=True)
class MapUserQuestionsJob(Job):
    """``map_user_questions``: the whole user corpus block, its ``queries`` resolved to the
    questions file the plan names (:meth:`Plan.user_queries`: a path, or ``None``)."""

    corpus: UserCorpus


@dataclass(frozen=True)
class GenerateQueriesJob(Job):
    """``generate_queries``: the corpus's question-generation settings without their ``llm``
    override (``None``), and the ``queries`` stage's LLM settings with that override laid over
    the ``llm`` block (:meth:`Plan.stage_llm`): the override reaches the job once, merged."""

    queries: QueryGenSettings
    llm: LLMSettings


@dataclass(frozen=True)
class InduceStructureJob(Job):
    """``induce_structure``: the induction block without its ``llm`` override, and the
    ``induction`` stage's merged LLM settings, ``None`` (the key kept) where the inducer calls
    no LLM, so an LLM edit reruns no such induction."""

    induction: InductionSettings
    llm: LLMSettings | None


@dataclass(frozen=True)
class TokenizeCorpusJob(Job):
    """``tokenize_corpus``: the resolved tokenizer (:attr:`Plan.tokenizer`), the one model
    whose token counts every chunk job of the corpus reads."""

    tokenizer: str


@dataclass(frozen=True)
class ChunkJob(Job):
    """``chunk``: the ``chunking`` keys the chunkset's mechanisms read
    (:func:`structablate.mechanisms.reads`; the rest reset to their defaults), the resolved
    tokenizer, and the global ``seed`` only where a mechanism reads it (the placebo's
    permutation of P and GP; absent from every other chunk job's params)."""

    chunking: ChunkingSettings
    tokenizer: str
    seed: int | None = absent_when_none()


@dataclass(frozen=True)
class ContextualizeJob(Job):
    """``contextualize`` (A1's situating contexts): the contexts block without its ``llm``
    override, the ``contexts`` stage's merged LLM settings, and the tokenizer that recounts
    each chunk's prefix tokens."""

    contexts: ContextsSettings
    llm: LLMSettings
    tokenizer: str


@dataclass(frozen=True)
class LLMStageJob(Job):
    """The job of a grid-level LLM stage of :data:`structablate.mechanisms.LLM_STAGE_JOBS`
    that has no class of its own (a stage added to the table after these): its config block
    (the settings field named as the stage) without its ``llm`` override, the stage's merged
    LLM settings (:meth:`Plan.stage_llm`), and the resolved tokenizer. The glue reads
    ``settings.block``, ``settings.llm``, ``settings.tokenizer``."""

    block: Any
    llm: LLMSettings
    tokenizer: str


def llm_stage_job(stage: str) -> Callable[[Plan, Settings, dict[str, str]], LLMStageJob]:
    """The builder of :class:`LLMStageJob` for grid-level ``stage``."""
    return lambda p, s, w: LLMStageJob(block=replace(getattr(s, stage), llm=None),
                                       llm=p.stage_llm(stage), tokenizer=p.tokenizer)


@dataclass(frozen=True)
class EmbedJob(Job):
    """``embed_chunks`` and ``embed_queries`` (one glue, ``embed.py``): the embedder's settings
    and ``precision``, the dtype it runs in on its device (``auto`` resolved from the settings
    alone: changing ``device`` reruns nothing unless it changes the precision; the glue
    refuses an embedder that resolves another)."""

    embedder: EmbedderSettings
    precision: str


@dataclass(frozen=True)
class RetrieveJob(Job):
    """``retrieve``: the ``retrieval`` keys the condition's mechanisms read (the HNSW
    parameters only when ``method`` is ``hnsw``: exact search reads none of them), and the
    condition's name."""

    retrieval: RetrievalSettings
    condition: str


@dataclass(frozen=True)
class RerankJob(Job):
    """``rerank``: the reranker's settings, the precision its ``dtype`` runs in on its device
    (the glue refuses a run in another: the trigger recorded this one), and the global
    ``seed`` (torch's, fixed before the cross-encoder loads)."""

    reranker: RerankerSettings
    precision: str
    seed: int


@dataclass(frozen=True)
class ScoreJob(Job):
    """``score``: the configured measures and the grid's conditions, in grid order (the order
    of the rule's ``runs`` and ``scores`` files)."""

    measures: tuple[str, ...]
    conditions: list[str]


@dataclass(frozen=True)
class SummarizeCellJob(Job):
    """``summarize_cell``: the grid's conditions, in the order of the rule's ``scores``
    files."""

    conditions: list[str]


@dataclass(frozen=True)
class SummaryMarkdownJob(Job):
    """``summary_markdown``: every embedder's and reranker's settings (named in the text), the
    grid's cells in the order of the rule's inputs, and the primary metric."""

    embedders: dict[str, EmbedderSettings]
    rerankers: dict[str, RerankerSettings]
    cells: list[Cell]
    metric: str


@dataclass(frozen=True)
class ContrastsJob(Job):
    """``contrasts``: the statistics block with the primary cell's embedder filled in, the
    global ``seed`` (bootstrap), and the grid's conditions in the order of the rule's
    ``scores`` files."""

    statistics: StatisticsSettings
    seed: int
    conditions: list[str]


@dataclass(frozen=True)
class CellStatisticsJob(Job):
    """``cell_statistics``: the grid's conditions in input order, the bootstrap replicates
    (``n_boot``: ``statistics.bootstrap_iters``) and the global ``seed``, nothing else of the
    statistics block."""

    conditions: list[str]
    n_boot: int
    seed: int


@dataclass(frozen=True)
class ReportCellJob(Job):
    """``report_cell``: the grid's conditions, the primary metric, this cell's reranker
    settings (its provenance flags) and the structure-quality guard that marks contrasts not
    testable."""

    conditions: list[str]
    metric: str
    reranker: RerankerSettings
    guard: GuardSettings


@dataclass(frozen=True)
class StructureQualityJob(Job):
    """``structure_quality``: the grid's conditions and chunksets (in the order of the rule's
    chunk inputs), the sections two-stage routing keeps (``hier_top_sections``), the inducer's
    name and the global ``seed`` (chance baselines)."""

    conditions: list[str]
    chunksets: list[str]
    hier_top_sections: int
    inducer: str
    seed: int


@dataclass(frozen=True)
class ReportCorpusJob(Job):
    """``report_corpus``: the primary metric, the grid's conditions, chunksets and embedders
    (the order of the rule's inputs: embedder outer, chunkset inner) and the structure fixed
    windows are size-matched to."""

    metric: str
    conditions: list[str]
    chunksets: list[str]
    embedders: list[str]
    size_match_structure: str


@dataclass(frozen=True)
class ReportPageJob(Job):
    """``report_page``: what the report page states about the run, the fields of
    :class:`structablate.report.PageSettings` and the grid the page walks (cells in input
    order, corpora with their kind and whether their questions are generated). ``primary``:
    the primary cell with its embedder filled in; ``llm``: each LLM stage's settings (``None``:
    it does not run); ``contrasts``: the configured families, ``statistics.contrasts`` and
    ``statistics.extra_contrasts``, so a contrast that did not run is named as configured;
    ``n_boot``: the bootstrap replicates the contrasts drew (``statistics.bootstrap_iters``),
    so a decision within Monte-Carlo error of α is flagged; ``top_k``: the results per question
    (``retrieval.top_k``), so a routing row says what share of them was back-filled."""

    cells: list[Cell]
    corpora: list[str]
    corpus_types: dict[str, str]
    generated_queries: dict[str, bool]
    embedders: dict[str, EmbedderSettings]
    rerankers: dict[str, RerankerSettings]
    llm: dict[str, LLMSettings | None]
    conditions: list[str]
    measures: tuple[str, ...]
    primary: PrimaryCell
    size_match_structure: str
    inducer: str
    stage_conditions: dict[str, list[str]]
    guard: GuardSettings
    contrasts: dict[str, dict[str, tuple[str, str]]]
    n_boot: int
    top_k: int


# ------------------------------------------------------------------------------ triggers

def rule_settings(plan: Plan, rule: str, wildcards: Mapping[str, str] | Any = None) -> Job:
    """The typed settings a job of ``rule`` uses (:meth:`Plan.rule_settings`: the builder of
    the rule's entry in :data:`structablate.plan.rules.RULES`)."""
    return plan.rule_settings(rule, wildcards)


def qasper_files(plan: Plan, corpus: str) -> list[str]:
    """The v0.3 files QASPER corpus ``corpus`` reads (``data_dir`` resolved; hub splits are no
    files): its build's input, what its trigger hashes and what the plan dates."""
    return [s.path for s in plan.qasper_sources(corpus) if s.format == "v0.3"]


def wikipedia_export(plan: Plan, corpus: str) -> list[str]:
    """The XML export Wikipedia corpus ``corpus`` parses (none when it reads the MediaWiki
    API): its build's input, what its trigger hashes and what the plan dates."""
    source = plan.settings.corpora[corpus].source
    return [source.path] if source.mode == "xml" else []


def job_models(job: Job) -> dict[str, bool]:
    """The models a job computes with, each mapped to whether the job only tokenizes with it:
    an embedder's or reranker's ``model`` among its fields (``False``; a reranker without
    one, ``none``, left out) and the ``tokenizer`` that counts its tokens (``True``)."""
    out: dict[str, bool] = {}
    for name, value in job.given().items():
        if isinstance(value, (EmbedderSettings, RerankerSettings)) and value.model:
            out[value.model] = False
        elif name == "tokenizer" and isinstance(value, str) and value:
            out.setdefault(value, True)
    return out
