"""The cluster path where SLURM has accounting, as most sites do: the single-node cluster of
tests/slurm_cluster.py with a slurmdbd on a MariaDB of its own (all on loopback), so the run's
status polls go to ``sacct``, which prints a cancelled job as ``CANCELLED by 0``. A job of a
run through ``snakemake --profile profiles/slurm`` is requeued by ``scontrol requeue`` (SLURM
reruns it, no Snakemake retry) and then cancelled by root's ``scancel`` (an admin cancel:
Snakemake retries it); the run must end, with its output, within a bounded time (the executor
plugin alone waited on ``CANCELLED by 0`` forever, issue 53). tests/test_slurm_cluster.py is
the same without accounting (``squeue``)."""

import os
import re
import subprocess
import sys
import threading
import time

import pytest
import slurm_cluster
from conftest import REPO
from hermetic import pythonpath
from workflow_util import write_project

pytestmark = pytest.mark.slow

TARGET = "results/qasper/funnel.json"  # build_qasper's output: one job
COMMENT = "rule_build_qasper_"
BOUND_S = 420  # the whole run, requeue and retry included


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from slurm_cluster.running(tmp_path_factory, accounting=True)


def test_sacct_answers_and_accounting_listens_on_loopback_only(cluster):
    cluster.run("sacct", "-X", "-n")  # fails (exit 1) without a slurmdbd
    found = slurm_cluster.listening()
    assert {"slurmctld", "slurmd", "slurmdbd", "mariadbd"} <= {n for n, *_ in found}, found
    assert all(slurm_cluster.is_loopback(addr) for _, _, addr, _ in found), found


class Faults(threading.Thread):
    """Once the job runs: requeue it (and let it start again at once); once it runs again:
    cancel it (scancel as root)."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.done = cluster, threading.Event()
        self.requeued: str | None = None
        self.cancelled: str | None = None

    def run(self):
        while not self.done.is_set() and self.cancelled is None:
            try:
                jobs = self.cluster.jobs()
            except (RuntimeError, subprocess.SubprocessError):
                jobs = []
            for j in jobs:
                if j["state"] != "RUNNING" or not j["comment"].startswith(COMMENT):
                    continue
                time.sleep(2)
                if self.requeued is None:
                    self.cluster.run("scontrol", "requeue", j["id"])
                    self.requeued = j["id"]
                    # SLURM holds a requeued job back (BeginTime, about 2 minutes): a
                    # test-speed release, as the module's short first status interval
                    time.sleep(3)
                    self.cluster.run("scontrol", "update", f"jobid={j['id']}",
                                     "StartTime=now", check=False)
                elif j["id"] == self.requeued:
                    self.cluster.run("scancel", j["id"])
                    self.cancelled = j["id"]
                break
            time.sleep(0.3)


def test_with_accounting_a_requeued_job_reruns_and_a_cancelled_one_is_retried(cluster,
                                                                              tmp_path):
    root = tmp_path / "p"
    write_project(root, ["A0"], n_papers=2)
    profile = tmp_path / "profile"
    slurm_cluster.site_profile(profile, cluster)
    # the other site-specific edit of docs/cluster.md, section 2: the account
    conf = profile / "config.yaml"
    conf.write_text(conf.read_text().replace('slurm_account: "my-account"',
                                             f'slurm_account: "{cluster.account}"'))
    assert cluster.account in conf.read_text()
    env = {**cluster.env, "PYTHONPATH": pythonpath(REPO / "src")}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(root), "--configfile", str(root / "config.yaml"),
           "--profile", str(profile), "--slurm-init-seconds-before-status-checks", "3",
           TARGET]
    faults = Faults(cluster)
    faults.start()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out = proc.communicate(timeout=BOUND_S)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out = proc.communicate()[0]
        pytest.fail(f"the run did not end within {BOUND_S} s (requeued {faults.requeued}, "
                    f"cancelled {faults.cancelled}):\n{out[-4000:]}")
    finally:
        faults.done.set()
        faults.join(5)
    wall = time.monotonic() - started
    assert proc.returncode == 0, out[-6000:] + "\n" + cluster.logs()
    assert "SLURM: job status from sacct" in out, out[-3000:]
    assert faults.requeued and faults.cancelled == faults.requeued, (faults.requeued,
                                                                       faults.cancelled)
    job = faults.cancelled
    # what sacct says of it, and what the plugin alone did not recognise
    state = cluster.run("sacct", "-X", "-n", "-P", "-o", "State", "-j", job).strip()
    assert re.fullmatch(r"CANCELLED by \d+", state), state
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in out, out[-3000:]
    assert out.count(f"SLURM-job '{job}' failed") == 1  # the requeue was no failure
    assert "Trying to restart job" in out
    assert (root / TARGET).exists()
    print(f"run with a requeue and a cancel: {wall:.0f} s")
