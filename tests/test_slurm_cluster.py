"""The cluster path on a real SLURM controller: a single-node cluster on loopback
(tests/slurm_cluster.py: munged, slurmctld and slurmd of Debian's slurm-wlm, no accounting
daemon), a small configuration submitted through ``snakemake --profile profiles/slurm`` with only
``partitions.yaml`` written for the node, and its outputs compared byte for byte with a local
run. During the SLURM run one job is requeued by ``scontrol requeue`` (SLURM reruns it: no
Snakemake retry, the same outputs, both attempts in its log) and another is cancelled by
``scancel`` (a failure: Snakemake retries it); then the controller Snakemake is killed with
SIGKILL while a job runs and restarted as docs/cluster.md says, keeping what had finished.
The cluster listens on loopback only (tested). Skips, saying why, where the cluster cannot
start (not root, SLURM not installed); where ``CI`` is set and SLURM is installed, a cluster
that does not start is a failure (slurm_cluster.start_or_skip)."""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import slurm_cluster
from conftest import REPO
from hermetic import pythonpath
from workflow_util import job_counts, snakemake, write_project

pytestmark = pytest.mark.slow

CONDITIONS = ["A0", "G2"]  # induced structure (TextTiling, 8 threads wanted) and gold chunks
N_PAPERS = 2
# the group jobs of the small CPU rules (structablate.plan.groups): the comment of a
# group job is rule_<group id>
REQUEUED = "rule_report-"  # the cell and corpus reports (the cheapest group to rerun)
CANCELLED = "rule_build_qasper_"  # the corpus build, retried


@pytest.mark.parametrize("namespace", [None, True], ids=["host-name", "uts-namespace"])
def test_the_cluster_listens_on_loopback_only_and_is_stopped_afterwards(tmp_path, namespace):
    """Every socket the cluster's processes listen on (slurmctld, slurmd, munged, and while a
    job step runs slurmstepd and its srun) is on loopback; afterwards no daemon and no
    /etc/slurm/slurm.conf is left (first in the module: the module's cluster holds that file
    while it runs). Once with the host name as it is (None: a UTS namespace only where it does
    not resolve to loopback) and once in a UTS namespace of the daemons' own."""
    c = slurm_cluster.start_or_skip(tmp_path / "c", namespace=namespace)
    try:
        pids = dict(c.pids)
        c.run("sbatch", "--parsable", f"--chdir={tmp_path}", "--wrap", "srun sleep 60")
        deadline = time.monotonic() + 60
        found = slurm_cluster.listening()
        while not any(name == "srun" for name, *_ in found) and time.monotonic() < deadline:
            time.sleep(0.5)
            found = slurm_cluster.listening()
        names = {name for name, *_ in found}
        assert {"slurmctld", "slurmd", "srun"} <= names, found
        assert all(slurm_cluster.is_loopback(addr) for _, _, addr, _ in found), found
        assert {port for name, _, _, port in found if name == "slurmctld"} == {c.ctld_port}
    finally:
        c.stop()
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not slurm_cluster.SYSTEM_CONF.exists()
    deadline = time.monotonic() + 30
    while slurm_cluster.listening() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not slurm_cluster.listening()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from slurm_cluster.running(tmp_path_factory)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The reference: the same project run locally (2 cores), once per module."""
    root = tmp_path_factory.mktemp("local") / "p"
    write_project(root, CONDITIONS, n_papers=N_PAPERS)
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root


class Faults(threading.Thread):
    """While the SLURM run goes on: requeue the first running job whose comment starts with
    REQUEUED and cancel the first running one whose comment starts with CANCELLED (each once,
    after it ran for a few seconds), recording their SLURM job ids."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.done = cluster, threading.Event()
        self.requeued: str | None = None
        self.cancelled: str | None = None

    def run(self):
        while not self.done.is_set() and (self.requeued is None or self.cancelled is None):
            try:
                jobs = self.cluster.jobs()
            except (RuntimeError, subprocess.SubprocessError):
                jobs = []
            for j in jobs:
                if j["state"] != "RUNNING":
                    continue
                if self.requeued is None and j["comment"].startswith(REQUEUED):
                    time.sleep(3)
                    self.cluster.run("scontrol", "requeue", j["id"])
                    self.requeued = j["id"]
                elif self.cancelled is None and j["comment"].startswith(CANCELLED):
                    time.sleep(1)
                    self.cluster.run("scancel", j["id"])
                    self.cancelled = j["id"]
            time.sleep(0.3)


KILL_AT = "rule_cell-"  # the controller is killed once a cell's group job runs


def _submit(cmd, root, env):
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory, cluster):
    """The small project submitted through the profile; while it runs, a job is requeued and
    another cancelled (Faults), and once a cell's group job runs the controller Snakemake is
    killed with SIGKILL. Then the documented restart (docs/cluster.md, "Restarting the
    controller"): wait until the run's jobs end, submit the same command again, and only if it
    says the directory is locked (no other Snakemake runs on it) unlock once and submit again."""
    base = tmp_path_factory.mktemp("slurmrun")
    root = base / "p"
    write_project(root, CONDITIONS, n_papers=N_PAPERS)
    profile = slurm_cluster.site_profile(base / "profile", cluster)
    env = {**cluster.env, "PYTHONPATH": pythonpath(REPO / "src")}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(root), "--configfile", str(root / "config.yaml"),
           "--profile", str(profile),
           # the first status poll after 3 s (default 40 s): a test-speed setting only
           "--slurm-init-seconds-before-status-checks", "3"]
    faults = Faults(cluster)
    faults.start()
    started = time.monotonic()
    first = _submit(cmd, root, env)
    kept: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 1500
        while first.poll() is None and time.monotonic() < deadline:
            running = [j for j in cluster.jobs() if j["state"] == "RUNNING"]
            if any(j["comment"].startswith(KILL_AT) for j in running):
                # what the finished corpus group wrote, to be kept by the restart
                kept = {str(p): p.stat().st_mtime_ns
                        for p in (root / "results" / "qasper").glob("*.parquet")}
                os.kill(first.pid, 9)
                break
            time.sleep(0.5)
        first_out = first.communicate(timeout=60)[0]
        # the recipe: look at the run's jobs and wait until they end
        while any(j["state"] in ("RUNNING", "PENDING", "CONFIGURING", "COMPLETING")
                  for j in cluster.jobs()):
            time.sleep(1)
        again = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                               timeout=1800)
        unlocked = "Directory cannot be locked" in again.stdout + again.stderr
        if unlocked:
            subprocess.run([*cmd, "--unlock"], cwd=root, env=env, capture_output=True,
                           text=True, timeout=300, check=True)
            again = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                                   timeout=1800)
    finally:
        faults.done.set()
        faults.join(5)
        if first.poll() is None:
            os.kill(first.pid, 9)
    wall = time.monotonic() - started
    out = first_out + again.stdout + again.stderr
    assert again.returncode == 0, out[-6000:] + "\n" + cluster.logs()
    return {"root": root, "out": out, "wall": wall, "faults": faults,
            "killed": first.returncode, "kept": kept, "unlocked": unlocked,
            "restart_out": again.stdout + again.stderr}


def outputs(root: Path) -> dict[str, bytes]:
    res = root / "results"
    return {str(p.relative_to(res)): p.read_bytes() for p in sorted(res.rglob("*"))
            if p.suffix in (".parquet", ".npy") and "cache" not in p.relative_to(res).parts}


def test_every_parquet_and_npy_output_is_byte_identical_to_a_local_run(local_run, slurm_run):
    local, remote = outputs(local_run), outputs(slurm_run["root"])
    assert local, "the local run wrote no Parquet output"
    assert sorted(local) == sorted(remote)
    differ = [k for k in local if local[k] != remote[k]]
    assert not differ, differ


def test_the_run_says_which_status_command_it_uses(slurm_run):
    # no accounting daemon: sacct fails, squeue works (MinJobAge 300 s)
    assert re.search(r"SLURM: job status from squeue \(MinJobAge 300 s\): sacct fails here",
                     slurm_run["out"]), slurm_run["out"][-3000:]


def test_no_job_asks_for_more_than_the_node_has(slurm_run, cluster):
    # every job of the run, as the controller still knows it (MinJobAge 300 s): CPUs, memory
    booked = cluster.run("squeue", "-h", "-t", "all", "-o", "%C|%m|%k").splitlines()
    assert booked
    for line in booked:
        cpus, mem, comment = line.split("|", 2)
        assert int(cpus) <= cluster.cpus, line
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([MGT]?)", mem)
        assert m, line
        mb = float(m.group(1)) * {"": 1, "M": 1, "G": 1024, "T": 1024 ** 2}[m.group(2)]
        assert mb <= cluster.mem_mb, line


def test_a_requeued_job_reruns_without_a_retry_and_keeps_both_logs(slurm_run):
    faults = slurm_run["faults"]
    assert faults.requeued, "no running report group job was seen to requeue"
    logs = list((slurm_run["root"] / ".snakemake" / "slurm_logs").rglob(
        f"{faults.requeued}.log"))
    assert len(logs) == 1
    text = logs[0].read_text(errors="replace")
    # --open-mode=append: the interrupted attempt's log is kept before the rerun's
    assert text.count("Building DAG of jobs") >= 2, text[-2000:]
    assert f"SLURM-job '{faults.requeued}' failed" not in slurm_run["out"]


def test_a_killed_controller_restarted_by_the_documented_recipe_keeps_what_finished(slurm_run):
    assert slurm_run["killed"] == -9, "the controller finished before a cell job ran"
    kept = slurm_run["kept"]
    assert kept, "the corpus tables were not written before the kill"
    assert {p: Path(p).stat().st_mtime_ns for p in kept} == kept  # not rebuilt
    restart = slurm_run["restart_out"]
    assert "build_qasper" not in job_counts(restart), restart[-3000:]


def test_a_cancelled_job_is_retried(slurm_run):
    faults = slurm_run["faults"]
    assert faults.cancelled, "no running build_qasper job was seen to cancel"
    out = slurm_run["out"]
    assert f"SLURM-job '{faults.cancelled}' failed, SLURM status is: 'CANCELLED'" in out
    assert re.search(r"Trying to restart job", out), out[-3000:]
