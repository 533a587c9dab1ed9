"""reStructuredText as ``type: rst``: each construct of the reStructuredText specification
(and Sphinx's common directives and roles), written here by hand, with what the built page
shows (fast)."""

from __future__ import annotations

import pytest
from conftest import build_byo

from structablate.corpus.byo import ByoInputError
from structablate.corpus.files import DocumentFile
from structablate.corpus.rst import parse_rst
from structablate.corpus.verify import verify_document


def rst(text: str, **kw):
    kw.setdefault("doc_id", "d")
    kw.setdefault("default_title", "stem")
    kw.setdefault("where", "/nowhere/f.rst")
    roots = kw.pop("roots", ())
    doc = parse_rst(text, DocumentFile(**kw), roots=roots)
    assert verify_document(doc) == []
    return doc


def paras(doc):
    return [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]


def tree(doc):
    return [(s.path, [doc.paragraph_text(i) for i in range(s.para_start, s.para_end)])
            for s in doc.sections]


def test_title_and_levels_by_adornment_order():
    # the first adornment style met is level 1, the next new one level 2, ...: here '~'
    # (over and under) is the title, '-' the sections, '=' their subsections
    src = ("~~~~~~~~~~\n The Title\n~~~~~~~~~~\n\nLead text.\n\nFirst\n-----\n\nOne.\n\n"
           "Sub\n===\n\nTwo.\n\nSecond\n------\n\nThree.\n")
    doc = rst(src)
    assert doc.title == "The Title"
    assert tree(doc) == [(("Introduction",), ["Lead text."]), (("First",), ["One."]),
                         (("First", "Sub"), ["Two."]), (("Second",), ["Three."])]
    # the same styles in another file may mean other levels: '=' first is level 1 there
    doc = rst("Alpha\n=====\n\na\n\nBeta\n=====\n\nb\n\nGamma\n-----\n\nc\n")
    # two top-level sections: the first one's title is the page title, both stay sections
    assert doc.title == "Alpha"
    assert tree(doc) == [(("Alpha",), ["a"]), (("Beta",), ["b"]), (("Beta", "Gamma"), ["c"])]


def test_comments_targets_and_top_field_list_do_not_hide_the_title():
    src = (":orphan:\n:tocdepth: 2\n\n.. _page-label:\n\n.. This is a comment\n   on two lines.\n\n"
           "Page Title\n==========\n\nBody with a target_.\n\n.. _target: https://example.org\n")
    doc = rst(src)
    assert doc.title == "Page Title"
    assert paras(doc) == ["Body with a target."]
    with pytest.raises(ByoInputError, match="no heading"):
        rst("Only a paragraph.\n")
    # a note before the lone top-level section: docutils does not promote it, but the built
    # page is named by it (Sphinx); the note is the lead, the subsections level 1
    doc = rst(".. note:: Out of date.\n\n*****\nGuide\n*****\n\nText.\n\nPart\n====\n\nMore.\n")
    assert doc.title == "Guide"
    assert tree(doc) == [(("Introduction",), ["Note", "Out of date.", "Text."]),
                         (("Part",), ["More."])]


def test_inline_markup_and_roles():
    src = ("T\n=\n\nSome *emphasis*, **strong**, ``literal``, `default role`, "
           ":code:`x = 1`, :math:`a^2`, :sub:`2`, :pep:`8`, :rfc:`2324`, "
           ":ref:`the guide <guide>`, :func:`os.path.join`, :meth:`~pkg.Cls.run`, "
           ":class:`!Thing`, :doc:`intro`, :term:`corpus`, :kbd:`Ctrl+C`, "
           ":menuselection:`File --> Save`, :abbr:`LIFO (last-in, first-out)`, "
           ":samp:`print({x})`, a `link <https://example.org>`__ and a footnote [#f]_.\n\n"
           ".. [#f] The footnote text.\n")
    doc = rst(src)
    assert paras(doc) == [
        "Some emphasis, strong, literal, default role, x = 1, a^2, 2, PEP 8, RFC 2324, "
        "the guide, os.path.join(), run(), Thing, intro, corpus, Ctrl+C, File \u2023 Save, "
        "LIFO, print(x), a link and a footnote .",
        "The footnote text."]
    assert doc.meta["markup"] == {}
    doc = rst("T\n=\n\nAn :issue:`123` and :made-up:`thing <x>`.\n")
    assert paras(doc) == ["An 123 and thing."]
    assert doc.meta["markup"] == {"unknown_roles": {"made-up": 1}}


def test_references_to_targets_defined_elsewhere_show_their_text():
    # a target in conf.py's rst_epilog, or in an included file, is not in this file
    doc = rst("T\n=\n\nOn `Libera.chat`_, the `list <https://x.org>`__ and PyPI_.\n")
    assert paras(doc) == ["On Libera.chat, the list and PyPI."]


def test_substitutions():
    src = ("T\n=\n\n|project| is great; |missing| is not defined here.\n\n"
           ".. |project| replace:: *Structablate*\n")
    doc = rst(src)
    assert paras(doc) == ["Structablate is great; is not defined here."]
    assert doc.meta["markup"] == {"unresolved_substitutions": {"missing": 1}}


def test_literal_blocks_are_code():
    src = ("T\n=\n\nAn example::\n\n    x = 1\n    y = 2\n\nExpanded form:\n\n::\n\n    z = 3\n\n"
           ">>> print(1)\n1\n\n.. code-block:: python\n   :linenos:\n\n   print(2)\n\n"
           ".. code:: bash\n\n   ls\n")
    doc = rst(src)
    assert paras(doc) == ["An example:", "x = 1 y = 2", "Expanded form:", "z = 3",
                          ">>> print(1) 1", "print(2)", "ls"]
    assert doc.meta["code_paragraphs"] == (1, 3, 4, 5, 6)
    assert paras(rst(src, code_blocks="drop")) == ["An example:", "Expanded form:"]


def test_lists_definitions_fields_options_line_blocks():
    src = ("T\n=\n\n- bullet one\n- bullet two\n\n  continued paragraph\n\n"
           "3. three\n4. four\n\n(a) alpha\n(b) beta\n\nTerm\n   Its definition.\n"
           "Other : classifier\n   Second definition.\n\n"
           ":Parameters: the inputs\n:Returns: None\n\n"
           "-v, --verbose  Say more.\n\n| Line one\n| Line two\n\n    A quote.\n\n    -- Someone\n")
    doc = rst(src)
    assert paras(doc) == ["bullet one", "bullet two", "continued paragraph", "3. three",
                          "4. four", "(a) alpha", "(b) beta", "Term", "Its definition.",
                          "Other : classifier", "Second definition.",
                          "Parameters: the inputs", "Returns: None", "-v, --verbose",
                          "Say more.", "Line one Line two", "A quote.", "Someone"]


def test_tables_one_paragraph_per_row():
    src = ("T\n=\n\n+------+-------+\n| Name | Size  |\n+======+=======+\n| a    | 1 MB  |\n"
           "+------+-------+\n\n=====  =====\nx      y\n=====  =====\n1      2\n=====  =====\n\n"
           ".. list-table:: Sizes\n   :header-rows: 1\n\n   * - k\n     - v\n   * - ``p``\n"
           "     - *q*\n\n.. csv-table:: Prices\n   :header: \"Item\", \"Cost\"\n\n"
           "   \"Tea, green\", 2\n")
    assert paras(rst(src)) == ["Name | Size", "a | 1 MB", "x | y", "1 | 2", "Sizes", "k | v",
                               "p | q", "Prices", "Item | Cost", "Tea, green | 2"]


def test_admonitions_versions_figures():
    src = ("T\n=\n\n.. note:: First line.\n\n   Second paragraph.\n\n"
           ".. warning::\n\n   Careful.\n\n"
           ".. admonition:: Custom\n\n   Body.\n\n.. seealso:: Other page.\n\n"
           ".. versionadded:: 2.1\n   The flag.\n\n.. deprecated:: 3.0\n\n"
           ".. figure:: plot.png\n   :alt: plot\n\n   The caption.\n\n   The legend.\n\n"
           ".. image:: logo.png\n\n.. rubric:: Footnotes\n\n"
           ".. topic:: Topic title\n\n   In topic.\n")
    assert paras(rst(src)) == [
        "Note", "First line.", "Second paragraph.", "Warning", "Careful.", "Custom", "Body.",
        "See also", "Other page.", "Added in version 2.1: The flag.",
        "Deprecated since version 3.0.", "The caption.", "The legend.", "Footnotes",
        "Topic title", "In topic."]


def test_dropped_autodoc_unknown_and_objects():
    src = ("T\n=\n\n.. toctree::\n   :maxdepth: 2\n\n   intro\n\n.. contents::\n\n"
           ".. raw:: html\n\n   <b>x</b>\n\n.. index:: single: thing\n\n"
           ".. automodule:: pkg.mod\n   :members:\n\n.. autofunction:: pkg.f\n\n"
           ".. py:function:: spam(eggs)\n\n   Spam the eggs.\n\n.. my-widget:: arg\n\n"
           "   Kept body.\n\n.. only:: html\n\n   Only on the web.\n")
    doc = rst(src)
    assert paras(doc) == ["spam(eggs)", "Spam the eggs.", "Kept body.", "Only on the web."]
    assert doc.meta["markup"] == {
        "dropped_directives": {"contents": 1, "index": 1, "raw": 1, "toctree": 1},
        "autodoc": ["automodule pkg.mod", "autofunction pkg.f"],
        "unknown_directives": {"my-widget": 1}}


def test_include_inside_the_corpus_only(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "part.rst").write_text("Included\n--------\n\nIncluded text.\n")
    (root / "code.py").write_text("print('hi')\n")
    (tmp_path / "secret.rst").write_text("Secret text.\n")
    page = root / "page.rst"
    page.write_text("Page\n====\n\nBefore\n------\n\nb\n\n.. include:: part.rst\n\n"
                    ".. include:: ../secret.rst\n\n.. literalinclude:: code.py\n\n"
                    ".. csv-table::\n   :file: ../secret.rst\n")
    doc = parse_rst(page.read_text(), DocumentFile("page", "page", str(page)),
                    roots=(str(root),))
    assert tree(doc) == [(("Before",), ["b"]), (("Included",), ["Included text.",
                                                                "print('hi')"])]
    assert "Secret" not in doc.text
    assert doc.meta["markup"]["includes_refused"] == [
        "../secret.rst (outside the corpus folder)", "../secret.rst (outside the corpus folder)"]


def test_rst_corpus_type(tmp_path):
    (tmp_path / "a.rst").write_text("Alpha\n=====\n\nText a.\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.rst").write_text("Beta\n====\n\nSection\n-------\n\nText b.\n")
    (tmp_path / "c.md").write_text("# not read\n")
    docs, _, report = build_byo({"type": "rst", "path": str(tmp_path)}, "r")
    assert [(d.doc_id, d.title) for d in docs] == [("a", "Alpha"), ("sub/b", "Beta")]
    assert report["markup_residue"]["with_markup"] == 0
