"""The SLURM profile, exercised offline on the paper's full grid: the real `snakemake` command
line (profiles, executor plugin, groups) plans every job and group job up to submission
(tests/slurm_plan.py), and the plugin's own code renders each one's sbatch request, so the
test sees what a cluster would be asked for: one H200 for each GPU job, none for a CPU job,
memory and runtime that double on a retry, and only light or network-bound rules on the
submit host."""

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO
from test_paper_config import (
    PAPER,
    PAPER_JOBS,
    job_counts,
    offline_env,
    snakemake,
    stand_in_hub_cache,
)

from structablate.plan import Plan
from structablate.plan.rules import RULES

PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
PARTITIONS = REPO / "profiles" / "slurm" / "partitions.yaml"
DEFAULT_PROFILE = REPO / "profiles" / "default" / "config.yaml"
GPU_RULES = {name for name, entry in RULES.items() if entry.may_use_gpu}
"""The rules whose model (an embedder, a reranker, an LLM stage's) may sit on a GPU."""


def local_rules(config: Path) -> set[str]:
    """The rules the rule table runs on the submit host under ``config`` (light, measured in
    docs/cluster.md, or network-bound: Wikipedia from the API), and ``all``."""
    plan = Plan.from_config(yaml.safe_load(config.read_text()), check_models=False)
    return {name for name, entry in RULES.items() if entry.on_submit_host(plan)} | {"all"}


@pytest.fixture(scope="module", autouse=True)
def paper_models_in_the_hub_cache(tmp_path_factory):
    """The paper's hub models as stand-in snapshots (test_paper_config.stand_in_hub_cache):
    the plan checks, before any job, that offline jobs could load them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(stand_in_hub_cache(tmp_path_factory.getbasetemp())))
        yield


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load(PROFILE.read_text())


def slurm_plan(tmp_path: Path, *args: str, profile: str = "profiles/slurm",
               env: dict[str, str] | None = None) -> dict:
    """Every submission unit of ``snakemake --profile PROFILE ARGS`` (see
    tests/slurm_plan.py); a plain run, not a dry run, so jobs are planned as for SLURM."""
    out = tmp_path / "plan.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "slurm_plan.py"), str(out),
         "--profile", profile, *args],
        cwd=REPO, capture_output=True, text=True, timeout=900, env=env or offline_env())
    assert proc.returncode == 0 and out.exists(), (proc.stdout + proc.stderr)[-4000:]
    plan = json.loads(out.read_text())
    assert plan["local_exec"] is False  # planned for the slurm executor
    return plan


@pytest.fixture(scope="module")
def paper_plan(tmp_path_factory):
    # no --workflow-profile none: profiles/default is loaded too, as a user would have it
    return slurm_plan(tmp_path_factory.mktemp("plan"), "--configfile", str(PAPER))


def jobs_of(plan: dict) -> list[dict]:
    return [j for u in plan["units"] for j in (u["jobs"] if u["group"] else [u])]


class _Resources(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def sbatch(unit: dict) -> str:
    """The plugin's own sbatch line for a job or group job: its ``slurm_extra`` validated as
    the plugin validates it before each submission, its partition chosen from partitions.yaml
    as the plugin chooses it, its submit string and its GPU request."""
    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    res = _Resources(unit["resources"])
    name = unit["group"] or unit["rule"]
    job = SimpleNamespace(resources=res, threads=unit["threads"], name=name)
    validate_slurm_extra(job)
    partition = get_best_partition(read_partition_file(PARTITIONS), job,
                                   logging.getLogger("slurm"))
    assert partition, f"no partition of partitions.yaml fits {name}: {dict(res)}"
    params = {"run_uuid": "u", "slurm_logfile": Path("x/%j.log"), "comment_str": f"rule_{name}",
              "account": f" -A {res['slurm_account']}", "partition": f" -p {partition}",
              "workdir": "/w"}
    profile = yaml.safe_load(PROFILE.read_text())
    settings = SimpleNamespace(requeue=profile.get("slurm-requeue", False), no_requeue=False,
                               qos=profile.get("slurm-qos"), reservation=None)
    return get_submit_command(job, params, settings) + set_gres_string(job)


def test_paper_grid_plans_every_job_for_slurm(paper_plan):
    counts: dict[str, int] = {}
    for job in jobs_of(paper_plan):
        counts[job["rule"]] = counts.get(job["rule"], 0) + 1
    assert counts == PAPER_JOBS


def gpu_group(unit: dict) -> bool:
    return (unit["group"] or "").split("-")[0] in ("embed", "rerank")


def test_every_job_books_what_it_needs(paper_plan):
    """GPU rules: one GPU in the H200 partition with 8 CPUs per GPU; every other job: its
    threads as CPUs, no GPU, the CPU partition; each with its memory, runtime and account."""
    gpu_partition = yaml.safe_load(PARTITIONS.read_text())["partitions"]["gpu"]
    assert gpu_partition["available_gpu_models"] == ["h200"] and gpu_partition["max_gpu"] >= 1
    submitted = [u for u in paper_plan["units"] if not u["local"]]
    # 236 jobs (test_paper_config.PAPER_JOBS, counted by hand); the 40 embedding and 22
    # reranking jobs in 17 group jobs (test_groups_follow_the_dag counts them); 10 on the
    # submit host (6 summarize_cell, summary_markdown, report_page, build_wikipedia, all);
    # the small CPU jobs in group jobs (structablate.plan.groups), per corpus: one of its
    # tokens, 8 chunk jobs (A1's chunks are contextualize's) and BM25 check (10 jobs); one of
    # its reports (report_cell x 3 cells + report_corpus: 4); per embedder one of its 11
    # first-stage runs with the unreranked cell's 11 TREC files, scores, contrasts and
    # statistics (25 jobs, 2 groups); the reranked cell's 11 TREC files, scores, contrasts
    # and statistics (14 jobs, 1 group)
    assert sum(PAPER_JOBS.values()) == 236
    cpu_groups = [u for u in submitted if u["group"] and not gpu_group(u)]
    counts = {}
    for u in cpu_groups:
        counts[u["group"].split("-")[0]] = counts.get(u["group"].split("-")[0], 0) + 1
    assert counts == {"corpus": 2, "cell": 6, "report": 2}
    in_cpu_groups = sum(len(u["jobs"]) for u in cpu_groups)
    assert in_cpu_groups == 2 * 10 + 2 * 4 + 4 * 25 + 2 * 14
    assert len(submitted) == 236 - 62 + 17 - 10 - in_cpu_groups + len(cpu_groups)
    for unit in submitted:
        rules = {j["rule"] for j in unit["jobs"]} if unit["group"] else {unit["rule"]}
        call = sbatch(unit)
        res = unit["resources"]
        assert f" --mem {res['mem_mb']}" in call and f" -t {res['runtime']}" in call, call
        assert " -A my-account" in call
        if rules & GPU_RULES and res.get("gpu"):
            assert rules <= GPU_RULES
            assert res["gpu"] == 1 and unit["threads"] == res["cpus_per_gpu"] == 8, unit
            assert call.endswith(" --gpus=1") and "--cpus-per-gpu=8" in call, call
            assert " -p gpu" in call and "--cpus-per-task" not in call
        else:
            assert "gpu" not in res or res["gpu"] == 0
            assert "--gpus" not in call and "--cpus-per-gpu" not in call, call
            assert f"--cpus-per-task={unit['threads']}" in call and " -p cpu" in call, call


def test_a_retry_asks_the_same_unless_slurm_said_oom_or_timeout(paper_plan):
    """Planned without a recorded failure, attempt 2 asks what attempt 1 did: a cancelled or
    failed job is not given more; OUT_OF_MEMORY and TIMEOUT grow memory or runtime alone
    (tests/test_slurm_sizing.py)."""
    for job in jobs_of(paper_plan):
        one, two = job["resources"], job["resources_attempt2"]
        assert two["mem_mb"] == one["mem_mb"], job["rule"]
        assert two["runtime"] == one["runtime"], job["rule"]


def test_on_two_cpu_nodes_no_job_asks_for_more_than_a_node_has(tmp_path):
    """partitions.yaml of 2-CPU, 22 GB nodes (and the H200 partition): no job or group job of
    the bundled default or of the paper grid's CPU rules asks for more CPUs or memory than a
    node has (before: 8-thread jobs pended forever, embed_chunks booked 32 GB)."""
    profile = tmp_path / "slurm"
    shutil.copytree(REPO / "profiles" / "slurm", profile)
    parts = yaml.safe_load(PARTITIONS.read_text())
    parts["partitions"]["cpu"] = {"max_runtime": 1440, "max_mem_mb": 22000, "max_threads": 2}
    (profile / "partitions.yaml").write_text(yaml.safe_dump(parts))
    for args in ((), ("--configfile", str(PAPER))):
        plan = slurm_plan(tmp_path, *args, "--config", f"results={tmp_path / 'r'}",
                          profile=str(profile))
        cpu = [u for u in plan["units"] if not u["local"] and not u["resources"].get("gpu")]
        assert cpu
        for unit in cpu:
            assert unit["threads"] <= 2, (unit["group"] or unit["rule"], unit["threads"])
            assert unit["resources"]["mem_mb"] <= 22000, unit["group"] or unit["rule"]
            assert " -p cpu" in sbatch(unit)


def test_a_job_that_fits_no_partition_is_refused_while_planning(tmp_path):
    """Nodes of 500 MB: the plan stops before any job, naming the rule, what it needs and the
    partitions."""
    profile = tmp_path / "slurm"
    shutil.copytree(REPO / "profiles" / "slurm", profile)
    (profile / "partitions.yaml").write_text(yaml.safe_dump({"partitions": {"tiny": {
        "max_runtime": 60, "max_mem_mb": 500, "max_threads": 2}}}))
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "slurm_plan.py"), str(tmp_path / "p.json"),
         "--profile", str(profile), "--config", f"results={tmp_path / 'r'}"],
        cwd=REPO, capture_output=True, text=True, timeout=900, env=offline_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and not (tmp_path / "p.json").exists()
    assert re.search(r"rule \w+: a job needs \d+ MB, \d+ min and fits no partition of "
                     r"partitions.yaml \(tiny \(2 CPUs, 500 MB, 60 min, 0 GPUs\)\)", out), \
        out[-3000:]


def test_only_light_or_networked_rules_run_on_the_submit_host(paper_plan):
    local = {u["rule"] for u in paper_plan["units"] if u["local"]}
    assert local == local_rules(PAPER)


def test_short_gpu_jobs_share_allocations(paper_plan):
    """Embedding and reranking jobs are grouped (10 and 6 per group job): one GPU, run one
    after another (the largest member's memory, the sum of their runtimes); the LLM stages,
    hours each, stay single jobs."""
    groups = [u for u in paper_plan["units"] if gpu_group(u)]
    assert {u["group"].split("-")[0] for u in groups} == {"embed", "rerank"}
    for g in groups:
        members = g["jobs"]
        rules = {j["rule"] for j in members}
        embed = g["group"].startswith("embed-")
        assert rules <= ({"embed_chunks", "embed_queries"} if embed else {"rerank"})
        assert len(members) <= (10 if embed else 6)
        assert g["resources"]["gpu"] == 1 and g["threads"] == 8
        assert g["resources"]["mem_mb"] == max(j["resources"]["mem_mb"] for j in members)
        assert g["resources"]["runtime"] == sum(j["resources"]["runtime"] for j in members)
    singles = {u["rule"] for u in paper_plan["units"] if not u["group"]}
    assert {"induce_structure", "contextualize", "generate_queries"} <= singles


def test_stages_without_a_gpu_book_none(tmp_path):
    """TextTiling induction, replayed A1 contexts and questions from an OpenAI-style server
    need no GPU: CPU partition, no --gpus, CPU-sized memory."""
    cfg = yaml.safe_load(PAPER.read_text())
    recorded = tmp_path / "contexts.jsonl"
    recorded.write_text("")
    cfg["induction"] = {"inducer": "texttiling"}
    cfg["contexts"] = {"llm": {"mode": "replay", "cache": str(recorded)}}
    cfg["corpora"]["wikipedia_fa"]["queries"]["llm"] = {"backend": "openai"}
    path = tmp_path / "nogpu.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    plan = slurm_plan(tmp_path, "--configfile", str(path))
    for rule, threads in (("induce_structure", 8), ("contextualize", 2),
                          ("generate_queries", 2)):
        # TextTiling induction runs in its corpus's CPU group job (structablate.slurm)
        unit = next(u for u in plan["units"] if rule in {j["rule"] for j in jobs_of(
            {"units": [u]})})
        job = next(j for j in jobs_of({"units": [unit]}) if j["rule"] == rule)
        call = sbatch(unit)
        assert job["resources"].get("gpu", 0) == 0 and job["threads"] == threads, job
        assert job["resources"]["mem_mb"] <= 16000  # CPU-sized, from the corpus's size
        assert "--gpus" not in call and " -p cpu" in call
        assert f"--cpus-per-task={unit['threads']}" in call, call
    embed = [u for u in plan["units"] if (u["group"] or "").startswith("embed-")]
    assert embed and all(sbatch(u).endswith(" --gpus=1") for u in embed)


def test_dry_run_shows_every_jobs_resources_and_full_gpu_threads():
    """`snakemake -n` lists each job's threads and resources; a GPU job gets its 8 threads
    without --workflow-profile none (the workflow profile sets no cores)."""
    assert "cores" not in yaml.safe_load(DEFAULT_PROFILE.read_text())
    proc = snakemake("--profile", "profiles/slurm", "-n", "--configfile", str(PAPER))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == PAPER_JOBS
    assert "minilm" not in out  # a --configfile runs alone
    blocks = re.split(r"\n(?=\s*rule \w+:\n)", out)
    jobs = [b for b in blocks if re.match(r"\s*rule \w+:\n", b)]
    assert len(jobs) == sum(PAPER_JOBS.values())
    for block in jobs:
        rule = re.match(r"\s*rule (\w+):", block).group(1)
        if rule == "all":
            continue
        resources = re.search(r"^\s*resources: (.*)$", block, re.M)
        assert resources and "mem_mb=" in resources.group(1), block
        assert "runtime=" in resources.group(1), block
        if rule in GPU_RULES:
            assert re.search(r"^\s*threads: 8$", block, re.M), block
            assert "gpu=1" in resources.group(1), block


def test_config_overrides_keep_the_configuration(tmp_path):
    """`--config key=value` without --configfile overrides the bundled config.yaml instead
    of replacing it (it used to fail with "'corpora' is a required property"), and with
    --configfile it overrides that file."""
    proc = snakemake("--profile", "profiles/slurm", "-n", "--config", "results=results-x")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "results-x/qasper/minilm/none/scores/G3.parquet" in out
    proc = snakemake("--profile", "profiles/slurm", "-n", "--configfile", str(PAPER),
                     "--config", "seed=1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == PAPER_JOBS


def test_profile_names_only_real_rules(profile):
    proc = snakemake("--list-rules", "--configfile", str(PAPER))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rules = set(proc.stdout.split())
    assert "groups" not in profile  # the rules name them (structablate.plan.groups)
    for rule in [*profile["set-resources"]]:
        assert rule in rules, f"profile names unknown rule {rule}"
    assert set(profile["set-resources"]) == GPU_RULES
    assert profile["slurm-partition-config"] == "partitions.yaml"
    assert profile["cores"] == 8 and "slurm_partition" not in profile["default-resources"]


# ------------------------------------------------------------------------------------- QOS


def profile_copy(tmp_path: Path, edit) -> Path:
    """profiles/slurm copied to ``tmp_path`` with its config.yaml text passed through
    ``edit``."""
    folder = tmp_path / "slurm-profile"
    folder.mkdir()
    (folder / "partitions.yaml").write_text(PARTITIONS.read_text())
    (folder / "config.yaml").write_text(edit(PROFILE.read_text()))
    return folder


def test_the_documented_qos_renders_through_the_plugin(tmp_path):
    """docs/cluster.md: uncomment the profile's `# qos:` line. Every submission of the paper
    grid passes the plugin's slurm_extra validation and asks for that QOS."""
    doc = (REPO / "docs" / "cluster.md").read_text()
    assert 'uncomment `# qos: "normal"`' in doc and '"--qos=NAME"' not in doc
    text = PROFILE.read_text()
    assert text.count('  # qos: "normal"\n') == 1
    folder = profile_copy(tmp_path, lambda t: t.replace('  # qos: "normal"\n',
                                                        '  qos: "normal"\n'))
    plan = slurm_plan(tmp_path, "--configfile", str(PAPER), profile=str(folder))
    submitted = [u for u in plan["units"] if not u["local"]]
    assert len(submitted) == 35  # 181 before the small CPU jobs were grouped
    for unit in submitted:
        assert " --qos=normal " in sbatch(unit) + " ", unit


def test_a_slurm_extra_the_plugin_refuses_is_refused_while_planning(tmp_path):
    """Before: `slurm_extra: "--qos=NAME"` (the old docs' recipe) planned cleanly and the
    plugin refused every submission. Now the dry run stops, naming the key."""
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra
    from snakemake_interface_common.exceptions import WorkflowError

    extra = '"--qos=normal"'
    with pytest.raises(WorkflowError):  # what the plugin does at each submission
        validate_slurm_extra(SimpleNamespace(resources=_Resources(slurm_extra=extra[1:-1])))
    folder = profile_copy(tmp_path, lambda t: t.replace(
        '  slurm_extra: "--open-mode=append"\n', "").replace(
        '  # qos: "normal"\n', f"  slurm_extra: '{extra}'\n"))
    proc = snakemake("--profile", str(folder), "-n", "--configfile", str(PAPER))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"default-resources: slurm_extra: {extra} sets the quality of service" in out, \
        out[-3000:]
    assert "use the `qos` resource" in out and "Job stats" not in out


# ---------------------------------------------------------------------- models, before jobs


def test_dry_run_lists_every_missing_model_once_and_shows_the_grid(tmp_path, monkeypatch):
    """A clone without any model: `snakemake --profile profiles/slurm -n` shows the 236-job
    grid and one warning block naming every model and the dataset, with the prefetch
    command, repeated after the job list; a real run stops before its first job with the
    same block (a local run here: the refusal comes before any executor submits)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    proc = snakemake("--profile", "profiles/slurm", "-n", "--configfile", str(PAPER))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == PAPER_JOBS
    # the block above the job list, and again at the very end, after thousands of lines of it
    assert out.count("model(s) or dataset(s) of this run cannot be loaded") == 2
    assert proc.stderr.rstrip().endswith("(add the same --config overrides as to snakemake)")
    block = out.split("cannot be loaded by an offline job:\n")[1].split("\nFetch them")[0]
    named = [line.removeprefix("  - ").split(": ")[0] for line in block.splitlines()]
    assert named == ["embedders.bge_small.model", "embedders.bge_large.model",
                     "rerankers.bge_reranker.model", "chunking.tokenizer",
                     "corpora.qasper.sources[0]; corpora.qasper.sources[1]; "
                     "corpora.qasper.sources[2]",
                     "induction.llm over llm (vllm); contexts.llm over llm (vllm); "
                     "corpora.wikipedia_fa.queries.llm over llm (vllm)"], block
    assert "'google/gemma-4-26b-a4b-it' is neither" in block
    assert f"python -m structablate.prefetch --configfile {PAPER}" in out
    results = tmp_path / "results"
    proc = snakemake("--cores", "1", "--configfile", str(PAPER), "--config",
                     f"results={results}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "'google/gemma-4-26b-a4b-it' is neither" in out and "Job stats" in out
    assert not results.exists() and "Select jobs to execute" not in out


# ----------------------------------------------------------- groups follow the DAG and device


def _device(cfg: dict, job: dict) -> str | None:
    """The torch device of the model a job runs (its embedder's or reranker's), else None."""
    w = job["wildcards"]
    if job["rule"] == "rerank":
        return cfg["rerankers"][w["reranker"]].get("device", "cpu")
    if job["rule"] in ("embed_chunks", "embed_queries"):
        return cfg["embedders"][w["embedder"]].get("device", "cpu")
    return None


def check_groups_and_devices(plan: dict, cfg: dict) -> None:
    """No group job waits for a corpus build or LLM stage that one of its members does not
    need (every member's upstream long stages are the group's); groups hold one corpus and
    keep A1 apart; a job whose model runs on a CPU device books no GPU and is in no group."""
    for unit in plan["units"]:
        members = unit["jobs"] if unit["group"] else [unit]
        if gpu_group(unit):
            upstream = {tuple(j["upstream"]) for j in members}
            assert len(upstream) == 1, (unit["group"], upstream)
            assert len({j["wildcards"]["corpus"] for j in members}) == 1, unit["group"]
            a1 = {(j["wildcards"].get("chunkset") or j["wildcards"].get("condition")) == "A1"
                  for j in members}
            assert len(a1) == 1, unit["group"]
        for job in members:
            device = _device(cfg, job)
            if device is not None and not device.startswith("cuda"):
                assert job["resources"].get("gpu", 0) == 0, job
                # no GPU group: alone, or in its cell's CPU group (structablate.plan.groups)
                assert not gpu_group(unit), (unit["group"], job["rule"], job["wildcards"])
                assert "--gpus" not in sbatch(unit)


def test_groups_follow_the_dag(paper_plan):
    """Before: 4 embedding and 4 reranking group jobs, each waiting for the Wikipedia crawl,
    both inductions and mostly a 12 h contextualize. Now a group per corpus and upstream
    stage. Counted by hand from config/paper.yaml (size_match_structure: induced, so A0 and
    the A family wait for induction): per corpus, embedding 2 embedders x {G2, G3} (+ QASPER's
    2 question sets) = 1 group, x {A0, A2, A3-d1, A3-d2, A3, P} = 12 jobs in 2, x A1 = 1, and
    Wikipedia's generated questions 1; reranking {G2, G3, G4} = 1, 7 induced = 2, A1 = 1."""
    cfg = yaml.safe_load(PAPER.read_text())
    check_groups_and_devices(paper_plan, cfg)
    counts: dict[str, int] = {}
    for u in paper_plan["units"]:
        if gpu_group(u):
            counts[u["group"]] = counts.get(u["group"], 0) + 1
    assert counts == {
        "embed-qasper-base": 1, "embed-qasper-induction": 2,
        "embed-qasper-induction+contexts": 1, "embed-wikipedia_fa-base": 1,
        "embed-wikipedia_fa-queries": 1, "embed-wikipedia_fa-induction": 2,
        "embed-wikipedia_fa-induction+contexts": 1, "rerank-qasper-base": 1,
        "rerank-qasper-induction": 2, "rerank-qasper-induction+contexts": 1,
        "rerank-wikipedia_fa-queries": 1, "rerank-wikipedia_fa-induction+queries": 2,
        "rerank-wikipedia_fa-induction+contexts+queries": 1}
    base = next(u for u in paper_plan["units"] if u["group"] == "embed-qasper-base")
    assert base["jobs"][0]["upstream"] == ["build_qasper(corpus=qasper)"]  # during the LLM stages


def test_cpu_devices_book_no_gpu_and_join_no_group(tmp_path):
    """The paper grid with bge-small on `device: cpu`: its jobs book no GPU and join no GPU
    group (before: CPU embedders made 80 h group jobs), while bge-large's keep their GPU
    groups. The reranker on `device: cpu` as well: reranking the full QASPER on 8 CPUs needs
    days per condition (before: it booked 8 h) and fits no partition of the shipped
    partitions.yaml (MaxTime 48 h): the plan refuses it, naming the rule."""
    cfg = yaml.safe_load(PAPER.read_text())
    cfg["embedders"]["bge_small"]["device"] = "cpu"
    path = tmp_path / "cpu.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    plan = slurm_plan(tmp_path, "--configfile", str(path))
    check_groups_and_devices(plan, cfg)
    assert any((u["group"] or "").startswith("embed-") for u in plan["units"])
    assert any(j["rule"] == "embed_chunks" for u in plan["units"] if (u["group"] or "")
               .startswith("cell-") for j in u["jobs"])
    cfg["rerankers"]["bge_reranker"]["device"] = "cpu"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "slurm_plan.py"), str(tmp_path / "r.json"),
         "--profile", "profiles/slurm", "--configfile", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=900, env=offline_env())
    assert proc.returncode != 0 and not (tmp_path / "r.json").exists()
    assert "rule rerank: a job needs" in proc.stdout + proc.stderr


def test_preempted_jobs_requeue_without_doubling(profile, paper_plan):
    """sbatch --requeue: SLURM requeues a preempted job or one on a failed node as it is; the
    plugin waits for it instead of failing it into a retry with twice the memory and runtime."""
    assert profile["slurm-requeue"] is True and profile["retries"] == 1
    unit = next(u for u in paper_plan["units"] if not u["local"])
    assert " --requeue" in sbatch(unit)


# ------------------------------------------------------------------- the container image


def test_every_job_runs_in_the_configured_image_under_apptainer(tmp_path):
    """`container:` (docs/cluster.md, "An Apptainer image"): planned for SLURM with
    --sdm apptainer, every job of the grid runs in the image, with the profile's --nv so a GPU
    job sees the node's driver; without --sdm apptainer the same config runs no job in it,
    and says so. No apptainer is installed here: a stand-in on PATH answers the version
    check Snakemake makes before planning (a local image is not opened while planning)."""
    image = tmp_path / "structablate-gpu.sif"
    image.write_bytes(b"SIF")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apptainer").write_text('#!/bin/sh\necho "apptainer version 1.3.6"\n')
    (bin_dir / "apptainer").chmod(0o755)
    env = {**offline_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    results = f"results={tmp_path / 'results'}"
    plan = slurm_plan(tmp_path, "--sdm", "apptainer", "--config", f"container={image}",
                      results, env=env)
    jobs = jobs_of(plan)
    assert jobs
    assert {j["container"] for j in jobs} == {str(image)}
    assert any(j["resources"].get("gpu") == 0 for j in jobs)  # CPU jobs too: one runtime
    assert "APPTAINER" in " ".join(plan["deployment"]).upper()
    assert "--nv" in plan["apptainer_args"].split()
    (tmp_path / "plain").mkdir()
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "slurm_plan.py"), str(tmp_path / "plain.json"),
         "--profile", "profiles/slurm", "--config", f"container={image}", results],
        cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "was not started with --software-deployment-method apptainer" in proc.stderr
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert "APPTAINER" not in " ".join(plain["deployment"]).upper()


# ------------------------------------------------------- the dry run reads partitions.yaml


def _profile_with(tmp_path: Path, partitions: str) -> Path:
    """profiles/slurm copied with its partitions.yaml replaced by ``partitions``."""
    profile = tmp_path / "slurm"
    shutil.copytree(REPO / "profiles" / "slurm", profile, dirs_exist_ok=True)
    (profile / "partitions.yaml").write_text(partitions)
    return profile


def test_the_dry_run_refuses_a_broken_partitions_yaml(tmp_path):
    """Issue 52, item 4: `snakemake --profile … -n` printed a clean plan for a partitions.yaml
    with memory `lots`, -1 threads, a misspelt key, bad YAML or no `partitions:` mapping; now
    it stops before listing a job, naming the file and the key path."""
    for text, wants in (
            ("partitions:\n  cpu: {max_threads: -1, max_mem_mb: lots, max_runtim: 1440}\n",
             ["partitions.cpu.max_threads: -1 is below 1",
              "partitions.cpu.max_mem_mb: 'lots' is not a number; give a whole number of "
              "megabytes",
              "partitions.cpu.max_runtim: not a partition limit; did you mean `max_runtime`?"]),
            ("partitions:\n  cpu:\n    max_threads: 2\n   max_mem_mb: 1\n",
             [":4:", "not valid YAML"]),
            ("cpu: {max_threads: 2}\n", ["no `partitions:` mapping"])):
        profile = _profile_with(tmp_path, text)
        proc = snakemake("--profile", str(profile), "-n", "--config",
                         f"results={tmp_path / 'r'}")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out[-3000:]
        for want in wants:
            assert f"{profile / 'partitions.yaml'}" in out and want in out, (want, out[-3000:])
        assert "rule build_qasper:" not in out  # refused before any job is listed


def test_the_dry_run_shows_threads_and_resources_fitted_to_the_nodes(tmp_path):
    """Issue 53, item 4: on 2-CPU nodes the dry run printed `threads: 8` for embedding and
    induction jobs that were then submitted with 2; it now prints the fitted threads, and a
    job that fits no partition is refused in the dry run as in the real plan."""
    profile = _profile_with(tmp_path, "partitions:\n  cpu: {max_threads: 2, max_mem_mb: "
                                      "22000, max_runtime: 1440}\n")
    proc = snakemake("--profile", str(profile), "-n", "--config", f"results={tmp_path / 'r'}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    threads = re.findall(r"^\s*threads: (\d+)$", out, re.M)
    assert threads and max(map(int, threads)) == 2, sorted(set(threads))
    for mem in re.findall(r"mem_mb=(\d+)", out):
        assert int(mem) <= 22000
    profile = _profile_with(tmp_path, "partitions:\n  tiny: {max_threads: 2, max_mem_mb: 500, "
                                      "max_runtime: 60}\n")
    proc = snakemake("--profile", str(profile), "-n", "--config", f"results={tmp_path / 'r'}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(r"rule \w+: a job needs \d+ MB, \d+ min and fits no partition of "
                     r"partitions.yaml \(tiny \(2 CPUs, 500 MB, 60 min, 0 GPUs\)\)", out), \
        out[-3000:]


def test_the_documented_gpu_hours_are_the_plans(paper_plan):
    """Issue 53, item 5: docs/cluster.md said 48.2 H200-hours (reranking 5.5) where the plan
    booked 59.2 (16.5). The table it prints now is structablate.slurm's table of the paper
    grid's plan, line for line, so it cannot drift from the plan again."""
    from structablate.slurm import gpu_hours_table, main, submissions_table

    doc = (REPO / "docs" / "cluster.md").read_text()
    table = gpu_hours_table(paper_plan["units"])
    assert "\n".join(table) in doc, "\n".join(table)
    assert "python -m structablate.slurm plan.json --submissions" in doc
    submitted = [u for u in paper_plan["units"] if not u["local"]]
    assert len(submissions_table(paper_plan["units"])) == 2 + len(submitted)
    # every submission's row: the group (or the job) and the CPUs, memory, runtime and GPUs
    for unit, row in zip(submitted, submissions_table(paper_plan["units"])[2:], strict=True):
        r = unit["resources"]
        assert row.endswith(f"| {unit['threads']} | {r['mem_mb']} | {r['runtime']} | "
                            f"{int(r.get('gpu', 0) or 0)} |"), row
        assert (f"group {unit['group']} " if unit["group"] else unit["rule"]) in row
    assert main([]) == 2
