"""Refusals seen through the real Snakemake command line (docs/refusals.md): a broken config
file names its line, a missing model or an impossible contrast stops the run before any job, a
corpus with no surviving question stops right after its build, and a rerun beside the orphan
of a killed Snakemake does not generate the same LLM calls twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO
from hermetic import pythonpath
from openai_stub_server import StubServer
from test_refusals import _unmappable_papers
from workflow_util import snakemake, write_project

pytestmark = pytest.mark.slow


def bare_snakemake(root: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """The workflow's CLI in ``root`` as a user types it: no --configfile (Snakemake reads
    ``root/config.yaml`` through the Snakefile's ``configfile:``)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(root), "--cores", "1", *args]
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_a_broken_config_yaml_names_its_line(tmp_path):
    write_project(tmp_path, ["G2"])
    text = (tmp_path / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(text.replace("conditions:\n- G2\n",
                                                       "conditions: [G2\n"))
    proc = bare_snakemake(tmp_path, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = next(i for i, t in enumerate((tmp_path / "config.yaml").read_text().splitlines(),
                                        1) if t.startswith("conditions: [G2"))
    assert f"config.yaml:{line + 1}:" in out and "invalid YAML" in out, out[-2000:]
    # a --configfile is read by Snakemake itself, before the workflow, without a line; the
    # checker names it
    proc = snakemake(tmp_path, "-n")
    assert proc.returncode != 0
    assert "Config file is not valid JSON or YAML" in proc.stdout + proc.stderr
    check = subprocess.run([sys.executable, "-m", "structablate.config", "config.yaml"],
                           cwd=tmp_path, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=pythonpath(REPO / "src")))
    assert check.returncode == 1 and f"config.yaml:{line + 1}:" in check.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["embedders"]["minilm"].update(model="BAAI/bge-smal-en-v1.5"),
     "embedders.minilm.model: 'BAAI/bge-smal-en-v1.5' is neither a local folder nor a hub "
     "model in the local Hugging Face cache"),
    (lambda c: c["statistics"]["contrasts"].update(C1=["G3", "A3"]),
     "statistics.contrasts.C1: [G3, A3] names A3, not among conditions (G2, G3)"),
])
def test_a_refused_config_runs_no_job(tmp_path, monkeypatch, edit, message):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    write_project(tmp_path, ["G2", "G3"], tweak=edit)
    proc = snakemake(tmp_path)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    assert not (tmp_path / "results").exists()


def test_a_corpus_without_surviving_questions_stops_after_its_build(tmp_path):
    """Before: every job ran (chunks, vectors, runs) and scoring died with a TypeError."""
    write_project(tmp_path, ["G2", "G3"], n_papers=2)
    _unmappable_papers(tmp_path / "papers.json", n=2)
    proc = snakemake(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Error in rule build_qasper" in out, out[-3000:]
    assert "corpus 'qasper' (corpora.qasper): no question survived the funnel" in out
    assert "with mapped evidence (kept) 0" in out
    res = tmp_path / "results" / "qasper"
    assert not (res / "documents.parquet").exists() and not (res / "chunks").exists()
    assert not list(res.rglob("*.parquet")) and not list(res.rglob("*.npy"))


# ------------------------------------------------------------------------ kill -9 of snakemake


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left to a non-reaping init counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _rerun_log(root: Path) -> str:
    log = root / "results" / "logs" / "qasper" / "contextualize_A1.log"
    return log.read_text()[-2000:] if log.exists() else ""


def _stage_lock_holder(root: Path) -> dict | None:
    locks = list((root / "results" / "cache" / "llm" / "locks").glob("*.lock"))
    for lock in locks:
        try:
            return json.loads(lock.read_text())
        except (OSError, ValueError):
            continue
    return None


def test_a_rerun_beside_the_orphan_of_a_killed_snakemake_generates_nothing_twice(tmp_path):
    """kill -9 of Snakemake while A1's contexts are generated leaves the job running as an
    orphan. The rerun's job finds the stage lock held by the orphan (its pid and host in the
    lock), waits for it instead of starting a second generator, and then finds every
    generation in the cache: the server answers each prompt once."""
    with StubServer(reply=lambda body: "A situating context.", delay_s=1.5) as srv:
        def tweak(cfg):
            cfg["size_match_structure"] = "gold"
            cfg["contexts"]["context_tokens"] = 8192  # a server's context is not in the config
            cfg["contexts"]["llm"] = {
                "model": "stub", "backend": "openai", "mode": "cached", "cache": None,
                "openai": {"base_url": srv.base_url, "api_key_env": None, "concurrency": 1,
                           "backoff_s": 0.01}}

        write_project(tmp_path, ["A0", "A1"], n_papers=3, tweak=tweak)
        target = "results/qasper/chunks/A1.parquet"
        env = dict(os.environ, PYTHONPATH=pythonpath(REPO / "src"))
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml"),
               "--cores", "2"]
        first = subprocess.Popen([*cmd, target], cwd=tmp_path, env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rerun = None
        try:
            deadline = time.monotonic() + 300
            while len(srv.requests) < 4:
                assert time.monotonic() < deadline, "the contexts job never reached the server"
                assert first.poll() is None, "snakemake ended before generating"
                time.sleep(0.2)
            holder = _stage_lock_holder(tmp_path)
            assert holder is not None and holder["pid"] != first.pid
            os.kill(first.pid, signal.SIGKILL)  # snakemake only: its job lives on
            first.wait(timeout=30)
            orphan = holder["pid"]
            assert _alive(orphan)  # the job outlives its snakemake
            n_before = len(srv.requests)
            unlock = subprocess.run([*cmd, "--unlock"], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=300)
            assert unlock.returncode == 0, unlock.stderr[-2000:]
            rerun = subprocess.Popen([*cmd, target], cwd=tmp_path, env=env,
                                     start_new_session=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            # while the orphan runs, the lock stays its own: the rerun did not take over, and
            # it cannot finish while the orphan holds the lock. The orphan releases the lock
            # before its process has exited (interpreter teardown, seconds on a loaded
            # machine), so in that window only the rerun's job may take the lock, and even
            # finish (everything is in the cache by then): the orphan must be gone soon after
            released_at = None
            while _alive(orphan):
                assert time.monotonic() < deadline + 600, "the orphan never finished"
                done = rerun.poll() is not None  # before reading the lock: no race
                h = _stage_lock_holder(tmp_path)
                if h is not None:
                    assert h["host"] == holder["host"], (h, _rerun_log(tmp_path))
                if released_at is None and (h is None or h["pid"] != orphan):
                    released_at = time.monotonic()
                assert not done or released_at is not None, (
                    "the rerun ended while the orphan held the stage lock (it did not wait)",
                    _rerun_log(tmp_path))
                if released_at is not None:
                    assert time.monotonic() - released_at < 60, (
                        "the rerun holds the stage lock while the orphan runs on",
                        h, _rerun_log(tmp_path))
                time.sleep(0.5)
            assert len(srv.requests) > n_before  # the orphan kept generating meanwhile
            out, _ = rerun.communicate(timeout=600)
            assert rerun.returncode == 0, out[-3000:]
        finally:
            for proc in (first, rerun):
                if proc is not None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        prompts = [json.dumps(r["messages"], sort_keys=True) for r in srv.requests]
        assert len(prompts) == len(set(prompts)), (
            f"{len(prompts) - len(set(prompts))} of {len(prompts)} prompts were generated twice")
    chunks = pl.read_parquet(tmp_path / target)  # a context for every chunk
    assert chunks.height > 0 and (chunks["prefix"] == "A situating context. ").all()
    stats = json.loads((tmp_path / "results" / "qasper" / "chunks" / "A1.json").read_text())
    assert stats["llm"]["generated"] == 0  # the rerun generated nothing itself


def test_a_read_only_home_without_xdg_cache_home_plans_the_run(tmp_path):
    # Snakemake created ~/.cache/snakemake at start and died there with a raw traceback when
    # the home was read-only; profiles/default keeps its source cache in a temporary folder.
    # A home under a plain file is unwritable for every user, root included.
    write_project(tmp_path, ["G2"], n_papers=2)
    (tmp_path / "a-file").write_text("")
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env.update(HOME=str(tmp_path / "a-file" / "home"), PYTHONPATH=pythonpath(REPO / "src"))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml"),
           "--cores", "1", "-n"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "This was a dry-run" in out


HOLD = """
import sys, time
from structablate.workflow import {fn}
lock = {fn}(sys.argv[1])
print("held", flush=True)
time.sleep(300)
"""


def _holder(root: Path, fn: str, results: str) -> subprocess.Popen:
    """A process in ``root`` that holds ``fn``'s lock for ``results`` (as a running Snakemake
    does) until killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD.format(fn=fn), results], cwd=root,
                            stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=pythonpath(REPO / "src")))
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_snakemake_in_one_working_folder_with_other_results_is_refused(tmp_path):
    # Snakemake's own locks (.snakemake/locks) race between two runs in one folder: one died
    # with a raw FileNotFoundError. The second is refused before Snakemake locks, naming the
    # first and --directory; one on the same results folder is Snakemake's to lock.
    write_project(tmp_path, ["G2"], n_papers=2)
    holder = _holder(tmp_path, "guard_working_folder", str(tmp_path / "other-results"))
    try:
        proc = snakemake(tmp_path, "-n")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert f"another Snakemake runs in this working folder ({tmp_path}): pid {holder.pid}" \
            in out and f"writing the results folder {tmp_path / 'other-results'}" in out
        assert "snakemake --directory <folder>" in out and "FileNotFoundError" not in out
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone (killed: its lock is stale): the same dry run plans
    proc = snakemake(tmp_path, "-n")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_a_results_folder_written_from_another_working_folder_is_refused(tmp_path):
    # two working folders (clones, --directory) writing one results folder took one run's
    # corpus for the other's configuration; the second run stops before its first job
    shared = tmp_path / "shared-results"
    write_project(tmp_path / "a", ["G2"], n_papers=2,
                  tweak=lambda c: c.update(results=str(shared)))
    (tmp_path / "b").mkdir()
    holder = _holder(tmp_path / "b", "guard_results", str(shared))
    try:
        proc = snakemake(tmp_path / "a")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert (f"results: {shared} is being written by another Snakemake: pid {holder.pid}"
                in out), out[-3000:]
        assert f"started in the working folder {tmp_path / 'b'}" in out
        assert not (shared / "qasper").exists()  # no job ran
    finally:
        holder.kill()
        holder.wait()
