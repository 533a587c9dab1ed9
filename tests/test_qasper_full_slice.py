"""config/qasper-full-cpu.yaml end to end on a 30-paper slice of the real QASPER v0.3 files.

The committed configuration runs unchanged, with the one command its header documents (the
data folder given as ``corpora.qasper.data_dir`` on the command line, ``results`` set beside
it). The slice holds, from each of the three v0.3 files (train, dev, test), the 10 papers
with the fewest full-text characters among those with at least one question and three
top-level sections, written under the original file names, so the config's ``sources`` stay
as committed. The shortest papers keep the run short on a shared 2-core machine; the test
checks the machinery (every condition, every question, statistics, benchmarks, report), not
the numbers, which belong to the full run (docs/results/qasper-full-cpu.md).

Checks: the run completes; the funnel counts the slice's papers; every kept question has a
score in every condition (none skipped); the contrast table holds exactly the contrasts whose
conditions are in the grid (C1 needs A1 and is left out), with ordered CIs, Holm-adjusted p
values and both MixedLM specifications on the primary metric; every job wrote a
``benchmark:`` file next to its log; embeddings ran on the OpenVINO float32 backend and
shared texts between chunksets came from the cache; the TREC runs hold at most ``top_k``
results per question; the report page exists.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, shared_file
from workflow_util import snakemake

pytestmark = pytest.mark.slow

CONFIG = REPO / "config" / "qasper-full-cpu.yaml"
PER_SPLIT = 10


def _top_sections(paper: dict) -> int:
    return len({(s.get("section_name") or "").split(":::")[0].strip()
                for s in paper["full_text"]})


def write_slice(dest: Path, sources: list[str]) -> dict[str, int]:
    """The slice (see the module docstring) under ``dest``; returns papers per file."""
    dest.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in sources:
        papers = json.loads(shared_file("qasper", name).read_text())
        eligible = sorted(
            (sum(len(p) for s in v["full_text"] for p in s["paragraphs"]), k)
            for k, v in papers.items() if v["qas"] and _top_sections(v) >= 3)
        keep = sorted(k for _, k in eligible[:PER_SPLIT])
        (dest / name).write_text(json.dumps({k: papers[k] for k in keep}))
        counts[name] = len(keep)
    return counts


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cfg = yaml.safe_load(CONFIG.read_text())
    sources = [s["path"] for s in cfg["corpora"]["qasper"]["sources"]]
    root = tmp_path_factory.mktemp("qfull")
    data = root / "qasper-data"
    counts = write_slice(data, sources)
    (root / "config.yaml").write_text(CONFIG.read_text())
    proc = snakemake(root, "--config", f"corpora={{qasper: {{data_dir: {data}}}}}",
                     "results=results", timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root / "results", cfg, counts


def test_funnel_counts_the_slice(run):
    results, _, counts = run
    funnel = json.loads((results / "qasper" / "funnel.json").read_text())
    assert funnel["papers"] == sum(counts.values()) == 3 * PER_SPLIT
    queries = pl.read_parquet(results / "qasper" / "queries.parquet")
    assert funnel["kept"] == queries.height > 0


def test_every_question_scored_in_every_condition(run):
    results, cfg, _ = run
    qids = set(pl.read_parquet(results / "qasper" / "queries.parquet")["qid"].to_list())
    cell = results / "qasper" / "minilm" / "none"
    for cond in cfg["conditions"]:
        scores = pl.read_parquet(cell / "scores" / f"{cond}.parquet")
        assert set(scores["qid"].to_list()) == qids, cond
        assert scores.height == len(qids), cond
        for m in cfg["metrics"]["measures"]:
            col = scores[m]
            assert col.null_count() == 0, (cond, m)
            assert 0.0 <= col.min() and col.max() <= 1.0 + 1e-9, (cond, m)
        lines = (cell / "trec" / f"{cond}.run").read_text().splitlines()
        per_q = pl.DataFrame({"qid": [ln.split()[0] for ln in lines]})["qid"].value_counts()
        assert per_q["count"].max() <= cfg["retrieval"]["top_k"], cond


def test_contrasts_are_those_of_the_grid_with_both_mixedlm_fits(run):
    results, cfg, _ = run
    stats = cfg["statistics"]
    grid = set(cfg["conditions"])
    wanted = {name for name, (a, b) in {**stats["contrasts"], **stats["extra_contrasts"]}.items()
              if a in grid and b in grid}
    assert "C1" not in wanted  # A1 is not in this grid
    c = pl.read_parquet(results / "qasper" / "minilm" / "none" / "contrasts.parquet")
    assert set(c["contrast"].to_list()) == wanted
    assert set(c["metric"].to_list()) == set(cfg["metrics"]["measures"])
    for row in c.iter_rows(named=True):
        assert row["ci_low"] <= row["delta"] + 1e-12 <= row["ci_high"] + 2e-12, row
        assert row["p_holm"] >= row["p"] - 1e-12, row
        if row["metric"] == stats["primary"]["metric"]:
            # only the pre-registered family is primary; MixedLM checks both families' rows
            assert row["primary"] == (row["family"] == "pre-registered"), row
            assert math.isfinite(row["p_mixedlm"]) and math.isfinite(row["p_mixedlm_query"]), row
        else:
            assert math.isnan(row["p_mixedlm"]), row  # mixedlm: primary


def test_every_job_wrote_a_benchmark(run):
    results, _, _ = run
    logs = {p.relative_to(results / "logs").with_suffix("").as_posix()
            for p in (results / "logs").rglob("*.log")}
    marks = {p.relative_to(results / "benchmarks").with_suffix("").as_posix()
             for p in (results / "benchmarks").rglob("*.tsv")}
    assert logs and logs == marks
    for name in marks:
        table = pl.read_csv(results / "benchmarks" / f"{name}.tsv", separator="\t")
        assert table.height == 1 and {"s", "max_rss"} <= set(table.columns), name
        assert table["s"][0] > 0, name


def test_embeddings_ran_openvino_float32_and_reused_shared_texts(run):
    results, cfg, _ = run
    emb = results / "qasper" / "minilm" / "embeddings"
    stats = {p.stem: json.loads(p.read_text()) for p in emb.glob("*.json")}
    assert "queries" in stats and len(stats) == 1 + 8  # queries and the eight chunksets
    for name, s in stats.items():
        assert (s["backend"], s["dtype"]) == ("openvino", "float32"), name
        assert s["computed"] + s["cache_hits"] == s["unique_texts"], name
    # A3-d2 differs from A3 only in chunks deeper than two levels: most texts are shared
    assert sum(s["cache_hits"] for s in stats.values()) > 0


def test_report_page(run):
    results, _, _ = run
    page = (results / "report" / "index.md").read_text()
    assert "qasper" in page.lower()
