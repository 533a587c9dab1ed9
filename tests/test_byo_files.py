"""Files that are not ordinary readable text files (issue 52, item 3), with real files made in
``tmp_path``: a name that is not UTF-8, a dangling symbolic link, a FIFO, a socket, a device,
a folder given as the questions file, UTF-16 and UTF-32 with a byte-order mark, a file of
control characters, and a question made only of invisible characters. Each is named — skipped
and listed under ``skip_bad_files``, refused otherwise — or, for a byte-order mark, decoded."""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import build_byo, user_corpus

from structablate.corpus.byo import ByoInputError, build_user_documents
from structablate.corpus.files import read_text
from structablate.corpus.user_queries import read_user_queries
from structablate.user_files import document_files

GOOD = "# Good\n\nSome ordinary text here.\n"
TEXT = "# Titre\n\n## Partie\n\nDu texte ordinaire, avec é et ü.\n"


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A test that opens a FIFO would wait for a writer forever: it fails after 20 s."""
    def fail(*_):
        raise TimeoutError("a read blocked: a FIFO was opened")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def folder(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "good.md").write_text(GOOD, encoding="utf-8")
    return d


def cfg(d: Path, skip: bool, **kw) -> dict:
    return {"type": "markdown", "path": str(d), "skip_bad_files": skip, **kw}


def refused(d: Path, plan: bool = True) -> ByoInputError:
    """The refusal of the corpus in ``d`` without skip_bad_files by the build; with ``plan``
    (what the path is, not what it holds) at plan time too, by the listing the workflow
    declares as inputs, with the same message."""
    with pytest.raises(ByoInputError) as build:
        build_user_documents(user_corpus(cfg(d, False)), "c")
    if plan:
        with pytest.raises(ByoInputError) as listed:
            document_files(user_corpus(cfg(d, False)))
        assert str(listed.value) == str(build.value)
    else:
        document_files(user_corpus(cfg(d, False)))
    str(build.value).encode("utf-8")  # printable: no lone surrogate from a file name
    return build.value


def skipped(d: Path, plan: bool = True) -> list[dict]:
    """The skipped list of the corpus in ``d`` built with skip_bad_files; good.md builds (and
    with ``plan`` is the only file the workflow declares as an input)."""
    if plan:
        assert [Path(f).name for f in document_files(user_corpus(cfg(d, True)))] == \
            ["good.md"]
    b = build_user_documents(user_corpus(cfg(d, True)), "c")
    assert [x.doc_id for x in b.documents] == ["good"]
    assert b.report["inputs"] == 1 + len(b.report["skipped"])
    json.dumps(b.report, ensure_ascii=False).encode("utf-8")
    return b.report["skipped"]


# ------------------------------------------------------------------------- names and kinds


def test_a_file_name_that_is_not_utf8_is_named_with_a_safe_repr(tmp_path):
    """Before: the listing kept it, and Snakemake died writing its input lock with
    ``UnicodeEncodeError: 'utf-8' codec can't encode character '\\udce9' …: surrogates not
    allowed``, naming no file (tests/test_byo_files_workflow.py runs Snakemake)."""
    d = folder(tmp_path)
    with open(os.path.join(os.fsencode(d), b"caf\xe9.md"), "wb") as fh:
        fh.write(GOOD.encode())
    exc = refused(d)
    assert exc.where == f"{d}/caf\\xe9.md"
    assert exc.reason.startswith("the file name is not UTF-8 (byte 0xe9, shown as \\xe9); ")
    assert "rename the file" in exc.reason and "skip_bad_files: true" in exc.reason
    [s] = skipped(d)
    assert s["where"] == f"{d}/caf\\xe9.md" and "not UTF-8" in s["reason"]
    assert "skip_bad_files" not in s["reason"]


def test_a_folder_whose_name_is_not_utf8_names_the_path(tmp_path):
    d = folder(tmp_path)
    sub = os.path.join(os.fsencode(d), b"r\xe9sum\xe9s")
    os.mkdir(sub)
    with open(os.path.join(sub, b"a.md"), "wb") as fh:
        fh.write(GOOD.encode())
    exc = refused(d)
    assert exc.where == f"{d}/r\\xe9sum\\xe9s/a.md" and "not UTF-8" in exc.reason


def test_a_dangling_link_is_named(tmp_path):
    """Before: it vanished without mention (no skip, no refusal, ``inputs`` 1)."""
    d = folder(tmp_path)
    os.symlink("gone/old.md", d / "link.md")
    exc = refused(d)
    assert exc.where == f"{d}/link.md"
    assert exc.reason.startswith("a symbolic link to 'gone/old.md', which does not exist")
    [s] = skipped(d)
    assert s["where"] == f"{d}/link.md" and s["doc_id"] == "link"
    # named as the corpus's path itself: not "no such file or folder"
    with pytest.raises(ByoInputError, match="a symbolic link to 'gone/old.md', which does not "
                       "exist"):
        document_files(user_corpus(cfg(d / "link.md", False)))


def test_a_link_that_loops_is_named(tmp_path):
    d = folder(tmp_path)
    os.symlink("loop.md", d / "loop.md")
    exc = refused(d)
    assert exc.where == f"{d}/loop.md" and "loops" in exc.reason


def test_a_dangling_link_of_another_extension_is_no_document(tmp_path):
    d = folder(tmp_path)
    os.symlink("gone.png", d / "image.png")
    assert [Path(f).name for f in document_files(user_corpus(cfg(d, False)))] == ["good.md"]


def test_a_fifo_is_named_and_never_opened(tmp_path):
    """Before: it vanished without mention; given as the path, 'no such file or folder'."""
    d = folder(tmp_path)
    os.mkfifo(d / "pipe.md")
    exc = refused(d)
    assert exc.where == f"{d}/pipe.md"
    assert exc.reason.startswith("a FIFO (named pipe), not a regular file")
    [s] = skipped(d)
    assert s["where"] == f"{d}/pipe.md"
    with pytest.raises(ByoInputError, match="a FIFO"):
        document_files(user_corpus(cfg(d / "pipe.md", False)))


def test_a_socket_and_a_device_are_named(tmp_path):
    d = folder(tmp_path)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(d / "s.md"))
        os.symlink("/dev/null", d / "t.md")  # a character device, through a link
        with pytest.raises(ByoInputError) as exc:
            document_files(user_corpus(cfg(d, False)))
        # the first in path order; the others are counted
        assert exc.value.where == f"{d}/s.md" and exc.value.reason.startswith(
            "a socket, not a regular file")
        assert "1 more file is not an ordinary file either" in exc.value.reason
        assert f"{d}/t.md" in exc.value.reason
        reasons = {Path(s["where"]).name: s["reason"] for s in skipped(d)}
        assert reasons["s.md"].startswith("a socket")
        assert reasons["t.md"].startswith("a character device")
    finally:
        sock.close()


def test_a_folder_given_as_the_questions_file_says_it_is_a_folder(tmp_path):
    """Before: ``q.jsonl: queries file not found``."""
    q = tmp_path / "q.jsonl"
    q.mkdir()
    with pytest.raises(ByoInputError) as exc:
        read_user_queries(q)
    assert exc.value.where == str(q)
    assert exc.value.reason.startswith("a folder, not a questions file")
    missing = tmp_path / "none.jsonl"
    with pytest.raises(ByoInputError, match="queries file not found"):
        read_user_queries(missing)
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ByoInputError, match="a FIFO"):
        read_user_queries(fifo)


# ----------------------------------------------------------------------- encodings


@pytest.mark.parametrize("codec, bom", [
    ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
    ("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-32-be", b"\x00\x00\xfe\xff"),
])
def test_a_file_with_a_utf16_or_utf32_bom_is_decoded_by_it(tmp_path, codec, bom):
    """Before: ``u.md:1: not UTF-8 (byte 0xff at column 1)`` (0xfe, 0x00 for big endian)."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "u.md").write_bytes(bom + TEXT.encode(codec))
    (d / "plain.md").write_text(TEXT.replace("Titre", "Plain"), encoding="utf-8")
    assert read_text(d / "u.md") == TEXT
    docs, _, report = build_byo(cfg(d, False), "c")
    by_id = {doc.doc_id: doc for doc in docs}
    assert by_id["u"].text == by_id["plain"].text
    assert by_id["u"].title == "Titre" and report["skipped"] == []


def test_a_broken_utf16_file_is_refused_naming_its_encoding(tmp_path):
    d = folder(tmp_path)
    (d / "u.md").write_bytes(b"\xff\xfe" + TEXT.encode("utf-16-le") + b"\x00\xd8")  # lone
    exc = refused(d, plan=False)  # a high surrogate at the end
    assert exc.where.startswith(f"{d}/u.md:")
    assert "not valid UTF-16 (little endian, from its byte-order mark)" in exc.reason
    [s] = skipped(d, plan=False)
    assert "UTF-16" in s["reason"]


def test_a_questions_file_in_utf16_is_read(tmp_path):
    """Before: ``q.jsonl:1: not UTF-8 (byte 0xff at column 1)``."""
    row = {"qid": "q1", "doc_id": "good", "query": "Où est le café ?", "evidence": ["x"]}
    q = tmp_path / "q.jsonl"
    q.write_bytes((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-16"))
    [uq] = read_user_queries(q)
    assert uq.query == "Où est le café ?"
    t = tmp_path / "q.tsv"
    t.write_bytes("qid\tdoc_id\tquery\tevidence\nq1\tgood\tOù ?\tx\n".encode("utf-16"))
    [uq] = read_user_queries(t)
    assert uq.query == "Où ?"
    # a broken one is refused, without the advice to skip it: a questions file never is
    q.write_bytes(b"\xff\xfe" + "{}\n".encode("utf-16-le") + b"\x00\xd8")
    with pytest.raises(ByoInputError) as exc:
        read_user_queries(q)
    assert exc.value.where == f"{q}:2" and "not valid UTF-16 (little endian" in exc.value.reason
    assert "skip_bad_files" not in exc.value.reason


def test_a_jsonl_corpus_in_utf16_is_read(tmp_path):
    rows = [{"doc_id": "a", "title": "A", "text": "# S\n\nAlpha text."},
            {"doc_id": "b", "title": "B", "text": "# S\n\nBêta text."}]
    f = tmp_path / "c.jsonl"
    f.write_bytes("\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode("utf-16"))
    docs, _, report = build_byo({"type": "jsonl", "path": str(f)}, "c")
    assert [d.doc_id for d in docs] == ["a", "b"] and report["skipped"] == []
    assert "Bêta text." in docs[1].text


# ---------------------------------------------------------------------- control characters


def test_a_file_of_control_characters_is_refused_naming_the_first_offset(tmp_path):
    """Before: it built, a document of control characters."""
    d = folder(tmp_path)
    (d / "c.md").write_bytes(b"# T\n\nok " + bytes(range(1, 9)) * 20 + b"\n")
    exc = refused(d, plan=False)
    assert exc.where == f"{d}/c.md:3"
    assert exc.reason.startswith("160 of 169 characters (94.7%) are control characters")
    assert "(the first, U+0001, at column 4, character offset 8)" in exc.reason
    assert exc.reason.endswith("or set skip_bad_files: true to leave the file out")
    assert "at most 5%" in exc.reason
    [s] = skipped(d, plan=False)
    assert s["where"] == f"{d}/c.md:3" and "control characters" in s["reason"]


def test_utf16_without_a_bom_is_refused_as_control_characters_with_a_hint(tmp_path):
    """Before: ``n.md: no heading: a Markdown document needs a title …`` (every other byte
    NUL, read as UTF-8)."""
    d = folder(tmp_path)
    (d / "n.md").write_bytes(GOOD.encode("utf-16-le"))
    exc = refused(d, plan=False)
    assert exc.where == f"{d}/n.md:1"
    assert "are control characters" in exc.reason and "U+0000, at column 2," in exc.reason
    assert "NUL characters: UTF-16 or UTF-32 without a byte-order mark?" in exc.reason
    # with a letter beyond ASCII it is not UTF-8 at all, and the message says why
    (d / "n.md").write_bytes(TEXT.encode("utf-16-le"))
    exc = refused(d, plan=False)
    assert exc.where == f"{d}/n.md:5" and exc.reason.startswith("not UTF-8 (byte 0xe9")
    assert "NUL: UTF-16 or UTF-32 without a byte-order mark?" in exc.reason


def test_a_few_control_characters_in_prose_are_kept(tmp_path):
    """A form feed and terminal colour escapes in prose stay below the threshold."""
    d = folder(tmp_path)
    body = "Run the tests; the output shows \x1b[32mPASSED\x1b[0m in green. " * 3
    (d / "ok.md").write_text(f"# Ok\n\n{body}\n\n\f\n\n## Next\n\nMore ordinary prose here.\n",
                             encoding="utf-8")
    docs, _, report = build_byo(cfg(d, False), "c")
    assert {doc.doc_id for doc in docs} == {"good", "ok"} and report["skipped"] == []


def test_a_jsonl_document_of_control_characters_is_refused(tmp_path):
    f = tmp_path / "c.jsonl"
    rows = [{"doc_id": "a", "title": "A", "text": "# S\n\nAlpha text."},
            {"doc_id": "b", "title": "B", "text": "# S\n\n" + "\u0001\u0002\u0003" * 30}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(ByoInputError) as exc:
        build_byo({"type": "jsonl", "path": str(f)}, "c")
    assert exc.value.where == f"{f}:2" and "are control characters" in exc.value.reason
    docs, _, report = build_byo({"type": "jsonl", "path": str(f), "skip_bad_files": True},
                                "c")
    assert [doc.doc_id for doc in docs] == ["a"]
    assert report["skipped"][0]["where"] == f"{f}:2"


# ----------------------------------------------------------------------- invisible questions


@pytest.mark.parametrize("query", ["\u200b", "\u200c\u200d", " \u2060 \ufeff ", "\u00ad\u200e",
                                   "\u200b\u3000\u00a0"])
def test_a_question_of_invisible_characters_is_refused_like_a_blank_one(tmp_path, query):
    """Before: it was read and scored (whitespace only was refused)."""
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"qid": "q1", "doc_id": "good", "query": query,
                             "evidence": ["x"]}) + "\n", encoding="utf-8")
    with pytest.raises(ByoInputError) as exc:
        read_user_queries(q)
    assert exc.value.where == f"{q}:1"
    assert exc.value.reason.startswith("field 'query' holds only invisible characters (")
    t = tmp_path / "q.tsv"
    t.write_text(f"qid\tdoc_id\tquery\tevidence\nq1\tgood\t{query}\tx\n", encoding="utf-8")
    with pytest.raises(ByoInputError) as exc:
        read_user_queries(t)
    assert exc.value.where == f"{t}:2"
    assert exc.value.reason.startswith("field 'query' holds only invisible characters (")


def test_a_question_with_invisible_characters_and_words_is_kept(tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"qid": "q1", "doc_id": "good", "query": "\u200bWhat is it?",
                             "evidence": ["x"]}) + "\n", encoding="utf-8")
    assert [u.qid for u in read_user_queries(q)] == ["q1"]
