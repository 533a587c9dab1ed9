"""What the workflow refuses, and why: one test per refusal, each asserting the key, file or
line the message names. Read it as documentation (docs/refusals.md lists the same cases with
their messages). Everything here runs on real files, real processes and a real HTTP server on
loopback, in seconds; the refusals that need a whole Snakemake run are in
tests/test_refusals_workflow.py.

The rule behind every case: a wrong input ends in an error that names what to fix before any
job runs where it can be known then, at the first job that can know it otherwise, and never in
a silently different result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import MODEL, REPO, SAMPLE, build_byo, wiki_corpus
from hermetic import pythonpath
from openai_stub_server import StubServer
from workflow_util import glue_config, run_glue

from structablate.config import check_config, check_config_files, load_config_file
from structablate.corpus.byo import ByoInputError
from structablate.corpus.result import EmptyCorpusError
from structablate.errors import ConfigError, StructablateError
from structablate.plan import Plan

BYO = REPO / "resources" / "byo"


def config(**over) -> dict:
    """A small valid configuration (QASPER sample, the offline embedder, no LLM stage)."""
    cfg = {"corpora": {"qasper": {"type": "qasper", "sources": [{"path": str(SAMPLE)}]}},
           "embedders": {"minilm": {"model": MODEL}}, "size_match_structure": "gold"}
    cfg.update(over)
    return cfg


def refused(cfg, source: str = "my.yaml") -> str:
    """The message of the ConfigError ``cfg`` is refused with (it must be one)."""
    with pytest.raises(ConfigError) as err:
        Plan.from_config(cfg, source=source)
    msg = str(err.value)
    assert msg.startswith(f"{source}: "), msg  # every refusal names the config file first
    return msg


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """Jobs run offline, with an empty Hugging Face cache of this test."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    return cache


def cached(cache: Path, repo: str) -> None:
    """A snapshot of ``repo`` laid out in ``cache`` as huggingface_hub lays out a download."""
    snap = cache / ("models--" + repo.replace("/", "--")) / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")


# ============================================================================ config files


def test_yaml_syntax_error_names_file_line_and_column(tmp_path):
    f = tmp_path / "my.yaml"
    f.write_text("results: r\nconditions: [A0, G2\nseed: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config_file(f)
    assert str(err.value).startswith(f"{f}:3:5: invalid YAML: expected ',' or ']'")
    assert "flow sequence that starts at line 2, column 13" in str(err.value)


def test_yaml_tab_indentation_is_named(tmp_path):
    f = tmp_path / "my.yaml"
    f.write_text("chunking:\n\tt_max: 300\n")
    with pytest.raises(ConfigError, match=r"my\.yaml:2:1: invalid YAML: .*spaces, not tabs"):
        load_config_file(f)


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path):
    """YAML keeps the last of two equal keys; Snakemake would silently drop the first."""
    f = tmp_path / "my.yaml"
    f.write_text("chunking:\n  t_max: 300\nseed: 1\nchunking:\n  t_min: 5\n")
    with pytest.raises(ConfigError) as err:
        load_config_file(f)
    assert str(err.value).startswith(f"{f}:4:1: invalid YAML: found the key 'chunking' a "
                                     "second time (first on line 1)")


def test_a_config_that_is_not_a_mapping_is_refused(tmp_path):
    f = tmp_path / "my.yaml"
    f.write_text("- corpora\n- embedders\n")
    with pytest.raises(ConfigError, match=r"my\.yaml: the configuration must be a mapping of "
                                          r"keys .* not a list"):
        load_config_file(f)
    with pytest.raises(ConfigError, match="must be a mapping of keys at the top level, not a "
                                          "str"):
        check_config("corpora: {}")


def test_a_config_that_is_not_utf8_names_the_line(tmp_path):
    f = tmp_path / "my.yaml"
    f.write_bytes(b"results: r\nseed: 1 # caf\xe9\n")
    with pytest.raises(ConfigError, match=r"my\.yaml:2: the config file is not UTF-8"):
        load_config_file(f)


def test_the_config_checker_merges_files_like_snakemake(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(json.dumps(config()))
    over = tmp_path / "over.yaml"
    over.write_text("chunking:\n  t_max: 4\n")
    with pytest.raises(ConfigError, match=r"base\.yaml, .*over\.yaml: invalid configuration:"
                                          r"\n  chunking\.t_max: 4 is less than the minimum"):
        check_config_files([base, over])
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1\n")
    proc = subprocess.run([sys.executable, "-m", "structablate.config", str(bad)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 1 and f"error: {bad}:2:1: invalid YAML" in proc.stderr


# ============================================================================ keys and values


@pytest.mark.parametrize("where, key, message", [
    ("corpora.qasper", "fuzy_min_ratio",
     "corpora.qasper: Additional properties are not allowed ('fuzy_min_ratio'"),
    ("llm.llamacpp", "nctx", "llm.llamacpp: Additional properties are not allowed ('nctx'"),
    ("llm.llamacpp", "n_treads", "llm.llamacpp: Additional properties are not allowed"),
    ("induction.texttiling", "windw",
     "induction.texttiling: Additional properties are not allowed ('windw'"),
    ("llm.openai", "timeout", "llm.openai: Additional properties are not allowed ('timeout'"),
])
def test_an_unknown_key_is_refused_with_its_path(where, key, message):
    cfg = config()
    node = cfg
    for part in where.split("."):
        node = node.setdefault(part, {})
    node[key] = 1
    assert message in refused(cfg)


@pytest.mark.parametrize("over, message", [
    ({"llm": {"llamacpp": {"n_ctx": -5}}}, "llm.llamacpp.n_ctx: -5 is less than the minimum"),
    ({"statistics": {"bootstrap_iters": 0}},
     "statistics.bootstrap_iters: 0 is less than the minimum of 100"),
    # 1e12 was accepted and failed 155 s later allocating 14.6 TiB, naming no key
    ({"statistics": {"bootstrap_iters": 1e12}},
     "statistics.bootstrap_iters: 1000000000000.0 is greater than the maximum of 1000000"),
    ({"seed": -1}, "seed: -1 is less than the minimum of 0"),
    ({"seed": 2**40}, "seed: 1099511627776 is greater than the maximum of 4294967295"),
    ({"llm": {"seed": 2**32 - 1}}, "llm.seed: 4294967295 is greater than the maximum"),
    ({"conditions": []}, "conditions: [] should be non-empty"),
    ({"conditions": ["A0", "G2", "A0"]}, "conditions: ['A0', 'G2', 'A0'] has non-unique"),
])
def test_a_value_out_of_range_is_refused_with_its_path(over, message):
    assert message in refused(config(**over))


def _number_keys(cls, prefix=""):
    """Dotted paths of every float setting reachable through nested settings blocks (blocks
    keyed by user names, such as corpora and embedders, are left to explicit cases)."""
    import dataclasses
    import typing

    from structablate.settings._core import fields_of

    out = []
    for f, tp in fields_of(cls):
        args = typing.get_args(tp) or (tp,)
        if float in args:
            out.append(prefix + f.name)
        for a in args:
            if isinstance(a, type) and dataclasses.is_dataclass(a):
                out += _number_keys(a, f"{prefix}{f.name}.")
    return out


def _set_key(cfg: dict, dotted: str, value) -> dict:
    node = cfg
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return cfg


NUMBER_KEYS = _number_keys(__import__("structablate.settings", fromlist=["Settings"]).Settings)


def test_every_number_setting_is_found():
    # the walk reaches the keys the battery named (so a NaN test over NUMBER_KEYS covers them)
    for key in ("statistics.equivalence_margin", "retrieval.hnsw.target_recall",
                "llm.temperature", "llm.top_p", "induction.texttiling.c_coarse",
                "report.guard.min_boundary_kappa"):
        assert key in NUMBER_KEYS, key


@pytest.mark.parametrize("key", NUMBER_KEYS)
@pytest.mark.parametrize("value, said", [(float("nan"), "NaN"), (float("inf"), "inf"),
                                         (float("-inf"), "-inf")])
def test_nan_and_infinity_are_refused_in_every_number_setting(key, value, said):
    # NaN compares false with every minimum and maximum, so the schema alone let it through
    msg = refused(_set_key(config(), key, value))
    assert f"{key}: {said}" in msg and "give a finite number" in msg


@pytest.mark.parametrize("where", ["corpora.qasper.fuzzy_min_ratio",
                                   "statistics.equivalence_margin.covNDCG@10",
                                   "statistics.bootstrap_iters", "seed"])
def test_nan_is_refused_in_numbers_keyed_by_user_names_and_in_integers(where):
    cfg = config()
    if where.startswith("statistics.equivalence_margin."):
        cfg["statistics"] = {"equivalence_margin": {"covNDCG@10": float("nan")}}
    else:
        _set_key(cfg, where, float("nan"))
    assert f"{where}: NaN is not a number a setting can take" in refused(cfg)


def test_a_corpus_name_with_spaces_is_refused():
    cfg = config()
    cfg["corpora"] = {"my corpus": cfg["corpora"]["qasper"]}
    assert "corpora: 'my corpus' does not match '^[a-z][a-z0-9_]*$'" in refused(cfg)


def test_an_api_key_in_the_config_is_refused_and_not_echoed():
    msg = refused(config(llm={"openai": {"api_key": "sk-secret-123"}}))
    assert "llm.openai.api_key: API keys are not read from the config" in msg
    assert "api_key_env" in msg and "sk-secret-123" not in msg


def test_a_results_path_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "results"
    f.write_text("not a folder")
    assert f"results: {f} is a file; results must name a folder" in refused(
        config(results=str(f)))


def test_a_container_image_that_is_not_there_is_refused(tmp_path, monkeypatch):
    """Before: no `container:` key; an image path is checked before any job, a URI is left to
    Apptainer's pull (which Snakemake runs before the first job)."""
    monkeypatch.chdir(tmp_path)
    msg = refused(config(container="images/structablate-gpu.sif"))
    assert "container: no image images/structablate-gpu.sif" in msg
    assert "apptainer build images/structablate-gpu.sif containers/gpu.def" in msg
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "structablate-gpu.sif").write_bytes(b"SIF")
    assert Plan.from_config(config(container="images/structablate-gpu.sif"),
                            source="my.yaml").settings.container
    assert Plan.from_config(config(container="oras://registry.example/structablate:1"),
                            source="my.yaml")
    assert "container: 'two words.sif' does not match" in refused(
        config(container="two words.sif"))


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_results_path_is_refused(value):
    """Before: accepted, and every output went to /qasper, /logs, /benchmarks."""
    assert "results: is empty; name the folder every output is written under" in refused(
        config(results=value))


def test_a_results_path_with_a_tilde_is_expanded(tmp_path, monkeypatch):
    """Before: a folder literally named ``~`` was created in the working directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    plan = Plan.from_config(config(results="~/runs/one"), source="my.yaml")
    assert plan.settings.results == str(tmp_path / "runs" / "one")
    assert plan.paths.summary_markdown() == f"{tmp_path}/runs/one/summary.md"


@pytest.mark.parametrize("results, how", [("docs/out", "is inside"), ("docs", "is"),
                                          (".", "contains"), ("link/out", "is inside"),
                                          ("other/../docs/x", "is inside")])
def test_a_results_folder_overlapping_a_corpus_folder_is_refused(tmp_path, monkeypatch,
                                                                  results, how):
    """Before: the next run read its own summary.md and report as documents."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "docs")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## S\n\ntext\n")
    monkeypatch.chdir(tmp_path)
    cfg = config(results=results)
    cfg["corpora"] = {"mine": {"type": "markdown", "path": "docs/**/*.md",
                               "queries": str(BYO / "queries.jsonl")}}
    msg = refused(cfg)
    assert (f"results: the results folder {results!r} ({(tmp_path / results).resolve()}) "
            f"{how} the folder 'docs' ({tmp_path / 'docs'}) that corpora.mine.path reads"
            in msg), msg
    cfg["results"] = "elsewhere"
    cfg["corpora"]["mine"]["path"] = "docs"
    Plan.from_config(cfg, source="my.yaml", check_files=False)


@pytest.mark.parametrize("where, value, named", [
    ({"openai": {"base_url": "https://user:SEKRIT-1@api.example.org/v1"}}, None,
     "llm.openai.base_url: a URL with a user name or password"),
    ({"openai": {"base_url": "https://SEKRIT-1@api.example.org/v1"}}, None,
     "llm.openai.base_url: a URL with a user name or password"),
    ({"openai": {"extra_body": {"api_key": "SEKRIT-1"}}}, None,
     "llm.openai.extra_body.api_key: a key named like a credential holds a value"),
    ({"openai": {"extra_body": {"auth": {"accessToken": "SEKRIT-1"}}}}, None,
     "llm.openai.extra_body.auth.accessToken: a key named like a credential"),
    ({"openai": {"extra_body": {"headers": ["Bearer SEKRIT-1"]}}}, None,
     "llm.openai.extra_body.headers[0]: an HTTP Authorization value"),
    ({"vllm": {"engine_args": {"hf_token": "SEKRIT-1"}}}, None,
     "llm.vllm.engine_args.hf_token: a key named like a credential"),
])
def test_a_credential_anywhere_in_the_config_is_refused_and_not_echoed(where, value, named):
    """Before: a key in base_url or extra_body was accepted, and rule params (so
    .snakemake/metadata) held it in plain text."""
    msg = refused(config(llm=where))
    assert named in msg and "api_key_env" in msg and "SEKRIT" not in msg, msg


def test_settings_named_like_tokens_are_not_credentials():
    cfg = config(llm={"openai": {"api_key_env": "MY_KEY", "extra_body": {"max_tokens": 9,
                                                                           "top_k": 5}}})
    Plan.from_config(cfg, source="my.yaml")


# ============================================================================ the primary cell


def test_a_primary_metric_that_is_not_scored_is_refused():
    msg = refused(config(statistics={"primary": {"metric": "nDCG@5"}}))
    assert "statistics.primary.metric: 'nDCG@5' is not among metrics.measures (covNDCG@10)" \
        in msg


@pytest.mark.parametrize("stage, conditions, fixed", [
    ("contexts", ["A0", "A1", "G2"], "max_doc_chars"),
    ("induction", ["A0", "A3", "G2"], "max_prompt_chars"),
])
def test_an_llm_stage_whose_context_length_is_unknown_is_refused(stage, conditions, fixed):
    """Before: an OpenAI-compatible server (whose context the config does not state) passed
    the check and the stage's first job died with a ValueError."""
    server = {"model": "m", "backend": "openai",
              "openai": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": None}}
    cfg = config(conditions=conditions, llm=server, induction={"inducer": "llm"})
    msg = refused(cfg)
    assert f"{stage}.context_tokens: conditions " in msg and "backend 'openai'" in msg
    assert f"{stage}.{fixed}" in msg
    for given in ({"context_tokens": 8192}, {fixed: 20000}):  # either setting is enough
        ok = config(conditions=conditions, llm=server, induction={"inducer": "llm"})
        ok[stage] = {**ok.get(stage, {}), **given}
        Plan.from_config(ok, source="my.yaml")
    # a llama.cpp model states its context (llamacpp.n_ctx, default 8192)
    Plan.from_config(config(conditions=conditions, llm={"model": "m"},
                            induction={"inducer": "llm"}), source="my.yaml")


@pytest.mark.parametrize("measure, top_k, raise_to", [
    ("R@50", 1, 50), ("covNDCG@10", 9, 10), ("nDCG@10", 5, 10), ("RR@20", 19, 20),
    ("R@1000000", 100, 1000000)])
def test_a_rank_cutoff_beyond_top_k_is_refused(measure, top_k, raise_to):
    # R@50 of a top-1 run was reported as R@50 (0.157 against 0.968 at top_k 100)
    msg = refused(config(metrics={"measures": [measure]}, retrieval={"top_k": top_k},
                         statistics={"primary": {"metric": measure}}))
    assert f"metrics.measures: {measure} looks at the first" in msg
    assert f"retrieval.top_k keeps {top_k} per question" in msg
    assert f"Raise retrieval.top_k to at least {raise_to}" in msg


def test_a_token_budget_beyond_what_top_k_chunks_hold_is_refused():
    msg = refused(config(metrics={"measures": ["covNDCG@10", "TokCov@2048"]},
                         retrieval={"top_k": 10}, chunking={"t_max": 200}))
    assert ("metrics.measures: TokCov@2048 spends a budget of 2048 tokens down the ranking, but "
            "retrieval.top_k 10 chunks of chunking.t_max 200 content tokens hold about 2000") in msg
    assert "Raise retrieval.top_k to at least 11" in msg


def test_cutoffs_within_top_k_are_accepted():
    Plan.from_config(config(metrics={"measures": ["covNDCG@10", "R@10", "RR", "TokCov@2100"]},
                            retrieval={"top_k": 10}, chunking={"t_max": 210}), source="my.yaml")


def test_an_unknown_primary_reranker_is_refused():
    msg = refused(config(statistics={"primary": {"reranker": "bge"}}))
    assert "statistics.primary.reranker: unknown reranker 'bge' (one of none)" in msg


# ============================================================================ contrasts


def test_a_redefined_preregistered_contrast_outside_the_grid_is_refused():
    """C1 redefined onto [A3, G2] without G2 in the grid would drop out of the Holm family the
    user registered; the paper's own C1-C4 may name conditions a small grid leaves out."""
    cfg = config(conditions=["A0", "A2", "A3", "P"],
                 statistics={"contrasts": {"C1": ["A3", "G2"], "C2": ["A3", "P"],
                                           "C3": ["G3", "A3"], "C4": ["A4", "A3"]}},
                 llm={"model": "m"})
    msg = refused(cfg)
    assert "statistics.contrasts.C1: [A3, G2] names G2, not among conditions (A0, A2, A3, P)" \
        in msg and "move C1 to statistics.extra_contrasts" in msg
    # the paper's C3 (G3 - A3) and C4 (A4 - A3) on this grid: allowed, reported as not run
    cfg["statistics"]["contrasts"]["C1"] = ["A3", "A1"]
    Plan.from_config(cfg)
    # an exploratory contrast may name a condition the grid lacks (the bundled config.yaml
    # lists some for the full grid)
    cfg["statistics"]["extra_contrasts"] = {"x": ["G4", "G3"]}
    Plan.from_config(cfg)


def test_a_contrast_of_a_condition_with_itself_is_refused():
    msg = refused(config(statistics={"extra_contrasts": {"same": ["G2", "G2"]}}))
    assert "statistics.extra_contrasts.same: [G2, G2] compares G2 with itself" in msg


def test_the_verdict_says_why_a_question_was_not_answered():
    """C1 moved onto A3 - G2 with both run: "Is LLM contextualisation worth its tokens?" has no
    A3 - A1 row although A3 and A1 ran; the verdict says so instead of "the grid lacks"."""
    from structablate.report.verdict import verdict_blocks

    empty = pl.DataFrame({"condition": [], "measure": [], "mean": []},
                         schema={"condition": pl.String, "measure": pl.String,
                                 "mean": pl.Float64})
    configured = {"statistics.contrasts": {"C1": ["A3", "G2"], "C2": ["A3", "P"]},
                  "statistics.extra_contrasts": {}}
    out = verdict_blocks("c", ("c", "e", "none"), pl.DataFrame(), empty, pl.DataFrame(),
                         "covNDCG@10", conditions=["A0", "A1", "A3", "P", "G2"],
                         configured=configured)
    notes = {n.text.split("?")[0]: n.text for n in out if hasattr(n, "text")}
    contexts = notes["Is LLM contextualisation worth its tokens"]
    assert "A3 − A1: A3 and A1 both ran, but no configured contrast compares A3 with A1: " \
           "statistics.contrasts.C1 is [A3, G2] in this run (the paper's C1 is [A3, A1])" \
        in contexts
    assert "grid lacks" not in contexts
    routing = notes["Is two-stage routing safe"]
    assert "A4 − A3: A4 was not run (not in conditions)" in routing
    assert "G4 − G3: G4 and G3 were not run (not in conditions)" in routing


# ============================================================================ models


def test_a_hub_model_missing_from_the_offline_cache_is_refused(offline_hub):
    msg = refused(config(embedders={"bge": {"model": "BAAI/bge-smal-en-v1.5"}}))
    assert "embedders.bge.model: 'BAAI/bge-smal-en-v1.5' is neither a local folder nor a hub " \
           "model in the local Hugging Face cache" in msg
    assert str(offline_hub) in msg and "hf download BAAI/bge-smal-en-v1.5" in msg


def test_a_missing_reranker_model_is_refused(offline_hub):
    cfg = config(rerankers={"none": {}, "ce": {"model": "ms-marco-MiniLM-L6-v2"}})
    msg = refused(cfg)
    # a bare name is looked up as sentence-transformers does for a cross-encoder
    assert "rerankers.ce.model: 'ms-marco-MiniLM-L6-v2' is neither" in msg
    assert "hf download cross-encoder/ms-marco-MiniLM-L6-v2" in msg
    cached(offline_hub, "cross-encoder/ms-marco-MiniLM-L6-v2")
    Plan.from_config(cfg)


def test_a_missing_tokenizer_model_is_refused(offline_hub):
    msg = refused(config(chunking={"tokenizer": "./tok/none"}))
    assert "chunking.tokenizer: no model folder ./tok/none (relative paths are read from the " \
           "working directory" in msg


def test_a_missing_local_model_folder_or_a_file_is_refused(offline_hub, tmp_path):
    assert f"embedders.minilm.model: no model folder {tmp_path}/models/bge" in refused(
        config(embedders={"minilm": {"model": str(tmp_path / "models" / "bge")}}))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0")
    assert f"embedders.minilm.model: {weights} is a file; a model is a folder" in refused(
        config(embedders={"minilm": {"model": str(weights)}}))
    # an existing folder is taken as the model (its contents are the job's to read)
    (tmp_path / "models" / "bge").mkdir(parents=True)
    Plan.from_config(config(embedders={"minilm": {"model": str(tmp_path / "models" / "bge")}}))


def test_a_pkg_model_whose_package_is_missing_is_refused(offline_hub):
    msg = refused(config(embedders={"minilm": {"model": "pkg:no_such_model_package"}}))
    assert "embedders.minilm.model: model 'pkg:no_such_model_package': Python package " \
           "'no_such_model_package' is not installed" in msg


def test_a_hub_model_is_accepted_when_cached_or_when_jobs_may_download(offline_hub,
                                                                        monkeypatch):
    cfg = config(embedders={"mini": {"model": "all-MiniLM-L6-v2"}})
    refused(cfg)
    cached(offline_hub, "sentence-transformers/all-MiniLM-L6-v2")  # the bare name's org
    Plan.from_config(cfg)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # jobs may download: only the hub can tell
    Plan.from_config(config(embedders={"x": {"model": "BAAI/not-checked-online"}}))


def test_jobs_are_offline_unless_the_environment_says_otherwise():
    from structablate.model_paths import hub_offline

    assert hub_offline({}) and hub_offline({"HF_HUB_OFFLINE": "1"})
    assert hub_offline({"TRANSFORMERS_OFFLINE": "yes"})
    assert not hub_offline({"HF_HUB_OFFLINE": "0"}) and not hub_offline(
        {"HF_HUB_OFFLINE": "false"})


# ============================================================================ corpus inputs


FUTURE = 1924992000  # 2031-01-01 00:00:00 UTC


def test_a_corpus_file_dated_in_the_future_is_refused_with_its_date_and_the_fix(tmp_path):
    # Snakemake refused every job reading it ("clock skew") and deleted its outputs each run
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text.\n")
    (docs / "b b.md").write_text("# B\n\nMore text.\n")
    os.utime(docs / "b b.md", (FUTURE, FUTURE))
    cfg = config(corpora={"mine": {"type": "markdown", "path": str(docs),
                                   "queries": str(BYO / "python-markdown-queries.jsonl")}})
    msg = refused(cfg)
    assert f"corpora.mine.path: {docs / 'b b.md'} is dated 2031-01-01 00:00:00 UTC, in the " \
           "future (now " in msg
    assert f"`touch '{docs / 'b b.md'}'`" in msg and "a.md" not in msg


def test_a_qasper_file_dated_in_the_future_is_refused_and_accepted_once_touched(tmp_path):
    papers = tmp_path / "papers.json"
    shutil.copy(SAMPLE, papers)
    os.utime(papers, (FUTURE, FUTURE))
    cfg = config(corpora={"qasper": {"type": "qasper", "sources": [{"path": str(papers)}]}})
    assert f"corpora.qasper.sources: {papers} is dated 2031-01-01" in refused(cfg)
    papers.touch()
    Plan.from_config(cfg, source="my.yaml")


def test_an_empty_corpus_folder_is_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    with pytest.raises(ByoInputError, match=r"docs: no input files found \(extensions .md"):
        build_byo({"type": "markdown", "path": str(tmp_path / "docs")}, "c")


def test_a_qasper_file_that_is_a_json_list_is_refused(tmp_path):
    from structablate.corpus.qasper import QasperFormatError, read_sources

    f = tmp_path / "papers.json"
    f.write_text(json.dumps([{"title": "x"}]))
    with pytest.raises(QasperFormatError, match=r"papers\.json: expected a JSON object of "
                                                "papers keyed by paper id"):
        read_sources([{"format": "v0.3", "path": str(f)}])


def _glue_outputs(tmp_path: Path, questions: bool = True) -> dict[str, str]:
    out = {k: str(tmp_path / "out" / f"{k}.parquet")
           for k in ("documents", "paragraphs", "sections")}
    if questions:
        out.update(queries=str(tmp_path / "out" / "queries.parquet"),
                   qrels=str(tmp_path / "out" / "qrels.parquet"),
                   funnel=str(tmp_path / "out" / "funnel.json"))
    else:
        out["report"] = str(tmp_path / "out" / "corpus_report.json")
    return out


@pytest.fixture
def keep_stderr(monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # the glue sends stderr to its log file


def test_a_qasper_file_without_papers_is_refused_before_writing(tmp_path, keep_stderr):
    f = tmp_path / "papers.json"
    f.write_text("{}")
    out = _glue_outputs(tmp_path)
    cfg = glue_config({"qasper": {"type": "qasper", "sources": [{"path": str(f)}]}})
    with pytest.raises(EmptyCorpusError, match=r"corpus 'qasper' \(corpora\.qasper\): no "
                                               r"document to index: the sources hold 0 paper"):
        run_glue("build_qasper", tmp_path, config=cfg, wildcards={"corpus": "qasper"},
                 input={}, output=out)
    assert not (tmp_path / "out").exists()


def _unmappable_papers(path: Path, n: int = 3) -> None:
    """``n`` real QASPER papers whose every evidence string is text no paper contains."""
    papers = json.loads(SAMPLE.read_text())
    keep = {k: papers[k] for k in sorted(papers)[:n]}
    for paper in keep.values():
        for qa in paper["qas"]:
            for ans in qa["answers"]:
                a = ans["answer"]
                a["evidence"] = [f"Zebra quartz {i} hovers beside violet umbrellas nightly."
                                 for i, _ in enumerate(a["evidence"])]
                a["highlighted_evidence"] = list(a["evidence"])
    path.write_text(json.dumps(keep))


def test_qasper_questions_whose_evidence_never_maps_stop_the_build_with_the_funnel(
        tmp_path, keep_stderr):
    """No question survives: the build stops before writing anything, showing the funnel,
    instead of chunking, embedding and retrieving for nothing and failing in scoring."""
    f = tmp_path / "papers.json"
    _unmappable_papers(f)
    out = _glue_outputs(tmp_path)
    cfg = glue_config({"qasper": {"type": "qasper", "sources": [{"path": str(f)}]}})
    with pytest.raises(EmptyCorpusError) as err:
        run_glue("build_qasper", tmp_path, config=cfg, wildcards={"corpus": "qasper"},
                 input={}, output=out)
    msg = str(err.value)
    assert msg.startswith("corpus 'qasper' (corpora.qasper): no question survived the funnel")
    assert "Funnel: all questions " in msg and "→ with mapped evidence (kept) 0" in msg
    assert "the largest loss is at 'with mapped evidence (kept)" in msg
    assert "corpora.qasper.fuzzy_min_ratio" in msg
    assert not (tmp_path / "out").exists()  # nothing partial left behind


def test_user_questions_on_unknown_documents_stop_the_build_with_the_funnel(tmp_path,
                                                                            keep_stderr):
    rows = [json.loads(line) for line in
            (BYO / "qasper-markdown-queries.jsonl").read_text().splitlines() if line.strip()]
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps({**r, "doc_id": "x" + r["doc_id"]}) + "\n" for r in rows))
    cfg = glue_config({"mine": {"type": "markdown", "path": str(BYO / "qasper-markdown"),
                                "queries": str(q), "skip_bad_files": True,
                                "heading_separator": " ::: ", "lead_heading": "Front matter"}})
    built = _glue_outputs(tmp_path / "corpus", questions=False)
    run_glue("build_user_documents", tmp_path, config=cfg, wildcards={"corpus": "mine"},
             input={}, output=built)
    out = _glue_outputs(tmp_path)
    with pytest.raises(EmptyCorpusError) as err:
        run_glue("map_user_questions", tmp_path, config=cfg, wildcards={"corpus": "mine"},
                 input=built, output={k: out[k] for k in ("queries", "qrels", "funnel")})
    msg = str(err.value)
    assert msg.startswith("corpus 'mine' (corpora.mine.queries): no question survived")
    assert f"Check the questions file {q}: {len(rows)} question(s) name a doc_id the corpus " \
           "does not have" in msg
    assert f"all queries {len(rows)} → on a document of the corpus 0" in msg
    assert not (tmp_path / "out").exists()


def test_a_duplicate_document_id_names_both_files_even_with_skip_bad_files(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(BYO / "qasper-markdown", docs)
    (docs / "0dup.md").write_text("---\nid: 1605.05156\n---\n# Dup\n\n## S\n\nthree lines\n")
    cfg = {"type": "markdown", "path": str(docs), "skip_bad_files": True,
           "heading_separator": " ::: ", "lead_heading": "Front matter"}
    with pytest.raises(ByoInputError) as err:
        build_byo(cfg, "mine")
    msg = str(err.value)
    assert "doc_id '1605.05156' is also the id of" in msg
    assert "0dup.md" in msg and "1605.05156.md" in msg


def test_a_user_questions_file_with_a_bom_is_read():
    """Not a refusal: a UTF-8 byte-order mark (Excel, Notepad) is dropped, and the file reads
    as without it (an honest result)."""
    text = (BYO / "qasper-markdown-queries.jsonl").read_text(encoding="utf-8")
    cfg = {"type": "markdown", "path": str(BYO / "qasper-markdown"),
           "heading_separator": " ::: ", "lead_heading": "Front matter"}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        q = Path(d) / "q.jsonl"
        q.write_text("\ufeff" + text, encoding="utf-8")
        _, with_bom, _ = build_byo({**cfg, "queries": str(q)}, "c")
    _, plain, _ = build_byo({**cfg, "queries": str(BYO / "qasper-markdown-queries.jsonl")}, "c")
    assert with_bom == plain and len(plain) == 21


def test_a_qasper_file_with_a_bom_is_read(tmp_path):
    """Not a refusal (docs/refusals.md: BOMs are accepted). Before: 'not UTF-8' / invalid
    JSON at line 1."""
    from structablate.corpus.qasper import read_v03

    f = tmp_path / "papers.json"
    f.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    assert read_v03(f) == read_v03(SAMPLE)


def test_an_empty_wikipedia_export_is_refused(tmp_path):
    from structablate.corpus.mediawiki_fetch import WikipediaSourceError

    f = tmp_path / "export.xml"
    f.write_text("")
    with pytest.raises(WikipediaSourceError, match=r"export\.xml: malformed XML export"):
        wiki_corpus({"mode": "xml", "path": str(f)}, {"n_docs": 3})


def test_a_wikipedia_export_without_pages_is_refused_before_writing(tmp_path, keep_stderr):
    f = tmp_path / "export.xml"
    f.write_text('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/"></mediawiki>')
    cfg = glue_config({"wiki": {"type": "wikipedia", "source": {"mode": "xml", "path": str(f)},
                                "queries": {"llm": {"model": "m"}}}})
    out = _glue_outputs(tmp_path, questions=False)
    with pytest.raises(EmptyCorpusError, match=r"corpus 'wiki' \(corpora\.wiki\): no document "
                                               r"to index: the selection accepted none of 0 "
                                               r"candidate page\(s\) \(title list exhausted\)"):
        run_glue("build_wikipedia", tmp_path, config=cfg, wildcards={"corpus": "wiki"},
                 input={}, output=out, params={"cache_dir": str(tmp_path / "pages")})
    assert not (tmp_path / "out").exists()


def test_generated_questions_of_which_none_survive_stop_with_the_funnel(tmp_path, keep_stderr):
    """An OpenAI-compatible server on loopback answers every question request with nothing:
    no candidate becomes a question, and query generation stops before writing anything."""
    docs = {"type": "markdown", "path": str(BYO / "qasper-markdown"),
            "heading_separator": " ::: ", "lead_heading": "Front matter"}
    built = _glue_outputs(tmp_path / "corpus", questions=False)
    with StubServer(reply=lambda body: "") as srv:
        llm = {"model": "stub", "backend": "openai", "cache": str(tmp_path / "generations"),
               "openai": {"base_url": srv.base_url, "api_key_env": None}}
        cfg = glue_config({"mine": {**docs, "queries": {"per_doc": 1, "llm": llm}}})
        run_glue("build_user_documents", tmp_path, config=cfg, wildcards={"corpus": "mine"},
                 input={}, output=built)
        out = {k: str(tmp_path / "q" / f"{k}.parquet") for k in ("queries", "qrels",
                                                                 "candidates")}
        out["funnel"] = str(tmp_path / "q" / "funnel.json")
        with pytest.raises(EmptyCorpusError) as err:
            run_glue("generate_queries", tmp_path, config=cfg, wildcards={"corpus": "mine"},
                     input={k: built[k] for k in ("documents", "paragraphs", "sections")},
                     output=out)
        assert srv.requests  # the server was asked
    msg = str(err.value)
    assert msg.startswith("corpus 'mine' (corpora.mine.queries): no question survived")
    assert "Funnel: generated 0 → survivors 0 → finals 0" in msg
    assert "Candidate statuses: no_query " in msg
    assert not (tmp_path / "q").exists()


def test_scoring_an_empty_query_set_is_a_clear_error():
    from structablate.metrics import NoQueriesError, score_run

    s = pl.String
    run = pl.DataFrame(schema={"qid": s, "rank": pl.Int64, "chunk_id": s})
    chunks = pl.DataFrame({"chunk_id": ["c"], "doc_id": ["d"], "start": [0], "end": [5],
                           "content_tokens": [3], "prefix_tokens": [0]})
    qrels = pl.DataFrame(schema={"qid": s, "doc_id": s, "start": pl.Int64, "end": pl.Int64})
    queries = pl.DataFrame(schema={"qid": s, "doc_id": s, "qtype": s})
    with pytest.raises(NoQueriesError, match="the queries table is empty"):
        score_run(run, chunks, qrels, queries, ["covNDCG@10"])
    assert issubclass(NoQueriesError, StructablateError)


# ============================================================================ LLM server


def test_an_http_200_that_is_not_json_is_retried_then_named(tmp_path):
    from structablate.llm.backends import BackendError, OpenAIBackend, Request

    req = Request(messages=({"role": "user", "content": "one two"},))
    with StubServer(garbage_first=2) as srv:  # a proxy's HTML page twice, then the answer
        backend = OpenAIBackend("m", srv.base_url, api_key_env=None, backoff_s=0.01,
                                max_retries=3)
        assert backend.generate(req).text == "two one"
        assert len(srv.requests) == 3
    with StubServer(garbage_first=100) as srv:
        backend = OpenAIBackend("m", srv.base_url, api_key_env=None, backoff_s=0.01,
                                max_retries=2)
        with pytest.raises(BackendError) as err:
            backend.generate(req)
        assert len(srv.requests) == 3
    msg = str(err.value)
    assert msg.startswith(f"openai backend {srv.base_url}/chat/completions: gave up after 3 "
                          "attempts (HTTP 200 with a body that is not JSON")
    assert "'text/html'" in msg and "502 Bad Gateway" in msg


def test_a_json_answer_without_choices_names_the_url():
    from structablate.llm.backends import BackendError, OpenAIBackend, Request

    with StubServer(garbage_first=1, garbage='{"detail": "Not Found"}') as srv:
        backend = OpenAIBackend("m", srv.base_url, api_key_env=None, backoff_s=0.01)
        with pytest.raises(BackendError, match=r"openai backend http://127\.0\.0\.1:\d+/v1/chat/"
                                               r"completions: malformed response \(no choices"):
            backend.generate(Request(messages=({"role": "user", "content": "x"},)))


# ============================================================================ shared folders


_WRITE_ALL = """
import sys, numpy as np, polars as pl
from structablate.io import write_json, write_npy, write_parquet
from structablate.store.folder import StoreSettings
from structablate.store.typed import VectorStore
out = sys.argv[1]
write_parquet(pl.DataFrame({"a": [1]}), out + "/sub/t.parquet")
write_json({"a": 1}, out + "/sub/t.json")
write_npy(np.zeros(3, dtype=np.float32), out + "/sub/t.npy")
s = VectorStore(out + "/cache", settings=StoreSettings(flush_s=0.0))
s.put_vectors([(b"k" * 32, np.ones(4, dtype=np.float32))])
s.close()
"""


@pytest.mark.parametrize("umask, mode", [("002", 0o664), ("022", 0o644), ("077", 0o600)])
def test_outputs_respect_the_umask(tmp_path, umask, mode):
    """A group sharing a results folder under umask 002 can read and replace each other's
    Parquet, JSON and .npy files and cache shards (mkstemp would make them 0600)."""
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
    proc = subprocess.run(["sh", "-c", f'umask {umask} && exec "$0" -c "$1" "$2"',
                           sys.executable, _WRITE_ALL, str(tmp_path)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    files = [tmp_path / "sub" / n for n in ("t.parquet", "t.json", "t.npy")]
    files += sorted((tmp_path / "cache").rglob("*.shard*"))
    assert len(files) >= 4, sorted(p.name for p in (tmp_path / "cache").rglob("*"))
    for f in files:
        assert f.stat().st_mode & 0o777 == mode, (f, oct(f.stat().st_mode))
    assert not list((tmp_path / "sub").glob(".*.tmp"))  # no temporary file left behind
    assert np.load(files[2]).shape == (3,)


def test_logs_live_with_their_results():
    plan = Plan.from_config(config(results="elsewhere/run1"))
    assert plan.paths.log("qasper/build_qasper") == "elsewhere/run1/logs/qasper/build_qasper.log"


# ============================================================================ two generators


_GENERATOR = """
import sys, time
from structablate.llm.backends import Backend, Generation
from structablate.llm.cache import StoreCache
from structablate.llm.client import LLMClient
from structablate.store.folder import StoreSettings

class Slow(Backend):
    name = "slow"
    def generate(self, request):
        time.sleep(0.05)
        print("GEN", flush=True)
        return Generation(text="echo:" + request.messages[-1]["content"])

cache = StoreCache(sys.argv[1], settings=StoreSettings(flush_s=0.0))
client = LLMClient("m", cache, backend=Slow(), stage="contexts")
client.generate_many([client.request([{"role": "user", "content": f"p{i}"}])
                      for i in range(int(sys.argv[2]))])
client.close()
"""


def test_a_generator_that_waited_for_the_stage_lock_does_not_redo_the_holders_work(tmp_path):
    """A rerun started beside a live generator of the same stage (the orphan of a killed
    Snakemake) waits for its lock, then takes what it committed from the cache: nothing is
    generated twice (tests/test_refusals_workflow.py shows the same through Snakemake)."""
    from structablate.llm.backends import Backend, Generation
    from structablate.llm.cache import open_cache
    from structablate.llm.client import LLMClient
    from structablate.store.lock import LockSettings

    class Counting(Backend):
        name = "counting"
        calls = 0

        def generate(self, request):
            Counting.calls += 1
            return Generation(text="echo:" + request.messages[-1]["content"])

    path, n = tmp_path / "generations", 60
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
    holder = subprocess.Popen([sys.executable, "-c", _GENERATOR, str(path), str(n)], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "GEN"  # it holds the lock now
        rerun = LLMClient("m", open_cache(path), backend=Counting(), stage="contexts",
                          lock_settings=LockSettings(wait_s=120))
        reqs = [rerun.request([{"role": "user", "content": f"p{i}"}]) for i in range(n)]
        assert rerun.generate_many(reqs) == [f"echo:p{i}" for i in range(n)]
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()
        holder.wait()
    assert Counting.calls == 0 and rerun.stats.hits == n
    rerun.close()
