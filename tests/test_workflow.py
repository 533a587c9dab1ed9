"""Real Snakemake runs of the workflow on a 4-paper real QASPER subset and the bundled
Wikipedia sample.

Checks: the run completes and writes contract tables for every condition; a second invocation
has nothing to do, also after its inputs are staged again with the same bytes; a config or code
edit reruns exactly the branch it affects (and a comment, docstring or device change reruns
nothing); a fresh run in another folder gives byte-identical Parquet and .npy outputs.
"""

import json
import os
import re
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from workflow_util import copy_workflow, job_counts, snakemake, write_project

from structablate.tables import check_table

pytestmark = pytest.mark.slow

CONDITIONS = ["A0", "G2", "G3", "G4"]
CORPORA = ("qasper", "wikipedia")


# Snakemake compares checksums instead of mtimes only for inputs up to
# max-checksum-file-size (1 MB by default; profiles/default raises it): the Wikipedia export is
# padded past 1 MB with an XML comment (the same pages) so that the staged-again test below
# depends on the profile's setting, as real corpora of tens of MB do
PAD_PAST_CHECKSUM_DEFAULT = 1_100_000


def _write_project(root: Path, **chunking) -> None:
    write_project(root, CONDITIONS, corpora=CORPORA,
                  tweak=lambda cfg: cfg["chunking"].update(chunking))
    with open(root / "wikipedia.xml", "a", encoding="utf-8") as f:
        f.write("<!-- " + " " * PAD_PAST_CHECKSUM_DEFAULT + " -->\n")


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    """A copy of the workflow whose package code the tests edit."""
    root = tmp_path_factory.mktemp("code")
    copy_workflow(root)
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory, workflow):
    root = tmp_path_factory.mktemp("wf") / "a"
    _write_project(root)
    proc = snakemake(root, workflow=workflow)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root


def dry_run(project, workflow):
    proc = snakemake(project, "-n", workflow=workflow)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return job_counts(proc.stdout), proc.stdout + proc.stderr


# What follows any change of a cell's scores: per corpus (one cell each: minilm, no reranker)
# its summary, contrasts, descriptive statistics, cell report and corpus report (5 rules x 2
# corpora), then once for the run the Markdown summary, the report page and `all`.
AGGREGATES = {"summarize_cell": 2, "contrasts": 2, "cell_statistics": 2, "summary_markdown": 1,
              "report_cell": 2, "report_corpus": 2, "report_page": 1, "all": 1}
# What a change to A0's windows reruns, per corpus (x 2): A0's chunk table (1 chunk job),
# its vectors (1 embed_chunks), A0's run (1 retrieve) and TREC export (1 trec_export; one per
# condition), the cell's score job (1: `score` is one job per cell and writes every
# condition's scores) and the structure-quality table (1: it reads every chunkset's chunks
# and stats, A0's among them); G2/G3/G4 and the corpus, tokens, structure and BM25 check stay.
PER_A0 = {"chunk": 2, "embed_chunks": 2, "retrieve": 2, "trec_export": 2, "score": 2,
          "structure_quality": 2}


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
    # logs live with their results
    assert (project / "results" / "logs" / "qasper" / "build_qasper.log").exists()
    assert not (project / "logs").exists()


def test_second_run_has_nothing_to_do(project, workflow):
    counts, out = dry_run(project, workflow)
    assert counts == {} and "Nothing to be done" in out


def test_inputs_staged_again_with_the_same_bytes_rerun_nothing(project, workflow):
    # a corpus copied onto scratch again, or a results folder copied: newer mtimes, same bytes
    assert (project / "wikipedia.xml").stat().st_size > 1_000_000  # past snakemake's default
    touched = [project / "papers.json", project / "wikipedia.xml",
               project / "results" / "qasper" / "tokens.parquet"]
    before = {path: path.stat() for path in touched}
    # newer than every output the module's run wrote, but not in the future: the plan refuses
    # an input dated ahead of the clock (docs/refusals.md)
    later = time.time()
    for path in touched:
        os.utime(path, (later, later))
    try:
        counts, out = dry_run(project, workflow)
    finally:
        for path, st in before.items():
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert counts == {} and "Nothing to be done" in out, out[-3000:]


def _with_config(project, edit):
    cfg_path = project / "config.yaml"
    original = cfg_path.read_text()
    cfg = yaml.safe_load(original)
    edit(cfg)
    cfg_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return original


def test_snap_edit_reruns_only_fixed_window_branch(project, workflow):
    original = _with_config(project, lambda c: c["chunking"].update(fixed_snap_tokens=5))
    try:
        counts, out = dry_run(project, workflow)
    finally:
        (project / "config.yaml").write_text(original)
    assert counts == PER_A0 | AGGREGATES, out[-3000:]
    # structure_quality reads every chunkset, so only outputs count
    written = " ".join(re.findall(r"output: (.+)", out))
    assert "chunks/A0.parquet" in written and "chunks/G2.parquet" not in written


def test_separator_edit_reruns_only_breadcrumb_branches(project, workflow):
    original = _with_config(project,
                            lambda c: c["chunking"].update(breadcrumb_separator=" > "))
    try:
        counts, _ = dry_run(project, workflow)
    finally:
        (project / "config.yaml").write_text(original)
    # per corpus (x 2): G3's chunk table and vectors change (1 chunk, 1 embed_chunks); G3 and
    # G4, which share them, are retrieved and exported again (2 retrieve, 2 trec_export); the
    # cell's one score job (1) and the structure-quality table (1) follow
    assert counts["chunk"] == 2 and counts["embed_chunks"] == 2
    assert counts["retrieve"] == 4 and counts["trec_export"] == 4
    assert counts["score"] == 2 and counts["structure_quality"] == 2


def test_thread_settings_rerun_nothing(project, workflow):
    # (an embedder's device alone reruns nothing either: tests/test_plan.py, on the torch
    # backend; the default's OpenVINO backend runs on CPUs only)
    def edit(cfg):
        cfg["llm"]["llamacpp"]["n_threads"] = 7
    original = _with_config(project, edit)
    try:
        counts, out = dry_run(project, workflow)
    finally:
        (project / "config.yaml").write_text(original)
    assert counts == {}, out[-3000:]


def _edit_file(path: Path, new: str):
    original = path.read_text()
    path.write_text(new.replace("{original}", original))
    return original


def test_package_code_edit_reruns_exactly_the_jobs_it_computes(project, workflow):
    fixed = workflow / "src" / "structablate" / "chunking" / "fixed.py"
    original = _edit_file(fixed, "{original}\n\nEDITED_FOR_A_TEST = 1\n")
    try:
        counts, out = dry_run(project, workflow)
    finally:
        fixed.write_text(original)
    # only the fixed-window chunk jobs compute with fixed.py: the same jobs as a snap edit
    assert counts == PER_A0 | AGGREGATES, out[-3000:]
    written = " ".join(re.findall(r"output: (.+)", out))
    assert "chunks/A0.parquet" in written and "chunks/G3.parquet" not in written
    # comments and docstrings are not code: nothing reruns
    _edit_file(fixed, '"""An edited docstring."""\n# a comment\n{original}\n# another\n')
    glue = workflow / "workflow_scripts" / "chunk.py"
    glue_original = _edit_file(glue, "# a comment in the glue\n{original}")
    try:
        counts, out = dry_run(project, workflow)
    finally:
        fixed.write_text(original)
        glue.write_text(glue_original)
    assert counts == {}, out[-3000:]


def test_wikipedia_export_edit_reruns_only_the_wikipedia_branch(project, workflow):
    export = project / "wikipedia.xml"
    original = export.read_text(encoding="utf-8")
    export.write_text(original.replace("</mediawiki>", "</mediawiki>\n"), encoding="utf-8")
    try:
        counts, out = dry_run(project, workflow)
    finally:
        export.write_text(original, encoding="utf-8")
    assert counts["build_wikipedia"] == 1 and "build_qasper" not in counts, out[-3000:]
    written = " ".join(re.findall(r"output: (.+)", out))  # the report page reads both corpora
    assert "results/qasper/" not in written
    assert counts["summarize_cell"] == 1 and counts["retrieve"] == 4


def test_outputs_a_failed_rerun_deleted_are_rebuilt(project, workflow):
    # A failed rerun makes Snakemake delete the job's previous, valid outputs; once the inputs
    # were fine again, `snakemake -n` said "Nothing to be done" with vectors and runs missing.
    # Every documented output is a target of `all`, so they are rebuilt, byte-identical.
    gone = [project / "results" / "qasper" / "minilm" / "embeddings" / "G2.npy",
            project / "results" / "qasper" / "minilm" / "none" / "runs" / "G3.parquet"]
    before = {p: p.read_bytes() for p in gone}
    for p in gone:
        p.unlink()
    counts, out = dry_run(project, workflow)
    assert counts.get("embed_chunks") == 1 and counts.get("retrieve", 0) >= 1, out[-3000:]
    proc = snakemake(project, workflow=workflow)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert all(p.read_bytes() == before[p] for p in gone)
    counts, out = dry_run(project, workflow)
    assert counts == {} and "Nothing to be done" in out, out[-3000:]


def _copy_project(project: Path, dest: Path, edit=None) -> Path:
    """The project folder copied without its .snakemake/ (as `cp -r results` to another
    working folder, a clone's run, or a deleted .snakemake/ leave it), config edited."""
    import shutil

    shutil.copytree(project, dest, ignore=shutil.ignore_patterns(".snakemake"))
    if edit:
        _with_config(dest, edit)
    return dest


def test_copied_results_with_other_settings_are_refused_naming_file_and_key(project, workflow,
                                                                            tmp_path):
    # without the working folder's .snakemake/metadata, Snakemake kept the old numbers under
    # a changed config ("Nothing to be done" for top_k 100 -> 1); the jobs' records in the
    # results folder are compared with the config instead
    same = _copy_project(project, tmp_path / "same")
    counts, out = dry_run(same, workflow)
    assert "were made with other settings" not in out
    other = _copy_project(project, tmp_path / "other",
                          lambda c: c["retrieval"].update(top_k=60))
    proc = snakemake(other, "-n", workflow=workflow)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "output(s) in results were made with other settings or code than this run's" in out
    assert ("results/qasper/minilm/none/runs/A0.parquet (rule retrieve): retrieval.top_k was "
            "100, is 60") in out, out[-3000:]
    # the rules to rerun: retrieve, and the report page, which prints the share of top_k
    # results a routed run back-filled
    m = re.search(r"`snakemake --forcerun ([\w ]+)`", out)
    assert m and "retrieve" in m.group(1).split(), out[-3000:]
    # rerunning them as the message says is not refused, and plans the retrieval jobs
    proc = snakemake(other, "-n", "--forcerun", *m.group(1).split(), workflow=workflow)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert job_counts(proc.stdout)["retrieve"] == 2 * len(CONDITIONS)


def test_fresh_run_is_byte_identical(project, tmp_path):
    other = tmp_path / "b"
    _write_project(other)
    proc = snakemake(other)  # the repository's workflow, not the copy
    assert proc.returncode == 0, proc.stderr[-4000:]
    a, b = project / "results", other / "results"
    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    files = [f for f in files if f.parts[0] != "report"]
    # per corpus: corpus (5: documents, paragraphs, gold sections, queries, qrels), token
    # table (1), induced sections (1), BM25 per query (1), chunksets (3: A0, G2, G3), runs (4),
    # scores (4), summary (1), contrasts (3: contrasts, per question type, dose-response);
    # the Wikipedia corpus adds its query candidates: 2 * 23 + 1 = 47
    assert len(files) == 2 * (5 + 1 + 1 + 1 + 3 + 4 + 4 + 1 + 3) + 1
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    npys = sorted(p.relative_to(a) for p in a.rglob("*.npy"))
    assert len(npys) == 2 * 4
    for rel in npys:
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
    # ten conditions (the eleven less A1) on one corpus: eight chunksets to chunk and embed
    # (A0, A2, A3-d1, A3-d2, A3, P, G2, G3; A4 reads A3's, G4 reads G3's), one inducer run, one
    # token table, ten runs, and one score job for the one cell (it scores all ten conditions)
    assert counts["induce_structure"] == 1 and counts["tokenize_corpus"] == 1
    assert counts["chunk"] == 8 and counts["embed_chunks"] == 8
    assert counts["retrieve"] == 10 and counts["score"] == 1
    outputs = re.findall(r"output: (.+)", proc.stdout)
    files = [f.strip() for line in outputs for f in line.split(",")]
    assert len(files) == len(set(files))


def test_all_eleven_conditions_replay_the_recorded_llm(tmp_path):
    """The full grid (the default's ten conditions and A1) on two papers: the A family's
    structure comes from the default's tuned TextTiling (no LLM), A1's contexts (SmolLM2-135M)
    replay from resources/llm, which holds the A1 contexts of the sample's first two papers
    (A0's windows are sized per document, so they are the windows of any run that includes
    those papers)."""
    root = tmp_path / "eleven"
    write_project(root, ALL_CONDITIONS, n_papers=2,
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
    assert (induction["inducer"], induction["n_documents"]) == ("texttiling", 2)
    assert "llm" not in induction and induction["fallback"] == 0
    contrasts = pl.read_parquet(res / "minilm" / "none" / "contrasts.parquet")
    primary = contrasts.filter(pl.col("primary"))
    assert sorted(primary["contrast"].to_list()) == ["C1", "C2", "C3", "C4"]
    assert primary["p_holm"].is_between(0, 1).all()
    dose = pl.read_parquet(res / "minilm" / "none" / "dose_response.parquet")
    assert dose.height > 0


def test_wikipedia_corpus_replays_its_recorded_queries(tmp_path):
    """The default's Wikipedia corpus end to end: five articles from the bundled XML export,
    synthetic queries replayed from resources/llm, structure induced by the default's tuned
    TextTiling. (A1 is not in the default: its Wikipedia contexts are not recorded.)"""
    from structablate.queries import check_leakage

    root = tmp_path / "wiki"
    write_project(root, ["A0", "A3", "G2"], corpora=("wikipedia",),
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
    assert (induction["inducer"], induction["n_documents"]) == ("texttiling", 5)
    assert "llm" not in induction and induction["fallback"] == 0
    for cond in ["A0", "A3", "G2"]:
        scores = pl.read_parquet(res / "minilm" / "none" / "scores" / f"{cond}.parquet")
        assert scores["qid"].to_list() == sorted(queries["qid"].to_list())
    bm25 = json.loads((res / "bm25.json").read_text())
    assert bm25["bm25_corpus"]["n_queries"] == queries.height
    page = (root / "results" / "report" / "index.md").read_text()
    assert "SYNTHETIC" in page and "queries (wikipedia): backend `llamacpp`" in page
