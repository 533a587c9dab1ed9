"""JSONL adapter and user queries (JSONL and TSV): rules, funnel, bad inputs."""

from __future__ import annotations

import json

import pytest
from conftest import build_byo

from structablate.corpus.byo import ByoInputError
from structablate.corpus.jsonl import parse_record
from structablate.corpus.questions import qrels_frame, queries_frame
from structablate.corpus.verify import verify_document

TEXT = "Lead words.\n\nAlpha one.\nstill alpha.\n\nBeta.\n\nGamma.\n\nTail of alpha."


def rec(**kw):
    base = {"doc_id": "d1", "title": "Doc", "text": TEXT}
    base.update(kw)
    return base


def parsed(obj):
    doc = parse_record(obj, where="c.jsonl:1")
    assert verify_document(doc) == []
    return doc


def test_offsets_nested_and_flat():
    a = TEXT.index("Alpha")
    b = TEXT.index("Beta")
    g = TEXT.index("Gamma")
    t = TEXT.index("Tail")
    nested = [{"title": "A", "level": 1, "start": a, "end": len(TEXT)},
              {"title": "B", "level": 2, "start": b, "end": g},
              {"title": "G", "level": 2, "start": g, "end": t}]
    doc = parsed(rec(sections=nested))
    assert doc.paragraph_text(1) == "Alpha one. still alpha."
    assert [(s.path, s.para_end - s.para_start) for s in doc.sections] == [
        (("Introduction",), 1), (("A",), 1), (("A", "B"), 1), (("A", "G"), 1), (("A",), 1)]
    flat = [{"title": "A", "level": 1, "start": a}, {"title": "B", "level": 2, "start": b}]
    doc = parsed(rec(sections=flat))
    assert [s.path for s in doc.sections] == [("Introduction",), ("A",), ("A", "B")]
    assert doc.sections[-1].para_end == 5
    doc = parsed(rec(sections=[]))
    assert [s.path for s in doc.sections] == [("Introduction",)]


def test_heading_markers_and_no_sections():
    text = "intro\n\n# One\nfirst para\n\n## Sub ##\nsecond\n\n# Two\n\nthird"
    doc = parsed(rec(text=text))
    assert [(s.path, doc.paragraph_text(s.para_start)) for s in doc.sections] == [
        (("Introduction",), "intro"), (("One",), "first para"), (("One", "Sub"), "second"),
        (("Two",), "third")]
    assert "#" not in doc.text
    doc = parsed(rec(text="just\n\ntext"))
    assert [(s.path, s.para_end) for s in doc.sections] == [(("Introduction",), 2)]


@pytest.mark.parametrize("obj, message", [
    ({"title": "t", "text": "x"}, r"c\.jsonl:1: missing field 'doc_id'"),
    (rec(title=3), r"c\.jsonl:1: field 'title' must be a string, not int"),
    (rec(text=None), r"field 'text' must be a string, not NoneType"),
    (rec(sections=[{"title": "A", "level": 1}]),
     r"c\.jsonl:1 \(doc_id 'd1'\): sections\[0\]: missing field 'start'"),
    (rec(sections=[{"title": "A", "level": 1, "start": 3}]),
     r"sections\[0\]: start 3 falls inside the paragraph at \[0, 11\)"),
    (rec(sections=[{"title": "A", "level": 1, "start": 13, "end": 20}]),
     r"sections\[0\]: end 20 falls inside the paragraph"),
    (rec(sections=[{"title": "A", "level": 1, "start": 13, "end": 37}]),
     r"the paragraph at \[38, 43\) lies in no section"),
    (rec(sections=[{"title": "A", "level": 1, "start": 13},
                   {"title": "B", "level": 1, "start": 0}]),
     r"sections\[1\]: start 0 is before the previous section's 13"),
    (rec(sections=[{"title": "A", "level": 0, "start": 0}]), r"level 0 must be >= 1"),
    (rec(sections=[{"title": "A", "level": 1, "start": 999}]), r"start 999 outside the text"),
])
def test_record_errors_name_line_and_field(obj, message):
    with pytest.raises(ByoInputError, match=message):
        parse_record(obj, where="c.jsonl:1")


def write_corpus(tmp_path):
    lines = [
        json.dumps(rec(sections=[{"title": "A", "level": 1, "start": TEXT.index("Alpha")}])),
        json.dumps({"doc_id": "d2", "title": "Two", "text": "# H\n\nsecond doc body"}),
        "{not json",
        json.dumps({"doc_id": "d3", "text": "no title"}),
    ]
    p = tmp_path / "docs.jsonl"
    p.write_bytes(("\n".join(lines) + "\n").encode() + b"{\"doc_id\": \"d4\xff\"}\n")
    return p


def test_jsonl_corpus_skip_bad_lines(tmp_path):
    p = write_corpus(tmp_path)
    cfg = {"type": "jsonl", "path": str(p)}
    with pytest.raises(ByoInputError, match=r"docs\.jsonl:3: invalid JSON at column 2"):
        build_byo(cfg, "j")
    docs, _, report = build_byo({**cfg, "skip_bad_files": True}, "j")
    assert [d.doc_id for d in docs] == ["d1", "d2"]
    assert [(s["where"].rsplit(":", 1)[1], s["doc_id"]) for s in report["skipped"]] == [
        ("3", None), ("4", "d3"), ("5", None)]
    assert report["skipped"][1]["reason"] == "missing field 'title'"
    assert report["skipped"][2]["reason"].startswith("not UTF-8 (byte 0xff")


def write_queries(tmp_path, rows):
    q = tmp_path / "q.jsonl"
    q.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return q


def test_user_queries_cascade_spans_and_funnel(tmp_path):
    p = write_corpus(tmp_path)
    alpha = TEXT.index("Alpha")
    q = write_queries(tmp_path, [
        {"qid": "q1", "doc_id": "d1", "query": "  what   alpha? ", "qtype": "factoid",
         "evidence": ["Alpha one. still\nalpha.", "Beta."]},
        {"qid": "q2", "doc_id": "d1", "query": "fuzzy", "evidence": ["Alpha one, still alpha!"]},
        {"qid": "q3", "doc_id": "d1", "query": "section", "evidence": "Introduction"},
        {"qid": "q4", "doc_id": "d1", "query": "span", "spans": [[alpha - 2, alpha + 9]]},
        {"qid": "q5", "doc_id": "d1", "query": "nothing"},
        {"qid": "q6", "doc_id": "d1", "query": "unmapped", "evidence": ["zzz qqq"]},
        {"qid": "q7", "doc_id": "d3", "query": "skipped doc", "evidence": ["x"]},
        {"qid": "q8", "doc_id": "nope", "query": "unknown doc", "evidence": ["x"]},
    ])
    cfg = {"type": "jsonl", "path": str(p), "queries": str(q), "skip_bad_files": True}
    docs, questions, report = build_byo(cfg, "j")
    qs = queries_frame(questions)
    assert qs["qid"].to_list() == ["q1", "q2", "q3", "q4"]
    assert qs["qtype"].to_list() == ["factoid", "user", "user", "user"]
    assert qs["text"][0] == "what alpha?"
    qr = qrels_frame(questions)
    text = docs[0].text
    got = [(r["qid"], text[r["start"]:r["end"]], r["step"]) for r in qr.iter_rows(named=True)]
    assert got == [
        ("q1", "Alpha one. still alpha.", "exact"), ("q1", "Beta.", "exact"),
        ("q2", "Alpha one. still alpha.", "fuzzy"),
        ("q3", "Lead words.", "section"),
        ("q4", "Alpha one", "span"),
    ]
    f = report["queries"]
    assert f["funnel"] == [["all queries", 8], ["on a document of the corpus", 6],
                           ["with evidence", 5], ["with mapped evidence (kept)", 4]]
    assert (f["dropped_unknown_document"], f["dropped_skipped_document"]) == (1, 1)
    assert f["evidence_by_step"] == {"exact": 2, "fuzzy": 1, "section": 1, "span": 1,
                                     "unmapped": 1}
    # without skipping, the unknown document stops the build naming the line
    (tmp_path / "d.jsonl").write_text(json.dumps(rec()) + "\n")
    with pytest.raises(ByoInputError, match=r"q\.jsonl:7: query 'q7' names doc_id 'd3', "
                       r"which is not a document of the corpus"):
        build_byo({**cfg, "path": str(tmp_path / "d.jsonl"), "skip_bad_files": False},
                         "j")


def test_tsv_queries_and_query_errors(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(rec()) + "\n")
    tsv = tmp_path / "q.tsv"
    tsv.write_text("qid\tdoc_id\tquery\tevidence\tstart\tend\n"
                   "a\td1\tWhat beta?\tBeta.\t\t\n"
                   "a\td1\tWhat beta?\t\t0\t4\n"
                   "b\td1\tGamma?\tGamma.\t\t\n")
    cfg = {"type": "jsonl", "path": str(tmp_path / "d.jsonl"), "queries": str(tsv)}
    docs, questions, _ = build_byo({**cfg, "queries": {"path": str(tsv)}}, "t")
    assert [(q.qid, q.spans, q.steps) for q in questions] == [
        ("a", ((0, 4), (TEXT.index("Beta"), TEXT.index("Beta") + 5)), ("span", "exact")),
        ("b", ((TEXT.index("Gamma"), TEXT.index("Gamma") + 6),), ("exact",))]
    tsv.write_text("qid\tdoc_id\tquery\na\td1\tx\na\td2\ty\n")
    with pytest.raises(ByoInputError, match=r"q\.tsv:3: qid 'a' has another doc_id"):
        build_byo(cfg, "t")
    tsv.write_text("qid\tquery\n")
    with pytest.raises(ByoInputError, match=r"q\.tsv:1: header lacks column\(s\) doc_id"):
        build_byo(cfg, "t")
    q = write_queries(tmp_path, [{"qid": "a", "doc_id": "d1", "query": "x", "spans": [[5, 900]]}])
    with pytest.raises(ByoInputError, match=r"q\.jsonl:1: span \[5, 900\) of query 'a' is "
                       r"outside the flat text"):
        build_byo({**cfg, "queries": str(q)}, "t")
    q = write_queries(tmp_path, [{"qid": "a", "doc_id": "d1", "query": "x"},
                                 {"qid": "a", "doc_id": "d1", "query": "y"}])
    with pytest.raises(ByoInputError, match=r"q\.jsonl:2: qid 'a' already used at .*q\.jsonl:1"):
        build_byo({**cfg, "queries": str(q)}, "t")
    q = write_queries(tmp_path, [{"qid": "a", "query": "x"}])
    with pytest.raises(ByoInputError, match=r"q\.jsonl:1: missing field 'doc_id'"):
        build_byo({**cfg, "queries": str(q)}, "t")


def test_tsv_cells_are_read_with_csv_quoting_as_tools_write_them(tmp_path):
    # pandas' to_csv(sep="\t") and spreadsheets quote a cell holding a quote, a tab or a line
    # break: the whole cell in "...", a quote inside it doubled. Before, both quote layers
    # were kept as the question.
    (tmp_path / "d.jsonl").write_text(json.dumps(rec()) + "\n")
    tsv = tmp_path / "q.tsv"
    tsv.write_text('qid\tdoc_id\tquery\tevidence\n'
                   'a\td1\t"What is the ""X"" dataset?"\tBeta.\n'
                   'b\td1\t"Two\nlines, a\ttab"\tGamma.\n'
                   'c\td1\tsay "hi" plainly\tGamma.\n')
    cfg = {"type": "jsonl", "path": str(tmp_path / "d.jsonl"), "queries": str(tsv)}
    _, questions, _ = build_byo(cfg, "t")
    # (a question's whitespace is folded to single spaces, as every question's is)
    assert [q.text for q in questions] == ['What is the "X" dataset?', "Two lines, a tab",
                                            'say "hi" plainly']
    # what pandas writes reads back as the frame it was written from
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"qid": ["a", "b"], "doc_id": ["d1", "d1"],
                          "query": ['What is the "X" dataset?', 'A "quoted"\tcell'],
                          "evidence": ["Beta.", "Gamma."]})
    frame.to_csv(tsv, sep="\t", index=False)
    _, questions, _ = build_byo(cfg, "t")
    assert [q.text for q in questions] == [" ".join(t.split()) for t in frame["query"]]


def test_a_tsv_cell_with_a_quote_left_open_is_refused_with_its_line(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(rec()) + "\n")
    tsv = tmp_path / "q.tsv"
    cfg = {"type": "jsonl", "path": str(tmp_path / "d.jsonl"), "queries": str(tsv)}
    # line 3 starts after a quoted cell over two lines: the error names the line the row opens
    tsv.write_text('qid\tdoc_id\tquery\tevidence\n'
                   'a\td1\t"Two\nlines"\tBeta.\n'
                   'b\td1\t"Hello" world\tGamma.\n')
    with pytest.raises(ByoInputError, match=r"q\.tsv:4: a cell that starts with a double quote "
                       r"must be quoted as TSV writers quote it"):
        build_byo(cfg, "t")
    tsv.write_text('qid\tdoc_id\tquery\tevidence\n'
                   'b\td1\t"never closed\tGamma.\n')
    with pytest.raises(ByoInputError, match=r"q\.tsv:2: a cell that starts with a double"):
        build_byo(cfg, "t")
