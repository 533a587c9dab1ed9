"""The rule table (structablate.plan.rules): the rules of rules/*.smk and the table name the
same rules, each rule reads its params, threads, resources and group through the named
functions of rules/common.smk with its own name, a rule shares a SLURM group exactly where its
entry names one, no lambda is left in the rules, and the SLURM groups follow from the typed
plan and the table (structablate.plan.groups) with no branch on a rule's name."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from structablate.plan import Plan
from structablate.plan.groups import group_id
from structablate.plan.rules import RULES, rule

SMK = sorted((REPO / "rules").glob("*.smk"))
BASE = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
NAMED = ("trigger", "threads_of", "resources_of", "group_of", "localrule_of")
"""The named functions of rules/common.smk through which a rule reads its table entry."""


def rule_bodies() -> dict[str, str]:
    """rule name -> the text of its block, for every rule of rules/*.smk."""
    out = {}
    for smk in SMK:
        text = smk.read_text(encoding="utf-8")
        for m in re.finditer(r"^rule (\w+):\n(.*?)(?=^\S|\Z)", text, re.S | re.M):
            out[m.group(1)] = m.group(2)
    return out


def test_the_rules_and_the_table_name_the_same_rules():
    assert set(rule_bodies()) == set(RULES)
    assert all(name == entry.name for name, entry in RULES.items())
    with pytest.raises(KeyError, match="no entry in structablate.plan.rules.RULES"):
        rule("no_such_rule")


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_reads_its_entry_by_its_own_name(name):
    body = rule_bodies()[name]
    calls = re.findall(rf"\b({'|'.join(NAMED)})\(\"(\w+)\"\)", body)
    assert ("trigger", name) in calls, f"rule {name}: params: settings=trigger({name!r})"
    assert {n for _, n in calls} == {name}, f"rule {name} reads another rule's entry: {calls}"
    entry = RULES[name]
    used = {f for f, _ in calls}
    # sized from its rate where it has one (a rule without runs on the submit host)
    assert ({"threads_of", "resources_of"} <= used) is (entry.rate is not None), name
    # in a SLURM group exactly where its entry names one (CPU or GPU)
    has_group = entry.group is not None or entry.gpu_group is not None
    assert ("group_of" in used) is has_group, (
        f"rule {name}: its entry {'names' if has_group else 'names no'} a SLURM group; "
        f"{'add' if has_group else 'remove'} `group: group_of({name!r})`")
    # on the submit host exactly where its entry can say so (no rate, or a submit_host)
    assert re.search(r"^\s+localrule:", body, re.M) is None or "localrule_of" in used, name
    assert ("localrule_of" in used) is (entry.rate is None or entry.submit_host is not None), (
        f"rule {name}: `localrule: localrule_of({name!r})` exactly where its entry has no "
        "rate or a submit_host")
    assert (REPO / "workflow_scripts" / f"{entry.glue}.py").is_file(), name


def test_no_lambda_is_left_in_the_rules():
    found = [f"{smk.name}:{i}" for smk in SMK
             for i, line in enumerate(smk.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\blambda\b", line)]
    assert found == []


def _string_constants(path: Path) -> set[str]:
    """The string constants of a module's code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs}


@pytest.mark.parametrize("module", ["slurm.py", "plan/groups.py", "plan/resources.py"])
def test_grouping_and_sizing_name_no_rule(module):
    """Which group and what size a job gets follows from its rule's entry, never from
    comparing the rule's name."""
    path = REPO / "src" / "structablate" / module
    assert _string_constants(path) & set(RULES) == set()


def _plan(edit=None) -> Plan:
    cfg = copy.deepcopy(BASE)
    if edit:
        edit(cfg)
    return Plan.from_config(cfg, check_models=False)


def test_groups_follow_from_the_plan_and_the_table(monkeypatch):
    monkeypatch.chdir(REPO)
    plan = _plan()
    cell = {"corpus": "qasper", "embedder": "minilm"}
    # a corpus's preparation, a cell's retrieval (first stage), its evaluation, its reports
    assert group_id(plan, "chunk", {"corpus": "qasper", "chunkset": "G2"}) == (
        "corpus-qasper", "corpus")
    assert group_id(plan, "retrieve", {**cell, "condition": "G2"}) == (
        "cell-qasper-minilm-none", "cell")
    assert group_id(plan, "score", {**cell, "reranker": "none"}) == (
        "cell-qasper-minilm-none", "cell")
    assert group_id(plan, "report_cell", {**cell, "reranker": "none"}) == (
        "report-qasper", "report")
    # an embedder on a CPU: with its cell's retrieval
    assert group_id(plan, "embed_queries", cell) == ("cell-qasper-minilm-none", "cell")
    # rules whose entry names no group (a corpus build, the submit-host rules)
    assert group_id(plan, "build_qasper", {"corpus": "qasper"}) is None
    assert group_id(plan, "summarize_cell", {**cell, "reranker": "none"}) is None


def test_a_model_on_a_gpu_joins_its_gpu_group_by_the_stages_it_waits_for(monkeypatch):
    monkeypatch.chdir(REPO)

    def gpu(cfg):
        cfg["embedders"]["minilm"].update(device="cuda", backend="torch")
        cfg["rerankers"]["ce"] = {"model": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                                  "device": "cuda"}
        cfg["rerankers"]["cpu_ce"] = {"model": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                                      "device": "cpu"}

    plan = _plan(gpu)
    cell = {"corpus": "qasper", "embedder": "minilm"}
    assert group_id(plan, "embed_chunks", {**cell, "chunkset": "G2"}) == (
        "embed-qasper-base", "embed")
    induced = [c for c in plan.chunksets if plan.reads_induced(c)]
    assert induced, "the bundled default reads induced structure"
    assert group_id(plan, "embed_chunks", {**cell, "chunkset": induced[0]}) == (
        "embed-qasper-induction", "embed")
    rerank = {**cell, "reranker": "ce", "condition": "G2"}
    assert group_id(plan, "rerank", rerank) == ("rerank-qasper-base", "rerank")
    # a reranker on a CPU joins no group (its entry names no CPU group)
    assert group_id(plan, "rerank", {**rerank, "reranker": "cpu_ce"}) is None
    # Wikipedia's questions are generated: its question vectors wait for them
    assert group_id(plan, "embed_queries", {"corpus": "wikipedia", "embedder": "minilm"}) == (
        "embed-wikipedia-queries", "embed")


def test_a_job_that_would_wait_on_its_own_group_joins_none(monkeypatch):
    """With A1, contextualize writes A1's chunks from A0's (in the corpus group): the
    structure-quality table, which reads every chunkset, leaves the group."""
    monkeypatch.chdir(REPO)
    w = {"corpus": "qasper"}
    assert group_id(_plan(), "structure_quality", w) == ("corpus-qasper", "corpus")

    def a1(cfg):
        cfg["conditions"] = [*cfg["conditions"], "A1"]
        cfg.setdefault("contexts", {})["llm"] = {"model": "ctx-model"}

    assert group_id(_plan(a1), "structure_quality", w) is None


def test_the_plan_modules_key_nothing_by_a_rule_name():
    """What a job reads and whether it is corpus-level are fields of its rule's entry
    (``reads``, ``corpus_level``), not tables of ``plan/jobs.py`` keyed by rule names."""
    path = REPO / "src" / "structablate" / "plan" / "jobs.py"
    assert _string_constants(path) & set(RULES) == set()


def test_a_new_rule_is_one_table_entry(monkeypatch, tmp_path):
    """A rule added to the table alone gets its trigger: its job's settings, the sha256 of
    the files its ``reads`` names, and the code fingerprint of a corpus-level job (no
    condition's modules) or of a job over the grid (every planned condition's)."""
    from structablate import study
    from structablate.digests import DigestCache
    from structablate.plan import rules
    from structablate.plan.code import fingerprint
    from structablate.plan.jobs import InputsOnlyJob

    monkeypatch.chdir(REPO)
    plan = _plan()
    source = tmp_path / "extra.txt"
    source.write_text("one\n", encoding="utf-8")
    script = REPO / "workflow_scripts" / "embed.py"
    for name, corpus_level in (("my_corpus_rule", True), ("my_grid_rule", False)):
        monkeypatch.setitem(rules.RULES, name, rules.Rule(
            name, InputsOnlyJob, lambda p, s, w: InputsOnlyJob(), None,
            reads=lambda p, w: [str(source)], corpus_level=corpus_level))
    corpus = plan.trigger("my_corpus_rule", script)({"corpus": "qasper"})
    grid = plan.trigger("my_grid_rule", script)({"corpus": "qasper"})
    assert corpus["inputs"] == grid["inputs"] == DigestCache.default().files([str(source)])
    assert corpus["code"] == fingerprint(script, [])
    assert grid["code"] == fingerprint(script, [study.condition(c) for c in plan.conditions])
    assert corpus["code"] != grid["code"]  # embed.py reaches condition-specific modules
    # an LLM stage's rule reads its recorded generations unless its entry says otherwise
    assert rule("contextualize").reads is None and rule("contextualize").stage == "contexts"
    assert rule("build_qasper").source_files(plan, {"corpus": "qasper"}) == [
        "resources/qasper/qasper-sample-v0.3.json"]
