"""Where each mechanism of the study is carried out, declared once.

:mod:`structablate.study` says *what* a condition varies: its :class:`~structablate.study.
Boundaries`, its :class:`~structablate.study.Prefix` and its :class:`~structablate.study.
Retrieval`. This table says, for every member of those three, *where*: the workflow rule whose
job carries it out, the config keys it reads (dotted paths from the config's root), the LLM
stage that writes its text (if any), the function that does the work (``"module:function"``),
and the modules only it uses. :data:`LLM_STAGE_JOBS` does the same for the three LLM stages.

What reads the table:

* the plan (:mod:`structablate.plan.jobs`) gives a ``chunk`` or ``retrieve`` job exactly the
  keys its condition's mechanisms read, together with :data:`RULE_READS` (a key no entry names
  reaches no job: ``tests/test_mechanisms.py`` fails on such a key of ``chunking`` or
  ``retrieval``);
* the code fingerprints (:mod:`structablate.plan.code`) count a module of ``own_modules`` only
  for conditions with that mechanism (:func:`condition_modules`);
* ``tests/test_mechanisms.py`` checks that every enum member has an entry, that every
  ``runs`` names a function that exists, and that the chunk rule refuses a prefix it has no
  renderer for.

Adding a deterministic mechanism is a member in :mod:`structablate.study`, its entry here and
its code (with a :data:`structablate.chunking.build.PREFIX_RENDERERS` entry for a prefix);
docs/architecture.md, "The mechanism table", walks through it. Standard library only, like
:mod:`structablate.study`: the settings and the plan read it without importing any code that
runs a mechanism.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from structablate.study import (
    LLM_STAGES,
    Boundaries,
    Condition,
    LLMStage,
    Prefix,
    Retrieval,
    condition,
)

Member = Boundaries | Prefix | Retrieval
"""A value one of a condition's three mechanism fields takes."""


@dataclass(frozen=True)
class Mechanism:
    """Where one mechanism member is carried out (see the module docstring).

    ``rule``: the workflow rule whose job does it; ``reads``: the config keys it reads beyond
    :data:`RULE_READS` of that rule (dotted, from the config's root: ``chunking.t_max``,
    ``seed``); ``runs``: ``"module:function"`` of the code that does it; ``own_modules``: the
    modules only conditions with this member use (an edit to one reruns only their jobs);
    ``stage``: the LLM stage that writes its text, None if none does."""

    rule: str
    reads: tuple[str, ...]
    runs: str
    own_modules: tuple[str, ...] = ()
    stage: LLMStage | None = None


RULE_READS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    # every chunking job plans structural chunks (fixed windows are sized to them) and counts
    # tokens; the tokenizer reaches it resolved, as the plan's ``tokenizer``
    "chunk": ("chunking.t_max", "chunking.t_min", "chunking.tokenizer"),
    # every retrieval searches the top k with the configured method (hnsw: its parameters)
    "retrieve": ("retrieval.top_k", "retrieval.method", "retrieval.hnsw"),
})
"""The keys every job of a rule reads, whatever its condition's mechanisms."""

_BREADCRUMB = ("chunking.breadcrumb_separator", "chunking.breadcrumb_include_title")

MECHANISMS: Mapping[Member, Mechanism] = MappingProxyType({
    Boundaries.FIXED: Mechanism(
        "chunk", ("chunking.fixed_snap_tokens",), "structablate.chunking.fixed:fixed_windows",
        own_modules=("structablate.chunking.fixed",)),
    Boundaries.STRUCTURAL: Mechanism(
        "chunk", (), "structablate.chunking.structural:structural_chunks"),
    Prefix.NONE: Mechanism("chunk", (), "structablate.chunking.build:no_prefix"),
    Prefix.BREADCRUMB: Mechanism(
        "chunk", _BREADCRUMB, "structablate.chunking.build:own_breadcrumb",
        own_modules=("structablate.chunking.prefix",)),
    Prefix.PLACEBO: Mechanism(
        "chunk", (*_BREADCRUMB, "chunking.placebo_forbid_identical", "seed"),
        "structablate.chunking.build:placebo_breadcrumb",
        own_modules=("structablate.chunking.prefix", "structablate.chunking.placebo")),
    Prefix.CONTEXT: Mechanism(
        "contextualize", ("contexts",), "structablate.llm.contextualize:contextualize_chunks",
        stage="contexts"),
    Retrieval.FLAT: Mechanism("retrieve", (), "structablate.retrieval.flat:search_with_report"),
    Retrieval.TWO_STAGE: Mechanism(
        "retrieve", ("retrieval.hier_top_sections",),
        "structablate.retrieval.two_stage:two_stage_search",
        own_modules=("structablate.retrieval.two_stage",)),
})
"""Every member of :class:`~structablate.study.Boundaries`, :class:`~structablate.study.Prefix`
and :class:`~structablate.study.Retrieval` -> where it is carried out."""


@dataclass(frozen=True)
class StageJob:
    """Where an LLM stage runs and what the rest of the workflow needs to know of it, declared
    once: the plan, the checks, the model needs, the sizes, the SLURM groups, the replay
    hint and the report iterate over :data:`LLM_STAGE_JOBS` rather than naming stages.

    ``rule``: the workflow rule of its jobs; ``reads``: the config blocks it reads; ``runs``:
    ``"module:function"`` of its code; ``label``: its name in the report's provenance;
    ``llm_key``: the dotted config key of its own ``llm`` block (laid over the shared ``llm``
    block; ``{corpus}`` in it marks a per-corpus stage, one job per corpus, named there);
    ``without_llm``: how a run goes on without this stage's LLM (the replay hint, the check
    that refuses a stage with no model; ``{corpus}`` as in ``llm_key``); ``budget_key``: the
    field of its block that fixes its prompt budget in characters (None: its prompts are not
    sized by a context window); ``gpu``: what one job books under vLLM on one GPU (threads,
    runtime in minutes: bookings, not measured, no GPU was lent; its host memory follows
    from the model, :func:`structablate.plan.resources.vllm_host_mb`);
    ``cpu_rate``: its footprint on CPUs, replaying or calling a server (the fields of
    :class:`structablate.plan.rules.Rate`: base MB, MB per corpus MB, base seconds, CPU
    seconds per corpus MB); ``cpu_threads``: its threads there; ``hint_label``: its name in
    the replay hint where that is not ``label`` (``{corpus}`` there is the quoted name)."""

    rule: str
    reads: tuple[str, ...]
    runs: str
    label: str
    llm_key: str
    without_llm: str
    budget_key: str | None = None
    gpu: tuple[int, int] = (8, 240)
    cpu_rate: tuple[float, float, float, float] = (600, 20, 60, 30)
    cpu_threads: int = 2
    hint_label: str | None = None

    @property
    def per_corpus(self) -> bool:
        """Whether the stage runs once per corpus (its keys name the corpus)."""
        return "{corpus}" in self.llm_key

    def key(self, corpus: str | None = None) -> str:
        """The dotted key of the stage's ``llm`` block (for ``corpus``: a per-corpus stage)."""
        return self.llm_key.format(corpus=corpus or "<name>")

    def name(self, corpus: str | None = None) -> str:
        """The stage's label in the report (for ``corpus``: a per-corpus stage)."""
        return self.label.format(corpus=corpus or "<name>")


LLM_STAGE_JOBS: Mapping[LLMStage, StageJob] = MappingProxyType({
    "induction": StageJob(
        "induce_structure", ("induction",), "structablate.structure:induce_documents",
        label="structure induction", llm_key="induction.llm",
        without_llm="set `induction.inducer: texttiling` (no LLM)",
        budget_key="max_prompt_chars", cpu_rate=(900, 36, 30, 130)),
    "contexts": StageJob(
        "contextualize", ("contexts",), "structablate.llm.contextualize:contextualize_chunks",
        label="A1 contexts", llm_key="contexts.llm",
        without_llm="leave A1 out of `conditions`", budget_key="max_doc_chars",
        gpu=(8, 720)),
    "queries": StageJob(
        "generate_queries", ("corpora.*.queries",),
        "structablate.queries:generate_queries_from_frames",
        label="queries ({corpus})", llm_key="corpora.{corpus}.queries.llm",
        without_llm="give it a questions file (`corpora.{corpus}.queries: my-queries.jsonl`)",
        hint_label="generated questions of corpus {corpus}"),
})
"""Each of :data:`~structablate.study.LLM_STAGES` -> its job (per corpus for ``queries``, per
corpus and chunkset for ``contexts``, per corpus for ``induction``; ``per_corpus`` marks the
stage whose settings differ by corpus). ``cpu_rate`` of ``induction`` is TextTiling's,
measured (the rule table, :data:`structablate.plan.rules.RULES`)."""

STAGE_OF_RULE: Mapping[str, LLMStage] = MappingProxyType(
    {job.rule: stage for stage, job in LLM_STAGE_JOBS.items()})
"""The rule of each LLM stage -> the stage."""


def mechanism_stages(c: str | Condition) -> tuple[LLMStage, ...]:
    """The LLM stages that write the text of condition ``c``'s own mechanisms (``contexts``
    for A1). Induced structure is a stage of the corpus, not of a mechanism: a condition reads
    it through its structure (:meth:`structablate.plan.Plan.reads_induced`)."""
    return tuple(dict.fromkeys(m.stage for m in mechanisms_of(c) if m.stage is not None))


def written_by(stage: str, chunksets: Iterable[str]) -> list[str]:
    """The chunksets among ``chunksets`` with a mechanism whose text LLM ``stage`` writes
    onto another chunkset's windows (:func:`mechanism_stages`; ``contexts``: A1), in order."""
    return [c for c in chunksets if stage in mechanism_stages(c)]


if tuple(LLM_STAGE_JOBS) != LLM_STAGES:
    raise RuntimeError(f"mechanisms: LLM_STAGE_JOBS {tuple(LLM_STAGE_JOBS)} is not "
                       f"study.LLM_STAGES {LLM_STAGES}")


def mechanisms_of(c: str | Condition) -> tuple[Mechanism, Mechanism, Mechanism]:
    """The entries of a condition's boundaries, prefix and retrieval, in that order."""
    cond = condition(c)
    return (MECHANISMS[cond.boundaries], MECHANISMS[cond.prefix], MECHANISMS[cond.retrieval])


def reads(c: str | Condition, rule: str) -> tuple[str, ...]:
    """The config keys a ``rule`` job of condition (or chunkset) ``c`` reads: the rule's
    :data:`RULE_READS`, then those of ``c``'s mechanisms that ``rule`` carries out, each
    once, in that order."""
    keys = list(RULE_READS.get(rule, ()))
    for m in mechanisms_of(c):
        if m.rule == rule:
            keys.extend(m.reads)
    return tuple(dict.fromkeys(keys))


def block_keys(keys: tuple[str, ...], block: str) -> set[str]:
    """The field names under ``block`` (``chunking``) among dotted ``keys``."""
    return {k.split(".", 1)[1] for k in keys if k.startswith(block + ".")}


def condition_modules() -> dict[str, Callable[[Condition], bool]]:
    """Module -> whether a condition uses it, for the modules some member's ``own_modules``
    names: a condition uses it when one of its three members names it."""
    owners: dict[str, set[Member]] = {}
    for member, m in MECHANISMS.items():
        for mod in m.own_modules:
            owners.setdefault(mod, set()).add(member)

    def uses(members: frozenset[Member]) -> Callable[[Condition], bool]:
        return lambda c: bool({c.boundaries, c.prefix, c.retrieval} & members)

    return {mod: uses(frozenset(ms)) for mod, ms in sorted(owners.items())}
