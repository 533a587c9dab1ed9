"""A user corpus without questions plans LLM query generation; with questions it does not."""

import pytest
import yaml
from conftest import REPO
from workflow_util import job_counts, snakemake

from structablate.config import ConfigError, check_config


def _cfg(tmp_path, queries):
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    # the question writer of the default's Wikipedia corpus, as this corpus's top-level model
    cfg["llm"].update(cfg["corpora"]["wikipedia"]["queries"]["llm"])
    cfg["llm"]["cache"] = str(REPO / cfg["llm"]["cache"])
    corpus = {"type": "markdown", "path": str(REPO / "resources/byo/qasper-markdown"),
              "heading_separator": " ::: "}
    if queries:
        corpus["queries"] = str(REPO / "resources/byo/qasper-markdown-queries.jsonl")
    cfg["corpora"] = {"mine": corpus}
    cfg["conditions"] = ["G2", "G3"]
    cfg["size_match_structure"] = "gold"
    return cfg


@pytest.mark.parametrize("queries", [True, False])
def test_dry_run_plans_the_right_query_source(tmp_path, queries):
    cfg = _cfg(tmp_path, queries)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    proc = snakemake(tmp_path, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    if queries:
        assert counts["build_byo"] == 1 and "generate_queries" not in counts
    else:
        assert counts["build_byo_documents"] == 1 and counts["generate_queries"] == 1
        assert "build_byo" not in counts


def test_user_corpus_without_queries_needs_an_llm(tmp_path):
    cfg = _cfg(tmp_path, queries=False)
    cfg.pop("llm")
    with pytest.raises(ConfigError, match=r"corpora.mine.queries: without a queries file"):
        check_config(cfg)


def test_documents_of_a_corpus_without_queries_build_alone(tmp_path):
    import json

    import polars as pl

    from structablate.tables import check_table

    cfg = _cfg(tmp_path, queries=False)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    proc = snakemake(tmp_path, "results/mine/corpus_report.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    docs = check_table(pl.read_parquet(tmp_path / "results/mine/documents.parquet"), "documents")
    assert docs.height == 3
    report = json.loads((tmp_path / "results/mine/corpus_report.json").read_text())
    assert report["documents"] == 3 and not (tmp_path / "results/mine/queries.parquet").exists()
