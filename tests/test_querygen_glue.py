"""The glue scripts generate_queries.py (replaying a recording) and bm25_check.py run end to
end on contract tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
from workflow_util import glue_config, run_glue

from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
from structablate.io import write_parquet
from structablate.llm.client import client_from_config
from structablate.queries import QueryGenSettings, generate_queries
from structablate.settings import parse
from structablate.tables import check_table, frame


def test_generate_queries_then_bm25_check_scripts(tmp_path, monkeypatch):
    from test_querygen import Scripted, make_doc

    monkeypatch.setattr(sys, "stderr", sys.stderr)
    docs = [make_doc("Doc one"), make_doc("Doc two")]
    paths = {k: str(tmp_path / f"{k}.parquet") for k in ("documents", "paragraphs", "gold")}
    write_parquet(documents_frame(docs, "toy"), paths["documents"])
    write_parquet(paragraphs_frame(docs), paths["paragraphs"])
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), paths["gold"])
    qcfg = {"per_type": 2, "structural_min_chars": 200}
    llm = {"model": "scripted", "cache": str(tmp_path / "rec.jsonl"), "backend": "none"}
    recorder = client_from_config(llm)
    recorder._backend = Scripted()
    expected = generate_queries(docs, recorder, parse(QueryGenSettings, qcfg))
    recorder.close()

    out = SimpleNamespace(**{k: str(tmp_path / f"out_{k}.{ext}") for k, ext in (
        ("queries", "parquet"), ("qrels", "parquet"), ("funnel", "json"),
        ("candidates", "parquet"))})
    config = glue_config({"toy": {"type": "wikipedia", "source": {"mode": "xml", "path": "x"},
                                  "queries": {**qcfg, "llm": {**llm, "mode": "replay"}}}})
    run_glue("generate_queries", tmp_path, config=config, wildcards={"corpus": "toy"},
             input={"documents": paths["documents"], "paragraphs": paths["paragraphs"],
                    "sections": paths["gold"]},
             output=vars(out))
    queries = check_table(pl.read_parquet(out.queries), "queries")
    qrels = check_table(pl.read_parquet(out.qrels), "qrels")
    assert queries.equals(expected.queries) and qrels.equals(expected.qrels)
    funnel = json.loads(Path(out.funnel).read_text())
    assert funnel["corpus"] == "toy" and funnel["llm"]["generated"] == 0
    assert funnel["total"]["finals"] == queries.height > 0
    assert pl.read_parquet(out.candidates).height == funnel["total"]["candidates"]

    rows = []
    for d in docs:
        for p in d.paragraphs:
            rows.append({"chunk_id": f"G2:{d.doc_id}:{p.para_idx}", "doc_id": d.doc_id,
                         "start": p.start, "end": p.end, "section_idx": 0, "top_section": 0,
                         "prefix": "", "content_tokens": 50, "prefix_tokens": 0})
    chunk_path = str(tmp_path / "G2.parquet")
    write_parquet(frame("chunks", rows), chunk_path)
    bout = SimpleNamespace(json=str(tmp_path / "bm25.json"),
                           per_query=str(tmp_path / "bm25.parquet"))
    run_glue("bm25_check", tmp_path, config=config, wildcards={"corpus": "toy"},
             input={"chunks": chunk_path, "documents": paths["documents"],
                    "queries": out.queries, "qrels": out.qrels},
             output=vars(bout))
    rep = json.loads(Path(bout.json).read_text())
    assert rep["chunkset"] == "G2" and rep["bm25_corpus"]["n_queries"] == queries.height
    assert 0 <= rep["gold_top1_corpus_wide"] <= 1 and 0 <= rep["gold_top1_within_document"] <= 1
    assert rep["rouge_l_vs_evidence"]["q100"] <= 0.35
    pq = pl.read_parquet(bout.per_query)
    assert pq.height == queries.height
    assert {"hit_corpus", "hit_document", "rouge_l"} <= set(pq.columns)
