"""The bottom text layer: ``text/`` imports nothing of the package above it, and the layers
that share its utilities (queries, chunking, structure, retrieval) no longer reach into each
other for them."""

from __future__ import annotations

import ast
from pathlib import Path

from structablate.corpus.flatten import documents_from_frames, top_section_ids
from structablate.text.rouge import rouge_l, rouge_quantiles
from structablate.text.sentences import sentence_spans
from structablate.text.words import ngrams, tokenize

PKG = Path(__file__).resolve().parents[1] / "src" / "structablate"


def _package_imports(path: Path) -> set[str]:
    """``structablate`` modules ``path`` imports anywhere (function-local imports too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "structablate" or m.startswith("structablate.")}


def test_text_layer_imports_only_itself():
    files = sorted((PKG / "text").glob("*.py"))
    assert {p.stem for p in files} >= {"__init__", "sentences", "words", "rouge"}
    for p in files:
        outside = {m for m in _package_imports(p) if not m.startswith("structablate.text")}
        assert not outside, f"{p.name} imports {sorted(outside)}"


def test_no_sideways_imports_for_text_utilities():
    # BM25 takes its tokenizer and ROUGE-L from text/, not from the query pipeline
    assert not {m for m in _package_imports(PKG / "retrieval" / "bm25.py")
                if m.startswith("structablate.queries")}
    # query generation takes sentences and top-level groups from text/ and corpus/
    for p in (PKG / "queries").glob("*.py"):
        bad = {m for m in _package_imports(p)
               if m.startswith(("structablate.chunking", "structablate.structure"))}
        assert not bad, f"queries/{p.name} imports {sorted(bad)}"
    assert not (PKG / "bm25.py").exists() and not (PKG / "chunking" / "sentences.py").exists()


def test_text_utilities_behave():
    text = "Dr. Smith arrived. He met J. Doe at 5 p.m. on Friday! Was it late?"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Dr. Smith arrived.", "He met J. Doe at 5 p.m. on Friday!", "Was it late?"]
    assert tokenize("État-major's 2nd Army") == ["etat", "major", "s", "2nd", "army"]
    assert ngrams(["a", "b", "c", "a", "b"], 2) == {("a", "b"), ("b", "c"), ("c", "a")}
    assert rouge_l("the cat sat", "the cat sat") == 1.0
    assert rouge_l("dog", "the cat sat") == 0.0
    # LCS 2 of 3 query and 4 evidence tokens: P 2/3, R 2/4, F 2PR/(P+R) = 4/7
    assert abs(rouge_l("cat sat down", "the cat sat up") - 4 / 7) < 1e-12
    assert rouge_quantiles([]) is None
    q = rouge_quantiles([0.0, 1.0])
    assert q["q0"] == 0.0 and q["q50"] == 0.5 and q["q100"] == 1.0 and q["mean"] == 0.5


def test_documents_from_frames_round_trips_and_top_sections_group():
    from structablate.corpus.flatten import (
        DocumentBuilder,
        documents_frame,
        paragraphs_frame,
        sections_frame,
    )

    b = DocumentBuilder("d1", "T")
    b.add_paragraph("One.", ["Intro"])
    b.add_paragraph("Two.", ["Intro", "Sub"])
    b.add_paragraph("Three.", ["Next"])
    b.add_paragraph("Four.", ["Next", "Deeper", "Deepest"])
    doc = b.build(topic="t")
    docs = documents_from_frames(documents_frame([doc], "c"), paragraphs_frame([doc]),
                                 sections_frame([(doc.doc_id, doc.sections)]))
    assert len(docs) == 1
    got = docs[0]
    assert (got.doc_id, got.title, got.text, got.topic) == ("d1", "T", doc.text, "t")
    assert got.paragraphs == doc.paragraphs and got.sections == doc.sections
    assert documents_from_frames(documents_frame([doc], "c"), paragraphs_frame([doc]))[0] \
        .sections == []
    # Intro and its child form group 0; Next (section 2) and its grandchild form group 2
    assert top_section_ids(doc.sections) == [0, 0, 2, 2]
