"""The verdict page's plain-words answers from hand-built contrast rows."""

import polars as pl

from structablate.report.verdict import answer, verdict_blocks


def _row(cond_a, cond_b, delta, lo, hi, p_holm, verdict):
    return {"corpus": "c", "embedder": "e", "reranker": "none", "metric": "covNDCG@10",
            "contrast": f"{cond_a}-{cond_b}", "cond_a": cond_a, "cond_b": cond_b,
            "n_queries": 100, "n_docs": 20, "delta": delta, "ci_low": lo, "ci_high": hi,
            "p": p_holm, "p_holm": p_holm, "dz": delta * 5, "verdict": verdict}


def test_answers_follow_ci_holm_and_equivalence():
    assert answer(None) == "not run"
    assert answer(_row("A2", "A0", 0.02, 0.01, 0.03, 0.001, "different")) == "yes"
    assert answer(_row("A4", "A3", -0.03, -0.04, -0.02, 0.001, "different")) == "no, it hurts"
    # significant before Holm, not after: inconclusive, never "yes"
    assert answer(_row("A3", "P", 0.01, 0.001, 0.02, 0.08, "different")) == "inconclusive"
    assert answer(_row("G3", "A3", 0.001, -0.004, 0.006, 0.7, "equivalent")) == (
        "no measurable difference")
    assert answer(_row("A3", "A1", 0.01, -0.01, 0.03, 0.4, "inconclusive")) == "inconclusive"


def test_verdict_blocks_pick_available_contrasts_and_cite_numbers():
    contrasts = pl.DataFrame([
        _row("G2", "A0", 0.05, 0.02, 0.08, 0.004, "different"),
        _row("G4", "G3", -0.02, -0.03, -0.01, 0.01, "different"),
    ])
    summary = pl.DataFrame({"condition": ["A0"], "measure": ["covNDCG@10"], "mean": [0.2]})
    recall = pl.DataFrame({"condition": ["G4"], "section_recall": [0.45]})
    table, *notes = verdict_blocks("c", ("c", "e", "none"), contrasts, summary, recall,
                                   "covNDCG@10")
    answers = {row[0]: (row[1], row[2]) for row in table.rows}
    assert answers["Does cutting at structure help here?"] == ("yes", "G2 − A0")
    assert answers["Is two-stage routing safe?"] == ("no, it hurts", "G4 − G3")
    assert answers["Do real heading paths help beyond token injection?"][0] == "not run"
    routing = next(n for n in notes if n.text.startswith("Is two-stage"))
    assert "+0.0" not in routing.text and "-0.0200" in routing.text and "45%" in routing.text
    assert routing.kind == "warning"


def test_synthetic_queries_are_flagged_for_generated_funnels():
    from structablate.report.page import CorpusData, synthetic_queries

    def corpus(kind, funnel):
        return CorpusData(name="c", kind=kind, funnel=funnel, size_matching=pl.DataFrame())

    assert synthetic_queries(corpus("wikipedia", {"n_accepted": 5}))
    assert synthetic_queries(corpus("markdown", {"funnel": [], "per_type": {}}))
    assert not synthetic_queries(corpus("markdown", {"queries": {"funnel": []}}))
    assert not synthetic_queries(corpus("qasper", {"funnel": []}))


def test_identical_runs_have_no_effect_size():
    from structablate.report.verdict import _numbers

    row = {**_row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "equivalent"), "dz": float("nan")}
    text = _numbers(row, "covNDCG@10")
    assert "dz = undefined (no spread)" in text and "nan" not in text
    assert "dz = +0.25" in _numbers(_row("A2", "A0", 0.05, 0.0, 0.1, 0.2, "inconclusive"),
                                    "covNDCG@10")
