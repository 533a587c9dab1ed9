"""The mechanism table (structablate.mechanisms): every member of the study's three mechanism
enums has one entry naming code that exists, the chunk and retrieve code carry out exactly the
members the table gives them (a missing renderer fails loudly instead of rendering nothing),
and every key of the blocks the plan slices per mechanism reaches exactly the jobs whose
mechanisms read it."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import re
import typing

import pytest
import yaml
from conftest import REPO

from structablate import mechanisms
from structablate.chunking import build
from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.errors import ConfigError
from structablate.mechanisms import LLM_STAGE_JOBS, MECHANISMS, RULE_READS
from structablate.plan import Plan
from structablate.plan.checks import SLICED_BLOCKS, undeclared_keys
from structablate.retrieval.runs import SEARCHES
from structablate.settings import ChunkingSettings, RetrievalSettings, Settings
from structablate.study import CONDITIONS, LLM_STAGES, Boundaries, Prefix, Retrieval, condition

BASE = yaml.safe_load((REPO / "config.yaml").read_text())
RULES = set(re.findall(r"^rule (\w+):", "\n".join(
    f.read_text() for f in (REPO / "rules").glob("*.smk")), flags=re.M))
SLICED = {"chunking": ChunkingSettings, "retrieval": RetrievalSettings}
"""The blocks whose keys a job gets only when its condition's mechanisms read them."""


def _resolve(ref: str):
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def _is_key(dotted: str) -> bool:
    """Whether a dotted config key names a field of the settings (``*``: a name the config
    chooses, as in ``corpora.<name>``; a part may belong to any class a union allows)."""
    classes = [Settings]
    for part in dotted.split("."):
        if part == "*":
            continue
        hints = [typing.get_type_hints(c) for c in classes]
        found = [h[part] for h in hints if part in h]
        if not found:
            return False
        classes = [c for tp in found for c in _settings_classes(tp)]
    return True


def _settings_classes(tp) -> list[type]:
    """The settings dataclasses an annotation allows (``X | None``, ``dict[str, X | Y]``)."""
    if dataclasses.is_dataclass(tp):
        return [tp]
    return [c for arg in typing.get_args(tp) for c in _settings_classes(arg)]


def undeclared(block: str, cls: type) -> list[str]:
    """The fields of ``cls`` (the ``block`` settings) that neither a rule nor a mechanism
    declares reading and that are not runtime-only: keys that would reach no job (the plan's
    own check, structablate.plan.checks.undeclared_keys)."""
    return undeclared_keys(block, cls)


def test_every_member_has_one_entry():
    members = {*Boundaries, *Prefix, *Retrieval}
    assert set(MECHANISMS) == members
    assert tuple(LLM_STAGE_JOBS) == LLM_STAGES


def test_every_entry_names_code_rules_and_keys_that_exist():
    for member, m in MECHANISMS.items():
        assert callable(_resolve(m.runs)), member
        assert m.rule in RULES, (member, m.rule)
        for mod in m.own_modules:
            assert importlib.util.find_spec(mod) is not None, (member, mod)
        for key in m.reads:
            assert _is_key(key), (member, key)
        assert m.stage is None or m.stage in LLM_STAGES
    for rule, keys in RULE_READS.items():
        assert rule in RULES
        assert all(_is_key(k) for k in keys), rule
    for stage, job in LLM_STAGE_JOBS.items():
        assert callable(_resolve(job.runs)), stage
        assert job.rule in RULES, (stage, job.rule)
        assert all(_is_key(k) for k in job.reads), stage
    # the mechanism an LLM stage writes names that stage's rule
    assert MECHANISMS[Prefix.CONTEXT].rule == LLM_STAGE_JOBS["contexts"].rule


def test_the_code_carries_out_exactly_the_members_the_table_gives_it():
    assert set(build.PREFIX_RENDERERS) == {
        p for p in Prefix if MECHANISMS[p].rule == "chunk"}
    assert build.PLANNED_BOUNDARIES == {b for b in Boundaries if MECHANISMS[b].rule == "chunk"}
    assert SEARCHES == {r for r in Retrieval if MECHANISMS[r].rule == "retrieve"}
    for p, render in build.PREFIX_RENDERERS.items():
        assert f"{render.__module__}:{render.__name__}" == MECHANISMS[p].runs


def test_a_prefix_without_a_renderer_fails_loudly(monkeypatch, sample_corpus, counter):
    """Before the table, a prefix the chunk code did not know rendered as nothing: a new
    prefix condition reproduced G2's chunks byte for byte. Now the chunk rule refuses it."""
    docs = sample_corpus.documents[:2]
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    monkeypatch.setattr(build, "PREFIX_RENDERERS", {
        k: v for k, v in build.PREFIX_RENDERERS.items() if k is not Prefix.BREADCRUMB})
    with pytest.raises(ValueError, match="G3: no renderer for prefix 'breadcrumb'.*"
                                         "PREFIX_RENDERERS"):
        build.build_chunks(condition("G3"), d, p, s, counter, ChunkingSettings(),
                           progress=False)
    # A1's context is the contextualize rule's, never an empty prefix of the chunk rule
    with pytest.raises(ValueError, match="A1: its prefix 'context' is written by the "
                                         "contextualize rule"):
        build.prefix_renderer(condition("A1"))
    # the others still render (G2: no prefix)
    g2 = build.build_chunks(condition("G2"), d, p, s, counter, ChunkingSettings(),
                            progress=False)
    assert set(g2["prefix"].to_list()) == {""}


@pytest.mark.parametrize("block", sorted(SLICED))
def test_every_key_of_a_sliced_block_is_read_by_a_declared_mechanism(block):
    """A key no rule and no mechanism declares would be reset to its default before it
    reaches any job (plan.jobs.only): the value in the config would be silently ignored."""
    assert undeclared(block, SLICED[block]) == [], (
        f"declare these {block} keys in structablate.mechanisms (RULE_READS or a "
        "mechanism's reads), or mark them runtime")


def test_the_sliced_blocks_are_the_plans():
    assert set(SLICED) == set(SLICED_BLOCKS)


_UNDECLARE_T_MIN = ('"chunk": ("chunking.t_max", "chunking.t_min", "chunking.tokenizer"),',
                    '"chunk": ("chunking.t_max", "chunking.tokenizer"),')
"""A slip in the mechanism table: ``chunking.t_min`` declared by no rule and no mechanism."""


def test_a_key_no_job_receives_is_refused_at_plan_time(monkeypatch):
    """The slip: the config says t_min 40, every chunk job would get the default; the plan
    refuses it, naming the key, instead of running silently."""
    monkeypatch.setattr(mechanisms, "RULE_READS", {
        **mechanisms.RULE_READS, "chunk": ("chunking.t_max", "chunking.tokenizer")})
    default = ChunkingSettings().t_min
    assert default != 40
    with pytest.raises(ConfigError, match=r"chunking\.t_min: no job receives this key, so "
                                          rf"every job would run with its default {default} "
                                          r"instead of 40; declare it"):
        _plan(monkeypatch, lambda cfg: cfg.setdefault("chunking", {}).update(t_min=40))
    # left at its default, nothing is lost: the plan runs
    plan = _plan(monkeypatch, lambda cfg: None)
    assert _job(plan, "chunk", {"corpus": "qasper", "chunkset": "G2"})["chunking"][
        "t_min"] == default


def test_a_real_run_refuses_a_key_no_job_receives(tmp_path):
    """The same slip in a copy of the workflow: `snakemake -n` stops before any job, naming
    the key (it used to plan every chunk job with the default)."""
    from workflow_util import copy_workflow, snakemake, write_project

    wf = tmp_path / "wf"
    copy_workflow(wf)
    table = wf / "src" / "structablate" / "mechanisms.py"
    text = table.read_text(encoding="utf-8")
    assert _UNDECLARE_T_MIN[0] in text
    table.write_text(text.replace(*_UNDECLARE_T_MIN), encoding="utf-8")
    root = tmp_path / "run"
    write_project(root, ["G2"], n_papers=2,
                  tweak=lambda cfg: cfg.setdefault("chunking", {}).update(t_min=40))
    done = snakemake(root, "-n", workflow=wf, timeout=600)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "chunking.t_min: no job receives this key" in done.stderr + done.stdout
    assert not (root / "results").exists()


def test_the_coverage_check_sees_a_new_key():
    @dataclasses.dataclass(frozen=True)
    class Grown(ChunkingSettings):
        window_overlap: int = 40

    assert undeclared("chunking", Grown) == ["window_overlap"]


def _plan(monkeypatch, edit):
    monkeypatch.chdir(REPO)
    cfg = copy.deepcopy(BASE)
    # every condition whose chunks no LLM stage writes (A1 needs an LLM)
    cfg["conditions"] = [c for c in CONDITIONS if not mechanisms.mechanism_stages(c)]
    edit(cfg)
    return Plan.from_config(cfg)


def _job(plan: Plan, rule: str, w: dict) -> dict:
    return plan.rule_settings(rule, w).dump(outputs_only=True)


CHUNK_EDITS = {
    "chunking.t_max": ("chunking", "t_max", 351),
    "chunking.t_min": ("chunking", "t_min", 61),
    "chunking.fixed_snap_tokens": ("chunking", "fixed_snap_tokens", 16),
    "chunking.breadcrumb_separator": ("chunking", "breadcrumb_separator", " / "),
    "chunking.breadcrumb_include_title": ("chunking", "breadcrumb_include_title", False),
    "chunking.placebo_forbid_identical": ("chunking", "placebo_forbid_identical", True),
    "seed": (None, "seed", 7),
}


def test_each_chunking_key_reaches_exactly_the_chunk_jobs_that_read_it(monkeypatch):
    base = _plan(monkeypatch, lambda cfg: None)
    w = {"corpus": "qasper"}
    before = {cs: _job(base, "chunk", w | {"chunkset": cs}) for cs in base.chunked}
    assert {"A0", "A0g", "A2", "P", "GP", "G2", "G3"} <= set(before)
    for key, (block, name, value) in CHUNK_EDITS.items():
        def edit(cfg, block=block, name=name, value=value):
            (cfg.setdefault(block, {}) if block else cfg)[name] = value

        edited = _plan(monkeypatch, edit)
        for cs, job in before.items():
            moved = _job(edited, "chunk", w | {"chunkset": cs}) != job
            assert moved is (key in mechanisms.reads(cs, "chunk")), (key, cs)


def test_each_retrieval_key_reaches_exactly_the_retrieve_jobs_that_read_it(monkeypatch):
    w = {"corpus": "qasper", "embedder": "minilm", "reranker": "none"}

    def jobs(plan):
        return {c: _job(plan, "retrieve", w | {"condition": c}) for c in plan.conditions}

    def hnsw(cfg):
        cfg["retrieval"] = {**cfg.get("retrieval", {}), "method": "hnsw"}

    for base_edit, key, edit in [
        (None, "retrieval.top_k", lambda cfg: cfg["retrieval"].update(top_k=50)),
        (None, "retrieval.hier_top_sections",
         lambda cfg: cfg["retrieval"].update(hier_top_sections=4)),
        (hnsw, "retrieval.hnsw", lambda cfg: cfg["retrieval"].update(hnsw={"M": 33})),
    ]:
        base = _plan(monkeypatch, lambda cfg, e=base_edit: (cfg.setdefault("retrieval", {}),
                                                            e and e(cfg)))
        edited = _plan(monkeypatch, lambda cfg, b=base_edit, e=edit: (
            cfg.setdefault("retrieval", {}), b and b(cfg), e(cfg)))
        before, after = jobs(base), jobs(edited)
        for c in before:
            assert (before[c] != after[c]) is (key in mechanisms.reads(c, "retrieve")), (key, c)
    # exact search reads no HNSW parameter: editing them reruns no retrieval
    exact = _plan(monkeypatch, lambda cfg: None)
    tuned = _plan(monkeypatch, lambda cfg: cfg.setdefault("retrieval", {}).update(
        hnsw={"M": 33}))
    assert jobs(exact) == jobs(tuned)


def test_condition_modules_follow_the_table():
    from structablate.plan.code import CONDITION_MODULES

    uses = {m: {c for c in CONDITIONS if f(CONDITIONS[c])} for m, f in CONDITION_MODULES.items()}
    assert uses == {
        "structablate.chunking.fixed": {"A0", "A1", "A0g"},
        "structablate.chunking.placebo": {"P", "GP"},
        "structablate.chunking.prefix": {"A3-d1", "A3-d2", "A3", "P", "A4", "G3", "G4", "GP"},
        "structablate.retrieval.two_stage": {"A4", "G4"},
    }


# ------------------------------------------------------------------ the LLM stage table


def test_every_stage_entry_names_keys_blocks_and_sizes_that_exist():
    from structablate.plan import resources, rules

    for stage, job in LLM_STAGE_JOBS.items():
        # its own llm block is a settings key (per corpus: under a corpus's queries block)
        assert _is_key(job.llm_key.replace("{corpus}", "*")), stage
        assert job.rule in rules.planned_rules(), stage
        assert rules.RULES[job.rule].rate is not None, stage
        assert rules.RULES[job.rule].stage == stage and job.rule in resources.LLM_ON_GPU, stage
        assert mechanisms.STAGE_OF_RULE[job.rule] == stage
        if job.budget_key is not None:  # a fixed character budget of the stage's own block
            assert _is_key(f"{stage}.{job.budget_key}"), stage
            assert _is_key(f"{stage}.context_tokens"), stage
        assert "{corpus}" in job.without_llm or not job.per_corpus


def test_the_plan_checks_and_hints_cover_every_stage_of_the_table():
    """Each site that lists LLM stages iterates the table: the plan's stage answers, the
    refusal of an API key in any stage's llm block, the replay hint and the model needs."""
    from structablate.errors import ConfigError
    from structablate.llm.cache import replay_hint
    from structablate.plan.checks import refuse_secrets

    cfg = copy.deepcopy(BASE)
    cfg["corpora"] = {"wiki": {"type": "wikipedia"}, **cfg["corpora"]}
    plan = Plan.from_config(BASE)
    grid = [s for s, j in LLM_STAGE_JOBS.items() if not j.per_corpus]
    assert list(plan.stage_conditions()) == grid
    assert list(plan.llm_stages())[:len(grid)] == [LLM_STAGE_JOBS[s].name() for s in grid]
    hint = replay_hint(None)
    for stage, job in LLM_STAGE_JOBS.items():
        assert f"`{job.key()}:" in hint and job.without_llm.format(corpus="<name>") in hint
        assert replay_hint(f"{stage}/wiki").count("For ") == 0
        for corpus in (["wiki"] if job.per_corpus else [None]):
            bad = copy.deepcopy(cfg)
            node = bad
            for part in job.key(corpus).split("."):
                node = node.setdefault(part, {})
            node["openai"] = {"api_key": "sk-secret"}
            with pytest.raises(ConfigError, match=re.escape(f"{job.key(corpus)}.openai.api_key")):
                refuse_secrets(bad, "cfg")


def test_a_stage_reaches_the_conditions_whose_mechanisms_it_writes():
    cfg = {**BASE, "conditions": list(CONDITIONS), "llm": {**BASE["llm"], "model": "any"}}
    plan = Plan.from_config(cfg)  # every stage has a model (the shared llm block's)
    for stage, job in LLM_STAGE_JOBS.items():
        if job.per_corpus or stage == "induction":
            continue
        writes = {m for m, e in MECHANISMS.items() if e.stage == stage}
        assert writes, stage
        assert plan.reaching_conditions(stage) == [
            c for c in CONDITIONS if {condition(c).prefix, condition(c).boundaries,
                                      condition(c).retrieval} & writes]
    assert plan.reaching_conditions("contexts") == ["A1"]
    assert plan.reaching_conditions("induction") == [
        c for c in CONDITIONS if plan.reads_induced(c)]
    with pytest.raises(ValueError, match="per corpus"):
        plan.reaching_conditions("queries")
