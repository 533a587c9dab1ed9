"""Chance agreement of the structure guard: random boundaries with the source's count per
document (structablate.structure.quality.chance_agreement), the chance-corrected figures of the
structure-quality table, and the guard deciding on them (structablate.report.guard).

Expected values are computed here by enumerating every random segmentation of small documents,
independently of the sampler."""

from itertools import combinations

import numpy as np
import polars as pl
import pytest

from structablate.io import write_parquet
from structablate.report.guard import GuardSettings, comparison_flags, induced_agreement
from structablate.structure.quality import (
    CHANCE_FIGURES,
    QUALITY_SCHEMA,
    chance_agreement,
    chance_corrected,
    match_boundaries,
    random_boundaries,
    structure_quality,
)
from structablate.tables import frame


def _paragraphs(n_by_doc):
    return frame("paragraphs", [{"doc_id": d, "para_idx": i, "start": 10 * i,
                                 "end": 10 * i + 8}
                                for d, n in n_by_doc.items() for i in range(n)])


def _segmented(bounds_by_doc, n_by_doc):
    """Sections (all level 1) cut at the given boundaries (paragraph indices in 1 … n−1)."""
    rows = []
    for doc, bounds in bounds_by_doc.items():
        edges = [0, *sorted(bounds), n_by_doc[doc]]
        for k, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            rows.append({"doc_id": doc, "section_idx": k, "title": f"s{k}", "level": 1,
                         "para_start": a, "para_end": b, "start": 10 * a,
                         "end": 10 * (b - 1) + 8, "path": [f"s{k}"]})
    return frame("sections", rows)


def _exact_chance(pred_counts, gold_bounds, n_by_doc, tolerance=1):
    """Expected micro boundary F1 and span identity of uniform random segmentations, by
    enumerating every k-subset of each document's candidates (documents are independent, so
    the micro figures' numerators add up in expectation; denominators are fixed)."""
    e_tp = e_same = 0.0
    n_p = n_g = n_sec = 0
    for doc, k in pred_counts.items():
        n, gold = n_by_doc[doc], sorted(gold_bounds[doc])
        edges_g = [0, *gold, n]
        gold_spans = set(zip(edges_g[:-1], edges_g[1:], strict=True))
        subsets = list(combinations(range(1, n), k))
        tp = same = 0
        for b in subsets:
            tp += match_boundaries(b, gold, tolerance)
            e = [0, *b, n]
            same += sum(x in gold_spans for x in zip(e[:-1], e[1:], strict=True))
        e_tp += tp / len(subsets)
        e_same += same / len(subsets)
        n_p, n_g, n_sec = n_p + k, n_g + len(gold), n_sec + k + 1
    return 2 * e_tp / (n_p + n_g), e_same / n_sec


def test_random_boundaries_are_distinct_candidates_and_capped():
    rng = np.random.default_rng(0)
    for _ in range(50):
        b = random_boundaries(7, 3, rng)
        assert len(set(b)) == 3 and b == sorted(b) and all(1 <= x <= 6 for x in b)
    assert random_boundaries(4, 9, rng) == [1, 2, 3]  # at most n − 1
    assert random_boundaries(1, 2, rng) == [] and random_boundaries(5, 0, rng) == []


def test_chance_matches_the_enumerated_expectation():
    n = {"a": 4, "b": 8, "c": 7, "d": 6}
    gold = {"a": [3], "b": [2, 5, 6], "c": [3], "d": [1, 2, 4]}
    pred = {"a": 1, "b": 2, "c": 4, "d": 3}
    want_f1, want_span = _exact_chance(pred, gold, n)
    # by hand for "a" alone: one random boundary of {1, 2, 3} lands within one of 3 with
    # probability 2/3; F1 = 2·TP / (1 + 1)
    assert _exact_chance({"a": 1}, {"a": [3]}, {"a": 4})[0] == pytest.approx(2 / 3)
    paras = _paragraphs(n)
    g = _segmented(gold, n)
    src = _segmented({d: list(range(1, k + 1)) for d, k in pred.items()}, n)  # counts only
    got = chance_agreement(src, g, paragraphs=paras, seed=5, draws=3000)
    assert got["boundary_f1"] == pytest.approx(want_f1, abs=0.01)
    assert got["section_span_identity"] == pytest.approx(want_span, abs=0.01)
    # all sections are level 1, so top-level boundaries are all boundaries
    assert got["top_boundary_f1"] == pytest.approx(want_f1, abs=0.01)
    # without a paragraphs table, counts come from the sections (which tile the paragraphs)
    assert chance_agreement(src, g, seed=5, draws=50) == chance_agreement(
        src, g, paragraphs=paras, seed=5, draws=50)
    with pytest.raises(ValueError, match="draws must be >= 1"):
        chance_agreement(src, g, draws=0)


def _random_corpus(seed, n_docs=300, n_par=30):
    """Gold and an 'inducer' that ignores the text: both draw their boundaries at random,
    independently, with counts of their own."""
    rng = np.random.default_rng(seed)
    n = {f"d{i:03d}": n_par for i in range(n_docs)}
    gold = {d: sorted(rng.choice(np.arange(1, n_par), rng.integers(3, 10), replace=False))
            for d in n}
    ind = {d: sorted(rng.choice(np.arange(1, n_par), rng.integers(2, 12), replace=False))
           for d in n}
    return _paragraphs(n), _segmented(gold, n), _segmented(ind, n)


def test_a_random_inducer_scores_at_chance_and_a_copy_of_gold_scores_one():
    paras, gold, noise = _random_corpus(1)
    q = structure_quality(paras, {"gold": gold, "induced:noise": noise, "copy": gold})
    assert q.columns == list(QUALITY_SCHEMA)
    r = q.row(1, named=True)
    assert 0.3 < r["boundary_f1"] < 0.7  # tolerance makes random boundaries agree a lot
    assert r["boundary_f1_chance"] == pytest.approx(r["boundary_f1"], abs=0.03)
    assert abs(r["boundary_f1_kappa"]) < 0.06
    assert r["section_span_identity_chance"] == pytest.approx(r["section_span_identity"],
                                                              abs=0.02)
    assert abs(r["section_span_identity_kappa"]) < 0.05
    assert abs(r["top_boundary_f1_kappa"]) < 0.06
    c = q.row(2, named=True)
    for f in CHANCE_FIGURES:
        assert c[f] == 1.0 and 0 < c[f"{f}_chance"] < 1 and c[f"{f}_kappa"] == 1.0
        assert np.isnan(q.row(0, named=True)[f"{f}_kappa"])  # the gold row


def test_chance_figures_are_deterministic_under_the_seed(tmp_path):
    paras, gold, noise = _random_corpus(2, n_docs=40)
    sources = {"gold": gold, "induced:noise": noise}
    a = structure_quality(paras, sources, seed=7)
    b = structure_quality(paras, sources, seed=7)
    write_parquet(a, tmp_path / "a.parquet")
    write_parquet(b, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    c = structure_quality(paras, sources, seed=8)
    assert c["boundary_f1"].to_list()[1] == a["boundary_f1"].to_list()[1]  # observed
    assert c["boundary_f1_chance"].to_list()[1] != a["boundary_f1_chance"].to_list()[1]


def test_chance_corrected_edges():
    assert chance_corrected(1.0, 0.6) == 1.0
    assert chance_corrected(0.6, 0.6) == 0.0
    assert chance_corrected(0.5, 0.6) == pytest.approx(-0.25)
    assert np.isnan(chance_corrected(1.0, 1.0)) and np.isnan(chance_corrected(float("nan"), 0))


def _half_right(n_right, n_docs=10):
    """Ten 10-paragraph documents with gold boundaries 3 and 6; the inducer reproduces gold in
    ``n_right`` of them and cuts at 1 and 8 (two paragraphs off both) in the others."""
    n = {f"d{i}": 10 for i in range(n_docs)}
    gold = {d: [3, 6] for d in n}
    ind = {d: [3, 6] if i < n_right else [1, 8] for i, d in enumerate(n)}
    return _paragraphs(n), _segmented(gold, n), _segmented(ind, n), n


def test_guard_flags_agreement_that_passes_raw_but_not_beyond_chance():
    paras, gold, ind, n = _half_right(6)
    q = structure_quality(paras, {"gold": gold, "induced:llm": ind})
    r = q.row(1, named=True)
    # raw: 6 of 10 documents exactly right -> 60% of section spans identical (today's guard
    # reads section spans when no chunk tables were measured and passes anything >= 40%), and
    # boundary F1 0.6
    assert r["section_span_identity"] == pytest.approx(0.6)
    assert r["boundary_f1"] == pytest.approx(0.6)
    want_f1, want_span = _exact_chance({d: 2 for d in n}, {d: [3, 6] for d in n}, n)
    assert r["boundary_f1_chance"] == pytest.approx(want_f1, abs=0.03)
    assert r["section_span_identity_chance"] == pytest.approx(want_span, abs=0.03)
    kappa = (0.6 - r["boundary_f1_chance"]) / (1 - r["boundary_f1_chance"])
    assert r["boundary_f1_kappa"] == pytest.approx(kappa) and kappa < 0.5
    agree, what = induced_agreement(q)
    assert what == "boundary F1" and agree.source == "induced:llm"
    assert (agree.observed, agree.chance, agree.kappa) == (
        r["boundary_f1"], r["boundary_f1_chance"], r["boundary_f1_kappa"])
    flags = comparison_flags("A2", "A0", quality=q)
    assert flags == [
        "about this inducer's segmentation: chance-corrected boundary agreement with gold "
        f"{kappa:.2f} < 0.50 (the guard's floor), from boundary F1 0.60 within one paragraph "
        f"against {r['boundary_f1_chance']:.2f} for random boundaries with as many per "
        "document, so the answer describes how this inducer segments the documents, not their "
        "own structure"]
    # gold-based and gold-vs-induced comparisons do not rest on induced structure alone
    assert comparison_flags("G2", "A0", quality=q) == []
    assert comparison_flags("G3", "A3", quality=q) == []
    # the threshold is the setting; an inducer right on 9 of 10 documents passes
    assert comparison_flags("A2", "A0", quality=q,
                            settings=GuardSettings(min_boundary_kappa=kappa - 0.01)) == []
    paras, gold, ind, _ = _half_right(9)
    good = structure_quality(paras, {"gold": gold, "induced:llm": ind})
    assert good.row(1, named=True)["boundary_f1_kappa"] > 0.5
    assert comparison_flags("A2", "A0", quality=good) == []


def test_induced_agreement_says_why_nothing_was_measured():
    paras, gold, ind, _ = _half_right(6)
    q = structure_quality(paras, {"gold": gold, "induced:llm": ind})
    old = q.drop([c for c in q.columns if c.endswith(("_chance", "_kappa"))])
    agree, why = induced_agreement(old)
    assert agree is None and "rerun structure_quality" in why
    assert comparison_flags("A2", "A0", quality=old) == []
    assert induced_agreement(q.filter(pl.col("source") == "gold")) == (
        None, "no induced structure")
    assert induced_agreement(None) == (None, "no structure-quality table")
