"""Structure quality and comparison checks: hand-built structures with known answers, and real
chunk tables of the bundled QASPER sample built on a healthy (gold) and on degenerate
structures (one top-level section per document, at most two levels, one section per
document)."""

import numpy as np
import polars as pl
import pytest

from structablate.chunking.build import build_chunks
from structablate.corpus.flatten import (
    documents_frame,
    paragraphs_frame,
    sections_frame,
    sections_from_frame,
    top_section_ids,
)
from structablate.report.guard import GuardSettings, comparison_flags
from structablate.settings import ChunkingSettings
from structablate.structure.quality import (
    QUALITY_SCHEMA,
    boundary_scores,
    comparison_checks,
    corpus_structure_report,
    match_boundaries,
    routing_pool,
    same_text,
    structure_quality,
    top_groups,
)
from structablate.study import condition
from structablate.tables import frame, span_identity

# ---------------------------------------------------------------- hand-built structures


def _paragraphs(n_by_doc):
    rows = []
    for doc, n in n_by_doc.items():
        for i in range(n):
            rows.append({"doc_id": doc, "para_idx": i, "start": 10 * i, "end": 10 * i + 8})
    return frame("paragraphs", rows)


def _sections(spec):
    """spec: doc -> [(title, level, para_start, para_end, path)]; offsets from paragraphs of
    10 characters (8 of text, 2 of separator)."""
    rows = []
    for doc, secs in spec.items():
        for k, (title, level, a, b, path) in enumerate(secs):
            rows.append({"doc_id": doc, "section_idx": k, "title": title, "level": level,
                         "para_start": a, "para_end": b, "start": 10 * a,
                         "end": 10 * (b - 1) + 8, "path": path})
    return frame("sections", rows)


PARAS = _paragraphs({"d1": 10, "d2": 6})
GOLD = _sections({
    "d1": [("Intro", 1, 0, 2, ["Intro"]), ("Method", 1, 2, 4, ["Method"]),
           ("Data", 2, 4, 6, ["Method", "Data"]),
           ("Noise", 3, 6, 7, ["Method", "Data", "Noise"]), ("End", 1, 7, 10, ["End"])],
    "d2": [("A", 1, 0, 3, ["A"]), ("B", 1, 3, 6, ["B"])],
})
# the Qwen2.5-Coder-0.5B failure: one "Introduction" at level 1, everything else nested under
# it; boundaries at d1: 1, 2, 5, 7 (gold 2, 4, 6, 7), d2: 4 (gold 3)
NESTED = _sections({
    "d1": [("Introduction", 1, 0, 1, ["Introduction"]),
           ("Intro", 2, 1, 2, ["Introduction", "Intro"]),
           ("Method", 2, 2, 5, ["Introduction", "Method"]),
           ("Noise", 2, 5, 7, ["Introduction", "Noise"]),
           ("End", 2, 7, 10, ["Introduction", "End"])],
    "d2": [("Introduction", 1, 0, 4, ["Introduction"]),
           ("B", 2, 4, 6, ["Introduction", "B"])],
})


def test_counts_depths_and_top_level_groups_by_hand():
    q = structure_quality(PARAS, {"gold": GOLD, "induced:llm": NESTED})
    assert q.columns == list(QUALITY_SCHEMA)
    g, n = q.row(0, named=True), q.row(1, named=True)
    assert (g["n_docs"], g["n_sections"], g["sections_per_doc"]) == (2, 7, 3.5)
    assert g["top_sections_per_doc"] == 2.5 and g["single_top_share"] == 0.0
    assert (g["depth_1"], g["depth_2"], g["depth_3"], g["depth_4plus"]) == (5 / 7, 1 / 7,
                                                                          1 / 7, 0.0)
    assert g["max_depth"] == 3 and g["docs_depth3_share"] == 0.5
    assert n["top_sections_per_doc"] == 1.0 and n["single_top_share"] == 1.0
    assert n["max_depth"] == 2 and n["docs_depth3_share"] == 0.0
    assert np.isnan(g["boundary_f1"]) and np.isnan(g["section_span_identity"])
    # d1: nested boundaries 1, 2, 5, 7 against gold 2, 4, 6, 7, one paragraph of tolerance,
    # one-to-one: 1 and 2 compete for gold 2, 5 takes 4 or 6, 7 takes 6 or 7 -> 3 matches
    # (the sweep: 1-2, 5-4, 7-6); d2: nested 4 against gold 3 -> 1. TP 4, 5 predicted, 5 gold.
    assert n["boundary_precision"] == pytest.approx(4 / 5)
    assert n["boundary_recall"] == pytest.approx(4 / 5)
    assert n["boundary_f1"] == pytest.approx(0.8)
    # top-level starts: nested has none after paragraph 0, gold has d1: 2, 7 and d2: 3
    assert n["top_boundary_f1"] == 0.0
    # identical section spans: d1 "End" [7, 10) and "Intro"? nested Intro is [1, 2), gold
    # [0, 2): only End; d2 "B" [4, 6) vs gold [3, 6): none -> 1 of 7
    assert n["section_span_identity"] == pytest.approx(1 / 7)


def test_boundary_matching_is_one_to_one_and_respects_the_tolerance():
    assert match_boundaries([3, 4], [4]) == 1
    assert match_boundaries([2], [4]) == 0  # two paragraphs off
    assert match_boundaries([3, 5], [4]) == 1
    assert match_boundaries([1, 5, 9], [2, 4, 6, 10], tolerance=0) == 0
    assert match_boundaries([], [1]) == 0
    same = boundary_scores(GOLD, GOLD)
    assert same == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    one = _sections({"d": [("x", 1, 0, 3, ["x"])]})
    assert np.isnan(boundary_scores(one, one)["f1"])  # no boundary on either side


def test_span_identity_counts_exact_spans_only():
    spans = pl.DataFrame({"doc_id": ["a", "a", "b", "c"], "start": [0, 10, 0, 0],
                          "end": [10, 20, 10, 10]})
    gold = pl.DataFrame({"doc_id": ["a", "a", "b"], "start": [0, 10, 0], "end": [10, 30, 5]})
    assert span_identity(spans, gold) == 0.25
    assert np.isnan(span_identity(spans.head(0), gold))


def test_top_groups_follow_root_changes_without_a_parent_row():
    s = _sections({"w": [("Lead", 1, 0, 1, ["Lead"]),
                         ("Crew", 2, 1, 2, ["Mission", "Crew"]),  # parent has no row
                         ("Plan", 2, 2, 3, ["Mission", "Plan"]),
                         ("Launch", 2, 3, 4, ["Flight", "Launch"])]})
    assert top_groups(s)["top_section"].to_list() == [0, 1, 1, 3]


def test_a_section_beyond_the_paragraphs_is_an_error_naming_the_source():
    bad = GOLD.with_columns(pl.when(pl.col("section_idx") == 4).then(11)
                            .otherwise(pl.col("para_end")).alias("para_end"))
    with pytest.raises(ValueError, match="source 'induced', document 'd1'"):
        structure_quality(PARAS, {"gold": GOLD, "induced": bad})


def test_routing_pool_and_same_text_by_hand():
    chunks = pl.DataFrame({"doc_id": ["a", "a", "b", "c", "c"], "top_section": [0, 2, 0, 0, 0],
                           "start": [0, 5, 0, 0, 5], "end": [5, 9, 5, 5, 9],
                           "prefix": ["[A › x]", "[A › y]", "[B]", "[C › z]", None]})
    pool = routing_pool(chunks, 5)
    assert pool == {"n_sections": 4, "kept": 4, "kept_share": 1.0, "n_docs": 3,
                    "single_top_docs": 2}
    assert routing_pool(chunks, 2)["kept_share"] == 0.5
    other = chunks.with_columns(pl.when(pl.col("doc_id") == "a").then(pl.lit("[A]"))
                                .otherwise(pl.col("prefix")).alias("prefix"))
    assert same_text(chunks, other) == (3, 5)  # a's two prefixes differ; None == ""
    with pytest.raises(ValueError):
        routing_pool(chunks, 0)


# ---------------------------------------------------------------- real chunk tables


@pytest.fixture(scope="module")
def corpus(sample_corpus):
    docs = sample_corpus.documents
    return (documents_frame(docs, "qasper"), paragraphs_frame(docs),
            sections_frame([(d.doc_id, d.sections) for d in docs]))


def _nested_from(gold: pl.DataFrame) -> pl.DataFrame:
    """Gold boundaries kept, but the 0.5B model's hierarchy: the first section becomes level-1
    "Introduction", every other section a level-2 child of it."""
    return gold.sort("doc_id", "section_idx").with_columns(
        pl.when(pl.col("section_idx") == 0).then(pl.lit("Introduction"))
        .otherwise(pl.col("title")).alias("title"),
        pl.when(pl.col("section_idx") == 0).then(1).otherwise(2).cast(pl.Int8).alias("level"),
        pl.when(pl.col("section_idx") == 0).then(pl.concat_list(pl.lit("Introduction")))
        .otherwise(pl.concat_list(pl.lit("Introduction"), pl.col("title"))).alias("path"),
    )


def _one_section_from(gold: pl.DataFrame, paragraphs: pl.DataFrame) -> pl.DataFrame:
    """One section per document covering all its paragraphs."""
    last = paragraphs.group_by("doc_id").agg(pl.len().alias("n"), pl.col("end").max())
    return frame("sections", [
        {"doc_id": d, "section_idx": 0, "title": "Document", "level": 1, "para_start": 0,
         "para_end": n, "start": 0, "end": e, "path": ["Document"]}
        for d, n, e in last.sort("doc_id").iter_rows()])


def _chunksets(corpus, counter, sections, names):
    d, p, gold = corpus
    params = ChunkingSettings()
    return {n: build_chunks(condition(n), d, p, sections if condition(n).structure == "induced"
                            else gold, counter, params, size_reference=sections,
                            placebo_seed=11, progress=False) for n in names}


@pytest.fixture(scope="module")
def nested_chunks(corpus, counter):
    _, _, gold = corpus
    return _chunksets(corpus, counter, _nested_from(gold),
                      ["A2", "A3-d2", "A3", "P", "G2", "G3"])


def test_top_groups_agree_with_the_chunker_on_real_gold(corpus, nested_chunks):
    _, _, gold = corpus
    mine = top_groups(gold)
    theirs = []
    for doc_id, secs in sorted(sections_from_frame(gold).items()):
        theirs += [(doc_id, s.section_idx, t) for s, t in zip(secs, top_section_ids(secs),
                                                              strict=True)]
    assert list(mine.iter_rows()) == theirs
    # and with the top_section the chunk table records (what routing ranks)
    used = nested_chunks["G3"].select("doc_id", "section_idx", "top_section").unique()
    joined = used.join(mine, on=["doc_id", "section_idx"], suffix="_q")
    assert joined.height == used.height
    assert (joined["top_section"] == joined["top_section_q"]).all()


def test_degenerate_nesting_is_flagged_and_gold_is_not(corpus, nested_chunks):
    _, p, gold = corpus
    nested = _nested_from(gold)
    conds = ["A2", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4"]
    quality, checks = corpus_structure_report(p, gold, nested, nested_chunks, conds,
                                              hier_top_sections=5, inducer="llm")
    assert quality["source"].to_list() == ["gold", "induced:llm"]
    ind = quality.row(1, named=True)
    assert ind["single_top_share"] == 1.0 and ind["max_depth"] == 2
    n_docs = gold["doc_id"].n_unique()

    def check(a, b, name):
        r = checks.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                          & (pl.col("check") == name))
        return r.row(0, named=True)

    assert check("A3-d2", "A3", "same_text")["value"] == 1.0  # no level 3 exists
    assert check("A3", "A4", "routing_single_top")["count"] == n_docs
    assert check("A3", "A4", "routing_pool")["total"] == n_docs  # one section per document
    # gold keeps its top-level sections: routing has a real choice
    assert check("G3", "G4", "routing_single_top")["value"] == 0.0
    pool = check("G3", "G4", "routing_pool")
    assert pool["count"] == 5 and pool["value"] == pytest.approx(5 / pool["total"])
    # routing ranks the chunk table's sections: a top-level section too small for a chunk of
    # its own merges into a neighbour, so there are at most as many as the sections table has
    groups = quality.row(0, named=True)["top_sections_per_doc"] * n_docs
    assert n_docs < pool["total"] <= round(groups)
    # the only depth-1 path is ("Introduction",) (section 0 of every document), so the placebo
    # hands every chunk of a section 0 its own path back
    depth1 = nested_chunks["A3"].filter(pl.col("section_idx") == 0)
    lower = depth1.height / nested_chunks["A3"].height
    assert 0 < lower <= check("A3", "P", "same_text")["value"] < 1

    def flags(a, b, **kw):
        return comparison_flags(a, b, quality=quality, checks=checks, **kw)

    assert any("single top-level section" in f for f in flags("A4", "A3"))
    assert any("at most 2 levels deep" in f for f in flags("A3-d2", "A3"))
    assert flags("G4", "G3") == [] and flags("G3", "A3") == []
    strict = GuardSettings(max_placebo_same_text_share=lower)
    assert any("too few distinct paths" in f for f in flags("A3", "P", settings=strict))
    # the pool is the whole corpus once k reaches the number of sections
    _, wide = corpus_structure_report(p, gold, nested, nested_chunks, conds,
                                      hier_top_sections=n_docs, inducer="llm")
    f = comparison_flags("A4", "A3", quality=quality, checks=wide)
    assert any(f"keeps {n_docs} of the corpus's {n_docs}" in x and "by construction" in x
               for x in f)


def test_gold_agreement_separates_a_copy_from_one_section_per_document(corpus, counter):
    d, p, gold = corpus
    copy = _chunksets(corpus, counter, gold, ["A2", "G2"])
    q, _ = corpus_structure_report(p, gold, gold, copy, ["A2", "G2"], hier_top_sections=5,
                                   inducer="copy")
    r = q.row(1, named=True)
    assert r["section_span_identity"] == r["chunk_span_identity"] == r["boundary_f1"] == 1.0
    assert r["boundary_f1_kappa"] == r["section_span_identity_kappa"] == 1.0
    assert 0 < r["boundary_f1_chance"] < 1 and 0 < r["section_span_identity_chance"] < 1
    assert comparison_flags("A2", "A0", quality=q) == []
    one = _one_section_from(gold, p)
    flat = _chunksets(corpus, counter, one, ["A2", "G2"])
    q, _ = corpus_structure_report(p, gold, one, flat, ["A2", "G2"], hier_top_sections=5,
                                   inducer="one")
    r = q.row(1, named=True)
    assert r["top_sections_per_doc"] == 1.0 and r["boundary_f1"] == 0.0  # no boundary kept
    # chunks cut by size across gold section ends rarely reproduce a gold chunk exactly
    assert r["chunk_span_identity"] < 0.4
    # no boundary at all: chance reaches the same 0, so nothing beyond chance
    assert r["boundary_f1_chance"] == 0.0 and r["boundary_f1_kappa"] == 0.0
    f = comparison_flags("A2", "A0", quality=q)
    assert len(f) == 1 and f[0].startswith("about this inducer's segmentation: "
                                           "chance-corrected boundary agreement with gold 0.00")
    # a gold-vs-induced comparison is exactly what C3 measures: never flagged for agreement
    assert comparison_flags("G3", "A3", quality=q) == []


def test_comparison_checks_need_every_chunk_table():
    with pytest.raises(KeyError, match="A3"):
        comparison_checks(["A3", "A4"], {}, hier_top_sections=5)
