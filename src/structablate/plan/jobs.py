"""What each rule's job is given: :func:`rule_settings` maps a rule name and a job's
wildcards to the typed values that job uses and nothing else (a key a job does not use is
reset to its default by :func:`only`, so changing it reruns nothing), and :func:`trigger`
turns the same values, without their ``runtime`` keys and with the fingerprint of the code the
job runs, into the rule's ``params``, so Snakemake reruns a job exactly when something that can
change its outputs changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from structablate import mechanisms, study
from structablate.settings import Settings, dump_outputs, planned_dtype
from structablate.settings.corpora import USER_QUESTION_KEYS

if TYPE_CHECKING:
    from structablate.plan import Plan

__all__ = ["CORPUS_RULES", "only", "rule_settings", "trigger", "wildcards_dict"]


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


def _user_documents(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    c = s.corpora[w["corpus"]]
    return {"corpus": only(c, {f.name for f in dataclasses.fields(c)} - USER_QUESTION_KEYS)}


def _user_questions(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    c = s.corpora[w["corpus"]]
    return {"corpus": replace(c, queries=plan.user_queries(w["corpus"]))}


def _chunk(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    """The ``chunking`` keys the chunkset's mechanisms read (:func:`mechanisms.reads`), the
    resolved tokenizer, and the ``seed`` where one of them reads it (the placebo's)."""
    keys = mechanisms.reads(w["chunkset"], "chunk")
    out: dict[str, Any] = {
        "chunking": only(s.chunking, mechanisms.block_keys(keys, "chunking") - {"tokenizer"}),
        "tokenizer": plan.tokenizer}
    if "seed" in keys:
        out["seed"] = s.seed
    return out


def _retrieve(plan: Plan, s: Settings, w: dict[str, str]) -> dict[str, Any]:
    """The ``retrieval`` keys the condition's mechanisms read; the HNSW parameters only when
    the method is ``hnsw`` (exact search reads none of them)."""
    r = s.retrieval
    keep = mechanisms.block_keys(mechanisms.reads(w["condition"], "retrieve"), "retrieval")
    if r.method != "hnsw":
        keep.discard("hnsw")
    return {"retrieval": only(r, keep), "condition": w["condition"]}


def _statistics(plan: Plan, s: Settings) -> Any:
    """The statistics block with the primary cell resolved (embedder filled in)."""
    st = s.statistics
    return replace(st, primary=replace(st.primary, embedder=plan.primary.embedder))


CORPUS_RULES = frozenset({
    "build_qasper", "build_wikipedia", "build_user_documents", "map_user_questions",
    "generate_queries",
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
    return {key: model, "precision": planned_dtype(model.dtype, model.device)}


_RULES: dict[str, Callable[[Plan, Settings, dict[str, str]], dict[str, Any]]] = {
    "build_qasper": lambda p, s, w: {
        "corpus": replace(s.corpora[w["corpus"]], sources=tuple(p.qasper_sources(w["corpus"])),
                          data_dir=None)},
    "build_wikipedia": lambda p, s, w: {
        "source": s.corpora[w["corpus"]].source, "selection": s.corpora[w["corpus"]].selection},
    "build_user_documents": _user_documents,
    "map_user_questions": _user_questions,
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
        "guard": s.report.guard,
        # the configured families, so a contrast that did not run is named as configured
        "contrasts": {"statistics.contrasts": s.statistics.contrasts,
                      "statistics.extra_contrasts": s.statistics.extra_contrasts}},
}


def rule_settings(plan: Plan, rule: str, wildcards: Mapping[str, str] | Any = None
                  ) -> dict[str, Any]:
    """The typed settings a job of ``rule`` uses (see the module docstring); ``wildcards``: the
    job's (a Snakemake wildcards object or a mapping; ``None``: a job without any)."""
    w = wildcards_dict(wildcards)
    s = plan.settings
    if rule not in _RULES:
        raise KeyError(f"no settings are planned for rule {rule!r}")
    return _RULES[rule](plan, s, w)


def trigger(plan: Plan, rule: str, script: str | Path) -> Callable[[Any], dict[str, Any]]:
    """A ``params`` function: the rule's settings without ``runtime`` keys, plus the
    fingerprint of the package code its job runs (``code``)."""
    from structablate.plan.code import fingerprint

    def params(wildcards: Any = None) -> dict[str, Any]:
        w = wildcards_dict(wildcards)
        name = w.get("condition") or w.get("chunkset")
        if rule in CORPUS_RULES:  # nothing a condition decides
            serves = []
        elif name is None:  # a job over the grid
            serves = [study.condition(c) for c in plan.conditions]
        else:  # one condition's (or chunkset's) job
            serves = [study.condition(name)] if study.is_condition(name) else []
        out = {k: dump_outputs(v) for k, v in rule_settings(plan, rule, w).items()}
        out["code"] = fingerprint(script, serves)
        return out

    return params
