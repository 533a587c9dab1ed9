"""Each rule's job is declared once, typed (plan/jobs.py): every rule whose ``params`` are its
trigger has a job class, its glue script asks ``setup`` for that class and reads it by
attribute only (never ``settings["key"]``), the attributes it reads are the class's fields and
every field is read, and the rule's params are the job's dump with an unset optional key
absent (never ``None``)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import re
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO

from structablate.plan import Plan
from structablate.plan.jobs import ChunkJob, Job, RetrieveJob
from structablate.plan.rules import RULES as TABLE
from structablate.plan.rules import job_class, planned_rules
from structablate.workflow import job_settings

RULES = REPO / "rules"
GLUE = REPO / "workflow_scripts"
JOB_METHODS = {name for name in vars(Job) if not name.startswith("_")}
"""What every job offers beside its fields (``given``, ``dump``)."""


def triggered_rules() -> dict[str, str]:
    """rule -> glue script name, for every rule of rules/*.smk with
    ``params: settings=trigger(...)`` (the script: its entry's in the rule table)."""
    out = {}
    for smk in sorted(RULES.glob("*.smk")):
        text = smk.read_text(encoding="utf-8")
        for m in re.finditer(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", text, re.S | re.M):
            t = re.search(r'settings=trigger\("(\w+)"\)', m.group(2))
            if t:
                assert t.group(1) == m.group(1), f"{smk.name}: rule {m.group(1)} triggers as " \
                                                 f"{t.group(1)}"
                out[m.group(1)] = TABLE[t.group(1)].glue
    return out


@dataclasses.dataclass
class GlueReads:
    """What a glue script's ``main`` takes from ``setup``: the job class it names, the name it
    binds the settings to (``None``: it keeps none), each attribute read from them, and each
    use of that name other than an attribute read (``line: source``)."""

    job: str
    name: str | None
    attributes: set[str]
    other_uses: list[str]


def glue_reads(script: str) -> GlueReads:
    path = GLUE / f"{script}.py"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "setup"]
    assert len(calls) == 1, f"{path.name}: one setup(smk, <JobClass>) call, found {len(calls)}"
    call = calls[0]
    assert len(call.args) == 2 and isinstance(call.args[1], ast.Name), \
        f"{path.name}: setup must name the job class it reads: setup(smk, <JobClass>)"
    name = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.value is call:
            target = node.targets[0]
            assert isinstance(target, ast.Tuple) and len(target.elts) == 2, path.name
            second = target.elts[1]
            assert isinstance(second, ast.Name), path.name
            name = None if second.id == "_" else second.id
    attributes: set[str] = set()
    other: list[str] = []
    if name is not None:
        parents = {id(child): node for node in ast.walk(tree)
                   for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Name) and node.id == name
                    and isinstance(node.ctx, ast.Load)):
                continue
            parent = parents[id(node)]
            if isinstance(parent, ast.Attribute):
                attributes.add(parent.attr)
            else:  # settings["key"], "key" in settings, dump(settings): say where
                other.append(f"line {node.lineno}: {ast.get_source_segment(source, parent)}")
    return GlueReads(call.args[1].id, name, attributes, other)


def test_every_rule_with_a_trigger_has_a_job_class():
    triggered = triggered_rules()
    assert triggered, "no rule with params: settings=trigger(...) found"
    assert sorted(triggered) == sorted(planned_rules())
    for rule in triggered:
        cls = job_class(rule)
        assert issubclass(cls, Job) and cls is not Job, rule
        assert cls.__dataclass_params__.frozen, f"{cls.__name__} must be frozen"
        assert (cls.__doc__ or "").strip(), f"{cls.__name__} says what its job gets and why"


@pytest.mark.parametrize("script", sorted(set(triggered_rules().values())))
def test_no_glue_script_reads_settings_by_string(script):
    reads = glue_reads(script)
    assert not reads.other_uses, (
        f"workflow_scripts/{script}.py uses its settings other than by attribute "
        f"(settings.<field>, settings.dump()): {reads.other_uses}")


@pytest.mark.parametrize("rule", sorted(triggered_rules()))
def test_each_glue_reads_exactly_the_fields_of_its_rules_job(rule):
    script = triggered_rules()[rule]
    reads = glue_reads(script)
    cls = job_class(rule)
    assert reads.job == cls.__name__, (
        f"workflow_scripts/{script}.py asks setup for {reads.job}; rule {rule}'s jobs are "
        f"{cls.__name__}")
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = reads.attributes - fields - JOB_METHODS
    assert not unknown, f"{script}.py reads {sorted(unknown)}, not fields of {cls.__name__}"
    # a field no glue reads would rerun the job for a key that cannot change its outputs
    read = fields if "dump" in reads.attributes else reads.attributes
    assert fields <= read, f"{cls.__name__} fields {sorted(fields - read)} are read by no glue"


def test_every_glue_script_that_calls_setup_is_a_rules_glue():
    scripts = set(triggered_rules().values())
    calling = {p.stem for p in GLUE.glob("*.py") if "setup(" in p.read_text(encoding="utf-8")}
    assert calling <= scripts, f"glue without a triggered rule: {sorted(calling - scripts)}"


# ------------------------------------------------------------------------------ params

@pytest.fixture
def plan(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    cfg = copy.deepcopy(cfg)
    cfg["corpora"]["mine"] = {"type": "markdown", "path": "docs", "queries": "q.jsonl"}
    return Plan.from_config(cfg, check_files=False)


CORPUS_OF = {"build_wikipedia": "wikipedia", "generate_queries": "wikipedia",
             "build_user_documents": "mine", "map_user_questions": "mine"}


def test_params_are_the_jobs_dump_in_field_order(plan):
    """Snakemake compares the repr of each param, so the key order of the settings dict is
    part of the trigger: it is the job class's field order, ``code`` last."""
    names = sorted({*plan.conditions, *plan.chunksets, *plan.chunked})
    for rule, script in triggered_rules().items():
        trig = plan.trigger(rule, GLUE / f"{script}.py")
        for name in names:
            w = {"corpus": CORPUS_OF.get(rule, "qasper"), "embedder": "minilm",
                 "reranker": "none", "condition": name, "chunkset": name}
            job = plan.rule_settings(rule, w)
            params = trig(w)
            assert list(params)[-1] == "code"
            params.pop("code")
            # then the digests of the files it reads and the models it computes with
            params.pop("inputs", None)
            params.pop("models", None)
            assert params == job.dump(outputs_only=True), (rule, name)
            assert list(params) == list(job.given()), (rule, name)


def test_an_unset_optional_key_is_absent_not_none(plan):
    trig = plan.trigger("chunk", GLUE / "chunk.py")
    placebo = trig({"corpus": "qasper", "chunkset": "P"})
    assert placebo["seed"] == plan.settings.seed
    gold = trig({"corpus": "qasper", "chunkset": "G2"})
    assert "seed" not in gold and list(gold) == ["chunking", "tokenizer", "models", "code"]
    assert "seed" not in plan.rule_settings("chunk", {"chunkset": "G2"}).dump()
    # a plain optional field keeps its key: TextTiling with tf-idf titles calls no LLM
    induce = plan.trigger("induce_structure", GLUE / "induce_structure.py")({"corpus": "qasper"})
    assert "llm" in induce and induce["llm"] is None


def test_a_job_is_frozen(plan):
    job = plan.rule_settings("chunk", {"chunkset": "A0"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.tokenizer = "other"  # type: ignore[misc]


def test_glue_asking_for_another_rules_job_is_refused(plan):
    smk = SimpleNamespace(config=yaml.safe_load((REPO / "config.yaml").read_text()),
                          rule="chunk", wildcards={"corpus": "qasper", "chunkset": "A2"})
    assert isinstance(job_settings(smk, ChunkJob), ChunkJob)
    with pytest.raises(TypeError, match="ChunkJob, its glue reads a RetrieveJob"):
        job_settings(smk, RetrieveJob)


def test_a_new_grid_level_llm_stage_gets_its_block_and_merged_llm_without_a_class():
    """The generic job of an LLM stage without a class of its own gives exactly what A1's
    hand-written ContextualizeJob gives, under the generic names: built for ``contexts``,
    the same block without its llm override, the same merged LLM settings, the same
    tokenizer (so a stage added to the table is planned with no edit here)."""
    from structablate.plan.jobs import LLMStageJob, llm_stage_job

    cfg = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    cfg["conditions"] = [*cfg["conditions"], "A1"]
    cfg["contexts"] = {"max_doc_chars": 9000, "llm": {"model": "ctx-model"}}
    plan = Plan.from_config(cfg)
    generic = llm_stage_job("contexts")(plan, plan.settings, {})
    own = plan.rule_settings("contextualize", {"corpus": "qasper", "chunkset": "A1"})
    assert isinstance(generic, LLMStageJob)
    assert generic.block == own.contexts and generic.block.llm is None
    assert generic.block.max_doc_chars == 9000
    assert generic.llm == own.llm and generic.llm.model == "ctx-model"
    assert generic.tokenizer == own.tokenizer == plan.tokenizer
