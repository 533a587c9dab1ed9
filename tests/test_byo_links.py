"""Symbolic links in a user's corpus folder: a linked subfolder is read like a real one; a
link loop under a folder or a ``**`` glob is not followed (each real file read once) and a
warning names the link and its target."""

from __future__ import annotations

import glob
import logging
import os

import pytest
from conftest import build_byo

from structablate.corpus.files import list_files


def _doc(path, title):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n## Part\n\nsome text of {title}\n")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """docs/a/x.md, docs/linked -> ../elsewhere (elsewhere/o.md), docs/a/loop -> .. (a loop),
    docs/again -> a (a second name of a folder read already)."""
    _doc(tmp_path / "docs" / "a" / "x.md", "X")
    _doc(tmp_path / "elsewhere" / "o.md", "O")
    (tmp_path / "docs" / "linked").symlink_to("../elsewhere")
    (tmp_path / "docs" / "a" / "loop").symlink_to("..")
    (tmp_path / "docs" / "again").symlink_to("a")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("spec", ["docs", "docs/**/*.md", "docs/*/*.md"])
def test_a_linked_subfolder_is_read_and_a_loop_is_named_once(tree, caplog, spec):
    """Before: a folder's linked subfolder was not read (its questions dropped as "no
    document"); a ** glob followed the loop until the path was too long."""
    with caplog.at_level(logging.WARNING, logger="structablate.corpus.files"):
        found = list_files(spec, (".md",))
    assert [(str(f.path), f.doc_id) for f in found] == [("docs/a/x.md", "a/x"),
                                                        ("docs/linked/o.md", "linked/o")]
    warned = caplog.text
    if "**" in spec or spec == "docs":
        assert f"docs/a/loop -> {tree / 'docs'}: a symbolic link to a folder above it " \
               "(a loop); not followed" in warned
    assert f"docs/again -> {tree / 'docs' / 'a'}: a symbolic link to a folder that is " \
           "read already" in warned


def test_the_documents_of_a_linked_folder_are_built(tree):
    docs, _, report = build_byo({"type": "markdown", "path": "docs"}, "c")
    assert [d.doc_id for d in docs] == ["a/x", "linked/o"]
    assert report["documents"] == 2


def test_glob_semantics_are_kept_without_links(tmp_path, monkeypatch):
    """The walk matches a pattern as glob.glob(recursive=True) does on a tree without links
    (hidden names, ** at any depth, wildcards within a name)."""
    for rel in ["a.md", "s/b.md", "s/t/c.md", ".h/d.md", "s/.e.md", "s/t/f.txt", "u/g.MD"]:
        _doc(tmp_path / "root" / rel, "T")
    monkeypatch.chdir(tmp_path)
    for pattern in ["root/**/*.md", "root/*.md", "root/s/**", "root/**/t/*", "root/?/*.md",
                    "root/[st]/**/*.md", "root/**/.e.md", str(tmp_path / "root/**/*.md"),
                    "root/**/*.[mM][dD]"]:
        want = sorted(f for f in glob.glob(pattern, recursive=True) if os.path.isfile(f))
        got = sorted(str(f.path) for f in list_files(pattern, (".md",)))
        assert got == want, pattern
