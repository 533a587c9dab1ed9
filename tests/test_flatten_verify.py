"""Flattening records offsets as paragraphs are emitted; verification reports every breakage."""

from dataclasses import replace

import pytest

from structablate.corpus.flatten import DocumentBuilder, Paragraph, Section
from structablate.corpus.verify import verify_document, verify_sections


def _doc():
    b = DocumentBuilder("d1", "A Title")
    b.add_paragraph("First abstract paragraph.", ["Abstract"])
    b.add_paragraph("  Intro one.\n\nstill intro  ", ["Introduction"])
    b.add_paragraph("", ["Introduction"])  # skipped
    b.add_paragraph("Intro two.", ["Introduction"])
    b.add_paragraph("Deep text.", ["Methods", "Data", "Sources", "Web", "Crawl"])
    return b.build()


def test_offsets_recorded_as_emitted():
    doc = _doc()
    assert doc.text == (
        "First abstract paragraph.\n\nIntro one. still intro\n\nIntro two.\n\nDeep text."
    )
    assert [doc.paragraph_text(i) for i in range(4)] == [
        "First abstract paragraph.", "Intro one. still intro", "Intro two.", "Deep text."]
    assert doc.paragraphs[1] == Paragraph(1, 27, 49)
    assert verify_document(doc) == []


def test_sections_from_paths_with_level_clamp():
    doc = _doc()
    assert [(s.title, s.level, s.para_start, s.para_end) for s in doc.sections] == [
        ("Abstract", 1, 0, 1), ("Introduction", 1, 1, 3), ("Crawl", 4, 3, 4)]
    deep = doc.sections[2]
    assert deep.path == ("Methods", "Data", "Sources", "Web", "Crawl")  # true depth 5 kept
    assert (deep.start, deep.end) == (doc.paragraphs[3].start, doc.paragraphs[3].end)


def test_title_is_not_in_flat_text():
    assert "A Title" not in _doc().text


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: [s[0], replace(s[1], para_start=2), s[2]], "gap"),
        (lambda s: [s[0], replace(s[1], para_end=4), s[2]], "overlap"),
        (lambda s: [s[0], replace(s[1], start=s[1].start + 1), s[2]],
         "char offsets disagree with paragraph table"),
        (lambda s: [s[0], s[1], replace(s[2], para_end=9)], "out of bounds"),
        (lambda s: [s[0], s[1], replace(s[2], level=5)], "level 5 outside 1..4"),
        (lambda s: [s[0], s[1], replace(s[2], level=0)], "level 0 outside 1..4"),
        (lambda s: s[:2], "gap at end"),
        (lambda s: [s[0], s[1], replace(s[2], section_idx=7)], "section_idx is 7"),
    ],
)
def test_broken_sections_are_reported(mutate, expected):
    doc = _doc()
    violations = verify_sections(doc.paragraphs, mutate(list(doc.sections)))
    assert violations, "a broken table must not verify"
    assert any(expected in v for v in violations), violations


def test_broken_paragraph_table_is_reported():
    doc = _doc()
    doc.paragraphs[2] = Paragraph(2, doc.paragraphs[2].start - 3, doc.paragraphs[2].end)
    v = verify_document(doc)
    assert any("non-whitespace" in x or "before previous end" in x or "surrounding" in x
               for x in v), v


def test_level_steps_checked_for_induced_structure():
    paras = [Paragraph(0, 0, 3), Paragraph(1, 5, 8)]
    secs = [Section(0, "a", 1, 0, 1, 0, 3, ("a",)), Section(1, "b", 3, 1, 2, 5, 8, ("a", "x", "b"))]
    assert verify_sections(paras, secs) == []
    assert any("jumps from 1 to 3" in v for v in verify_sections(paras, secs,
                                                                   check_level_steps=True))
