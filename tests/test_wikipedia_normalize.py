"""The wikitext normalizer's rule set, on small inputs and on real articles."""

from __future__ import annotations

import bz2
import xml.etree.ElementTree as ET

import pytest
from conftest import shared_file

from structablate.corpus.verify import verify_document
from structablate.corpus.wikitext import (
    WikitextError,
    category_links,
    heading_depth,
    is_redirect,
    normalize_wikitext,
    transcludes,
)


def paragraphs_by_path(doc):
    return [(" › ".join(s.path), [doc.paragraph_text(i) for i in range(s.para_start, s.para_end)])
            for s in doc.sections]


def test_structure_lead_levels_and_dropped_sections():
    text = """{{Infobox thing|name=X}}
'''X''' is a thing.<ref>Cited.</ref>

== History ==
Old history.
=== Early ===
Early text.
===== Deep (skipped level) =====
Deep text.
== See also ==
* [[Y]]
=== Sub of see also ===
Dropped too.
== Legacy ==
Legacy text.
== References ==
{{reflist}}
[[Category:Things]]
[[fr:Chose]]
"""
    doc = normalize_wikitext("X", "X", text, lead_heading="Lead")
    assert paragraphs_by_path(doc) == [
        ("Lead", ["X is a thing."]),
        ("History", ["Old history."]),
        ("History › Early", ["Early text."]),
        ("History › Early › Deep (skipped level)", ["Deep text."]),
        ("Legacy", ["Legacy text."]),
    ]
    assert [s.level for s in doc.sections] == [1, 1, 2, 3, 1]
    assert heading_depth(doc) == 3
    assert "X" not in [s.title for s in doc.sections]
    assert verify_document(doc) == []


def test_inline_rules():
    text = (
        "A [[Foo|bar]]s and [[Baz]] and [[Qux (band)|]] link; [http://x.org label] and "
        "[http://y.org] and http://z.org bare.\n"
        "It weighs {{convert|5|kg|lb}}, runs {{convert|1|to|2|km}}, {{lang|fr|bonjour}}"
        "{{ndash}}ok &amp; done&nbsp;now.<!-- hidden --> {{citation needed|date=May 2016}}\n"
        "[[File:Pic.jpg|thumb|A caption with [[link]].]]<math>x^2</math>Formula gone.\n"
        "\n"
        "* first item\n"
        "* second ''item''\n"
        "** nested\n"
        "After the list.\n"
        "\n"
        '{| class="wikitable"\n|-\n| cell || cell\n|}\n'
        "Tail paragraph with '''bold''' and ''it''.\n"
    )
    doc = normalize_wikitext("t", "t", text)
    assert [doc.paragraph_text(i) for i in range(len(doc.paragraphs))] == [
        "A bars and Baz and Qux link; label and and bare. It weighs 5 kilograms, runs 1 to 2 "
        "kilometres, bonjour–ok & done now. Formula gone.",
        # every list item is a paragraph of its own
        "first item",
        "second item",
        "nested",
        "After the list.",
        "Tail paragraph with bold and it.",
    ]
    assert verify_document(doc) == []


def test_unbalanced_italics_inside_ref_and_link_do_not_leak():
    # MediaWiki tolerates these (real cases from the dev export); mwparserfromhell alone does not
    text = ("Text.<ref>[[Simon Critchley#X|X]]'' by [[Simon Critchley]]. p. 125</ref> More.\n\n"
            "[[File:A.svg|thumb|caption:<br /> '''Pepe vio''<br />done]]\n\n"
            "(bilingual) [''[[The Art of Being Right]]'']\n")
    doc = normalize_wikitext("t", "t", text)
    assert doc.text == "Text. More.\n\n(bilingual) [The Art of Being Right]"


@pytest.mark.parametrize("text, fragment", [
    ("Lead.\n{{Infobox person\n| name = X\n\n== A ==\nBody.\n", "{{"),
    ('Lead.\n{| class="wikitable"\n|-\n| a || b\n\n== A ==\nBody.\n', "{|"),
    ("Lead.<ref>never closed\n\n== A ==\nBody.\n", "<ref"),
    ("Lead [[unclosed link.\n", "[["),
])
def test_broken_markup_is_an_error(text, fragment):
    with pytest.raises(WikitextError) as info:
        normalize_wikitext("t", "t", text)
    assert info.value.code == "broken_markup"
    assert fragment in info.value.detail


def test_nowiki_is_literal_and_not_broken():
    doc = normalize_wikitext("t", "t", "Write <nowiki>{{template}}</nowiki> and ''x''.")
    assert doc.text == "Write {{template}} and x."


def test_heading_only_and_empty():
    doc = normalize_wikitext("t", "t", "== A ==\n=== B ===\n== C ==\n")
    assert doc.paragraphs == [] and doc.sections == []
    with pytest.raises(WikitextError) as info:
        normalize_wikitext("t", "t", "Lead.\n== {{anchor|x}} ==\nBody.")
    assert info.value.code == "empty_heading"


def test_categories_redirects_templates():
    text = ("x [[Category:Birds_of  Asia|sortkey]] [[:Category:Not me]] [[category:lower]] "
            "<!-- [[Category:Hidden]] --> <nowiki>[[Category:Literal]]</nowiki>"
            "[[ Category : Spaced ]]")
    assert category_links(text) == ["Birds of Asia", "Lower", "Spaced"]
    assert is_redirect("#REDIRECT [[Computer accessibility]]")
    assert is_redirect("  #redirect:[[X]]") and not is_redirect("Text #REDIRECT [[X]]")
    assert transcludes("{{Featured article}}\nText", "featured article")
    assert transcludes("{{featured_article|x}}", "Featured article")
    assert not transcludes("{{Featured articles}}", "featured article")


def _dev_pages():
    ns = "{http://www.mediawiki.org/xml/export-0.10/}"
    with bz2.open(shared_file("wikipedia", "enwiki-2016-sample-dev.xml.bz2")) as fh:
        for page in ET.parse(fh).getroot().iter(ns + "page"):
            text = page.find(f"{ns}revision/{ns}text").text or ""
            if page.findtext(ns + "ns") == "0" and not is_redirect(text):
                yield page.findtext(ns + "title"), text


def test_every_dev_article_normalizes_with_exact_offsets():
    n = 0
    for title, text in _dev_pages():
        doc = normalize_wikitext(title, title, text)
        assert doc.paragraphs, title
        assert verify_document(doc) == [], title
        pieces = [doc.text[p.start:p.end] for p in doc.paragraphs]
        assert doc.text == "\n\n".join(pieces)
        for piece in pieces:
            assert piece == piece.strip() and "\n" not in piece
        for s in doc.sections:
            assert doc.text[s.start:s.end] == "\n\n".join(pieces[s.para_start:s.para_end])
            assert s.path[0] != title
        for marker in ("{{", "}}", "[[", "]]", "<ref", "'''", "\ue000", "\ue0ff"):
            assert marker not in doc.text, (title, marker)
        assert not {t.casefold() for s in doc.sections for t in s.path} & {
            "references", "external links", "see also", "notes", "further reading"}
        n += 1
    assert n == 69
