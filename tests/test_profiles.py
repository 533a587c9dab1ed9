"""The SLURM profile: the paper plan dry-runs through the executor plugin without a cluster,
every GPU rule asks for an H200, and the plugin renders the sbatch flags we mean."""

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO
from test_paper_config import EXPECTED_JOBS, PAPER, job_counts, snakemake

PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
GPU_KEYS = {"gpu", "gpu_model", "cpus_per_gpu", "mem_mb", "runtime", "slurm_partition"}


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load(PROFILE.read_text())


def gpu_rules() -> set[str]:
    """Rules that declare `resources: gpu=...` in rules/*.smk."""
    out = set()
    for smk in (REPO / "rules").glob("*.smk"):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0].strip()
            if re.search(r"^\s+gpu\s*=", block, re.M):
                out.add(name)
    return out


@pytest.mark.parametrize("extra", [[], ["--workflow-profile", "none"]])
def test_slurm_profile_dry_runs_the_paper_config(extra):
    # a dry run needs no sbatch/sinfo: the plugin is loaded but submits nothing
    proc = snakemake("--profile", "profiles/slurm", *extra, "-n", "--configfile", str(PAPER))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert job_counts(out) == EXPECTED_JOBS
    assert "minilm" not in out  # a --configfile runs alone: config.yaml's embedder stays out
    if shutil.which("sbatch") is None:
        assert "sbatch" not in out


def test_every_gpu_rule_asks_for_one_h200(profile):
    rules = gpu_rules()
    assert {"embed_chunks", "embed_queries", "rerank"} <= rules
    for rule in rules:
        res = profile["set-resources"].get(rule)
        assert res is not None, f"{rule} declares a GPU but the profile gives it none"
        assert GPU_KEYS <= set(res), rule
        assert res["gpu"] == 1 and res["gpu_model"] == "h200"
        assert profile["set-threads"][rule] == res["cpus_per_gpu"]


def test_profile_names_only_real_rules(profile):
    proc = snakemake("--list-rules", "--configfile", str(PAPER), "--replace-workflow-config")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rules = set(proc.stdout.split())
    for rule in [*profile["set-resources"], *profile["set-threads"]]:
        assert rule in rules, f"profile sets resources for unknown rule {rule}"


class _Resources(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def _sbatch(profile, rule: str, threads: int) -> str:
    """The plugin's own sbatch line for a job of ``rule`` under the profile's resources
    (default-resources overlaid by set-resources, as Snakemake merges them)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    res = _Resources({**profile["default-resources"], **profile["set-resources"].get(rule, {})})
    job = SimpleNamespace(resources=res, threads=threads)
    params = {"run_uuid": "u", "slurm_logfile": Path("x/%j.log"), "comment_str": f"rule_{rule}",
              "account": f" -A {res['slurm_account']}",
              "partition": f" -p {res['slurm_partition']}", "workdir": "/w"}
    return get_submit_command(job, params) + set_gres_string(job)


def test_plugin_renders_h200_request_for_embedding(profile):
    call = _sbatch(profile, "embed_chunks", profile["set-threads"]["embed_chunks"])
    assert "--gpus=h200:1" in call
    assert "--cpus-per-gpu=8" in call and "--cpus-per-task" not in call
    assert "--mem 64000" in call and "-t 240" in call and "-p gpu" in call
    cpu = _sbatch(profile, "score", 1)
    assert "--gpus" not in cpu and "--cpus-per-task=1" in cpu and "-p cpu" in cpu
    assert "--mem 8000" in cpu
