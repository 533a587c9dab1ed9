"""Validation and deterministic repair of induced section lists on hand-built broken outputs."""

from __future__ import annotations

import json

import pytest

from structablate import MAX_LEVEL
from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.verify import verify_sections
from structablate.structure.tiling import (
    Entry,
    entries_to_sections,
    parse_output,
    repair_output,
    validate_output,
)


def doc(n: int = 8):
    b = DocumentBuilder("d", "Doc")
    for i in range(n):
        b.add_paragraph(f"Paragraph number {i} says something.", ["S"])
    return b.build()


def sec(title, level, first, last):
    return {"title": title, "level": level, "first_paragraph": first, "last_paragraph": last}


def answer(*items):
    return json.dumps({"sections": list(items)})


def repaired_sections(text, n=8):
    d = doc(n)
    entries, usable = repair_output(text, 0, n, d.title)
    sections = entries_to_sections(d.paragraphs, entries)
    assert verify_sections(d.paragraphs, sections, check_level_steps=True) == []
    return sections, usable


def spans(sections):
    return [(s.para_start, s.para_end) for s in sections]


GOOD = answer(sec("Intro", 1, 0, 1), sec("Method", 1, 2, 4), sec("Data", 2, 5, 5),
              sec("Model", 2, 6, 7))


def test_valid_output_has_no_violations_and_converts_to_half_open():
    assert validate_output(GOOD, 0, 8) == []
    sections, usable = repaired_sections(GOOD)
    assert usable
    assert spans(sections) == [(0, 2), (2, 5), (5, 6), (6, 8)]
    assert [s.path for s in sections] == [("Intro",), ("Method",), ("Method", "Data"),
                                          ("Method", "Model")]
    d = doc()
    assert sections[2].start == d.paragraphs[5].start and sections[3].end == d.paragraphs[7].end


def test_gap_is_reported_and_closed_by_extending_the_previous_section():
    text = answer(sec("A", 1, 0, 1), sec("B", 1, 4, 7))
    v = validate_output(text, 0, 8)
    assert any("gap" in x and "should start at 2" in x for x in v)
    sections, _ = repaired_sections(text)
    assert spans(sections) == [(0, 4), (4, 8)]


def test_overlap_is_reported_and_resolved_at_the_next_start():
    text = answer(sec("A", 1, 0, 5), sec("B", 1, 3, 7))
    assert any("overlap" in x for x in validate_output(text, 0, 8))
    sections, _ = repaired_sections(text)
    assert spans(sections) == [(0, 3), (3, 8)]


def test_level_jumps_are_reported_and_clamped():
    text = answer(sec("A", 2, 0, 1), sec("B", 4, 2, 3), sec("C", 1, 4, 5), sec("D", 3, 6, 7))
    v = validate_output(text, 0, 8)
    assert any("first section must have level 1" in x for x in v)
    assert any("level jumps from 2 to 4" in x for x in v)
    assert any("level jumps from 1 to 3" in x for x in v)
    sections, _ = repaired_sections(text)
    assert [s.level for s in sections] == [1, 2, 1, 2]
    assert sections[1].path == ("A", "B") and sections[3].path == ("C", "D")


def test_level_below_one_and_non_integer_level():
    text = answer(sec("A", 0, 0, 3), sec("B", "two", 4, 7))
    v = validate_output(text, 0, 8)
    assert any("level 0 is below 1" in x for x in v)
    assert any("level must be an integer" in x for x in v)
    sections, _ = repaired_sections(text)
    assert [s.level for s in sections] == [1, 1]


def test_out_of_range_and_reversed_ranges():
    text = answer(sec("A", 1, -2, 3), sec("B", 1, 4, 12), sec("C", 1, 20, 25),
                  sec("D", 1, 7, 6))
    v = validate_output(text, 0, 8)
    assert any("out of bounds" in x and "-2..3" in x for x in v)
    assert any("out of bounds" in x and "4..12" in x for x in v)
    assert any("is after" in x for x in v)
    sections, _ = repaired_sections(text)
    # C starts past the end: dropped; A clamped to 0; D keeps its start 7
    assert spans(sections) == [(0, 4), (4, 7), (7, 8)]
    assert [s.title for s in sections] == ["A", "B", "D"]


def test_gap_at_the_end_and_late_first_start():
    text = answer(sec("A", 1, 2, 3), sec("B", 1, 4, 5))
    v = validate_output(text, 0, 8)
    assert any("should start at 0" in x for x in v)
    assert any("the last paragraph is 7" in x for x in v)
    assert spans(repaired_sections(text)[0]) == [(0, 4), (4, 8)]


def test_unparsable_json_falls_back_to_one_section():
    for text in ["not json at all", "", "{\"sections\": 5}", "[1, 2, 3]"]:
        v = validate_output(text, 0, 8)
        assert v, text
        sections, usable = repaired_sections(text)
        assert not usable
        assert spans(sections) == [(0, 8)] and sections[0].title == "Doc"
    assert "not valid JSON" in validate_output("not json", 0, 8)[0]


def test_truncated_json_salvages_complete_objects():
    text = GOOD[: GOOD.index('"Model"') - 2]  # cut off inside the last object
    items, problems = parse_output(text)
    assert [it["title"] for it in items] == ["Intro", "Method", "Data"]
    assert "salvaged" in problems[0]
    sections, usable = repaired_sections(text)
    assert usable and spans(sections) == [(0, 2), (2, 5), (5, 8)]


def test_code_fences_prose_and_bare_lists():
    fenced = "```json\n" + GOOD + "\n```"
    assert validate_output(fenced, 0, 8) == []
    prose = "Here is the structure:\n" + GOOD + "\nHope this helps."
    items, problems = parse_output(prose)
    assert len(items) == 4 and problems == ["output has text around the JSON"]
    bare = json.dumps(json.loads(GOOD)["sections"])
    assert "bare list" in validate_output(bare, 0, 8)[0]
    assert spans(repaired_sections(bare)[0]) == [(0, 2), (2, 5), (5, 6), (6, 8)]


def test_same_start_keeps_the_parent_heading():
    # a model that emits a parent range plus its first child at the same start
    text = answer(sec("Intro", 1, 0, 1), sec("Method", 1, 2, 7), sec("Data", 2, 2, 4),
                  sec("Model", 2, 5, 7))
    sections, _ = repaired_sections(text)
    assert spans(sections) == [(0, 2), (2, 5), (5, 8)]
    assert [s.path for s in sections] == [("Intro",), ("Method",), ("Method", "Model")]


def test_missing_titles_strings_and_unsorted_items():
    text = answer(sec("", 1, 4, 7), sec("  First\n part ", 1, "0", "3"))
    v = validate_output(text, 0, 8)
    assert any("empty title" in x for x in v)
    assert any("must be integers" in x for x in v)
    sections, _ = repaired_sections(text)
    assert [s.title for s in sections] == ["First part", "Section 2"]


def test_deep_levels_are_clamped_in_storage_but_not_in_the_path():
    d = doc(8)
    entries = [Entry(f"L{i + 1}", i + 1, i) for i in range(7)]
    sections = entries_to_sections(d.paragraphs, entries)
    assert verify_sections(d.paragraphs, sections, check_level_steps=True) == []
    assert [s.level for s in sections] == [1, 2, 3, 4, 4, 4, 4]
    assert len(sections[-1].path) == 7 and sections[-1].level == MAX_LEVEL
    assert sections[-1].path == tuple(f"L{i + 1}" for i in range(7))


def test_window_offsets():
    text = answer(sec("A", 1, 4, 5), sec("B", 2, 6, 7))
    assert validate_output(text, 4, 8) == []
    assert any("should start at 0" in x for x in validate_output(text, 0, 8))
    entries, usable = repair_output(text, 4, 8)
    assert usable and entries == [Entry("A", 1, 4), Entry("B", 2, 6)]


def test_entries_must_start_at_zero():
    with pytest.raises(ValueError):
        entries_to_sections(doc().paragraphs, [Entry("A", 1, 1)])
