"""A SLURM group job cancelled mid-way keeps what its finished members wrote (issue 53): on
the single-node cluster of tests/slurm_cluster.py, the small project is submitted through
``snakemake --profile profiles/slurm`` and its cell group job (embeddings, retrieval,
scores, statistics: structablate.slurm.cpu_group) is cancelled by ``scancel`` as soon as
one embedding member has finished (its outputs written and no longer marked incomplete).
Snakemake alone then removed every member's outputs and its retry ran them all again;
with structablate.group_keep the finished member's files stay as they were (same bytes,
same mtime), the retry runs only the other members, and a later run has nothing to do."""

import base64
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
from workflow_util import write_project

pytestmark = pytest.mark.slow

CELL = "rule_cell-qasper-minilm-none"  # the comment of the cell's group job
VECTORS = "results/qasper/minilm/embeddings"
TARGET = "results/report/qasper/minilm/none/condition_cis.parquet"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from slurm_cluster.running(tmp_path_factory)


def marker(root: Path, output: str) -> Path:
    """Snakemake's incomplete marker of ``output`` (relative to ``root``): its file
    persistence keeps one file per output under .snakemake/incomplete, named by the path in
    URL-safe base64 (short paths: one name)."""
    return root / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(output.encode()).decode()


def member_name(chunkset: str) -> str:
    """How structablate.group_keep names the embedding member that wrote ``chunkset``'s
    vectors: the query vectors come from rule embed_queries (no chunkset wildcard), every
    condition's chunk vectors from embed_chunks; whichever finishes first is the one kept."""
    if chunkset == "queries":
        return "embed_queries(corpus=qasper, embedder=minilm)"
    return f"embed_chunks(chunkset={chunkset}, corpus=qasper, embedder=minilm)"


def member_target(chunkset: str) -> str:
    """The same member as Snakemake's --target-jobs names it (rule:wildcard=value,...)."""
    if chunkset == "queries":
        return "embed_queries:corpus=qasper,embedder=minilm"
    return f"embed_chunks:corpus=qasper,embedder=minilm,chunkset={chunkset}"


class CancelAfterFirstMember(threading.Thread):
    """Cancel the cell group job once one of its embedding members has finished: both its
    outputs (vectors .npy and their stats .json) exist and neither is marked incomplete any more.
    Records the job id, the member (chunkset) and its files' bytes and mtimes."""

    def __init__(self, cluster, root: Path):
        super().__init__(daemon=True)
        self.cluster, self.root, self.done = cluster, root, threading.Event()
        self.job: str | None = None
        self.chunkset: str | None = None
        self.files: dict[str, tuple[bytes, int]] = {}

    def finished_member(self) -> str | None:
        for npy in sorted((self.root / VECTORS).glob("*.npy")):
            outs = [npy, npy.with_suffix(".json")]
            rel = [str(p.relative_to(self.root)) for p in outs]
            if all(p.exists() for p in outs) and not any(marker(self.root, r).exists()
                                                         for r in rel):
                return npy.stem
        return None

    def run(self):
        while not self.done.is_set() and self.job is None:
            try:
                jobs = self.cluster.jobs()
            except (RuntimeError, subprocess.SubprocessError):
                jobs = []
            running = [j for j in jobs if j["state"] == "RUNNING"
                       and j["comment"].startswith(CELL)]
            member = self.finished_member() if running else None
            if member is not None:
                self.cluster.run("scancel", running[0]["id"])
                self.job, self.chunkset = running[0]["id"], member
                for p in (self.root / VECTORS).glob(f"{member}*"):
                    self.files[str(p.relative_to(self.root))] = (p.read_bytes(),
                                                                 p.stat().st_mtime_ns)
            time.sleep(0.05)


@pytest.fixture(scope="module")
def cancelled_run(tmp_path_factory, cluster):
    base = tmp_path_factory.mktemp("groupkeep")
    root = base / "p"
    write_project(root, ["A0", "G2"], n_papers=2)
    profile = slurm_cluster.site_profile(base / "profile", cluster)
    env = {**cluster.env, "PYTHONPATH": pythonpath(REPO / "src")}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(root), "--configfile", str(root / "config.yaml"),
           "--profile", str(profile), "--slurm-init-seconds-before-status-checks", "3",
           TARGET]
    watcher = CancelAfterFirstMember(cluster, root)
    watcher.start()
    try:
        run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                             timeout=1500)
    finally:
        watcher.done.set()
        watcher.join(5)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:] + "\n" + cluster.logs()
    again = subprocess.run([*cmd, "--dry-run"], cwd=root, env=env, capture_output=True,
                           text=True, timeout=600)
    return {"root": root, "out": out, "watcher": watcher, "again": again.stdout + again.stderr,
            "jobs": cluster.jobs()}


def test_the_finished_member_keeps_its_files_and_the_retry_runs_only_the_others(cancelled_run):
    w, out, root = cancelled_run["watcher"], cancelled_run["out"], cancelled_run["root"]
    assert w.job, "the cell group job was not seen running with a finished embedding member"
    states = {j["id"]: j["state"] for j in cancelled_run["jobs"]}
    assert states[w.job] == "CANCELLED", cancelled_run["jobs"]
    assert "Trying to restart job" in out, out[-4000:]
    assert re.search(r"Group job cell-qasper-minilm-none \(\S+\) failed: keeping the "
                     r"outputs of its \d+ member\(s\) that had finished: [^\n]*"
                     + re.escape(member_name(w.chunkset)), out), out[-4000:]
    assert len(w.files) == 2, w.files
    for rel, (data, mtime) in w.files.items():
        p = root / rel
        assert p.read_bytes() == data, rel
        assert p.stat().st_mtime_ns == mtime, f"{rel} was written again"
    # the members that had not finished are named, with the reason (the statistics come last)
    assert re.search(r"redone: [^\n]*cell_statistics\(corpus=qasper, embedder=minilm, "
                     r"reranker=none\): \S+ is (missing|still marked incomplete)", out)
    removed = "".join(re.findall(r"Removing output files of failed job[^\n]*\n[^\n]*", out))
    assert f"{w.chunkset}.npy" not in removed, removed
    # the retry: one more cell group job, whose Snakemake on the node is given the other
    # members only (its --target-jobs) and runs them, the last one (statistics) included
    retry = [j["id"] for j in cancelled_run["jobs"] if j["comment"].startswith(CELL)
             and j["id"] != w.job]
    assert len(retry) == 1, cancelled_run["jobs"]
    log = next((root / ".snakemake" / "slurm_logs").rglob(f"{retry[0]}.log")).read_text()
    assert "--target-jobs" in log and "--attempt 2" in log, log[:3000]
    assert member_target(w.chunkset) not in log, log[:3000]
    assert f"output: {VECTORS}/{w.chunkset}.npy" not in log, log[-3000:]
    assert "localrule cell_statistics:" in log, log[-3000:]
    # a later run finds nothing to do: the kept member has metadata and is complete
    assert "Nothing to be done" in cancelled_run["again"], cancelled_run["again"][-3000:]
