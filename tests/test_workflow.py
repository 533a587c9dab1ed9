"""Real Snakemake runs of the workflow on a 4-paper real QASPER subset.

Checks: the run completes and writes contract tables for every condition; a second invocation
has nothing to do; a chunking edit reruns only the branch it affects; a fresh run in another
folder gives byte-identical Parquet outputs.
"""

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from workflow_util import job_counts, snakemake, write_project

from structablate.tables import check_table

pytestmark = pytest.mark.slow

CONDITIONS = ["A0", "G2", "G3", "G4"]


def _write_project(root: Path, **chunking) -> None:
    write_project(root, CONDITIONS, tweak=lambda cfg: cfg["chunking"].update(chunking))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("wf") / "a"
    _write_project(root)
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root


def test_run_writes_scores_for_every_condition(project):
    res = project / "results" / "qasper"
    queries = check_table(pl.read_parquet(res / "queries.parquet"), "queries")
    assert queries.height > 0
    for cond in CONDITIONS:
        scores = pl.read_parquet(res / "minilm" / "none" / "scores" / f"{cond}.parquet")
        assert scores["qid"].to_list() == sorted(queries["qid"].to_list())
        assert scores["covNDCG@10"].is_between(0, 1).all()
        run = check_table(pl.read_parquet(res / "minilm" / "none" / "runs" / f"{cond}.parquet"),
                          "runs")
        assert run.group_by("qid").len()["len"].min() > 0
    g4 = pl.read_parquet(res / "minilm" / "none" / "runs" / "G4.parquet")
    assert set(g4["stage"]) <= {"routed", "backfill"} and g4["section_recall"].null_count() == 0
    summary = (project / "results" / "summary.md").read_text()
    assert all(f"| {c} |" in summary for c in CONDITIONS)
    assert (project / "logs" / "qasper" / "build_qasper.log").exists()


def test_second_run_has_nothing_to_do(project):
    proc = snakemake(project, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_snap_edit_reruns_only_fixed_window_branch(project):
    cfg_path = project / "config.yaml"
    original = cfg_path.read_text()
    cfg = yaml.safe_load(original)
    cfg["chunking"]["fixed_snap_tokens"] = 5
    cfg_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    try:
        proc = snakemake(project, "-n")
    finally:
        cfg_path.write_text(original)
    counts = job_counts(proc.stdout)
    # A0's chunks, vectors, run, scores and TREC export, then the cell's aggregates and report
    per_a0 = {"chunk": 1, "embed_chunks": 1, "retrieve": 1, "score": 1, "trec_export": 1}
    aggregates = {"summarize_cell": 1, "contrasts": 1, "summary_markdown": 1, "report_cell": 1,
                  "report_corpus": 1, "report_page": 1, "all": 1}
    assert counts == per_a0 | aggregates, proc.stdout[-3000:]
    assert "chunks/A0.parquet" in proc.stdout and "chunks/G2.parquet" not in proc.stdout


def test_separator_edit_reruns_only_breadcrumb_branches(project):
    cfg_path = project / "config.yaml"
    original = cfg_path.read_text()
    cfg = yaml.safe_load(original)
    cfg["chunking"]["breadcrumb_separator"] = " > "
    cfg_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    try:
        proc = snakemake(project, "-n")
    finally:
        cfg_path.write_text(original)
    counts = job_counts(proc.stdout)
    # G3's chunk table and vectors change; G3 and G4 (which share them) are retrieved again
    assert counts["chunk"] == 1 and counts["embed_chunks"] == 1
    assert counts["retrieve"] == 2 and counts["score"] == 2


def test_fresh_run_is_byte_identical(project, tmp_path):
    other = tmp_path / "b"
    _write_project(other)
    proc = snakemake(other)
    assert proc.returncode == 0, proc.stderr[-4000:]
    a, b = project / "results", other / "results"
    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    # corpus (5), induced sections, BM25 per query, chunksets (3), runs (4), scores (4),
    # summary, contrasts (3)
    files = [f for f in files if f.parts[0] != "report"]
    assert len(files) == 5 + 1 + 1 + 3 + 4 + 4 + 1 + 3
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    for rel in sorted(p.relative_to(a) for p in a.rglob("*.npy")):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_bad_config_fails_before_any_job(tmp_path):
    root = tmp_path / "bad"
    _write_project(root)
    cfg = yaml.safe_load((root / "config.yaml").read_text())
    cfg["retrieval"]["top_k"] = 0
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(root, "-n")
    assert proc.returncode != 0
    assert "retrieval.top_k: 0 is less than the minimum of 1" in proc.stderr + proc.stdout
    assert not (root / "results").exists()


ALL_CONDITIONS = ["A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4"]


def test_dry_run_lists_each_target_once(tmp_path):
    root = tmp_path / "grid"
    write_project(root, [c for c in ALL_CONDITIONS if c != "A1"])
    proc = snakemake(root, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    # ten conditions, nine chunksets (A4 reads A3's, G4 reads G3's), one inducer run
    assert counts["induce_structure"] == 1 and counts["chunk"] == 8 and counts["embed_chunks"] == 8
    assert counts["retrieve"] == counts["score"] == 10
    outputs = re.findall(r"output: (.+)", proc.stdout)
    files = [f.strip() for line in outputs for f in line.split(",")]
    assert len(files) == len(set(files))


def test_all_eleven_conditions_replay_the_recorded_llm(tmp_path):
    """The default's full grid on three papers: induced structure (Qwen2.5-Coder-0.5B) and A1
    contexts (SmolLM2-135M) replay from resources/llm."""
    root = tmp_path / "eleven"
    write_project(root, ALL_CONDITIONS, n_papers=3,
                  tweak=lambda cfg: cfg["statistics"].update(bootstrap_iters=1000))
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = root / "results" / "qasper"
    a0 = pl.read_parquet(res / "chunks" / "A0.parquet")
    a1 = pl.read_parquet(res / "chunks" / "A1.parquet")
    # A1 = A0's windows with a generated context of at most 80 tokens
    assert a1.select("start", "end", "content_tokens").equals(
        a0.select("start", "end", "content_tokens"))
    assert (a1["prefix_tokens"] <= 80 + 1).all() and (a1["prefix_tokens"] > 0).mean() > 0.9
    stats = json.loads((res / "chunks" / "A1.json").read_text())
    assert stats["llm_mode"] == "replay" and stats["llm"]["generated"] == 0
    assert stats["model"] == "smollm2-135m-instruct-q4_1"
    induction = json.loads((res / "induction_report.json").read_text())
    assert (induction["inducer"], induction["model"]) == (
        "llm", "qwen2.5-coder-0.5b-instruct-q4_k_m")
    assert induction["llm"]["generated"] == 0 and induction["n_documents"] == 3
    contrasts = pl.read_parquet(res / "minilm" / "none" / "contrasts.parquet")
    primary = contrasts.filter(pl.col("primary"))
    assert sorted(primary["contrast"].to_list()) == ["C1", "C2", "C3", "C4"]
    assert primary["p_holm"].is_between(0, 1).all()
    dose = pl.read_parquet(res / "minilm" / "none" / "dose_response.parquet")
    assert dose.height > 0


def test_wikipedia_corpus_replays_its_recorded_queries_structure_and_contexts(tmp_path):
    """The default's Wikipedia corpus end to end: five articles from the bundled XML export,
    synthetic queries, induced structure and A1 contexts all replayed from resources/llm."""
    from structablate.queries import check_leakage

    root = tmp_path / "wiki"
    write_project(root, ["A0", "A1", "A3", "G2"], corpora=("wikipedia",),
                  tweak=lambda cfg: cfg["statistics"].update(bootstrap_iters=1000))
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = root / "results" / "wikipedia"
    docs = check_table(pl.read_parquet(res / "documents.parquet"), "documents")
    queries = check_table(pl.read_parquet(res / "queries.parquet"), "queries")
    qrels = check_table(pl.read_parquet(res / "qrels.parquet"), "qrels")
    assert docs.height == 5 and queries.height > 0
    assert set(qrels["qid"]) == set(queries["qid"])  # no query without gold, no orphan gold
    text = dict(zip(docs["doc_id"], docs["text"], strict=True))
    evidence: dict[str, list[str]] = {}
    for r in qrels.iter_rows(named=True):
        assert 0 <= r["start"] < r["end"] <= len(text[r["doc_id"]])
        evidence.setdefault(r["qid"], []).append(text[r["doc_id"]][r["start"]:r["end"]])
    for q in queries.iter_rows(named=True):  # every shipped query passes the leakage filter
        assert check_leakage(q["text"], evidence[q["qid"]]).passed, q
    funnel = json.loads((res / "funnel.json").read_text())
    assert funnel["llm_mode"] == "replay" and funnel["llm"]["generated"] == 0
    assert funnel["model"] == "qwen2.5-coder-0.5b-instruct-q4_k_m"
    induction = json.loads((res / "induction_report.json").read_text())
    assert (induction["inducer"], induction["n_documents"]) == ("llm", 5)
    assert induction["llm"]["generated"] == 0 and induction["fallback"] == 0
    a1 = json.loads((res / "chunks" / "A1.json").read_text())
    assert a1["llm_mode"] == "replay" and a1["llm"]["generated"] == 0
    for cond in ["A0", "A1", "A3", "G2"]:
        scores = pl.read_parquet(res / "minilm" / "none" / "scores" / f"{cond}.parquet")
        assert scores["qid"].to_list() == sorted(queries["qid"].to_list())
    bm25 = json.loads((res / "bm25.json").read_text())
    assert bm25["bm25_corpus"]["n_queries"] == queries.height
    page = (root / "results" / "report" / "index.md").read_text()
    assert "SYNTHETIC" in page and "queries (wikipedia): backend `llamacpp`" in page
