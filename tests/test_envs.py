"""The conda environments of `--software-deployment-method conda`: their pins are
pyproject.toml's, the GPU environment carries the `gpu` extra (vllm with the torch build it
pins) and refuses a CPU-only torch after deployment, and a job whose environment lacks the
package imports it from the workflow it runs (the checkout's src/), not from a stale copy."""

import ast
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from conftest import REPO
from workflow_util import copy_workflow, write_project

ENVS = REPO / "envs"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
NOT_IN_ENVS = {"snakemake"}  # runs outside the job environments


def pins(requirements) -> dict[str, str]:
    """name (normalised) -> the requirement's version spec, for `name==version` lines."""
    out = {}
    for req in requirements:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(==\S+)", req.strip())
        assert m, f"not an exact pin: {req!r}"
        out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def env_pip(name: str) -> tuple[dict, list[str], list[str]]:
    """(the env file, its pip requirements, its pip option lines)."""
    env = yaml.safe_load((ENVS / f"{name}.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return env, [p for p in pip if not p.startswith("-")], [p for p in pip if p.startswith("-")]


BASE = {k: v for k, v in pins(PYPROJECT["project"]["dependencies"]).items()
        if k not in NOT_IN_ENVS}
GPU_EXTRA = pins(PYPROJECT["project"]["optional-dependencies"]["gpu"])


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_env_pins_are_pyprojects(name):
    env, reqs, options = env_pip(name)
    assert "python=3.11" in env["dependencies"]  # requires-python >= 3.11; vllm 0.30: < 3.15
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    have = pins(reqs)
    expected = dict(BASE, **(GPU_EXTRA if name == "gpu" else {}))
    assert have == expected
    assert have["mdit-py-plugins"] == "==0.7.0"
    # nothing installed from a path: Snakemake copies the file into .snakemake/conda/ first
    assert not [o for o in options if o.startswith(("-e", "--editable")) or "/" in o.split()[0]]
    assert all("/" not in r and not r.startswith(".") for r in reqs)


def test_gpu_extra_is_vllm_with_the_torch_it_pins():
    assert set(GPU_EXTRA) == {"vllm", "torch"}
    # vllm 0.30.0 pins torch==2.13.0 (its wheel metadata); the base pin must be the same
    assert GPU_EXTRA["torch"] == BASE["torch"] == "==2.13.0"
    _, reqs, _ = env_pip("cpu")
    assert "vllm" not in pins(reqs)


def test_cpu_env_takes_torch_from_the_cpu_index():
    _, _, options = env_pip("cpu")
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    _, _, gpu_options = env_pip("gpu")
    assert gpu_options == []  # PyPI's Linux wheel: the CUDA build


def _post_deploy(tmp_path, fake_cuda: str | None):
    """Run envs/gpu.post-deploy.sh as Snakemake does (`sh file` with the environment's python
    first on PATH); ``fake_cuda`` puts a stand-in torch module reporting that CUDA version
    ahead of the real (CPU-only) one of this machine."""
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    if fake_cuda is not None:
        fake = tmp_path / "fake" / "torch"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text(
            f"__version__ = '2.13.0'\nclass version:\n    cuda = {fake_cuda!r}\n")
        env["PYTHONPATH"] = str(tmp_path / "fake")
    return subprocess.run(["sh", str(ENVS / "gpu.post-deploy.sh")], capture_output=True,
                          text=True, env=env, timeout=300)


def test_gpu_post_deploy_refuses_a_cpu_only_torch(tmp_path):
    # Snakemake runs <env file stem>.post-deploy.sh next to the env file after creating it
    assert sorted(p.name for p in ENVS.glob("*.post-deploy.sh")) == ["gpu.post-deploy.sh"]
    proc = _post_deploy(tmp_path, None)  # this machine's torch is the +cpu build
    import torch

    if torch.version.cuda:
        pytest.skip("this machine's torch is a CUDA build")
    assert proc.returncode != 0
    assert "CPU-only build" in proc.stderr and "envs/gpu.yaml" in proc.stderr
    ok = _post_deploy(tmp_path, "13.0")
    assert ok.returncode == 0, ok.stderr
    assert "CUDA 13.0" in ok.stdout


@pytest.mark.slow
def test_a_job_imports_the_package_of_the_workflow_it_runs(tmp_path):
    """What a conda job sees: Snakemake hands every script the search path of the process that
    runs it, which holds `<workflow>/src` (rules/common.smk puts it there). An interpreter
    without the package installed (python -S: no site-packages, like a fresh conda env)
    resolves `import structablate` to that folder of the workflow copy being run."""
    wf = tmp_path / "wf"
    copy_workflow(wf)
    proj = tmp_path / "proj"
    write_project(proj, ["G2"], n_papers=2)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(wf / "Snakefile"),
         "--directory", str(proj), "--configfile", str(proj / "config.yaml"), "--cores", "1",
         "--skip-script-cleanup", "results/qasper/funnel.json"],
        cwd=proj, capture_output=True, text=True, timeout=900, env=env)
    scripts = sorted((proj / ".snakemake" / "scripts").glob("*.build_qasper.py"))
    assert scripts, proc.stdout + proc.stderr
    m = re.search(r"sys\.path\.extend\((\[.*?\])\);", scripts[0].read_text())
    searchpath = ast.literal_eval(m.group(1))
    assert str(wf / "src") in searchpath
    probe = subprocess.run(
        [sys.executable, "-S", "-E", "-c",
         f"import sys; sys.path.extend({searchpath!r}); import structablate.plan, "
         "structablate; print(structablate.__file__)"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == str(wf / "src" / "structablate" / "__init__.py")


def test_slurm_extra_is_the_tested_plugin():
    extras = PYPROJECT["project"]["optional-dependencies"]
    plugin = pins(extras["slurm"])
    assert set(plugin) == {"snakemake-executor-plugin-slurm"}
    dev = {k: v for k, v in pins(r for r in extras["dev"]).items() if k in plugin}
    assert dev == plugin  # tests/test_profiles.py renders sbatch with the dev extra's plugin
