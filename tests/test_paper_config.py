"""The paper-scale configuration: it validates, names the paper's models, reads QASPER from the
Hugging Face hub (or, through its documented alternative, from local v0.3 files) and
Wikipedia-FA from the MediaWiki API with the paper's selection and LLM-written questions, and
its dry run shows the expected grid (2 corpora x 11 conditions x 3 embedder/reranker arms)
without touching the network or needing any data on disk."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SAMPLE
from workflow_util import snakemake as project_snakemake

from structablate.config import ConfigError, check_config
from structablate.plan import Plan

PAPER = REPO / "config" / "paper.yaml"
BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "

# The paper's grid, counted by hand from config/paper.yaml. Per corpus: 2 embedders x 2
# rerankers, the reranker on bge_large only = 3 cells; 2 corpora = 6 cells; 11 conditions each.
# The 11 conditions use 9 chunksets (A4 reads A3's chunks, G4 reads G3's): A0 A1 A2 A3-d1 A3-d2
# A3 P G2 G3. `chunk` cuts 8 of them (A1 is derived from A0's windows by `contextualize`).
# Per corpus: 1 corpus build, 1 tokenize_corpus, 1 bm25_check, 1 induce_structure,
# 1 contextualize, 1 structure_quality, 1 report_corpus (7); 8 chunk; 9 chunksets x 2 embedders
# = 18 embed_chunks; 2 embed_queries; 11 conditions x 2 embedders = 22 retrieve; 11 conditions x
# 1 reranked embedder = 11 rerank; 3 cells x 11 conditions = 33 trec_export; one score, one
# summarize_cell, one contrasts, one cell_statistics and one report_cell per cell (3 each, 15).
# Per corpus: 7 + 8 + 18 + 2 + 22 + 11 + 33 + 15 = 116.
# Only Wikipedia-FA generates questions (1 generate_queries; QASPER brings its own). Once per
# run: summary_markdown, report_page, all.
# Total: 2 x 116 + 1 + 3 = 236.
PAPER_JOBS = {
    "build_qasper": 1, "build_wikipedia": 1, "generate_queries": 1, "tokenize_corpus": 2,
    "bm25_check": 2, "induce_structure": 2, "contextualize": 2, "structure_quality": 2,
    "report_corpus": 2, "chunk": 16, "embed_chunks": 36, "embed_queries": 4, "retrieve": 44,
    "rerank": 22, "score": 6, "trec_export": 66, "summarize_cell": 6, "contrasts": 6,
    "cell_statistics": 6, "report_cell": 6, "summary_markdown": 1, "report_page": 1, "all": 1,
}
assert sum(PAPER_JOBS.values()) == 236
# The same grid on QASPER alone (the local-files alternative below): one corpus's 116 + 3.
QASPER_JOBS = {
    "build_qasper": 1, "tokenize_corpus": 1, "bm25_check": 1, "induce_structure": 1,
    "contextualize": 1, "structure_quality": 1, "report_corpus": 1, "chunk": 8,
    "embed_chunks": 18, "embed_queries": 2, "retrieve": 22, "rerank": 11, "score": 3,
    "trec_export": 33, "summarize_cell": 3, "contrasts": 3, "cell_statistics": 3,
    "report_cell": 3, "summary_markdown": 1, "report_page": 1, "all": 1,
}
assert sum(QASPER_JOBS.values()) == 119


def job_counts(output: str) -> dict[str, int]:
    """The last 'Job stats' table of a (dry) run: rule -> count."""
    stats = output.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)
            if m.group(1) != "total"}


def offline_env() -> dict[str, str]:
    """No hub access, and any HTTP(S) request would hit a closed local port."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
               NO_PROXY="")
    return env


def snakemake(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=offline_env())


@pytest.fixture(scope="module")
def paper():
    return yaml.safe_load(PAPER.read_text())


PAPER_MODELS = ("BAAI/bge-small-en-v1.5", "BAAI/bge-large-en-v1.5", "BAAI/bge-reranker-v2-m3",
                "google/gemma-4-26b-a4b-it")
PAPER_DATASETS = ("allenai/qasper",)


def stand_in_hub_cache(root: Path) -> Path:
    """A Hugging Face hub cache under ``root`` holding a stand-in snapshot of each of the
    paper's models, laid out as ``huggingface_hub`` lays out a download. The plan refuses,
    before any job, a hub model that offline jobs could not load
    (structablate.model_paths.check_model); the paper's models cannot be downloaded here, and
    nothing that uses this cache loads their weights."""
    cache = root / "hf-hub-cache"
    for kind, repos in (("models", PAPER_MODELS), ("datasets", PAPER_DATASETS)):
        for repo in repos:
            snap = cache / (f"{kind}--" + repo.replace("/", "--")) / "snapshots" / ("0" * 40)
            snap.mkdir(parents=True, exist_ok=True)
            (snap / "config.json").write_text("{}")
    return cache


@pytest.fixture(scope="module", autouse=True)
def paper_models_in_the_hub_cache(tmp_path_factory):
    """HF_HUB_CACHE points at :func:`stand_in_hub_cache` for this module's tests (module
    scope, so module-scoped fixtures that plan the grid see it too)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(stand_in_hub_cache(tmp_path_factory.getbasetemp())))
        yield


def test_paper_config_validates_with_the_papers_models(paper):
    cfg = check_config(paper, source=str(PAPER))
    assert list(cfg["corpora"]) == ["qasper", "wikipedia_fa"]
    # all three splits of the hub's QASPER, read by the QASPER builder through `datasets`
    assert cfg["corpora"]["qasper"]["sources"] == [
        {"format": "hf", "path": "allenai/qasper", "split": split, "papers": None,
         "sample": "stratified"}
        for split in ("train", "validation", "test")]
    emb = cfg["embedders"]
    assert list(emb) == ["bge_small", "bge_large"]
    assert emb["bge_small"]["model"] == "BAAI/bge-small-en-v1.5"
    assert emb["bge_large"]["model"] == "BAAI/bge-large-en-v1.5"
    assert {e["query_instruction"] for e in emb.values()} == {BGE_INSTRUCTION}
    rr = cfg["rerankers"]["bge_reranker"]
    assert (rr["model"], rr["top_n"], rr["embedders"]) == (
        "BAAI/bge-reranker-v2-m3", 50, ["bge_large"])
    assert cfg["statistics"]["primary"] == {"metric": "covNDCG@10", "embedder": "bge_large",
                                            "reranker": "none"}
    assert cfg["seed"] == 20260710 and cfg["retrieval"]["top_k"] == 100
    assert (cfg["chunking"]["t_max"], cfg["chunking"]["t_min"]) == (350, 60)


def test_wikipedia_fa_is_the_papers_selection_with_llm_questions(paper):
    """Wikipedia-FA comes from the MediaWiki API (mwclient) with the paper's selection, and its
    questions are generated by the paper's LLM, 250 per type."""
    cfg = check_config(paper, source=str(PAPER))
    wiki = cfg["corpora"]["wikipedia_fa"]
    assert wiki["type"] == "wikipedia"
    assert (wiki["source"]["mode"], wiki["source"]["host"]) == ("api", "en.wikipedia.org")
    assert wiki["source"]["featured_category"] == "Featured articles"
    selection = {k: wiki["selection"][k] for k in ("seed", "n_docs", "min_words", "min_depth",
                                                   "min_sections", "max_per_bucket")}
    assert selection == {"seed": 20260710, "n_docs": 200, "min_words": 3000, "min_depth": 3,
                         "min_sections": 12, "max_per_bucket": 60}
    assert wiki["queries"]["per_type"] == 250
    plan = Plan.from_config(paper, str(PAPER))
    assert plan.generates_queries("wikipedia_fa") and not plan.generates_queries("qasper")
    llm = plan.stage_llm("queries", "wikipedia_fa")
    assert (llm.backend, llm.model, llm.mode) == ("vllm", "google/gemma-4-26b-a4b-it", "cached")


def test_every_llm_stage_caches_in_the_default_store_folder(paper):
    """No stage names an SQLite file: every LLM stage writes the shard-store folder
    {results}/cache/llm (docs/cache.md)."""
    assert "cache" not in paper["llm"]
    plan = Plan.from_config(paper, str(PAPER))
    caches = {plan.stage_llm("induction").cache, plan.stage_llm("contexts").cache,
              plan.stage_llm("queries", "wikipedia_fa").cache}
    assert caches == {"results-paper/cache/llm"}
    assert "sqlite" not in PAPER.read_text()


def test_paper_dry_run_shows_the_full_grid_offline():
    # a --configfile runs alone: no --replace-workflow-config needed
    proc = snakemake("-n", "--configfile", str(PAPER))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert job_counts(out) == PAPER_JOBS, out[-3000:]
    assert "/bge_small/bge_reranker/" not in out  # the reranker runs on the strong arm only
    for corpus in ("qasper", "wikipedia_fa"):
        for embedder, reranker in (("bge_small", "none"), ("bge_large", "none"),
                                   ("bge_large", "bge_reranker")):
            assert f"results-paper/{corpus}/{embedder}/{reranker}/contrasts.parquet" in out
    assert "minilm" not in out  # the bundled default's embedder stays out of the grid


def local_sources_block() -> list[dict]:
    """The commented-out alternative of paper.yaml: QASPER's v0.3 files from disk."""
    block = PAPER.read_text().split("# QASPER-LOCAL-BEGIN\n")[1].split("# QASPER-LOCAL-END")[0]
    lines = [line.strip().removeprefix("#") for line in block.splitlines()]
    return yaml.safe_load("\n".join(lines))["sources"]


def test_local_files_alternative_builds_from_v03_files(tmp_path, paper, monkeypatch,
                                                       sample_corpus):
    """The documented local-files block, used as written: a test project holds bundled
    stand-ins (the QASPER sample cut into three disjoint files) at the block's paths; the
    config validates, dry-runs the same grid, and build_qasper builds the corpus from them."""
    sources = local_sources_block()
    assert [s["format"] for s in sources] == ["v0.3"] * 3
    assert [s["path"].rsplit("/", 1)[-1] for s in sources] == [
        "qasper-train-v0.3.json", "qasper-dev-v0.3.json", "qasper-test-v0.3.json"]
    papers = json.loads(SAMPLE.read_text())
    ids = sorted(papers)
    for k, src in enumerate(sources):
        path = tmp_path / src["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({pid: papers[pid] for pid in ids[k::3]}))
    cfg = dict(paper, corpora={"qasper": {**paper["corpora"]["qasper"], "sources": sources}})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    monkeypatch.chdir(tmp_path)  # relative paths are read from the working directory
    check_config(cfg)
    missing = [{"format": "v0.3", "path": "data/qasper/nothing-here.json"}, *sources[1:]]
    with pytest.raises(ConfigError, match=r"corpora\.qasper\.sources\[0\]\.path: no file"):
        check_config(dict(cfg, corpora={"qasper": {**cfg["corpora"]["qasper"],
                                                   "sources": missing}}))
    proc = project_snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == QASPER_JOBS, out[-3000:]
    proc = project_snakemake(tmp_path, "results-paper/qasper/funnel.json", timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    funnel = json.loads((tmp_path / "results-paper/qasper/funnel.json").read_text())
    # the same corpus as the sample read whole, in process
    whole = sample_corpus.funnel.as_dict()
    assert funnel["papers"] == len(papers) == 15
    for key in ("questions", "kept", "papers_with_kept_questions", "funnel"):
        assert funnel[key] == whole[key], key


def test_cluster_docs_state_the_grid():
    """docs/cluster.md's job table and total are the grid counted above."""
    text = (REPO / "docs" / "cluster.md").read_text(encoding="utf-8")
    assert f"The paper's grid is {sum(PAPER_JOBS.values())} jobs" in text
    table = text.split("The paper's grid is")[1].split("\n\n")[1]
    stated: dict[str, int] = {}
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        n = int(re.match(r"\d+", cells[1]).group())
        for rule in re.findall(r"`(\w+)`", cells[0]):
            stated[rule] = n
    assert stated == PAPER_JOBS
