"""The rule table: one entry per Snakemake rule of ``rules/*.smk``, holding every fact about
the rule that the plan, the sizing, the SLURM groups and the tests read.

Each :class:`Rule` names

* its job: the typed :class:`~structablate.plan.jobs.Job` class and the builder of its
  instance from the plan, the settings and a job's wildcards (:func:`rule_settings`), and the
  glue script the job runs (``workflow_scripts/<script>.py``, whose code is fingerprinted);
* its footprint (:class:`Rate`), from which :mod:`structablate.plan.resources` sizes each
  job; ``None`` for a rule that runs on the submit host (``localrule``) and books nothing;
* the model it loads (``embedder`` or ``reranker``, named by the wildcard of that name), whose
  device decides whether the job takes a GPU;
* its SLURM group: the CPU group its small jobs share (:class:`CpuGroup`: kind and the
  wildcards that scope one group job), and the GPU group kind it joins when its model is on a
  GPU (:mod:`structablate.plan.groups` computes both from the typed plan);
* its LLM stage (:data:`structablate.mechanisms.LLM_STAGE_JOBS`), read from the stage table;
* the files its job reads that no job writes (``reads``), whose sha256 is in its trigger
  (:func:`trigger`), and whether it is corpus-level (``corpus_level``: no condition's code
  counts in its fingerprint).

The rules in ``rules/*.smk`` read ``params``, ``threads``, ``resources`` and ``group``
through named functions of ``rules/common.smk`` that look the rule up here
(``trigger("chunk")``, ``threads_of("chunk")``, ``resources_of("chunk")``,
``group_of("chunk")``); ``tests/test_rule_table.py`` checks that the rules and this table
name the same rules, and that each rule passes its own name. Adding a rule is its entry here,
its rule and its code (a job class in :mod:`structablate.plan.jobs` and its glue).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from structablate import mechanisms, study
from structablate.mechanisms import LLM_STAGE_JOBS, STAGE_OF_RULE
from structablate.plan.jobs import (
    BuildQasperJob,
    BuildUserDocumentsJob,
    BuildWikipediaJob,
    CellStatisticsJob,
    ChunkJob,
    ContextualizeJob,
    ContrastsJob,
    EmbedJob,
    GenerateQueriesJob,
    InduceStructureJob,
    InputsOnlyJob,
    Job,
    LLMStageJob,
    MapUserQuestionsJob,
    ReportCellJob,
    ReportCorpusJob,
    ReportPageJob,
    RerankJob,
    RetrieveJob,
    ScoreJob,
    StructureQualityJob,
    SummarizeCellJob,
    SummaryMarkdownJob,
    TokenizeCorpusJob,
    job_models,
    llm_stage_job,
    only,
    qasper_files,
    wikipedia_export,
    wildcards_dict,
)
from structablate.settings import Settings, StatisticsSettings, planned_dtype
from structablate.settings.corpora import USER_QUESTION_KEYS
from structablate.user_files import ByoInputError, document_files

if TYPE_CHECKING:
    from structablate.plan import Plan

__all__ = ["CORPUS_RULES", "CpuGroup", "RULES", "Rate", "Rule", "job_class", "planned_rules",
           "rule", "rule_settings", "stage_reads", "trigger"]

Builder = Callable[["Plan", Settings, dict[str, str]], Job]
"""Builds a rule's job settings from the plan, the settings and the job's wildcards."""

Reads = Callable[["Plan", dict[str, str]], list[str]]
"""The files a rule's job reads that no job writes, from the plan and the job's wildcards."""


@dataclass(frozen=True)
class Rate:
    """A rule's footprint: peak RSS ``base_mb`` plus ``mb_per_mb`` per corpus MB, wall seconds
    ``base_s`` (start-up: imports, reading) plus ``s_per_mb`` CPU seconds per corpus MB
    spread over the job's threads; where ``per_model``, the CPU seconds are per corpus MB and
    per 100 MB of the model's weights (a larger model is slower), and the peak holds the
    weights twice besides (:func:`structablate.plan.resources.estimate`)."""

    base_mb: float
    mb_per_mb: float
    base_s: float
    s_per_mb: float
    per_model: bool = False


@dataclass(frozen=True)
class CpuGroup:
    """The SLURM group job a rule's small CPU jobs share with other rules' of the same
    ``kind`` (``corpus``, ``cell``, ``report``): one group job per value of the ``scope``
    wildcards, id ``{kind}-{value}-…`` (a scope wildcard the job lacks, the reranker of a
    retrieval or an embedding, is ``none``: the embedder's first-stage cell).
    ``apart_when_llm_writes_chunks``: the rule reads every chunkset's chunks, so where an LLM
    stage writes a chunkset from the windows of another (A1 from A0's, outside the group) it
    would wait on a job that waits on its own group: it joins none then."""

    kind: str
    scope: tuple[str, ...]
    apart_when_llm_writes_chunks: bool = False


CORPUS = CpuGroup("corpus", ("corpus",))
"""A corpus's preparation: tokens, induced structure on CPUs, chunks, BM25 check."""
CELL = CpuGroup("cell", ("corpus", "embedder", "reranker"))
"""A cell's retrieval and evaluation (with a CPU embedder's vectors)."""
REPORT = CpuGroup("report", ("corpus",))
"""A corpus's reports."""


@dataclass(frozen=True)
class Rule:
    """One rule's facts (see the module docstring). ``model``: the wildcard naming the model
    the job loads (``embedder``/``reranker``), None for none; ``gpu_group``: the SLURM group
    kind its jobs join when that model is on a GPU (``embed``, ``rerank``; the profile's
    ``group-components`` packs that many per submission); ``reads_questions``: its job reads
    the corpus's questions, so a GPU group of it waits for their generation too; ``reads``:
    the files its job reads that no job writes (:meth:`source_files`; an LLM stage's default
    is its recorded generations); ``corpus_level``: its outputs belong to a corpus and no
    condition shapes them (the corpus, its questions and their vectors, the induced
    structure, the token table), so the code of condition-specific modules
    (:data:`structablate.plan.code.CONDITION_MODULES`) never counts in its fingerprint, even
    where its glue imports it (``embed_queries`` shares ``embed.py`` with ``embed_chunks``);
    ``submit_host``: where it holds of the plan, the rule's jobs run on the submit host
    (:meth:`on_submit_host`; a rule without a rate always does)."""

    name: str
    job: type[Job]
    build: Builder
    rate: Rate | None
    script: str | None = None
    group: CpuGroup | None = None
    model: Literal["embedder", "reranker"] | None = None
    gpu_group: str | None = None
    reads_questions: bool = False
    reads: Reads | None = None
    corpus_level: bool = False
    submit_host: Callable[[Plan], bool] | None = None

    def on_submit_host(self, plan: Plan) -> bool:
        """Whether its jobs run on the submit host (Snakemake's ``localrule``): always for a
        rule without a rate (it books nothing), else where its ``submit_host`` holds of the
        plan (a Wikipedia build from the API: network-bound and light)."""
        return self.rate is None or (self.submit_host is not None and self.submit_host(plan))

    @property
    def may_use_gpu(self) -> bool:
        """Whether a job of it can take a GPU: it loads an embedder or reranker (``model``),
        or runs an LLM stage whose model may be served on one."""
        return self.model is not None or self.stage is not None

    def source_files(self, plan: Plan, wildcards: dict[str, str]) -> list[str]:
        """The files a job of this rule reads that no job writes (a user's corpus files,
        questions file, Wikipedia export, recorded generations: the rule's declared inputs
        outside ``results:``): its ``reads``, else an LLM stage's recorded generations
        (:func:`stage_reads`), else none. Their sha256 goes into the rule's trigger
        (:func:`trigger`), so an edit reruns the job whatever the files' times say."""
        if self.reads is not None:
            return self.reads(plan, wildcards)
        if self.stage is not None:
            return stage_reads(self.stage)(plan, wildcards)
        return []

    @property
    def glue(self) -> str:
        """The glue script's name (``workflow_scripts/<glue>.py``)."""
        return self.script or self.name

    @property
    def stage(self) -> str | None:
        """The LLM stage this rule runs (:data:`structablate.mechanisms.STAGE_OF_RULE`)."""
        return STAGE_OF_RULE.get(self.name)


# ------------------------------------------------------------------------------ reads


def _qasper_reads(plan: Plan, w: dict[str, str]) -> list[str]:
    return qasper_files(plan, w["corpus"])


def _wikipedia_reads(plan: Plan, w: dict[str, str]) -> list[str]:
    return wikipedia_export(plan, w["corpus"])


def _document_reads(plan: Plan, w: dict[str, str]) -> list[str]:
    try:
        return document_files(plan.settings.corpora[w["corpus"]])
    except ByoInputError:  # no files: the build names why
        return []


def _questions_reads(plan: Plan, w: dict[str, str]) -> list[str]:
    path = plan.user_queries(w["corpus"])
    return [path] if path else []


def stage_reads(stage: str) -> Reads:
    """The recorded generations LLM ``stage``'s job replays (the rule's ``recorded`` input;
    induction's only where the inducer calls its LLM): every stage rule's :attr:`Rule.reads`
    unless its entry names another."""
    def reads(plan: Plan, w: dict[str, str]) -> list[str]:
        if stage == "induction" and not plan.induction_uses_llm:
            return []
        per_corpus = mechanisms.LLM_STAGE_JOBS[stage].per_corpus
        return plan.recorded_generations(stage, w.get("corpus") if per_corpus else None)
    return reads


# ------------------------------------------------------------------------------ builders


def _build_qasper(plan: Plan, s: Settings, w: dict[str, str]) -> BuildQasperJob:
    """The corpus block with its sources resolved and ``data_dir`` dropped, and the run's
    ``seed`` where a source's ``papers:`` is a stratified sample."""
    c = s.corpora[w["corpus"]]
    sampled = any(src.papers is not None and src.sample == "stratified" for src in c.sources)
    return BuildQasperJob(
        corpus=replace(c, sources=tuple(plan.qasper_sources(w["corpus"])), data_dir=None),
        seed=s.seed if sampled else None)


def _wikipedia_from_api(plan: Plan) -> bool:
    """Whether a planned corpus reads Wikipedia from the MediaWiki API: its build is then
    network-bound (about one request per second) and light (17 ms CPU per page, 90 MB), and
    compute nodes are usually offline, so it runs on the submit host."""
    return any(getattr(plan.settings.corpora[c], "source", None) is not None
               and plan.settings.corpora[c].source.mode == "api" for c in plan.corpora)


def _user_documents(plan: Plan, s: Settings, w: dict[str, str]) -> BuildUserDocumentsJob:
    c = s.corpora[w["corpus"]]
    return BuildUserDocumentsJob(
        corpus=only(c, {f.name for f in dataclasses.fields(c)} - USER_QUESTION_KEYS))


def _user_questions(plan: Plan, s: Settings, w: dict[str, str]) -> MapUserQuestionsJob:
    c = s.corpora[w["corpus"]]
    return MapUserQuestionsJob(corpus=replace(c, queries=plan.user_queries(w["corpus"])))


def _chunk(plan: Plan, s: Settings, w: dict[str, str]) -> ChunkJob:
    """The ``chunking`` keys the chunkset's mechanisms read (:func:`mechanisms.reads`), the
    resolved tokenizer, and the ``seed`` where one of them reads it (the placebo's)."""
    keys = mechanisms.reads(w["chunkset"], "chunk")
    return ChunkJob(
        chunking=only(s.chunking, mechanisms.block_keys(keys, "chunking") - {"tokenizer"}),
        tokenizer=plan.tokenizer, seed=s.seed if "seed" in keys else None)


def _retrieve(plan: Plan, s: Settings, w: dict[str, str]) -> RetrieveJob:
    """The ``retrieval`` keys the condition's mechanisms read; the HNSW parameters only when
    the method is ``hnsw`` (exact search reads none of them)."""
    r = s.retrieval
    keep = mechanisms.block_keys(mechanisms.reads(w["condition"], "retrieve"), "retrieval")
    if r.method != "hnsw":
        keep.discard("hnsw")
    return RetrieveJob(retrieval=only(r, keep), condition=w["condition"])


def _statistics(plan: Plan, s: Settings) -> StatisticsSettings:
    """The statistics block with the primary cell resolved (embedder filled in)."""
    st = s.statistics
    return replace(st, primary=replace(st.primary, embedder=plan.primary.embedder))


def _embed(plan: Plan, s: Settings, w: dict[str, str]) -> EmbedJob:
    """An embedder's settings and the precision its ``dtype`` runs in on its device."""
    model = s.embedders[w["embedder"]]
    return EmbedJob(embedder=model, precision=planned_dtype(model.dtype, model.device))


def _rerank(plan: Plan, s: Settings, w: dict[str, str]) -> RerankJob:
    """A reranker's settings, the precision its ``dtype`` runs in on its device, the seed."""
    model = s.rerankers[w["reranker"]]
    return RerankJob(reranker=model, precision=planned_dtype(model.dtype, model.device),
                     seed=s.seed)


def _report_page(plan: Plan, s: Settings, w: dict[str, str]) -> ReportPageJob:
    """What the report page states about the run (see :class:`ReportPageJob`)."""
    return ReportPageJob(
        cells=plan.cells(), corpora=plan.corpora,
        corpus_types={c: s.corpora[c].type for c in plan.corpora},
        generated_queries={c: plan.generates_queries(c) for c in plan.corpora},
        embedders=s.embedders, rerankers=s.rerankers, llm=plan.llm_stages(),
        conditions=plan.conditions, measures=s.metrics.measures,
        primary=_statistics(plan, s).primary, size_match_structure=s.size_match_structure,
        inducer=s.induction.inducer, stage_conditions=plan.stage_conditions(),
        guard=s.report.guard,
        contrasts={"statistics.contrasts": s.statistics.contrasts,
                   "statistics.extra_contrasts": s.statistics.extra_contrasts},
        n_boot=s.statistics.bootstrap_iters, top_k=s.retrieval.top_k)


def _stage_rate(stage: str) -> Rate:
    """An LLM stage's footprint on CPUs, declared with the stage
    (:attr:`structablate.mechanisms.StageJob.cpu_rate`)."""
    return Rate(*LLM_STAGE_JOBS[stage].cpu_rate)


# ------------------------------------------------------------------------------ the table

# Rates: peak RSS (base_mb, mb_per_mb) from the benchmark files of the bundled default
# (resources/footprints.tsv, written by `python -m structablate.plan.footprints
# results/benchmarks --tsv`; docs/cluster.md "Sizes"): every rule's rate at the bundled
# corpora's sizes reaches its measured peak (tests/test_footprints.py), and the booking adds
# the margins of structablate.plan.resources.estimate. Every small CPU rule peaks at 80-400
# MB there; embed_chunks at 0.8-1.0 GB (1.6 GB once, a forked child counted twice in max_rss),
# hence its base of 1,450 MB plus twice MiniLM's 91 MB. Slopes (MB per corpus MB, any model):
# from the full QASPER run of ~60 corpus MB where it was measured (embed_chunks 2.6 GB,
# embed_queries 2.1 GB, TextTiling induction 3.0 GB, tokenize_corpus 0.5-0.7 GB, score
# 0.6-1.2 GB), else taken as 20 MB per corpus MB. Seconds: embedding 99 CPU s for MiniLM over
# the QASPER sample's 0.57 MB, 48 over Wikipedia's 0.35 MB; TextTiling induction 71 and 41
# CPU s; else 5 CPU s per corpus MB. The LLM stages' rates on CPUs (TextTiling induction
# measured as above; replaying or calling a server taken as 30 CPU s per corpus MB) are
# declared with each stage.
_SMALL = Rate(450, 20, 20, 5)

_TABLE: tuple[Rule, ...] = (
    Rule("build_qasper", BuildQasperJob, _build_qasper, _SMALL, reads=_qasper_reads,
         corpus_level=True),
    Rule("build_wikipedia", BuildWikipediaJob, lambda p, s, w: BuildWikipediaJob(
        source=s.corpora[w["corpus"]].source, selection=s.corpora[w["corpus"]].selection),
        _SMALL, reads=_wikipedia_reads, corpus_level=True, submit_host=_wikipedia_from_api),
    Rule("build_user_documents", BuildUserDocumentsJob, _user_documents, _SMALL,
         reads=_document_reads, corpus_level=True),
    Rule("map_user_questions", MapUserQuestionsJob, _user_questions, _SMALL, group=CORPUS,
         reads=_questions_reads, corpus_level=True),
    Rule("generate_queries", GenerateQueriesJob, lambda p, s, w: GenerateQueriesJob(
        queries=replace(p.query_generation(w["corpus"]), llm=None),
        llm=p.stage_llm("queries", w["corpus"])), _stage_rate("queries"), corpus_level=True),
    Rule("bm25_check", InputsOnlyJob, lambda p, s, w: InputsOnlyJob(), _SMALL, group=CORPUS,
         corpus_level=True),
    Rule("induce_structure", InduceStructureJob, lambda p, s, w: InduceStructureJob(
        induction=replace(s.induction, llm=None),
        llm=p.stage_llm("induction") if p.induction_uses_llm else None),
        _stage_rate("induction"), group=CORPUS, corpus_level=True),
    Rule("tokenize_corpus", TokenizeCorpusJob,
         lambda p, s, w: TokenizeCorpusJob(tokenizer=p.tokenizer), Rate(450, 6, 20, 0.4),
         group=CORPUS, corpus_level=True),
    Rule("chunk", ChunkJob, _chunk, Rate(450, 20, 30, 5), group=CORPUS),
    Rule("contextualize", ContextualizeJob, lambda p, s, w: ContextualizeJob(
        contexts=replace(s.contexts, llm=None), llm=p.stage_llm("contexts"),
        tokenizer=p.tokenizer), _stage_rate("contexts")),
    Rule("embed_chunks", EmbedJob, _embed, Rate(1450, 16, 30, 200, per_model=True),
         script="embed", group=CELL, model="embedder", gpu_group="embed"),
    Rule("embed_queries", EmbedJob, _embed, Rate(800, 19, 30, 50, per_model=True),
         script="embed", group=CELL, model="embedder", gpu_group="embed",
         reads_questions=True, corpus_level=True),
    Rule("retrieve", RetrieveJob, _retrieve, _SMALL, group=CELL),
    Rule("rerank", RerankJob, _rerank, Rate(800, 0.2, 30, 1000, per_model=True),
         model="reranker", gpu_group="rerank", reads_questions=True),
    Rule("score", ScoreJob, lambda p, s, w: ScoreJob(
        measures=s.metrics.measures, conditions=p.conditions), Rate(450, 12, 20, 1),
        group=CELL),
    Rule("summarize_cell", SummarizeCellJob,
         lambda p, s, w: SummarizeCellJob(conditions=p.conditions), None),
    Rule("summary_markdown", SummaryMarkdownJob, lambda p, s, w: SummaryMarkdownJob(
        embedders=s.embedders, rerankers=s.rerankers, cells=p.cells(),
        metric=p.primary_metric), None),
    Rule("contrasts", ContrastsJob, lambda p, s, w: ContrastsJob(
        statistics=_statistics(p, s), seed=s.seed, conditions=p.conditions),
        Rate(500, 20, 60, 30), group=CELL),
    Rule("trec_export", InputsOnlyJob, lambda p, s, w: InputsOnlyJob(), _SMALL, group=CELL),
    Rule("cell_statistics", CellStatisticsJob, lambda p, s, w: CellStatisticsJob(
        conditions=p.conditions, n_boot=s.statistics.bootstrap_iters, seed=s.seed),
        Rate(500, 20, 60, 30), group=CELL),
    Rule("report_cell", ReportCellJob, lambda p, s, w: ReportCellJob(
        conditions=p.conditions, metric=p.primary_metric,
        reranker=s.rerankers[w["reranker"]], guard=s.report.guard), Rate(500, 20, 40, 5),
        group=REPORT),
    Rule("structure_quality", StructureQualityJob, lambda p, s, w: StructureQualityJob(
        conditions=p.conditions, chunksets=p.chunksets,
        hier_top_sections=s.retrieval.hier_top_sections, inducer=s.induction.inducer,
        seed=s.seed), _SMALL,
        group=replace(CORPUS, apart_when_llm_writes_chunks=True)),
    Rule("report_corpus", ReportCorpusJob, lambda p, s, w: ReportCorpusJob(
        metric=p.primary_metric, conditions=p.conditions, chunksets=p.chunksets,
        embedders=p.embedders, size_match_structure=s.size_match_structure),
        Rate(500, 20, 30, 5), group=REPORT),
    Rule("report_page", ReportPageJob, _report_page, None),
)

RULES: dict[str, Rule] = {r.name: r for r in _TABLE}
"""Rule name -> its :class:`Rule`, in table order."""
for _stage, _stage_job in LLM_STAGE_JOBS.items():
    # a grid-level LLM stage without an entry of its own gets the generic job class
    if _stage_job.rule not in RULES and not _stage_job.per_corpus:
        RULES[_stage_job.rule] = Rule(_stage_job.rule, LLMStageJob, llm_stage_job(_stage),
                                      _stage_rate(_stage))


CORPUS_RULES = frozenset(r.name for r in RULES.values() if r.corpus_level)
"""The rules whose entry is ``corpus_level`` (see :class:`Rule`)."""


def rule(name: str) -> Rule:
    """The table entry of rule ``name``; KeyError naming the table where it has none."""
    if name not in RULES:
        raise KeyError(f"rule {name!r} has no entry in structablate.plan.rules.RULES: add one "
                       "next to its rule in rules/*.smk")
    return RULES[name]


def planned_rules() -> list[str]:
    """Every rule the plan gives settings to, in table order."""
    return list(RULES)


def job_class(name: str) -> type[Job]:
    """The :class:`~structablate.plan.jobs.Job` subclass of rule ``name``'s jobs."""
    if name not in RULES:
        raise KeyError(f"no settings are planned for rule {name!r}")
    return RULES[name].job


def rule_settings(plan: Plan, name: str, wildcards: Mapping[str, str] | Any = None) -> Job:
    """The typed settings a job of rule ``name`` uses, an instance of :func:`job_class`;
    ``wildcards``: the job's (a Snakemake wildcards object or a mapping; ``None``: a job
    without any)."""
    if name not in RULES:
        raise KeyError(f"no settings are planned for rule {name!r}")
    return RULES[name].build(plan, plan.settings, wildcards_dict(wildcards))


def trigger(plan: Plan, name: str, script: str | Path) -> Callable[[Any], dict[str, Any]]:
    """A ``params`` function of rule ``name``: its job's settings without ``runtime`` keys
    (:meth:`~structablate.plan.jobs.Job.dump`); ``inputs``, the sha256 of each file the job
    reads that no job writes (:meth:`Rule.source_files`; absent where there are none);
    ``models``, the digest of each model it computes with that is known by its files
    (:func:`~structablate.plan.jobs.job_models`,
    :func:`structablate.model_paths.model_digest`; absent where none is); and the fingerprint
    of the package code its job runs (``code``; a ``corpus_level`` rule's serves no
    condition). Digests are cached by each file's size, times and inode
    (:class:`structablate.digests.DigestCache`): a file is read again only when one of those
    moved."""
    from structablate.digests import DigestCache
    from structablate.model_paths import model_digest
    from structablate.plan.code import fingerprint

    entry = rule(name)

    def params(wildcards: Any = None) -> dict[str, Any]:
        w = wildcards_dict(wildcards)
        condition = w.get("condition") or w.get("chunkset")
        if entry.corpus_level:  # nothing a condition decides
            serves = []
        elif condition is None:  # a job over the grid
            serves = [study.condition(c) for c in plan.conditions]
        else:  # one condition's (or chunkset's) job
            serves = [study.condition(condition)] if study.is_condition(condition) else []
        job = plan.rule_settings(name, w)
        out = job.dump(outputs_only=True)
        reads = entry.source_files(plan, w)
        if reads:
            out["inputs"] = DigestCache.default().files(reads)
        models = {m: d for m, tok in job_models(job).items()
                  if (d := model_digest(m, tokenizer=tok)) is not None}
        if models:
            out["models"] = models
        out["code"] = fingerprint(script, serves)
        return out

    return params
