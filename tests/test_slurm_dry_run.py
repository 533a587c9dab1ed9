"""Issue 53, item 4: a dry run with the SLURM profile prints, after its job list, what each
sbatch submission would book on the configured partitions (structablate.slurm_dry_run): the
real ``snakemake -n --profile`` on a small project with a site profile (no cluster needed),
its table held row for row to what ``python -m structablate.slurm PLAN --submissions`` prints
for the plan of the same command line (tests/slurm_plan.py: a real run stopped before its
first submission); a local dry run prints no such table."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from hermetic import pythonpath
from workflow_util import snakemake, write_project

from structablate import slurm_dry_run
from structablate.slurm import SUBMISSIONS_HEADER

CONDITIONS = ["A0", "G2"]  # induced structure (TextTiling) and gold chunks
PARTITIONS = {"partitions": {
    # two CPU partitions: the plugin sends each job to the one that fits it best, short jobs
    # to `short`, a group job booking more than 60 minutes to `long`
    "short": {"max_runtime": 60, "max_mem_mb": 22000, "max_threads": 2},
    "long": {"max_runtime": 1440, "max_mem_mb": 22000, "max_threads": 2},
    "gpu": {"max_gpu": 4, "max_cpus_per_gpu": 16, "max_runtime": 2880,
            "max_mem_mb": 500000, "max_threads": 64, "available_gpu_models": ["h200"]}}}


def site_profile(dest: Path) -> Path:
    """profiles/slurm copied with the documented site edit (docs/cluster.md, section 2): a
    partitions.yaml of this site's partitions; no cluster is asked for anything."""
    shutil.copytree(REPO / "profiles" / "slurm", dest)
    (dest / "partitions.yaml").write_text(yaml.safe_dump(PARTITIONS))
    return dest


def run(root: Path, *args: str, plan: Path | None = None) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` in ``root`` with its config.yaml, as a user types it; with ``plan``,
    through tests/slurm_plan.py instead (the same command line, planned up to its first
    submission, its units written to ``plan``)."""
    head = ([str(REPO / "tests" / "slurm_plan.py"), str(plan)] if plan is not None
            else ["-m", "snakemake"])
    cmd = [sys.executable, *head, "--snakefile", str(REPO / "Snakefile"), "--directory",
           str(root), "--configfile", str(root / "config.yaml"), *args]
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=900, env=env)


def table_in(output: str) -> list[str]:
    """The rows of the submissions table in a command's output (header and rule included)."""
    lines = output.splitlines()
    start = lines.index(SUBMISSIONS_HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    return lines[start:end]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("drysub")
    root = base / "p"
    write_project(root, CONDITIONS, n_papers=2)
    return root, site_profile(base / "profile")


def test_the_dry_run_prints_what_each_submission_books(project, tmp_path):
    """Before: the dry run listed jobs only (a dry run forms no group jobs), and what each
    submission books took tests/slurm_plan.py and python -m structablate.slurm. Now the dry
    run prints one row per submission after its job list, each the row the module prints for
    the plan of the same command line: group (or job), members, partition, CPUs, memory,
    runtime, GPUs."""
    root, profile = project
    dry = run(root, "--profile", str(profile), "-n")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-4000:]
    assert slurm_dry_run.HEADING in out, out[-4000:]
    shown = table_in(out)
    # after the job list: the last job listed comes before the table
    assert out.rindex("rule ") < out.index(slurm_dry_run.HEADING)

    plan = tmp_path / "plan.json"
    planned = run(root, "--profile", str(profile), plan=plan)
    assert planned.returncode == 0 and plan.exists(), (planned.stdout + planned.stderr)[-4000:]
    printed = subprocess.run([sys.executable, "-m", "structablate.slurm", str(plan),
                              "--submissions"], capture_output=True, text=True, cwd=REPO,
                             env=dict(os.environ, PYTHONPATH=pythonpath(REPO / "src")))
    assert printed.returncode == 0, printed.stderr
    assert shown == table_in(printed.stdout)

    rows = [r.strip("| ").split(" | ") for r in shown[2:]]
    assert rows and len(rows) < out.count("\nrule ")  # fewer submissions than jobs
    groups = [r for r in rows if r[0].startswith("group ")]
    assert {g[0].split()[1].split("-")[0] for g in groups} == {"corpus", "cell", "report"}
    assert any(int(g[1]) > 1 for g in groups)
    # each submission on the partition that fits it best: nothing over 60 minutes on `short`
    assert {r[2] for r in rows} <= {"short", "long"}
    for name, _, partition, cpus, mem, runtime, gpus in rows:
        assert int(cpus) <= 2 and int(mem) <= 22000 and gpus == "0", name
        assert partition == ("long" if int(runtime) > 60 else "short"), (name, runtime)
    assert {r[2] for r in rows} == {"short", "long"}, rows


def test_a_local_dry_run_prints_no_submissions(project):
    root, _ = project
    dry = snakemake(root, "-n")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-4000:]
    assert "\nrule " in out  # it lists the jobs
    assert slurm_dry_run.HEADING not in out and SUBMISSIONS_HEADER not in out


def test_changed_snakemake_internals_leave_the_dry_run_as_it_was(monkeypatch, caplog):
    """The pinned Snakemake has every internal the table relies on; where one is missing the
    workflow warns, naming the way to print the table by hand, and installs nothing."""
    from snakemake.executors.dryrun import Executor
    from snakemake_executor_plugin_slurm import ExecutorSettings

    assert slurm_dry_run.internals_missing() == []
    assert slurm_dry_run.is_slurm(ExecutorSettings())
    assert not slurm_dry_run.is_slurm(None)  # the local executor has no settings
    before = Executor.__init__
    monkeypatch.setattr(slurm_dry_run, "internals_missing",
                        lambda: ["DAG.update_groups is missing"])
    with caplog.at_level(logging.WARNING):
        assert slurm_dry_run.install(object(), logging.getLogger("t"),
                                     ExecutorSettings()) is False
    assert "DAG.update_groups is missing" in caplog.text
    assert "--submissions" in caplog.text
    assert Executor.__init__ is before
    assert slurm_dry_run.install(object(), logging.getLogger("t"), None) is False


def test_the_documented_table_is_the_bundled_defaults(tmp_path):
    """docs/cluster.md, section 4, shows what the dry run of the bundled default prints with
    the shipped profile before anything ran: the heading and every row, as printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "-n", "--config",
         f"results={tmp_path / 'results'}"], cwd=REPO, capture_output=True, text=True,
        timeout=900, env=dict(os.environ, PYTHONPATH=pythonpath(REPO / "src")))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    heading = next(line for line in out.splitlines() if line.startswith(slurm_dry_run.HEADING))
    doc = (REPO / "docs" / "cluster.md").read_text()
    assert "\n".join([heading, *table_in(out)]) in doc, "\n".join([heading, *table_in(out)])
