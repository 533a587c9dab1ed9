"""The plan: one typed view of a run, built once from the validated config.

:class:`Plan` joins three things the Snakefile, the rules, the glue scripts and the report
all read:

* **settings** — the typed :class:`~structablate.settings.Settings` (every key's only
  default lives there);
* **grid** — corpora, conditions, chunksets, cells (corpus × embedder × reranker), and the one
  answer to which LLM stage each condition needs (:meth:`Plan.stage_conditions`);
* **paths** — every results path (:class:`~structablate.results_paths.Paths`).

A rule's settings come from :meth:`Plan.rule_settings` (rule name and wildcards -> the typed
values that rule's job uses, and nothing else). The same call feeds the rule's ``params``
(:meth:`Plan.trigger`: those values without their ``runtime`` keys, plus the fingerprint of
the code the job runs), so Snakemake reruns a job exactly when something that can change its
outputs changes, and the glue (:func:`structablate.workflow.setup`) reads the very values the
trigger was computed from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from structablate import study
from structablate.mechanisms import LLM_STAGE_JOBS, mechanism_stages, written_by
from structablate.plan import checks, jobs, rules
from structablate.plan.jobs import only
from structablate.plan.rules import CORPUS_RULES
from structablate.results_paths import Paths
from structablate.settings import (
    CORPUS_SOURCES,
    INDUCERS,
    LLMSettings,
    QasperSource,
    QueryGenSettings,
    Settings,
    SourceFacts,
    corpus_kind,
    dump,
    generates_on_gpu,
    load_settings,
    questions_file,
)
from structablate.settings._core import build_settings
from structablate.user_files import ByoInputError, input_files

__all__ = ["CORPUS_RULES", "LLM_STAGES", "Cell", "Plan", "only"]

LLM_STAGES = study.LLM_STAGES
"""The stages that call an LLM (:data:`structablate.study.LLM_STAGES`)."""


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of the grid: a corpus, an embedder and a reranker (``none``: no reranker)."""

    corpus: str
    embedder: str
    reranker: str

    @property
    def label(self) -> str:
        return f"{self.corpus} / {self.embedder} / {self.reranker}"


class Plan:
    """Settings, grid and paths of one run (see the module docstring)."""

    def __init__(self, settings: Settings, source: str = "config", *, check_files: bool = True,
                 check_models: bool = True):
        self.settings = settings
        self.source = source
        self.paths = Paths(settings.results)
        checks.check_plan(self, check_files, check_models)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str = "config", *,
                    check_files: bool = True, check_models: bool = True) -> Plan:
        """Validate a YAML config mapping and plan it; :class:`ConfigError` names the key.
        ``check_models=False`` leaves the models and datasets to the caller
        (:meth:`model_problems`: the workflow lists them in a dry run, refuses them before
        the first job of a real one)."""
        checks.refuse_secrets(config, source)
        return cls(load_settings(config, source), source, check_files=check_files,
                   check_models=check_models)

    # ------------------------------------------------------------------ grid
    @property
    def conditions(self) -> list[str]:
        """The conditions run, in config order."""
        return list(self.settings.conditions)

    @staticmethod
    def condition(name: str) -> study.Condition:
        return study.condition(name)

    @property
    def chunksets(self) -> list[str]:
        """Distinct chunksets of the conditions (A4 reads A3's, G4 reads G3's)."""
        return study.chunksets_for(self.conditions)

    @property
    def chunked(self) -> list[str]:
        """Chunksets the ``chunk`` rule cuts: every chunkset not made from another's windows
        (not A1, :func:`structablate.study.is_cut`), and the BM25 check's always
        (:data:`structablate.study.BM25_CHUNKSET`)."""
        return [c for c in dict.fromkeys([*self.chunksets, study.BM25_CHUNKSET])
                if study.is_cut(c)]

    def written_by(self, stage: str) -> list[str]:
        """Chunksets LLM ``stage``'s rule makes: those with a mechanism whose text the stage
        writes onto another chunkset's windows (:func:`structablate.mechanisms.
        mechanism_stages`; ``contexts``: A1, from A0's windows)."""
        return written_by(stage, self.chunksets)

    @property
    def contextualized(self) -> list[str]:
        """Chunksets the ``contextualize`` rule makes (:meth:`written_by` ``contexts``: A1)."""
        return self.written_by("contexts")

    @property
    def llm_written(self) -> list[str]:
        """Chunksets some LLM stage writes text into (A1), whichever stage."""
        return [c for c in self.chunksets if mechanism_stages(c)]

    @staticmethod
    def windows_of(chunkset: str) -> str:
        """The chunkset whose windows a contextualised chunkset takes (A1: A0)."""
        base = study.derived_from(chunkset)
        if base is None or study.is_cut(chunkset):
            raise KeyError(f"chunkset {chunkset!r} is cut, not made from another's windows")
        return base

    @property
    def bm25_chunkset(self) -> str:
        """The chunkset the BM25 non-lexicality check reads (gold structure, no prefix)."""
        return study.BM25_CHUNKSET

    @property
    def corpora(self) -> list[str]:
        return list(self.settings.corpora)

    def corpus_kind(self, corpus: str) -> str:
        """``qasper``, ``wikipedia`` or ``user`` (Markdown, HTML, JSONL)."""
        return corpus_kind(self.settings.corpora[corpus])

    def source_facts(self, corpus: str) -> SourceFacts:
        """The :data:`~structablate.settings.CORPUS_SOURCES` facts of a corpus's kind: its
        rules, what they write, the datasets it reads."""
        return CORPUS_SOURCES[self.corpus_kind(corpus)]

    def user_queries(self, corpus: str) -> str | None:
        """The questions file of a user corpus, or None (questions are generated)."""
        return questions_file(self.settings.corpora[corpus])

    def generates_queries(self, corpus: str) -> bool:
        """Whether an LLM writes the corpus's questions (Wikipedia; user corpora without a
        questions file)."""
        c = self.settings.corpora[corpus]
        return not CORPUS_SOURCES[corpus_kind(c)].brings_questions(c)

    def query_generation(self, corpus: str) -> QueryGenSettings:
        """The question-generation settings of a corpus whose questions are generated."""
        c = self.settings.corpora[corpus]
        q = getattr(c, "queries", None)
        return q if isinstance(q, QueryGenSettings) else QueryGenSettings()

    @property
    def embedders(self) -> list[str]:
        return list(self.settings.embedders)

    @property
    def rerankers(self) -> list[str]:
        return list(self.settings.rerankers)

    def rerankers_for(self, embedder: str) -> list[str]:
        """Rerankers applied to an embedder's runs (``none`` always; others as configured)."""
        out = []
        for name, rr in self.settings.rerankers.items():
            if name == "none" or rr.embedders is None or embedder in rr.embedders:
                out.append(name)
        return out

    def cells(self, corpus: str | None = None) -> list[Cell]:
        """Every cell in grid order (corpus, embedder, reranker), of one corpus if given."""
        return [Cell(c, e, r) for c in self.corpora if corpus in (None, c)
                for e in self.embedders for r in self.rerankers_for(e)]

    @property
    def primary(self) -> Cell:
        """The pre-registered primary cell's embedder and reranker (corpus left empty);
        the embedder defaults to the last one listed (the paper's strong embedder)."""
        p = self.settings.statistics.primary
        return Cell("", p.embedder or self.embedders[-1], p.reranker)

    @property
    def primary_metric(self) -> str:
        return self.settings.statistics.primary.metric

    @property
    def tokenizer(self) -> str:
        """The tokenizer that counts chunk tokens: chunking.tokenizer or the first embedder's
        model (one per corpus, so every embedder sees identical chunks)."""
        return self.settings.chunking.tokenizer or self.settings.embedders[
            self.embedders[0]].model

    def structure_of(self, chunkset: str) -> str:
        """The sections table (``gold`` or ``induced``) a chunkset's boundaries follow, or for
        fixed windows the one that labels each window with a section (gold)."""
        return study.sections_of(chunkset).value

    def size_reference(self, chunkset: str) -> str | None:
        """Whose structural chunks (``gold`` or ``induced``) size a fixed-window chunkset: the
        condition's own ``size_match`` (A0g: gold), else ``size_match_structure``; None for
        structural chunksets."""
        ref = study.size_reference(chunkset, self.settings.size_match_structure)
        return None if ref is None else ref.value

    def reads_induced(self, name: str) -> bool:
        """Whether condition ``name`` reads induced sections: its boundaries follow them, or
        its fixed windows are sized to them (:func:`structablate.study.reads_induced_structure`
        with ``size_match_structure``)."""
        return study.reads_induced_structure(name, self.settings.size_match_structure)

    def qasper_sources(self, corpus: str) -> list[QasperSource]:
        """A QASPER corpus's sources with relative v0.3 paths resolved against ``data_dir``."""
        c = self.settings.corpora[corpus]
        if c.data_dir is None:
            return list(c.sources)
        return [replace(s, path=str(Path(c.data_dir) / s.path))
                if s.format == "v0.3" and not Path(s.path).is_absolute() else s
                for s in c.sources]

    def funnel_file(self, corpus: str) -> str:
        """The funnel the report draws for a corpus: Wikipedia's selection report, or the
        question funnel every other corpus writes (QASPER, user and generated questions)."""
        if self.source_facts(corpus).selection_funnel:
            return self.paths.corpus_report(corpus)
        return self.paths.funnel(corpus)

    def source_files(self) -> dict[str, list[str]]:
        """Every file a corpus build reads that no job writes, by the config key that names
        it: QASPER v0.3 files, a Wikipedia XML export, a user corpus's documents and
        questions file (files that do not exist are left to the checks and builds that name
        them), and the recorded generations a replaying stage reads."""
        out: dict[str, list[str]] = {}
        for name in self.settings.corpora:
            for key, files in SOURCE_FILES[self.corpus_kind(name)](self, name).items():
                out[f"corpora.{name}.{key}"] = files
        for stage, corpus in self.running_stages():
            out[f"{LLM_STAGE_JOBS[stage].key(corpus)}.cache"] = self.recorded_generations(
                stage, corpus)
        return {k: v for k, v in out.items() if v}

    # ------------------------------------------------------------------ LLM stages
    def stage_runs_llm(self, stage: str) -> bool:
        """Whether ``stage``, where it runs, calls its LLM: every stage does except induction
        by an inducer that uses none (TextTiling, :data:`~structablate.settings.INDUCERS`)."""
        return stage != "induction" or self.induction_uses_llm

    def reaching_conditions(self, stage: str) -> list[str]:
        """The conditions whose chunks wait for grid-level ``stage``'s output, whether or not
        it calls an LLM: ``induction``, those on induced structure and fixed windows sized to
        it (:meth:`reads_induced`); any other, those with a mechanism whose text the stage
        writes (:func:`structablate.mechanisms.mechanism_stages`: A1 for ``contexts``)."""
        if LLM_STAGE_JOBS[stage].per_corpus:
            raise ValueError(f"stage {stage!r} runs per corpus, not for conditions")
        if stage == "induction":
            return [c for c in self.conditions if self.reads_induced(c)]
        return [c for c in self.conditions if stage in mechanism_stages(c)]

    def stage_conditions(self) -> dict[str, list[str]]:
        """For each grid-level LLM stage (:data:`structablate.mechanisms.LLM_STAGE_JOBS`
        without the per-corpus ones), the conditions that need its LLM: those it reaches
        (:meth:`reaching_conditions`) when it calls one (:meth:`stage_runs_llm`), else
        none."""
        return {stage: self.reaching_conditions(stage) if self.stage_runs_llm(stage) else []
                for stage, job in LLM_STAGE_JOBS.items() if not job.per_corpus}

    def running_stages(self) -> list[tuple[str, str | None]]:
        """Every LLM stage that calls its LLM in this run, as ``(stage, corpus)`` (corpus:
        None for a grid-level stage), in :data:`~structablate.study.LLM_STAGES` order and a
        per-corpus stage in corpus order: a grid-level stage runs when some condition needs
        it (:meth:`stage_conditions`), a per-corpus one (questions) for each corpus whose
        questions are generated."""
        needs = self.stage_conditions()
        out: list[tuple[str, str | None]] = []
        for stage, job in LLM_STAGE_JOBS.items():
            if job.per_corpus:
                out += [(stage, c) for c in self.corpora if self.generates_queries(c)]
            elif needs[stage]:
                out.append((stage, None))
        return out

    @property
    def needs_induced_structure(self) -> bool:
        """Whether any condition reads induced sections (whichever inducer makes them)."""
        return any(self.reads_induced(c) for c in self.conditions)

    def stage_llm(self, stage: str, corpus: str | None = None) -> LLMSettings:
        """The llm settings ``stage`` runs with: the ``llm`` block with the stage's own
        ``llm`` block laid over it key by key (backend blocks merge one level deep)."""
        if stage not in LLM_STAGES:
            raise ValueError(f"unknown LLM stage {stage!r} (one of {', '.join(LLM_STAGES)})")
        s = self.settings
        if LLM_STAGE_JOBS[stage].per_corpus:  # the corpus's questions block (queries)
            if corpus is None:
                raise ValueError(f"stage {stage!r} needs the corpus name")
            over = self.query_generation(corpus).llm
        else:
            over = getattr(s, stage).llm
        merged = dump(s.llm)
        for key, value in (over or {}).items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
        if merged.get("cache") is None:
            merged["cache"] = self.paths.cache("llm")
        return build_settings(LLMSettings, merged)

    def llm_on_gpu(self, stage: str, corpus: str | None = None) -> bool:
        """Whether ``stage`` (for ``corpus``: a per-corpus stage) generates on a GPU: it calls
        its LLM (:meth:`stage_runs_llm`), whose backend needs one
        (:data:`~structablate.settings.LLM_BACKENDS`), and does not only replay."""
        return self.stage_runs_llm(stage) and generates_on_gpu(self.stage_llm(stage, corpus))

    @property
    def induction_uses_llm(self) -> bool:
        """Whether the configured inducer calls the induction stage's LLM
        (:data:`~structablate.settings.INDUCERS`)."""
        s = self.settings
        return INDUCERS[s.induction.inducer].uses_llm(s.induction)

    @property
    def induction_on_gpu(self) -> bool:
        """Whether structure induction generates on a GPU (an LLM-using inducer whose stage
        generates on one)."""
        return self.llm_on_gpu("induction")

    @property
    def induction_embeds_paragraphs(self) -> bool:
        """Whether the inducer embeds every paragraph on CPUs (TextTiling)."""
        return INDUCERS[self.settings.induction.inducer].embeds_paragraphs

    def recorded_generations(self, stage: str, corpus: str | None = None) -> list[str]:
        """The recorded generation file a stage replays, as a rule input (a file a replaying
        job reads must be declared, so an edit to it reruns the job); none otherwise."""
        llm = self.stage_llm(stage, corpus)
        if llm.mode == "replay" and llm.cache and llm.cache.endswith(".jsonl"):
            return [llm.cache]
        return []

    def llm_stages(self) -> dict[str, LLMSettings | None]:
        """Label -> llm settings of every LLM stage (None: the stage does not run), for the
        report's provenance: each grid-level stage's :attr:`~structablate.mechanisms.
        StageJob.label` ("structure induction", "A1 contexts"), then "queries (<corpus>)" for
        each corpus whose questions are generated."""
        running = self.running_stages()
        out: dict[str, LLMSettings | None] = {
            job.name(): self.stage_llm(stage) if (stage, None) in running else None
            for stage, job in LLM_STAGE_JOBS.items() if not job.per_corpus}
        for stage, corpus in running:
            if corpus is not None:
                out[LLM_STAGE_JOBS[stage].name(corpus)] = self.stage_llm(stage, corpus)
        return out

    # ------------------------------------------------------------------ per-rule settings
    def rule_settings(self, rule: str, wildcards: Mapping[str, str] | Any = None
                      ) -> jobs.Job:
        """The typed job settings of ``rule`` (its :class:`structablate.plan.jobs.Job`
        class, built by its entry of the rule table: :func:`structablate.plan.rules.
        rule_settings`)."""
        return rules.rule_settings(self, rule, wildcards)

    def trigger(self, rule: str, script: str | Path) -> Callable[[Any], dict[str, Any]]:
        """A ``params`` function: the rule's settings without ``runtime`` keys, plus the
        fingerprint of the package code its job runs (:func:`structablate.plan.rules.trigger`)."""
        return rules.trigger(self, rule, script)

    # ------------------------------------------------------------------ checks
    def model_problems(self) -> list[str]:
        """``key: why`` for every model and dataset this plan reads that an offline job could
        not load (:func:`structablate.plan.checks.model_problems`)."""
        return checks.model_problems(self)

    def models_message(self, problems: list[str]) -> str:
        """One block naming every missing model or dataset and the commands that fetch them
        (:func:`structablate.plan.checks.models_message`)."""
        return checks.models_message(self, problems)


def _qasper_files(plan: Plan, name: str) -> dict[str, list[str]]:
    return {"sources": jobs.qasper_files(plan, name)}


def _wikipedia_files(plan: Plan, name: str) -> dict[str, list[str]]:
    export = jobs.wikipedia_export(plan, name)
    return {"source.path": export} if export else {}


def _user_files(plan: Plan, name: str) -> dict[str, list[str]]:
    try:
        return {"path": input_files(plan.settings.corpora[name])}
    except ByoInputError:  # no files: the build names why
        return {"path": []}


SOURCE_FILES: dict[str, Callable[[Plan, str], dict[str, list[str]]]] = {
    "qasper": _qasper_files,
    "wikipedia": _wikipedia_files,
    "user": _user_files,
}
"""Corpus kind (:data:`~structablate.settings.CORPUS_SOURCES`) -> the files a corpus of that
kind reads that no job writes, by their config key below ``corpora.<name>``: QASPER's v0.3
files (``data_dir`` resolved), a Wikipedia XML export, a user corpus's documents
(:meth:`Plan.source_files`). Every kind has an entry (``tests/test_registries.py``)."""
