"""MyST Markdown under ``type: markdown``: each construct of the MyST syntax (as its
specification describes it), written here by hand, with what the built page shows (fast)."""

from __future__ import annotations

import pytest
from conftest import build_byo

from structablate.corpus.byo import ByoInputError
from structablate.corpus.files import DocumentFile
from structablate.corpus.markdown import parse_markdown
from structablate.corpus.myst import looks_like_myst, parse_myst
from structablate.corpus.verify import verify_document


def myst(text: str, **kw):
    kw.setdefault("doc_id", "d")
    kw.setdefault("default_title", "stem")
    kw.setdefault("where", "/nowhere/f.md")
    roots = kw.pop("roots", ())
    doc = parse_myst(text, DocumentFile(**kw), roots=roots)
    assert verify_document(doc) == []
    return doc


def paras(doc):
    return [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]


def tree(doc):
    return [(s.path, [doc.paragraph_text(i) for i in range(s.para_start, s.para_end)])
            for s in doc.sections]


def test_title_after_targets_comments_and_front_matter():
    doc = myst("---\nsubstitutions: {x: y}\n---\n(top)=\n% note to self\n\n# Real Title\n\n"
               "Lead.\n\n## Part\n\nBody.\n")
    assert doc.title == "Real Title"
    assert tree(doc) == [(("Introduction",), ["Lead."]), (("Part",), ["Body."])]
    # an :orphan: field list before the title is file metadata: the title stays the H1
    doc = myst(":orphan:\n\n(t)=\n# Page\n\n## A\n\ntext\n")
    assert doc.title == "Page" and tree(doc) == [(("A",), ["text"])]
    # several H1: the first is the page title (Sphinx), and each stays a section
    doc = myst("# One\n\nx\n\n# Two\n\ny\n")
    assert doc.title == "One" and tree(doc) == [(("One",), ["x"]), (("Two",), ["y"])]
    # a note before the only H1: Sphinx still names the page by it; the note is the lead
    doc = myst(":::{note}\nDraft.\n:::\n\n# Late\n\nz\n\n## Sub\n\nw\n")
    assert doc.title == "Late" and tree(doc) == [(("Introduction",), ["Note", "Draft.", "z"]),
                                                 (("Sub",), ["w"])]
    # no level-1 heading: the file stem, and '##' is level 2 of the tree
    doc = myst("Intro.\n\n## Part\n\nz\n")
    assert doc.title == "stem" and tree(doc) == [(("Introduction",), ["Intro."]),
                                                 (("Part",), ["z"])]
    with pytest.raises(ByoInputError, match="no heading"):
        myst("just text {ref}`x`\n")


def test_targets_comments_block_breaks_are_removed():
    doc = myst("# T\n\n(label-a)=\n## A\n\n% a comment line\nText.\n\n+++ {\"meta\": 1}\n\n"
               "More.\n")
    assert tree(doc) == [(("A",), ["Text.", "More."])]


def test_roles_render_as_their_text():
    doc = myst("# T\n\nSee {ref}`the install guide <install>` and {ref}`install`, "
               "{doc}`../api`, {py:func}`os.path.join`, {func}`~os.path.join`, "
               "{py:class}`!Thing`, {term}`corpus`, {math}`a^2`, {abbr}`LIFO (last-in, "
               "first-out)`, {kbd}`Ctrl+C`, {pep}`8`, {rfc}`2324`, {menuselection}`File --> "
               "Open`, {guilabel}`&Cancel`, {samp}`print({x})`, {sub}`2`.\n")
    assert paras(doc) == [
        "See the install guide and install, api, os.path.join(), join(), Thing, corpus, "
        "a^2, LIFO, Ctrl+C, PEP 8, RFC 2324, File \u2023 Open, Cancel, print(x), 2."]
    assert doc.meta["markup"] == {}
    doc = myst("# T\n\nAn {gh-issue}`123` role.\n")
    assert paras(doc) == ["An 123 role."]
    assert doc.meta["markup"] == {"unknown_roles": {"gh-issue": 1}}


def test_admonitions_show_their_title_then_body():
    src = ("# T\n\n```{note}\nA *note* body.\n```\n\n:::{warning} First line.\nSecond.\n:::\n\n"
           "```{admonition} Custom title\n:class: tip\n\nBody text.\n```\n\n"
           ":::{seealso}\nOther page.\n:::\n\n::::{dropdown} Click me\n:open:\n\nHidden.\n"
           "::::\n")
    assert paras(myst(src)) == ["Note", "A note body.", "Warning", "First line. Second.",
                                "Custom title", "Body text.", "See also", "Other page.",
                                "Click me", "Hidden."]


def test_version_notes():
    src = ("# T\n\n```{versionadded} 2.1\nThe flag.\n```\n\n```{deprecated} 3.0\n```\n\n"
           "```{versionchanged} 1.5 Now faster.\n```\n")
    assert paras(myst(src)) == ["Added in version 2.1: The flag.",
                                "Deprecated since version 3.0.",
                                "Changed in version 1.5: Now faster."]


def test_code_directives_and_code_blocks_drop():
    src = ("# T\n\n```{code-block} python\n:linenos:\n:caption: x\n\nprint(1)\n```\n\n"
           "```{code-cell} ipython3\nx = 2\n```\n\n```python\nplain = 3\n```\n\nProse.\n")
    doc = myst(src)
    assert paras(doc) == ["print(1)", "x = 2", "plain = 3", "Prose."]
    assert doc.meta["code_paragraphs"] == (0, 1, 2)
    assert paras(myst(src, code_blocks="drop")) == ["Prose."]


def test_tables_one_paragraph_per_row():
    src = ("# T\n\n```{list-table} Sizes\n:header-rows: 1\n\n* - Name\n  - Size\n"
           "* - `small`\n  - 1 *MB*\n```\n\n"
           "```{csv-table} Prices\n:header: \"Item\", \"Cost\"\n\n"
           "\"Tea, green\", 2\nCake, 3\n```\n\n"
           ":::{table} Caption here\n| a | b |\n|---|---|\n| 1 | 2 |\n:::\n")
    assert paras(myst(src)) == ["Sizes", "Name | Size", "small | 1 MB", "Prices",
                                "Item | Cost", "Tea, green | 2", "Cake | 3",
                                "Caption here", "a | b", "1 | 2"]


def test_figures_show_their_caption_images_nothing():
    src = ("# T\n\n```{figure} img/plot.png\n:alt: a plot\n:width: 50%\n\nThe *caption*.\n\n"
           "A legend.\n```\n\n```{image} img/logo.png\n:alt: logo\n```\n\nAfter.\n")
    assert paras(myst(src)) == ["The caption.", "A legend.", "After."]


def test_dropped_autodoc_and_unknown_directives_are_counted():
    src = ("# T\n\n```{toctree}\n:maxdepth: 2\n\nintro\napi\n```\n\n```{contents}\n```\n\n"
           "```{raw} html\n<b>x</b>\n```\n\n```{automodule} pkg.mod\n:members:\n```\n\n"
           "```{autoclass} pkg.Cls\n```\n\n:::{my-widget} arg\nKept body.\n:::\n\nText.\n")
    doc = myst(src)
    assert paras(doc) == ["Kept body.", "Text."]
    assert doc.meta["markup"] == {
        "dropped_directives": {"contents": 1, "raw": 1, "toctree": 1},
        "autodoc": ["automodule pkg.mod", "autoclass pkg.Cls"],
        "unknown_directives": {"my-widget": 1}}


def test_headings_inside_directives_are_not_sections():
    src = ("# T\n\n## Real\n\nA.\n\n::::{tab-set}\n:::{tab-item} Example\n## Not a section\n\n"
           "Inside.\n:::\n::::\n\n````{admonition} Demo\n```markdown\n# also not\n```\n````\n\n"
           "After.\n")
    doc = myst(src)
    assert tree(doc) == [(("Real",), ["A.", "Example", "Not a section", "Inside.", "Demo",
                                      "# also not", "After."])]


def test_substitutions_from_front_matter():
    src = ("---\nmyst:\n  substitutions:\n    project: \"**Structablate**\"\n---\n"
           "# About {{ project }}\n\nWelcome to {{project}} and {{ missing }}.\n")
    doc = myst(src)
    assert doc.title == "About Structablate"
    assert paras(doc) == ["Welcome to Structablate and ."]
    assert doc.meta["markup"] == {"unresolved_substitutions": {"missing": 1}}


def test_field_lists_and_math():
    src = ("# T\n\n## A\n\n:Author: Ann\n:Version: 2\n\n$$\nE = mc^2\n$$\n\n"
           "Inline $x_1$ costs $5 and $6.\n\n```{math}\n:label: eq1\n\\alpha\n```\n")
    assert paras(myst(src)) == ["Author: Ann", "Version: 2", "E = mc^2",
                                "Inline x_1 costs $5 and $6.", "\\alpha"]


def test_include_inside_the_corpus_only(tmp_path):
    root = tmp_path / "docs"
    (root / "parts").mkdir(parents=True)
    (root / "parts" / "snippet.md").write_text("## Included part\n\nIncluded text.\n")
    (tmp_path / "secret.md").write_text("Secret text.\n")
    page = root / "page.md"
    page.write_text("# Page\n\n## Before\n\nb\n\n```{include} parts/snippet.md\n```\n\n"
                    "```{include} ../secret.md\n```\n\n```{include} missing.md\n```\n")
    doc = parse_myst(page.read_text(), DocumentFile("page", "page", str(page)),
                     roots=(str(root),))
    assert tree(doc) == [(("Before",), ["b"]), (("Included part",), ["Included text."])]
    assert "Secret" not in doc.text
    assert doc.meta["markup"]["includes"] == ["parts/snippet.md"]
    assert doc.meta["markup"]["includes_refused"] == [
        "../secret.md (outside the corpus folder)", "missing.md (no such file)"]


def test_eval_rst_goes_through_the_rst_reader():
    src = "# T\n\n```{eval-rst}\n.. note:: From rst with :func:`f`.\n\nPlain *rst*.\n```\n"
    assert paras(myst(src)) == ["Note", "From rst with f().", "Plain rst."]


def test_detection_and_dialect_key(tmp_path):
    assert looks_like_myst("```{note}\nx\n```\n")
    assert looks_like_myst(":::{tip}\nx\n:::\n")
    assert looks_like_myst("(label)=\n# T\n")
    assert looks_like_myst("a {ref}`x` role\n")
    assert not looks_like_myst("# T\n\n```python\nx = {1}\n```\n\nMath $\\mathbf{x}$ and {x}.\n")
    assert not looks_like_myst("a {unknownthing}`x` pair\n")
    (tmp_path / "a.md").write_text("# A\n\n% comment\n\nPlain text.\n")
    (tmp_path / "b.md").write_text("# B\n\n:::{note}\nBoxed.\n:::\n")
    docs, _, report = build_byo({"type": "markdown", "path": str(tmp_path)}, "c")
    by_id = {d.doc_id: d for d in docs}
    # one file with MyST makes the corpus MyST: the other file's comment goes too
    assert report["dialect"] == "myst"
    assert paras(by_id["a"]) == ["Plain text."] and paras(by_id["b"]) == ["Note", "Boxed."]
    docs, _, report = build_byo({"type": "markdown", "path": str(tmp_path),
                                 "dialect": "commonmark"}, "c")
    assert report["dialect"] == "commonmark"
    assert "% comment" in docs[0].text
    # a plain Markdown corpus is read as before (the MyST reader is not involved)
    doc = parse_markdown("# T\n\n:::{note}\nx\n:::\n", DocumentFile("d", "s", "f.md"))
    assert ":::{note} x :::" in doc.text
