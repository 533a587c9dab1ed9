"""The plan: one typed view of a run, built once from the validated config.

:class:`Plan` joins three things the Snakefile, the rules, the glue scripts and the report
all read:

* **settings** — the typed :class:`~structablate.settings.Settings` (every key's only
  default lives there);
* **grid** — corpora, conditions, chunksets, cells (corpus × embedder × reranker), and the one
  answer to which LLM stage each condition needs (:meth:`Plan.stage_conditions`);
* **paths** — every results path (:class:`~structablate.plan.paths.Paths`).

A rule's settings come from :meth:`Plan.rule_settings` (rule name and wildcards -> the typed
values that rule's job uses, and nothing else). The same call feeds the rule's ``params``
(:meth:`Plan.trigger`: those values without their ``runtime`` keys, plus the fingerprint of
the code the job runs), so Snakemake reruns a job exactly when something that can change its
outputs changes, and the glue (:func:`structablate.workflow.setup`) reads the very values the
trigger was computed from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from structablate import study
from structablate.errors import ConfigError
from structablate.plan.paths import Paths
from structablate.settings import (
    CORPUS_SOURCES,
    INDUCERS,
    LLM_BACKENDS,
    LLMSettings,
    QasperSource,
    QueryGenSettings,
    Settings,
    WikipediaCorpus,
    context_tokens,
    corpus_kind,
    dump,
    dump_outputs,
    generates_on_gpu,
    load_settings,
    questions_file,
)
from structablate.settings._core import build_settings

__all__ = ["LLM_STAGES", "Cell", "Paths", "Plan"]

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


class Plan:
    """Settings, grid and paths of one run (see the module docstring)."""

    def __init__(self, settings: Settings, source: str = "config", *, check_files: bool = True,
                 check_models: bool = True):
        self.settings = settings
        self.source = source
        self.paths = Paths(settings.results)
        self._check(check_files, check_models)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str = "config", *,
                    check_files: bool = True, check_models: bool = True) -> Plan:
        """Validate a YAML config mapping and plan it; :class:`ConfigError` names the key.
        ``check_models=False`` leaves the models and datasets to the caller
        (:meth:`model_problems`: the workflow lists them in a dry run, refuses them before
        the first job of a real one)."""
        _refuse_secrets(config, source)
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

    @property
    def contextualized(self) -> list[str]:
        """Chunksets the ``contextualize`` rule makes: those whose prefix an LLM writes onto
        another chunkset's windows (A1 from A0's, :func:`structablate.study.derived_from`)."""
        return [c for c in self.chunksets if study.needs_llm_contexts(c)]

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
        if self.corpus_kind(corpus) == "wikipedia":
            return self.paths.corpus_report(corpus)
        return self.paths.funnel(corpus)

    def build_report_file(self, corpus: str) -> str:
        """The corpus build report: the question funnel of corpora that bring questions
        (QASPER, user questions), the document build report of those whose questions are
        generated afterwards (Wikipedia, user corpora without questions)."""
        if self.generates_queries(corpus):
            return self.paths.corpus_report(corpus)
        return self.paths.funnel(corpus)

    def question_funnel_file(self, corpus: str) -> str | None:
        """The query-generation funnel of a corpus whose questions are generated."""
        return self.paths.funnel(corpus) if self.generates_queries(corpus) else None

    # ------------------------------------------------------------------ LLM stages
    def stage_conditions(self) -> dict[str, list[str]]:
        """For each grid-level LLM stage, the conditions that need it: ``induction`` (with
        the LLM inducer: conditions on induced structure, and fixed windows sized to induced
        structure, :meth:`reads_induced`) and ``contexts`` (A1)."""
        s = self.settings
        induced = [c for c in self.conditions if self.reads_induced(c)]
        return {
            "induction": induced if INDUCERS[s.induction.inducer].uses_llm(s.induction) else [],
            "contexts": [c for c in self.conditions if study.needs_llm_contexts(c)],
        }

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
        if stage == "queries":
            if corpus is None:
                raise ValueError("stage 'queries' needs the corpus name")
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
        """Whether ``stage`` (for ``corpus``: queries) generates on a GPU: its backend needs
        one (:data:`~structablate.settings.LLM_BACKENDS`) and it does not only replay."""
        return generates_on_gpu(self.stage_llm(stage, corpus))

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
        return self.induction_uses_llm and self.llm_on_gpu("induction")

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
        report's provenance: "structure induction", "A1 contexts", "queries (<corpus>)"."""
        needs = self.stage_conditions()
        out: dict[str, LLMSettings | None] = {
            label: self.stage_llm(stage) if needs[stage] else None
            for label, stage in (("structure induction", "induction"),
                                 ("A1 contexts", "contexts"))}
        for name in self.corpora:
            if self.generates_queries(name):
                out[f"queries ({name})"] = self.stage_llm("queries", name)
        return out

    # ------------------------------------------------------------------ per-rule settings
    def rule_settings(self, rule: str, wildcards: Mapping[str, str] | Any = None
                      ) -> dict[str, Any]:
        """The typed settings a job of ``rule`` uses (see the module docstring)."""
        w = _wildcards(wildcards)
        s = self.settings
        if rule not in _RULES:
            raise KeyError(f"no settings are planned for rule {rule!r}")
        return _RULES[rule](self, s, w)

    def trigger(self, rule: str, script: str | Path) -> Callable[[Any], dict[str, Any]]:
        """A ``params`` function: the rule's settings without ``runtime`` keys, plus the
        fingerprint of the package code its job runs (``code``)."""
        from structablate.plan.code import fingerprint

        def params(wildcards: Any = None) -> dict[str, Any]:
            w = _wildcards(wildcards)
            name = w.get("condition") or w.get("chunkset")
            if rule in CORPUS_RULES:  # nothing a condition decides
                serves = []
            elif name is None:  # a job over the grid
                serves = [study.condition(c) for c in self.conditions]
            else:  # one condition's (or chunkset's) job
                serves = [study.condition(name)] if study.is_condition(name) else []
            out = {k: dump_outputs(v) for k, v in self.rule_settings(rule, w).items()}
            out["code"] = fingerprint(script, serves)
            return out

        return params

    # ------------------------------------------------------------------ checks
    def _check(self, check_files: bool, check_models: bool = True) -> None:
        s, src = self.settings, self.source

        def fail(key: str, message: str) -> None:
            raise ConfigError(f"{src}: {key}: {message}")

        for name, c in s.corpora.items():
            kind = self.corpus_kind(name)
            if kind == "qasper" and check_files:
                for i, source in enumerate(self.qasper_sources(name)):
                    if source.format == "v0.3" and not Path(source.path).exists():
                        fail(f"corpora.{name}.sources[{i}].path", f"no file {source.path}"
                             + (f" (data_dir {c.data_dir})" if c.data_dir else ""))
            if self.generates_queries(name):
                q = self.query_generation(name)
                for key in ("sentences", "multihop_sentences"):
                    lo, hi = getattr(q, key)
                    if not 1 <= lo <= hi:
                        fail(f"corpora.{name}.queries.{key}",
                             f"must be [lo, hi] with 1 <= lo <= hi, got [{lo}, {hi}]")
                if q.span_min_chars > q.span_max_chars:
                    fail(f"corpora.{name}.queries.span_min_chars",
                         "must not exceed span_max_chars")
                if not self.stage_llm("queries", name).model:
                    key = ("llm.model" if isinstance(c, WikipediaCorpus)
                           else f"corpora.{name}.queries")
                    fail(key, f"the questions of corpus {name!r} are generated by an LLM; set "
                              f"llm.model or corpora.{name}.queries.llm.model"
                         + ("" if isinstance(c, WikipediaCorpus) else
                            ", or give a questions file (docs/byo.md)"))
        for ename, emb in s.embedders.items():
            if emb.backend == "openvino" and emb.device != "cpu":
                fail(f"embedders.{ename}.backend", f"'openvino' runs on device 'cpu' only, not "
                     f"{emb.device!r} (use backend 'torch' on GPUs)")
        for rname, rr in s.rerankers.items():
            if rname != "none" and not rr.model:
                fail(f"rerankers.{rname}.model", "a reranker needs a model")
            for e in rr.embedders or ():
                if e not in s.embedders:
                    fail(f"rerankers.{rname}.embedders", f"unknown embedder {e!r}")
        p = s.statistics.primary
        if p.embedder is not None and p.embedder not in s.embedders:
            fail("statistics.primary.embedder", f"unknown embedder {p.embedder!r} (one of "
                 f"{', '.join(s.embedders)})")
        if p.reranker not in s.rerankers:
            fail("statistics.primary.reranker", f"unknown reranker {p.reranker!r} (one of "
                 f"{', '.join(s.rerankers)})")
        if p.reranker not in self.rerankers_for(self.primary.embedder):
            fail("statistics.primary.reranker", f"reranker {p.reranker!r} does not rerank "
                 f"embedder {self.primary.embedder!r} (rerankers.{p.reranker}.embedders)")
        if p.metric not in s.metrics.measures:
            fail("statistics.primary.metric", f"{p.metric!r} is not among metrics.measures "
                 f"({', '.join(s.metrics.measures)})")
        for stage, needs in self.stage_conditions().items():
            if needs and not self.stage_llm(stage).model:
                fail("llm.model", f"conditions {', '.join(needs)} need an LLM for {stage} "
                     f"(set llm.model or {stage}.llm.model"
                     + (", or induction.inducer: texttiling for the A family)"
                        if stage == "induction" else ")"))
        self._check_prompt_budgets(fail)
        if s.chunking.t_min > s.chunking.t_max:
            fail("chunking.t_min", "must not exceed chunking.t_max")
        self._check_contrasts(fail)
        if check_files:
            results = Path(s.results)
            if results.exists() and not results.is_dir():
                fail("results", f"{s.results} is a file; results must name a folder (it is "
                                "created when missing)")
            if check_models:
                self._check_models()

    def _check_prompt_budgets(self, fail: Callable[[str, str], None]) -> None:
        """An LLM stage that sizes its prompts by the model's context needs that context: from
        the stage's llm block (``llamacpp.n_ctx``, ``vllm.max_model_len``), its own
        ``context_tokens``, or a fixed character budget. An OpenAI-compatible server's context
        is not visible from the config, so without one of these the stage would fail only
        inside its first job."""
        s = self.settings
        needs = self.stage_conditions()
        for stage, fixed in (("induction", "max_prompt_chars"), ("contexts", "max_doc_chars")):
            block = getattr(s, stage)
            if not needs[stage] or getattr(block, fixed) is not None \
                    or block.context_tokens is not None:
                continue
            llm = self.stage_llm(stage)
            key = LLM_BACKENDS[llm.backend].context_key
            if context_tokens(llm) is None:
                fail(f"{stage}.context_tokens",
                     f"conditions {', '.join(needs[stage])} size the {stage} prompts by the "
                     f"model's context, which llm backend {llm.backend!r} does not state; set "
                     f"{stage}.context_tokens (the server's context length in tokens)"
                     + (f", llm.{llm.backend}.{key}" if key else "")
                     + f" or {stage}.{fixed} for a fixed budget")

    def _check_contrasts(self, fail: Callable[[str, str], None]) -> None:
        """A contrast of a condition with itself is refused in both families. A
        pre-registered contrast (``statistics.contrasts``) that differs from the paper's
        default must run: every condition it names is in ``conditions``, since dropping it would
        silently shrink the Holm family that was registered. The paper's own C1–C4 and the
        exploratory ``extra_contrasts`` may name conditions a smaller grid leaves out: they
        are reported as not run."""
        from structablate.settings import StatisticsSettings

        s = self.settings
        paper = StatisticsSettings().contrasts
        run = set(self.conditions)
        for family in ("contrasts", "extra_contrasts"):
            for name, (a, b) in getattr(s.statistics, family).items():
                key = f"statistics.{family}.{name}"
                if a == b:
                    fail(key, f"[{a}, {b}] compares {a} with itself (its delta is 0 by "
                              "construction)")
                missing = [c for c in (a, b) if c not in run]
                if family == "contrasts" and missing and tuple(paper.get(name, ())) != (a, b):
                    fail(key, f"[{a}, {b}] names {' and '.join(missing)}, not among conditions "
                              f"({', '.join(self.conditions)}); a pre-registered contrast you "
                              "define must run (dropping it would shrink the registered Holm "
                              f"family): add {' and '.join(missing)} to conditions, or move "
                              f"{name} to statistics.extra_contrasts")

    def model_problems(self) -> list[str]:
        """``key: why`` for every model and dataset this plan reads that a job could not load
        (empty when all are there). Reads the local disk only, never the network: the
        embedders, rerankers and tokenizer (:func:`structablate.model_paths.check_model`:
        local folder, ``pkg:`` module, or a hub id in the local cache when jobs run offline),
        the TextTiling model when it induces structure, the LLM of every stage that generates
        (a replaying stage loads none) and the hub QASPER dataset
        (:func:`structablate.plan.needs.offline_problems`)."""
        from structablate.model_paths import check_model
        from structablate.plan.needs import offline_problems, required

        s = self.settings
        models = [(f"embedders.{n}.model", e.model, "sentence-transformers")
                  for n, e in s.embedders.items()]
        models += [(f"rerankers.{n}.model", r.model, "cross-encoder")
                   for n, r in s.rerankers.items() if n != "none" and r.model]
        if s.chunking.tokenizer:
            models.append(("chunking.tokenizer", s.chunking.tokenizer, None))
        if self.induction_embeds_paragraphs and self.needs_induced_structure:
            models.append(("induction.texttiling.model", s.induction.texttiling.model,
                           "sentence-transformers"))
        problems = []
        for key, model, org in models:
            try:
                check_model(model, key, default_org=org)
            except ConfigError as exc:
                problems.append(str(exc))
        return problems + offline_problems(required(self))

    def models_message(self, problems: list[str]) -> str:
        """One block naming every missing model or dataset (``problems`` from
        :meth:`model_problems`) and the commands that fetch them and check the result."""
        files = [] if self.source == "config" else self.source.split(", ")
        from structablate.plan.needs import prefetch_command

        lines = "\n".join(f"  - {p}" for p in problems)
        return (f"{self.source}: {len(problems)} model(s) or dataset(s) of this run cannot be "
                f"loaded by an offline job:\n{lines}\n"
                "Fetch them on a machine with network, into the hub cache the jobs see "
                "(export HF_HOME on a shared filesystem), then check offline:\n"
                f"  {prefetch_command(files)}\n  {prefetch_command(files, check=True)}\n"
                "(add the same --config overrides as to snakemake)")

    def _check_models(self) -> None:
        """Refuse, with every missing model and dataset in one message, a plan whose jobs
        could not load them (:meth:`model_problems`)."""
        problems = self.model_problems()
        if problems:
            raise ConfigError(self.models_message(problems))


# ---------------------------------------------------------------------- helpers


def _wildcards(w: Any) -> dict[str, str]:
    if w is None:
        return {}
    if isinstance(w, Mapping):
        return dict(w)
    return {k: str(v) for k, v in w.items()} if hasattr(w, "items") else dict(vars(w))


def _refuse_secrets(config: Mapping[str, Any], source: str) -> None:
    """API keys belong in the environment: a key written into the config would end up in
    Snakemake's metadata and logs in plain text."""
    blocks: list[tuple[str, Any]] = [("llm", config.get("llm"))]
    blocks += [(f"{st}.llm", (config.get(st) or {}).get("llm")) for st in ("induction",
                                                                           "contexts")]
    for name, c in (config.get("corpora") or {}).items():
        q = c.get("queries") if isinstance(c, Mapping) else None
        if isinstance(q, Mapping):
            blocks.append((f"corpora.{name}.queries.llm", q.get("llm")))
    for where, block in blocks:
        openai = (block or {}).get("openai") if isinstance(block, Mapping) else None
        if isinstance(openai, Mapping) and "api_key" in openai:
            raise ConfigError(
                f"{source}: {where}.openai.api_key: API keys are not read from the config "
                "(they would be stored in plain text in .snakemake/metadata); put the key in "
                "an environment variable and name it in api_key_env (default OPENAI_API_KEY)")


def _user_build(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    c = s.corpora[w["corpus"]]
    return {"corpus": replace(c, queries=plan.user_queries(w["corpus"]))}


def _chunk(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    cs = w["chunkset"]
    keep = {"t_max", "t_min"}
    if study.is_fixed_window(cs):
        keep.add("fixed_snap_tokens")
    if study.uses_breadcrumb(cs):
        keep |= {"breadcrumb_separator", "breadcrumb_include_title"}
    if study.uses_placebo(cs):
        keep.add("placebo_forbid_identical")
    out: dict[str, Any] = {"chunking": only(s.chunking, keep), "tokenizer": plan.tokenizer}
    if study.uses_placebo(cs):
        out["seed"] = s.seed
    return out


def _retrieve(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    r = s.retrieval
    keep = {"top_k", "method"}
    if r.method == "hnsw":
        keep.add("hnsw")
    if study.is_two_stage(w["condition"]):
        keep.add("hier_top_sections")
    return {"retrieval": only(r, keep), "condition": w["condition"]}


def _statistics(plan: Plan, s: Settings) -> Any:
    """The statistics block with the primary cell resolved (embedder filled in)."""
    st = s.statistics
    return replace(st, primary=replace(st.primary, embedder=plan.primary.embedder))


CORPUS_RULES = frozenset({
    "build_qasper", "build_wikipedia", "build_user", "build_user_documents", "generate_queries",
    "bm25_check", "induce_structure", "tokenize_corpus", "embed_queries"})
"""Rules whose outputs belong to a corpus and no condition shapes them (the corpus, its
questions and their vectors, the induced structure, the token table): the code of
condition-specific modules (:data:`structablate.plan.code.CONDITION_MODULES`) never counts in
their fingerprints, even where their glue imports it (``embed_queries`` shares ``embed.py``
with ``embed_chunks``)."""

def _model_job(key: str, model: Any) -> dict[str, Any]:
    """An embedder's or reranker's settings and ``precision``, the precision its ``dtype``
    runs in on its device (``auto`` resolved from the settings: changing ``device`` alone
    reruns nothing, unless it changes the precision)."""
    from structablate.embedding import planned_dtype

    return {key: model, "precision": planned_dtype(model.dtype, model.device)}


_RULES: dict[str, Callable[[Plan, Settings, dict[str, str]], dict[str, Any]]] = {
    "build_qasper": lambda p, s, w: {
        "corpus": replace(s.corpora[w["corpus"]], sources=tuple(p.qasper_sources(w["corpus"])),
                          data_dir=None)},
    "build_wikipedia": lambda p, s, w: {
        "source": s.corpora[w["corpus"]].source, "selection": s.corpora[w["corpus"]].selection},
    "build_user": _user_build,
    "build_user_documents": _user_build,
    "generate_queries": lambda p, s, w: {
        "queries": replace(p.query_generation(w["corpus"]), llm=None),
        "llm": p.stage_llm("queries", w["corpus"])},
    "bm25_check": lambda p, s, w: {},
    "induce_structure": lambda p, s, w: {
        "induction": replace(s.induction, llm=None),
        "llm": p.stage_llm("induction") if p.induction_uses_llm else None},
    "tokenize_corpus": lambda p, s, w: {"tokenizer": p.tokenizer},
    "chunk": _chunk,
    "contextualize": lambda p, s, w: {
        "contexts": replace(s.contexts, llm=None), "llm": p.stage_llm("contexts"),
        "tokenizer": p.tokenizer},
    "embed_chunks": lambda p, s, w: _model_job("embedder", s.embedders[w["embedder"]]),
    "embed_queries": lambda p, s, w: _model_job("embedder", s.embedders[w["embedder"]]),
    "retrieve": _retrieve,
    "rerank": lambda p, s, w: {**_model_job("reranker", s.rerankers[w["reranker"]]),
                               "seed": s.seed},
    "score": lambda p, s, w: {"measures": s.metrics.measures, "conditions": p.conditions},
    "summarize_cell": lambda p, s, w: {"conditions": p.conditions},
    "summary_markdown": lambda p, s, w: {"embedders": s.embedders, "rerankers": s.rerankers,
                                         "cells": p.cells(), "metric": p.primary_metric},
    "contrasts": lambda p, s, w: {"statistics": _statistics(p, s), "seed": s.seed,
                                  "conditions": p.conditions},
    "trec_export": lambda p, s, w: {},
    "cell_statistics": lambda p, s, w: {
        "conditions": p.conditions, "n_boot": s.statistics.bootstrap_iters, "seed": s.seed},
    "report_cell": lambda p, s, w: {
        "conditions": p.conditions, "metric": p.primary_metric,
        "reranker": s.rerankers[w["reranker"]], "guard": s.report.guard},
    "structure_quality": lambda p, s, w: {
        "conditions": p.conditions, "chunksets": p.chunksets,
        "hier_top_sections": s.retrieval.hier_top_sections, "inducer": s.induction.inducer,
        "seed": s.seed},
    "report_corpus": lambda p, s, w: {
        "metric": p.primary_metric, "conditions": p.conditions, "chunksets": p.chunksets,
        "embedders": p.embedders, "size_match_structure": s.size_match_structure},
    "report_page": lambda p, s, w: {
        "cells": p.cells(), "corpora": p.corpora,
        "corpus_types": {c: s.corpora[c].type for c in p.corpora},
        "generated_queries": {c: p.generates_queries(c) for c in p.corpora},
        "embedders": s.embedders, "rerankers": s.rerankers, "llm": p.llm_stages(),
        "conditions": p.conditions, "measures": s.metrics.measures,
        "primary": _statistics(p, s).primary, "size_match_structure": s.size_match_structure,
        "inducer": s.induction.inducer, "stage_conditions": p.stage_conditions(),
        "guard": s.report.guard},
}
