"""The normaliser's template table and list rule, on small inputs (expected renderings taken
from the templates' documentation) and on the real articles of the dev export and the
bundled sample; the build report's template counts; the ``depth_measure`` setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_file, wiki_build, wiki_selection

from structablate.corpus.mediawiki_fetch import iter_xml_pages
from structablate.corpus.verify import verify_document
from structablate.corpus.wikitemplates import template_rule
from structablate.corpus.wikitext import is_redirect, normalize_wikitext

SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "wikipedia" / "sample.xml"


def text_of(wikitext: str) -> str:
    doc = normalize_wikitext("t", "t", wikitext)
    assert verify_document(doc) == []
    return doc.text


@pytest.mark.parametrize("wikitext, shown", [
    # transliterations: the scheme code of the 3-argument form is not text
    ("The name {{transl|ar|ALA|Allāh}} is old.", "The name Allāh is old."),
    ("From {{transl|ar|al-Jazāʾir}}.", "From al-Jazāʾir."),
    # scientific notation, fractions
    ("The mass is approximately 5.98{{e|24}} kg.", "The mass is approximately 5.98×10^24 kg."),
    ("It is {{val|5.98|e=24|u=kg}} and {{val|1.5|0.2|u=m}}.",
     "It is 5.98×10^24 kg and 1.5±0.2 m."),
    ("About {{sfrac|1|4}} day, {{sfrac|2|1|4}} cups, {{frac|3}}.",
     "About 1/4 day, 2 1/4 cups, 1/3."),
    # chemical formulas
    ("The formula {{chem|C|n|H|2n+2}} and {{chem2|CH3CH2OH}} and <chem>H2O</chem>.",
     "The formula CnH2n+2 and CH3CH2OH and H2O."),
    # units: names by default, symbols with abbr=on / cvt, multipliers in words
    ("It has {{convert|22|e6acre|e6ha}} of forest.", "It has 22 million acres of forest."),
    ("A rise of {{convert|5|C-change|F-change}}, {{convert|-60|F|abbr=off}}.",
     "A rise of 5 °C, -60 degrees Fahrenheit."),
    ("Runs {{convert|5|km|mi|abbr=on}}, {{cvt|10|m}}, {{convert|1|mi|km}}.",
     "Runs 5 km, 10 m, 1 mile."),
    ("A {{convert|100|nmi|km|adj=on}} orbit of {{convert|1200|to|1500|ft|m}}.",
     "A 100-nautical-mile orbit of 1,200 to 1,500 feet."),
    # dates: month first by default, df=y day first; the age at death is computed
    ("(born {{birth date|1809|2|12}})", "(born February 12, 1809)"),
    ("died {{death date and age|1865|4|15|1809|2|12}}.", "died April 15, 1865 (aged 56)."),
    ("died {{Death date and age|1860|9|21|1788|2|22|df=y}}.",
     "died 21 September 1860 (aged 72)."),
    # languages and names
    ("{{lang-fr|bonjour}} and {{lang|fr|salut}}", "French: bonjour and salut"),
    ("{{Nihongo|Tokyo|東京|Tōkyō}}", "Tokyo (東京, Tōkyō)"),
    # ships: prefix, name, identifier; the display code keeps some of them
    ("{{USS|Hornet|CV-12}} and {{USS|Hornet|CV-12|6}} and {{HMS|Victory}}.",
     "USS Hornet (CV-12) and USS Hornet and HMS Victory."),
    ("{{ship|HMS|Dreadnought|1906}}, an {{sclass|Iowa|battleship}}.",
     "HMS Dreadnought (1906), an Iowa-class battleship."),
    # numbers, small literals
    ("{{formatnum:1234567}} people{{'s}} {{nts|98765}}", "1,234,567 people's 98,765"),
    ("Spelled thus {{sic}}, {{sic|teh}}.", "Spelled thus [sic], teh [sic]."),
])
def test_template_renderings(wikitext, shown):
    assert text_of(wikitext) == shown


@pytest.mark.parametrize("wikitext, shown", [
    # a fraction after a whole number is a mixed number, not more digits (1¼, not 11/4)
    ("It weighs 1{{sfrac|1|4}} pounds, {{frac|2|1|4}} or {{frac|3|4}}.",
     "It weighs 1 1/4 pounds, 2 1/4 or 3/4."),
    ("A {{convert|1{{frac|1|2}}|mi|km}} walk, {{nowrap|2{{sfrac|3|4}}}} laps.",
     "A 1 1/2 miles walk, 2 3/4 laps."),
    # a numerator or denominator of several tokens is bracketed: (3n + 1)/2, not 3n + 1/2
    ("Then {{sfrac|3n + 1|2}} and {{frac|1|2 + x}} and {{sfrac|−1|2}}.",
     "Then (3n + 1)/2 and 1/(2 + x) and −1/2."),
    # the date text of an old-style date survives
    ("Born {{OldStyleDate|2 February|1650|23 January}} in a town.",
     "Born 2 February [O.S. 23 January] 1650 in a town."),
    ("Died {{OldStyleDateNY|9 January|1650|30 December|1649}}.",
     "Died 9 January 1650 [O.S. 30 December 1649]."),
    # element templates and formula templates keep every element
    ("Alkanes are {{Carbon}}<sub>n</sub>{{Hydrogen}}<sub>2n+2</sub>.",
     "Alkanes are CnH2n+2."),
    ("Alkanes are {{chem2|C_{n}H_{2n+2} }}, also {{chem|C|''n''|H|2''n''+2}}.",
     "Alkanes are CnH2n+2, also CnH2n+2."),
    ("The {{nuclide2|Carbon|14}} method.", "The 14C method."),
    # rail gauges: the width (the converted value is not computed)
    ("Built to {{RailGauge|ussg}}, later {{RailGauge|1000mm}} and {{RailGauge|42}}.",
     "Built to 1,435 mm, later 1,000 mm and 3 ft 6 in."),
    # horizontal lists: every item kept, separated
    ("Genres: {{hlist|rock|pop|jazz}}; members {{ubl|Ann|Bo}}.",
     "Genres: rock · pop · jazz; members Ann; Bo."),
    # an inline image between two sentences does not glue them
    ("It ended in 2011.[[File:Flag.svg|thumb|A flag]]Albania joined.",
     "It ended in 2011. Albania joined."),
])
def test_text_bearing_templates_keep_their_meaning(wikitext, shown):
    assert text_of(wikitext) == shown


def test_unreadable_rail_gauge_is_reported_not_dropped_silently():
    doc = normalize_wikitext("t", "t", "Gauge {{RailGauge|odd code}} here.\n")
    assert doc.meta["templates"].unrecognised == {"railgauge": 1}


def test_unrecognised_templates_alone_on_their_line_are_listed_apart():
    doc = normalize_wikitext("t", "t", (
        "Intro text.\n{{Politics of Nowhere}}\nMore {{unknown inline|x}} text.\n"
        "{{Mercury}}\nThe metal {{Mercury}} is liquid.\n"))
    counts = doc.meta["templates"]
    assert counts.unrecognised == {"unknown inline": 1}  # real misses: in running text
    assert counts.unrecognised_block == {"politics of nowhere": 1, "mercury": 1}
    assert doc.text.endswith("The metal Hg is liquid.")
    # inside a block tag too
    doc = normalize_wikitext("t", "t", 'Text.\n<div style="float:right">\n{{Cities in Nowhere}}\n'
                                       "</div>\nAcid {{eqm}} base.\n")
    assert doc.meta["templates"].unrecognised_block == {"cities in nowhere": 1}
    assert doc.meta["templates"].unrecognised == {} and "Acid ⇌ base." in doc.text


def test_template_counts_by_rule():
    doc = normalize_wikitext("t", "t", (
        "Fact.{{citation needed|date=May 2016}} {{convert|5|km|mi}} "
        "{{Some unknown box|x=1}} {{Infobox country|name=X}} {{#if:a|b}}\n"))
    counts = doc.meta["templates"].as_dict()
    assert counts["rendered"] == {"convert": 1}
    assert counts["dropped"] == {"#if:": 1, "citation needed": 1, "infobox country": 1}
    assert counts["unrecognised"] == {"some unknown box": 1}
    assert counts["totals"] == {"rendered": 1, "dropped": 3, "unrecognised": 1,
                                "unrecognised_block": 0}
    assert template_rule("cite web") == "drop" and template_rule("lang-xx") == "render"
    assert template_rule("some unknown box") is None


def test_list_items_are_paragraphs_of_their_own():
    doc = normalize_wikitext("t", "t", (
        "Intro line\ncontinues.\n* one\n* two ''it''\n** nested\n# numbered\n"
        ";Term\n:Definition\nAfter.\n\n<ul><li>html\nitem</li><li>second</li></ul>\n"))
    assert verify_document(doc) == []
    assert [doc.paragraph_text(i) for i in range(len(doc.paragraphs))] == [
        "Intro line continues.", "one", "two it", "nested", "numbered", "Term", "Definition",
        "After.", "html item", "second"]


def _articles(path):
    for rec in iter_xml_pages(path):
        if rec.ns == 0 and not is_redirect(rec.wikitext):
            yield rec.title, normalize_wikitext(rec.title, rec.title, rec.wikitext)


def test_real_articles_render_text_bearing_templates():
    docs = dict(_articles(shared_file("wikipedia", "enwiki-2016-sample-dev.xml.bz2")))
    assert len(docs) == 69
    algeria = docs["Algeria"].text
    assert "Algeria (Arabic: الجزائر al-Jazā'ir; Berber: ⵍⵣⵣⴰⵢⴻⵔ Dzayer)" in algeria
    assert "(/ˈeɪbrəhæm ˈlIŋkən/; February 12, 1809 – April 15, 1865)" in \
        docs["Abraham Lincoln"].text
    assert "Aikido (合気道, Aikidō)" in docs["Aikido"].text
    assert "U.S. Patent 1,781,541" in "\n".join(d.text for d in docs.values())
    for title, d in docs.items():
        assert verify_document(d) == [], title
        # no transliteration scheme code, no unit code left where a name belongs
        assert " ALA " not in d.text and " e6acre" not in d.text, title
    # list items stand apart: no paragraph of the export is longer than 500 words (the list
    # of "List of Atlas Shrugged characters" used to make one of 3,217 words)
    longest = max(len(d.paragraph_text(i).split()) for d in docs.values()
                  for i in range(len(d.paragraphs)))
    assert longest < 500
    # what is left unrecognised is reported, and it is little: topic navigation boxes and a
    # few rare templates
    unrecognised = sum(sum(d.meta["templates"].unrecognised.values()) for d in docs.values())
    rendered = sum(sum(d.meta["templates"].rendered.values()) for d in docs.values())
    assert unrecognised < 0.1 * rendered


def test_bundled_sample_lists_and_report():
    b = wiki_build({"mode": "xml", "path": str(SAMPLE)}, {"n_docs": 5}, name="wiki")
    assert len(b.documents) == 5 and b.questions is None and b.report["corpus"] == "wiki"
    atlantic = next(d for d in b.documents if d.doc_id == "Atlantic Ocean")
    europe = next(s for s in atlantic.sections
                  if s.path == ("Bordering countries and territories", "Europe"))
    items = [atlantic.paragraph_text(i) for i in range(europe.para_start, europe.para_end)]
    assert items[:5] == ["Azores (PRT)", "Belgium", "Denmark", "Faroe Islands (DEN)", "France"]
    t = b.report["templates"]
    assert set(t) == {"rendered", "dropped", "unrecognised", "unrecognised_block", "totals"}
    assert t["totals"]["unrecognised"] == sum(t["unrecognised"].values())
    assert t["rendered"]["convert"] > 0 and t["dropped"]["sfn"] > 0
    assert sum(r["templates_unrecognised"] for r in b.report["documents"]) == \
        t["totals"]["unrecognised"]
    for d in b.documents:
        assert verify_document(d) == []


def test_depth_measure_setting():
    assert wiki_selection().depth_measure == "headings"
    with pytest.raises(ValueError, match="depth_measure: 'equals' is not one of"):
        wiki_selection({"depth_measure": "equals"})
    export = str(shared_file("wikipedia", "enwiki-2016-sample-dev.xml.bz2"))
    tree = wiki_build({"mode": "xml", "path": export}, {})
    titled = wiki_build({"mode": "xml", "path": export}, {"depth_measure": "with_title"})
    ids = {d.doc_id for d in tree.documents}
    more = {d.doc_id for d in titled.documents}
    assert ids < more
    # what the setting adds: long articles whose deepest headings are ===
    for d in titled.documents:
        if d.doc_id not in ids:
            assert max(len(s.path) for s in d.sections) == 2
    assert tree.report["reject_counts"]["too_shallow"] == len(more - ids)
