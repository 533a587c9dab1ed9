"""The SLURM group job of each job, from the typed plan and the rule table.

Snakemake packs jobs that share a group id into one submission (the SLURM profile's
``group-components: {kind: N}`` packs N such components). :func:`group_id` gives one job's id
from its rule's entry (:data:`structablate.plan.rules.RULES`):

* a job whose model (the entry's ``model``) is on a GPU joins the entry's GPU group
  (``embed``, ``rerank``): ``{kind}-{corpus}-{stages}``, the long stages it waits for
  (:func:`upstream_stages`; ``base`` when none), so a group job never waits for a corpus or a
  stage none of its members needs; a model on a CPU joins the entry's CPU group instead, or
  none;
* a small CPU job joins its entry's :class:`~structablate.plan.rules.CpuGroup`:
  ``corpus-{corpus}`` (a corpus's preparation), ``cell-{corpus}-{embedder}-{reranker}`` (a
  cell's retrieval and evaluation, with a CPU embedder's vectors; a first-stage retrieval or an
  embedding belongs to reranker ``none``), ``report-{corpus}``; a job of an LLM stage's rule
  joins it only where its stage does not generate on a GPU, and one that reads chunks an LLM
  stage writes from the group's own chunks joins none (it would wait on a job that waits on
  its group).

A group's members never wait on a job outside it that waits on the group. Pure: reads the
plan and the table; :func:`slurm_group` registers the id with Snakemake.

Memory of a group job: Snakemake books the members that can run side by side (each
dependency level packed into layers within the group's cores and memory limits) and books the
widest layer; inside the job its own Snakemake runs members in parallel as their threads and
``mem_mb`` allow within what SLURM gave it (:func:`structablate.plan.resources.
limit_group_jobs`), not one after another. So the sum over the members that run at the same
time must fit: :func:`concurrent_mb` gives the most that such members can use, which a group
job's booking must hold (tests/test_footprints.py checks it for the bundled default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from structablate.mechanisms import LLM_STAGE_JOBS
from structablate.plan.jobs import wildcards_dict
from structablate.plan.rules import Rule, rule
from structablate.settings import is_gpu
from structablate.study import condition

if TYPE_CHECKING:
    from structablate.plan import Plan

__all__ = ["concurrent_mb", "group_id", "slurm_group", "upstream_stages"]

FIRST_STAGE = "none"
"""The reranker of a cell's first stage, the cell of a job without a ``reranker`` wildcard."""


def upstream_stages(plan: Plan, corpus: str, chunksets: list[str] | None,
                    questions: bool) -> list[str]:
    """The long stages (hours) a job of ``corpus`` waits for, in pipeline order
    (:data:`structablate.mechanisms.LLM_STAGE_JOBS`): a grid-level stage when one of
    ``chunksets`` belongs to a condition it reaches (:meth:`structablate.plan.Plan.
    reaching_conditions`: ``induction`` for chunks cut from induced structure or sized to it,
    whichever inducer runs; ``contexts`` for A1's), a per-corpus stage (``queries``) when the
    job reads the corpus's generated questions (``questions``). Pure: reads the plan only."""
    conds = {c for c in plan.conditions if chunksets is not None
             and condition(c).chunkset in chunksets}
    running = plan.running_stages()
    out = []
    for stage, job in LLM_STAGE_JOBS.items():
        if job.per_corpus:
            if questions and (stage, corpus) in running:
                out.append(stage)
        elif conds & set(plan.reaching_conditions(stage)):
            out.append(stage)
    return out


def _chunksets(w: Mapping[str, str]) -> list[str] | None:
    """The chunkset a job reads, by its wildcards: its ``chunkset``, or its ``condition``'s
    (A4: A3's); None for a job of neither (question vectors)."""
    if "chunkset" in w:
        return [w["chunkset"]]
    if "condition" in w:
        return [condition(w["condition"]).chunkset]
    return None


def _model_on_gpu(plan: Plan, entry: Rule, w: Mapping[str, str]) -> bool:
    """Whether the model the entry's job loads (named by its ``model`` wildcard) is on a
    GPU."""
    if entry.model is None:
        return False
    models = plan.settings.rerankers if entry.model == "reranker" else plan.settings.embedders
    return is_gpu(models[w[entry.model]].device)


def group_id(plan: Plan, name: str, wildcards: Mapping[str, str] | Any
             ) -> tuple[str, str] | None:
    """``(group id, group kind)`` of one job of rule ``name`` with ``wildcards`` (see the
    module docstring), or None: the job joins no group."""
    entry = rule(name)
    w = wildcards_dict(wildcards)
    if _model_on_gpu(plan, entry, w):
        if entry.gpu_group is None:
            return None
        stages = upstream_stages(plan, w["corpus"], _chunksets(w), entry.reads_questions)
        return f"{entry.gpu_group}-{w['corpus']}-{'+'.join(stages) or 'base'}", entry.gpu_group
    group = entry.group
    if group is None:
        return None
    stage = entry.stage
    if stage is not None and plan.llm_on_gpu(
            stage, w["corpus"] if LLM_STAGE_JOBS[stage].per_corpus else None):
        return None
    if group.apart_when_llm_writes_chunks and plan.llm_written:
        return None
    scope = [w.get(k, FIRST_STAGE) for k in group.scope]
    return "-".join([group.kind, *scope]), group.kind


def slurm_group(workflow: Any, plan: Plan, name: str, wildcards: Any) -> str | None:
    """A rule's ``group``: :func:`group_id` of the job, registered under its kind so that the
    profile's ``group-components: {kind: N}`` packs N such jobs per submission (as Snakemake
    does for a group name with wildcards); None in a local run (groups only pack SLURM
    submissions)."""
    if workflow.local_exec and not (workflow.remote_exec or workflow.subprocess_exec):
        return None
    found = group_id(plan, name, wildcards)
    if found is None:
        return None
    gid, kind = found
    workflow.parent_groupids[gid] = kind
    return gid


def concurrent_mb(members: list[tuple[int, int, float]], cores: int, mem_mb: int,
                  driver_mb: float = 0.0) -> float:
    """The most memory (MB) a group job whose own Snakemake runs with ``cores`` CPUs and
    ``mem_mb`` MB can use: ``driver_mb`` (that Snakemake) plus the largest sum of ``peak``
    over the members it may run side by side, those whose ``threads`` sum to at most
    ``cores`` and whose booked ``mem_mb`` sum to at most ``mem_mb`` (its scheduler admits no
    more). ``members``: ``(threads, booked mem_mb, measured peak MB)`` of each member. Exact
    (a knapsack over threads and booked memory in 100 MB steps, bookings rounded down so that
    no admissible set is missed)."""
    step = 100
    width = mem_mb // step
    best: dict[tuple[int, int], float] = {(0, 0): 0.0}
    for threads, booked, peak in members:
        cost = booked // step
        for (t, m), value in list(best.items()):
            key = (t + threads, m + cost)
            if key[0] <= cores and key[1] <= width and best.get(key, -1.0) < value + peak:
                best[key] = value + peak
    return driver_mb + max(best.values())
