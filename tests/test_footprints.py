"""Memory is booked from measured footprints: the peak RSS of each rule's jobs in the bundled
default's benchmark files (resources/footprints.tsv, with its provenance) against what the
real SLURM planning books (tests/slurm_plan.py) for every job and every group job, on 2-CPU
nodes like the test cluster's, where the groups were seen using more than they booked
(cell-wikipedia 2,316 MiB of 2,000 MB)."""

import csv
import re
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO
from test_profiles import PARTITIONS, PROFILE, slurm_plan

from structablate.plan.footprints import (
    BENCHMARKS,
    markdown_table,
    read_benchmarks,
    read_footprints,
    rule_of,
    tsv_rows,
)
from structablate.plan.groups import concurrent_mb
from structablate.plan.resources import DRIVER_MB, MEM_MARGIN, MEM_SLACK_MB

FOOTPRINTS = REPO / "resources" / "footprints.tsv"
NODE = {"max_threads": 2, "max_mem_mb": 7000, "max_runtime": 600}
"""A CPU partition of 2-CPU nodes (the single-node test cluster's size)."""


def peaks() -> dict[tuple[str, str], int]:
    return {(r["rule"], r["corpus"]): int(r["peak_rss_mb"]) for r in read_footprints(FOOTPRINTS)}


def needed(peak: float) -> float:
    """What a job must book over a measured peak: the margin, and the job's own Snakemake."""
    return max(peak * MEM_MARGIN, peak + MEM_SLACK_MB) + DRIVER_MB


@pytest.fixture(scope="module")
def default_plan(tmp_path_factory):
    import yaml

    tmp = tmp_path_factory.mktemp("footprints")
    folder = tmp / "slurm-profile"
    folder.mkdir()
    parts = yaml.safe_load(PARTITIONS.read_text())
    parts["partitions"]["cpu"] = dict(NODE)
    (folder / "partitions.yaml").write_text(yaml.safe_dump(parts))
    (folder / "config.yaml").write_text(PROFILE.read_text())
    return slurm_plan(tmp, "--config", f"results={tmp / 'results'}", profile=str(folder))


def _corpus(job: dict) -> str:
    return job["wildcards"].get("corpus", "")


def test_every_benchmark_pattern_is_the_rules_own():
    """BENCHMARKS names each rule's `benchmark:` pattern as rules/*.smk writes it."""
    text = "\n".join(p.read_text() for p in sorted((REPO / "rules").glob("*.smk")))
    written = set(re.findall(r'P\.benchmark\("([^"]+)"\)', text))
    assert written == {p for _, p in BENCHMARKS}
    assert rule_of("qasper/minilm/embed_queries.tsv") == ("embed_queries", "qasper")
    assert rule_of("qasper/minilm/embed_A3-d1.tsv") == ("embed_chunks", "qasper")
    assert rule_of("wikipedia/minilm/none/trec_G2.tsv") == ("trec_export", "wikipedia")
    assert rule_of("qasper/minilm/nothing.tsv") is None


def test_the_table_and_the_tsv_come_from_benchmark_files(tmp_path, capsys):
    root = tmp_path / "benchmarks"
    (root / "c" / "m").mkdir(parents=True)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (root / "c" / "m" / "embed_A0.tsv").write_text(head + "12.5\t0:00:12\t900.2\t1\t1\t1\t0\t0\t"
                                                   "1\t8.0\n")
    (root / "c" / "m" / "embed_P.tsv").write_text(head + "30.0\t0:00:30\t1000.7\t1\t1\t1\t0\t0\t"
                                                  "1\t20.25\n")
    (root / "report_page.tsv").write_text(head + "2\t0:00:02\t70\t1\t1\t1\t0\t0\t1\t0.3\n")
    prints = read_benchmarks(root)
    assert markdown_table(prints).splitlines()[2:] == [
        "| `embed_chunks` | 2 | 900–1001 | 8.0–20.2 | 12.5–30.0 |",
        "| `report_page` | 1 | 70 | 0.3 | 2.0 |"]
    assert tsv_rows(prints) == [
        {"rule": "embed_chunks", "corpus": "c", "jobs": "2", "peak_rss_mb": "1001"},
        {"rule": "report_page", "corpus": "", "jobs": "1", "peak_rss_mb": "70"}]
    (root / "c" / "stray.tsv").write_text(head)
    with pytest.raises(ValueError, match="stray.tsv.*BENCHMARKS"):
        read_benchmarks(root)


def test_the_committed_footprints_have_their_provenance():
    text = FOOTPRINTS.read_text()
    assert "python -m structablate.plan.footprints results/benchmarks --tsv" in text
    rows = read_footprints(FOOTPRINTS)
    assert {r["rule"] for r in rows} >= {"embed_chunks", "embed_queries", "chunk", "score"}
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert list(csv.reader(lines[:1], delimiter="\t"))[0] == [
        "rule", "corpus", "jobs", "peak_rss_mb"]


@pytest.mark.slow
def test_every_job_books_its_measured_peak_with_the_margin(default_plan):
    """Each job of the bundled default books at least its rule's measured peak on its corpus
    times the margin (x1.25, at least +256 MB) plus its own Snakemake (DRIVER_MB). Before:
    embed_chunks booked 1,500 MB for a measured 1,600 MB peak."""
    measured = peaks()
    seen = set()
    for unit in default_plan["units"]:
        for job in unit["jobs"] if unit["group"] else [unit]:
            key = (job["rule"], _corpus(job))
            if unit["local"] or key not in measured:
                continue
            seen.add(key)
            assert job["resources"]["mem_mb"] >= needed(measured[key]), (key, job["resources"])
    assert ("embed_chunks", "wikipedia") in seen and ("score", "qasper") in seen


@pytest.mark.slow
def test_every_group_books_its_members_that_run_at_once(default_plan):
    """A group job's own Snakemake runs its members side by side within the CPUs and memory
    SLURM gave it: its booking holds the largest sum of measured peaks of members it may run
    at once (groups.concurrent_mb) with the margin, and that Snakemake. Before: the cell
    groups booked 2,000 MB (cell-wikipedia was seen using 2,316 MiB) where an embedding's
    1,600 MB peak needs 2,300."""
    measured = peaks()
    groups = [u for u in default_plan["units"] if u["group"] and not u["local"]]
    assert any(u["group"].startswith("cell-") for u in groups)
    for unit in groups:
        booked = unit["resources"]["mem_mb"]
        members = [(j["threads"], j["resources"]["mem_mb"],
                    measured.get((j["rule"], _corpus(j)), 0)) for j in unit["jobs"]]
        use = needed(concurrent_mb(members, unit["threads"], booked))
        assert use <= booked, (unit["group"], booked, use)


def test_concurrent_memory_is_the_largest_admissible_set():
    # two 1-thread members fit 2 cores; the 8-thread-capped one (2 threads) runs alone
    members = [(1, 1000, 600.0), (1, 1000, 500.0), (2, 1500, 900.0), (1, 1000, 100.0)]
    assert concurrent_mb(members, 2, 5000, 300) == 300 + 1100
    # memory admits only one 1,000 MB member at a time
    assert concurrent_mb(members, 2, 1999, 300) == 300 + 900
    assert concurrent_mb([], 2, 1000, 300) == 300


# ------------------------------------------------------------------ under enforced memory


class Watchdog(threading.Thread):
    """Samples, every ``interval`` seconds, the memory of each job of a local Snakemake run:
    the process running the rule's script (``.snakemake/scripts/tmp….GLUE.py``) and its
    children, as the proportional set size summed over them (each page once, as a memory
    cgroup charges it; the sum of RSS, which Snakemake's benchmark reports as ``max_rss``,
    counts a page shared with a forked child twice) and as that sum of RSS. Snakemake's
    benchmark samples only every 30 s after a job's first 30 s and so misses the peaks of
    long jobs. ``peaks``: (pid, rule) -> (largest PSS sum, largest RSS sum) in MiB; the rule
    is the one of ``rules`` (those of the glue) whose name the script's pickled job holds."""

    def __init__(self, root: int, rules: dict[str, list[str]], interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.root, self.rules, self.interval = root, rules, interval
        self.peaks: dict[tuple[int, str], tuple[float, float]] = {}
        self.rule_of: dict[int, str] = {}
        self.done = threading.Event()

    def _rule(self, pid: int, script: str, cwd: str) -> str:
        if pid not in self.rule_of:
            glue = Path(script).name.split(".")[-2]
            names = self.rules.get(glue, [glue])
            try:
                text = (Path(cwd) / script).read_bytes()
            except OSError:
                text = b""
            found = [n for n in names if n.encode() in text]
            self.rule_of[pid] = found[0] if len(found) == 1 else glue
        return self.rule_of[pid]

    def sample(self) -> None:
        import psutil

        try:
            procs = psutil.Process(self.root).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for p in procs:
            try:
                script = next((a for a in p.cmdline() if ".snakemake/scripts/" in a), None)
                if script is None:
                    continue
                rule = self._rule(p.pid, script, p.cwd())
                tree = [p, *p.children(recursive=True)]
                info = [q.memory_full_info() for q in tree]
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            pss = sum(i.pss for i in info) / 2**20
            rss = sum(i.rss for i in info) / 2**20
            old = self.peaks.get((p.pid, rule), (0.0, 0.0))
            self.peaks[(p.pid, rule)] = (max(old[0], pss), max(old[1], rss))

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            time.sleep(self.interval)


TARGET = "wikipedia/minilm/none/runs/G2.parquet"
"""Part of the bundled default: the Wikipedia export built, its questions generated, its
tokens, the G2 chunks, their vectors (the embedding seen at 1.6 GB), the question vectors and
the first-stage retrieval."""


@pytest.mark.slow
def test_part_of_the_bundled_default_runs_within_its_bookings(default_plan, tmp_path):
    """A real local run of part of the bundled default under a watchdog that samples each
    job's process tree every 0.1 s: no job's script uses more than its rule's smallest
    booking less the job's own Snakemake (DRIVER_MB), the limit a cgroup would enforce on
    a SLURM node. (A memory cgroup needs cgroup v2 delegated to the test, which a CI
    container does not give; RLIMIT_AS would kill OpenVINO, which reserves gigabytes of
    address space; a watchdog works anywhere.)"""
    import shutil
    import subprocess
    import sys

    from test_paper_config import offline_env

    from structablate.plan.rules import RULES

    limit: dict[str, int] = {}
    rules: dict[str, list[str]] = {}
    for unit in default_plan["units"]:
        for job in unit["jobs"] if unit["group"] else [unit]:
            if job["rule"] not in RULES or RULES[job["rule"]].rate is None:
                continue  # the submit host's rules: `all` and those without a rate
            name, mem = job["rule"], job["resources"]["mem_mb"]
            limit[name] = min(limit.get(name, mem), mem)
            glue = RULES[name].glue
            rules.setdefault(glue, [])
            if name not in rules[glue]:
                rules[glue].append(name)
    for glue, names in rules.items():  # a script not told apart: its rules' smallest
        limit.setdefault(glue, min(limit[n] for n in names))
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns(
        ".git", ".venv", "results", ".snakemake", "__pycache__", ".pytest_cache", ".ruff_cache"))
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", str(results / TARGET), "--cores", "2",
         "--config", f"results={results}"], cwd=repo, env=offline_env(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    dog = Watchdog(proc.pid, rules)
    dog.start()
    try:
        out, _ = proc.communicate(timeout=1200)
    finally:
        dog.done.set()
        dog.join()
    assert proc.returncode == 0, out[-4000:]
    seen = {r for _, r in dog.peaks}
    assert {"embed_chunks", "embed_queries", "chunk", "tokenize_corpus"} <= seen, (seen,
                                                                                out[-2000:])
    over = [(rule, round(pss), round(rss), limit[rule] - DRIVER_MB)
            for (_, rule), (pss, rss) in sorted(dog.peaks.items())
            if pss * 2**20 / 1e6 > limit[rule] - DRIVER_MB]
    print("peaks (rule, PSS MiB, RSS MiB, MB allowed):", sorted(
        (r, round(p), round(q), limit[r] - DRIVER_MB) for (_, r), (p, q) in dog.peaks.items()))
    assert not over, f"jobs over their booking (rule, PSS MiB, RSS MiB, MB allowed): {over}"


def test_the_docs_table_is_the_committed_footprints():
    """docs/cluster.md's footprint table and resources/footprints.tsv come from the same
    benchmark files: each rule's largest peak agrees (the table rounds, the TSV rounds up)."""
    text = (REPO / "docs" / "cluster.md").read_text(encoding="utf-8")
    table = text[text.index("**Measured footprints.**"):]
    table = table[:table.index("\n\n", table.index("| rule | jobs | peak RSS MB"))]
    shown = {m[1]: float(m[2].split("–")[-1])
             for m in re.finditer(r"^\| `(\w+)` \| \d+ \| ([\d.–]+) \|", table, re.M)}
    committed: dict[str, int] = {}
    for (rule, _), peak in peaks().items():
        committed[rule] = max(committed.get(rule, 0), peak)
    assert shown.keys() == committed.keys()
    for rule, peak in committed.items():
        assert 0 <= peak - shown[rule] <= 1, (rule, peak, shown[rule])
