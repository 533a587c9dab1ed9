"""The id policy (structablate.ids, docs/contracts.md "Identifiers") on real user files: a
qid that is not one token is refused at read, naming file, line and rule; two doc_ids that
meet in their chunk-id form are refused at corpus build naming both; a TREC file never holds
a raw whitespace id; and JSONL records that hold U+2028 or U+0085 inside a string read."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from conftest import REPO, build_byo

from structablate.corpus.byo import ByoInputError
from structablate.ids import id_token
from structablate.metrics.trec import write_trec_qrels, write_trec_run

BYO = REPO / "resources" / "byo"
CFG = {"type": "markdown", "heading_separator": " ::: ", "lead_heading": "Front matter"}


def _queries(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _first_rows(n=3):
    text = (BYO / "qasper-markdown-queries.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()[:n]]


@pytest.mark.parametrize("qid", ["q 1", "q\t1", "q\u00a01"])
def test_a_qid_with_whitespace_is_refused_naming_file_line_and_rule(tmp_path, qid):
    """Before: read as given, and written raw into the TREC run and qrels files."""
    rows = _first_rows()
    rows[1]["qid"] = qid
    q = _queries(tmp_path / "q.jsonl", rows)
    with pytest.raises(ByoInputError) as err:
        build_byo({**CFG, "path": str(BYO / "qasper-markdown"), "queries": str(q)}, "c")
    assert str(err.value).startswith(f"{q}:2: qid {qid!r} contains whitespace")
    assert "TREC run and qrels files" in str(err.value)
    # the same in a TSV file
    tsv = tmp_path / "q.tsv"
    tsv.write_text(f"qid\tdoc_id\tquery\nok\t{rows[0]['doc_id']}\tA question?\n"
                   f"{qid.replace(chr(9), ' ')}\t{rows[0]['doc_id']}\tAnother?\n")
    with pytest.raises(ByoInputError, match=rf"^{tsv}:3: qid .* contains whitespace"):
        build_byo({**CFG, "path": str(BYO / "qasper-markdown"), "queries": str(tsv)}, "c")


def test_doc_ids_that_meet_in_their_chunk_id_form_are_refused_at_build(tmp_path):
    """Before: both were built, and every chunk job failed late on duplicate chunk ids."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha beta.md").write_text("# A\n\n## S\n\nfirst text here\n")
    (docs / "alpha_beta.md").write_text("# B\n\n## S\n\nsecond text here\n")
    assert id_token("alpha beta") == id_token("alpha_beta")
    with pytest.raises(ByoInputError) as err:
        build_byo({**CFG, "path": str(docs), "skip_bad_files": True}, "c")
    msg = str(err.value)
    assert msg.startswith(f"{docs / 'alpha_beta.md'}: doc_id 'alpha_beta' and doc_id "
                          f"'alpha beta' (from {docs / 'alpha beta.md'}) both become "
                          "'alpha_beta' in chunk ids"), msg


def test_a_jsonl_doc_id_with_a_line_break_is_refused(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"doc_id": "a\u2028b", "title": "T", "text": "# H\n\nbody text"})
                 + "\n")
    with pytest.raises(ByoInputError, match=r"d\.jsonl:1: doc_id 'a\\u2028b' contains the "
                                            r"control character U\+2028"):
        build_byo({"type": "jsonl", "path": str(f)}, "c")


def test_trec_files_never_hold_a_raw_whitespace_id(tmp_path):
    run = pl.DataFrame({"qid": ["q 1"], "rank": [1], "chunk_id": ["G2:d:0"], "score": [1.0]})
    with pytest.raises(ValueError, match=r"qid 'q 1' is not one token"):
        write_trec_run(run, tmp_path / "x.run")
    chunks = pl.DataFrame({"chunk_id": ["G2:d x:0"], "doc_id": ["d x"], "start": [0],
                           "end": [5]})
    qrels = pl.DataFrame({"qid": ["q1"], "doc_id": ["d x"], "start": [0], "end": [5]})
    with pytest.raises(ValueError, match=r"chunk_id 'G2:d x:0' is not one token"):
        write_trec_qrels(qrels, chunks, tmp_path / "x.qrels")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("char", ["\u2028", "\u0085", "\u2029"])
def test_json_lines_with_unicode_line_separators_inside_strings_read(tmp_path, char):
    """Before: str.splitlines cut the record at the separator: 'invalid JSON'."""
    rows = _first_rows()
    rows[0]["query"] = rows[0]["query"].replace(" ", char, 1)
    q = _queries(tmp_path / "q.jsonl", rows)
    assert char in q.read_text(encoding="utf-8")
    _, questions, _ = build_byo({**CFG, "path": str(BYO / "qasper-markdown"),
                                 "queries": str(q)}, "c")
    assert len(questions) >= 1
    docs = tmp_path / "d.jsonl"
    docs.write_text(json.dumps({"doc_id": "d1", "title": "T",
                                "text": f"# H\n\nbody{char}text"}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    built, _, _ = build_byo({"type": "jsonl", "path": str(docs)}, "c")
    assert [d.doc_id for d in built] == ["d1"]


def test_doc_ids_from_a_copied_corpus_still_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(BYO / "qasper-markdown", docs)
    built, _, _ = build_byo({**CFG, "path": str(docs)}, "c")
    assert len(built) == len(list(docs.glob("*.md")))
