"""A user corpus's questions are mapped apart from its documents (issue 42, item 13): editing a
question's text, or a setting only questions read, reruns the question mapping and what reads
questions, never the documents build, the token table, the chunks or their vectors."""

import json
import shutil

import polars as pl
import pytest
import yaml
from conftest import REPO
from workflow_util import job_counts, snakemake

from structablate.corpus.byo import build_user_corpus, build_user_documents, map_user_questions
from structablate.corpus.flatten import (
    documents_frame,
    documents_from_frames,
    paragraphs_frame,
    sections_frame,
)
from structablate.corpus.questions import qrels_frame, queries_frame
from structablate.settings import UserCorpus

BYO = REPO / "resources" / "byo"
# what reads a user corpus's documents but not its questions
DOCUMENT_JOBS = {"build_user_documents", "tokenize_corpus", "chunk", "embed_chunks"}


def _corpus(queries: str) -> UserCorpus:
    return UserCorpus(type="markdown", path=str(BYO / "qasper-markdown"), queries=queries,
                      heading_separator=" ::: ")


def test_questions_mapped_on_the_written_tables_equal_those_mapped_on_the_parsed_documents():
    """The question job reads the documents back from the tables the documents job wrote;
    its questions, spans and funnel equal a build that maps them on the parsed documents."""
    corpus = _corpus(str(BYO / "qasper-markdown-queries.jsonl"))
    direct = build_user_corpus(corpus, "mine")
    docs = build_user_documents(corpus, "mine")
    assert docs.questions is None and docs.report["queries"] is None
    back = documents_from_frames(
        documents_frame(docs.documents, "mine"), paragraphs_frame(docs.documents),
        sections_frame([(d.doc_id, d.sections) for d in docs.documents]))
    mapped = map_user_questions(corpus, back, json.loads(json.dumps(docs.report)))
    assert direct.questions and mapped.questions_from == "user"
    assert queries_frame(mapped.questions).equals(queries_frame(direct.questions))
    assert qrels_frame(mapped.questions).equals(qrels_frame(direct.questions))
    assert json.dumps(mapped.report) == json.dumps(direct.report)
    assert docs.report["queries"] is None  # the documents build's report is not changed


def _project(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    questions = root / "questions.jsonl"
    shutil.copy(BYO / "qasper-markdown-queries.jsonl", questions)
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg.pop("llm", None)  # G2 on a corpus with its own questions calls no LLM
    cfg["corpora"] = {"mine": {"type": "markdown", "path": str(BYO / "qasper-markdown"),
                               "heading_separator": " ::: ", "queries": str(questions)}}
    cfg["conditions"] = ["G2"]
    cfg["size_match_structure"] = "gold"
    (root / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return root, questions, cfg


@pytest.mark.slow
def test_a_question_edit_reruns_only_what_reads_questions(tmp_path):
    root, questions, cfg = _project(tmp_path)
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    chunks = sorted((root / "results").rglob("chunks/*.parquet"))
    assert chunks
    before = {p: p.stat().st_mtime_ns for p in chunks}

    rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    rows[0]["query"] = rows[0]["query"].rstrip("?") + ", in a few words?"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = job_counts(snakemake(root, "-n").stdout)
    assert plan.get("map_user_questions") == 1 and plan.get("embed_queries") == 1, plan
    assert not DOCUMENT_JOBS & set(plan), plan

    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    queries = pl.read_parquet(next((root / "results").rglob("mine/queries.parquet")))
    assert rows[0]["query"] in queries["text"].to_list()
    assert {p: p.stat().st_mtime_ns for p in chunks} == before

    # a setting only questions read: the same
    cfg["corpora"]["mine"]["fuzzy_min_ratio"] = 0.9
    (root / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    plan = job_counts(snakemake(root, "-n").stdout)
    assert plan.get("map_user_questions") == 1, plan
    assert not DOCUMENT_JOBS & set(plan), plan

    # while a document setting still rebuilds the documents
    cfg["corpora"]["mine"]["lead_heading"] = "Opening"
    (root / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    plan = job_counts(snakemake(root, "-n").stdout)
    assert plan.get("build_user_documents") == 1 and plan.get("chunk"), plan
