"""Margins on the cell's own scale and a tie guard that never hides a significant result
(issue 39): a margin is per measure and recorded on the row it tested; one number is the
primary measure's only; a relative margin is a share of the control's mean; every
equivalence answer holds exactly above its row's ``equivalence_bound``; no shipped config
applies one margin to every measure; no share of tied questions qualifies a Holm-significant
row, and a qualified row keeps the rule's answer (issue 50)."""

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO
from test_stats_contrasts import make_scores

from structablate.report.guard import comparison_flags
from structablate.report.testable import mark_contrasts
from structablate.report.verdict import needed_sentence
from structablate.settings import StatisticsSettings, parse
from structablate.stats.bootstrap import tost, tost_bound
from structablate.stats.contrasts import contrast_difference, contrast_table, resolve_margins
from structablate.stats.decision import decide, row_words

DECLARED = {"C1": ("A3", "A1"), "C2": ("A3", "P"), "C3": ("G3", "A3"), "C4": ("A4", "A3")}
KW = dict(n_boot=400, seed=1, mixedlm="none")


@pytest.fixture(scope="module")
def scores():
    return make_scores(n_docs=40, seed=8)


def test_one_number_is_the_primary_measures_margin_only(scores):
    t = contrast_table(scores, DECLARED, equivalence_margin=0.02, **KW)
    cov = t.filter(pl.col("metric") == "covNDCG@10")
    other = t.filter(pl.col("metric") == "R@50")
    assert (cov["margin"] == 0.02).all() and cov["p_tost_adj"].is_not_null().all()
    assert other["margin"].is_null().all() and other["p_tost_adj"].is_null().all()
    assert not set(other["decision"]) & {"equivalent", "negligible"}
    # the primary measure is the configured one
    t = contrast_table(scores, DECLARED, equivalence_margin=0.02,
                       primary={"metric": "R@50", "embedder": "strong"}, **KW)
    assert t.filter(pl.col("metric") == "covNDCG@10")["margin"].is_null().all()
    assert (t.filter(pl.col("metric") == "R@50")["margin"] == 0.02).all()
    assert resolve_margins(0.01, "RR") == {"RR": 0.01} and resolve_margins(None) is None


def test_a_relative_margin_is_a_share_of_the_controls_mean_on_the_row(scores):
    t = contrast_table(scores, DECLARED, equivalence_margin={"covNDCG@10": {"relative": 0.05}},
                       **KW)
    for r in t.filter(pl.col("metric") == "covNDCG@10").iter_rows(named=True):
        cell = scores.filter(pl.col("embedder") == r["embedder"])
        a = cell.filter(pl.col("condition") == r["cond_a"]).select("qid")
        b = cell.filter(pl.col("condition") == r["cond_b"]).join(a, on="qid")
        assert r["mean_b"] == pytest.approx(b["covNDCG@10"].mean(), rel=1e-12)
        assert r["margin_relative"] == 0.05
        assert r["margin"] == pytest.approx(0.05 * r["mean_b"], rel=1e-12)
    r50 = t.filter(pl.col("metric") == "R@50")
    assert r50["margin"].is_null().all() and r50["margin_relative"].is_null().all()
    # absolute margins record no share
    t = contrast_table(scores, DECLARED, equivalence_margin={"covNDCG@10": 0.03}, **KW)
    assert t.filter(pl.col("metric") == "covNDCG@10")["margin_relative"].is_null().all()


@pytest.mark.parametrize("seed", range(6))
def test_the_margin_a_row_was_tested_with_is_on_the_row(seed):
    """Property: whatever the configured margin (absolute, relative, per measure), the row's
    ``margin`` is the one its TOST used: re-running the TOST with the row's margin on the same
    replicates gives the row's p, and equivalence holds exactly above ``equivalence_bound``."""
    rng = np.random.default_rng(seed)
    sc = make_scores(n_docs=30, seed=seed)
    spec = {"covNDCG@10": {"relative": float(rng.uniform(0.01, 0.2))},
            "R@50": float(rng.uniform(0.005, 0.1))}
    t = contrast_table(sc, DECLARED, equivalence_margin=spec, **KW)
    for r in t.iter_rows(named=True):
        assert r["margin"] is not None
        if r["margin_relative"] is not None:
            assert r["margin"] == pytest.approx(r["margin_relative"] * r["mean_b"])
        # the answer is equivalence (or negligible) exactly when the margin exceeds the bound
        eq = r["decision"] in ("equivalent", "negligible")
        assert eq == (r["margin"] > r["equivalence_bound"]), r
        # and a margin on the other side of the bound flips it
        other = contrast_table(
            sc, DECLARED, equivalence_margin={r["metric"]: r["equivalence_bound"] * 1.0001
                                              if not eq else r["equivalence_bound"]}, **KW)
        o = other.filter((pl.col("embedder") == r["embedder"])
                         & (pl.col("metric") == r["metric"])
                         & (pl.col("contrast") == r["contrast"])).row(0, named=True)
        assert (o["decision"] in ("equivalent", "negligible")) != eq
        assert decide(o["p_holm"], o["p_tost_adj"]) == o["decision"]


@pytest.mark.parametrize("seed", range(20))
def test_tost_bound_is_exact(seed):
    rng = np.random.default_rng(seed)
    reps = rng.normal(rng.normal(0, 0.01), rng.uniform(0.001, 0.02), int(rng.integers(50, 900)))
    fam = int(rng.integers(1, 8))
    b = tost_bound(reps, fam)
    for m in (b, np.nextafter(b, np.inf), b * 1.01, b * 0.99, b + 1e-3, max(b - 1e-3, 0)):
        assert (min(1.0, fam * float(tost(reps, m))) < 0.05) == (m > b)


def _configs() -> list[Path]:
    return [REPO / "config.yaml", *sorted((REPO / "config").glob("*.yaml"))]


@pytest.mark.parametrize("path", _configs(), ids=lambda p: p.name)
def test_no_shipped_config_applies_one_margin_to_every_measure(path):
    cfg = yaml.safe_load(path.read_text()) or {}
    block = cfg.get("statistics")
    if block is None:
        return  # a fragment without statistics (the bundled default's apply)
    stats = parse(StatisticsSettings, block)
    measures = (cfg.get("metrics") or {}).get("measures") or ["covNDCG@10"]
    given = stats.equivalence_margin
    assert not isinstance(given, int | float), \
        f"{path.name}: statistics.equivalence_margin is one number; give it per measure"
    margins = resolve_margins(given, stats.primary.metric) or {}
    assert len(measures) == 1 or not set(measures) <= set(margins), \
        f"{path.name}: every measure has an equivalence margin"
    assert set(margins) <= set(measures), f"{path.name}: a margin for a measure not scored"


def test_needed_sentence_uses_the_cells_own_scale():
    row = {"mde80_family": 0.008, "n_queries": 4301, "n_docs": 1508, "family_size": 7,
           "design_effect": 1.3, "mean_b": 0.07}
    text = needed_sentence(row)
    assert "2.5–14.8 % of the control's mean, here 0.0017–0.0103" in text
    assert "0.010–0.033" not in text
    old = needed_sentence({k: v for k, v in row.items() if k != "mean_b"})
    assert "0.010–0.033 on the paper's scale" in old


# ---------------------------------------------------------------- the tie guard


def _contrast_row(rng, a, b, p_holm, n_q, zeros):
    return {"corpus": "c", "embedder": "e", "reranker": "none", "metric": "R@50",
            "contrast": f"{a}-{b}", "cond_a": a, "cond_b": b, "n_queries": n_q, "n_docs": 40,
            "delta": float(rng.normal(0, 0.02)), "ci_low": -0.01, "ci_high": 0.03,
            "p": p_holm / 2, "p_holm": p_holm, "p_tost_adj": float(rng.uniform(0, 1)),
            "margin": 0.01, "n_zero_delta": zeros, "family_size": 4}


PAIRS = [("A3-d2", "A3"), ("G3", "G2"), ("A3", "P"), ("A4", "A3"), ("G4", "G3")]


@pytest.mark.parametrize("seed", range(30))
def test_no_tie_share_qualifies_a_significant_row(seed):
    """Random rows, random shares of tied questions, identical rankings and identical chunk
    texts: a row whose Holm p is below 0.05 gets no reason of identity and reads the rule's
    answer alone; a row that is not significant is qualified as about conditions that
    returned the same results, and still reads the rule's answer first."""
    rng = np.random.default_rng(seed)
    rows, ranking, checks = [], [], []
    for a, b in PAIRS:
        n_q = int(rng.integers(20, 5000))
        zeros = int(rng.integers(math.ceil(0.9 * n_q), n_q + 1))  # at least 90 % tied
        p_holm = float(rng.choice([rng.uniform(0, 0.0499), rng.uniform(0.05, 1)]))
        rows.append(_contrast_row(rng, a, b, p_holm, n_q, zeros))
        same = int(rng.integers(math.ceil(0.9 * n_q), n_q + 1))
        ranking.append({"cond_a": b, "cond_b": a, "n_queries": n_q, "identical": same,
                        "identical_share": same / n_q})
        share = float(rng.uniform(0.9, 1.0))
        checks.append({"cond_a": a, "cond_b": b, "check": "same_text", "value": share,
                       "count": 1, "total": 1, "detail": ""})
    marked = mark_contrasts(pl.DataFrame(rows), ranking=pl.DataFrame(ranking),
                            checks=pl.DataFrame(checks))
    for r in marked.iter_rows(named=True):
        assert r["answer"].startswith(row_words(r)), r
        assert "not testable" not in r["answer"]
        if r["p_holm"] < 0.05:
            assert r["guard"] is None and r["answer"] == row_words(r), r
        else:
            assert "identical rankings" in r["guard"]
            assert "about two conditions that returned the same results" in r["answer"]
    # without the ranking identity the score ties stand in, for non-significant rows only
    bare = mark_contrasts(pl.DataFrame(rows))
    for r in bare.iter_rows(named=True):
        assert (r["guard"] is not None) == (r["p_holm"] >= 0.05)


def test_score_ties_do_not_flag_when_the_rankings_were_measured():
    """Top ranks identical, tails differ (A4 vs A3 on the Wikipedia sample): every per-query
    covNDCG@10 delta is 0 but the rankings differ; what the conditions did decides."""
    row = {"cond_a": "A4", "cond_b": "A3", "metric": "covNDCG@10", "n_queries": 33,
           "n_zero_delta": 33, "p_holm": 1.0}
    ranking = pl.DataFrame({"cond_a": ["A3"], "cond_b": ["A4"], "n_queries": [33],
                            "identical": [4], "identical_share": [4 / 33]})
    assert comparison_flags("A4", "A3", ranking=ranking, row=row) == []
    flags = comparison_flags("A4", "A3", row=row)
    assert len(flags) == 1 and "score the same covNDCG@10" in flags[0] \
        and "no ranking identity was measured" in flags[0]
    assert comparison_flags("A4", "A3", row={**row, "p_holm": 0.001}) == []


def test_contrast_difference_is_the_paired_difference_of_two_contrasts():
    """(a − b) − (c − d) per question over the questions all four conditions scored, with its
    own clustered bootstrap; fewer than ten documents: no interval."""
    rng = np.random.default_rng(3)
    qids = [f"q{i}" for i in range(120)]
    docs = [f"d{i // 4}" for i in range(120)]
    base = rng.uniform(0.2, 0.6, 120)
    lifts = {"A3": 0.03, "A2": 0.0, "G3": 0.01, "G2": 0.0}
    scores = {c: pl.DataFrame({"qid": qids, "doc_id": docs,
                               "m": base + lift + rng.normal(0, 0.01, 120)})
              for c, lift in lifts.items()}
    scores["G2"] = scores["G2"].filter(pl.col("qid") != "q0")  # one question fewer
    res = contrast_difference(scores, ("A3", "A2"), ("G3", "G2"), "m", n_boot=500, seed=1)
    j = {c: dict(zip(t["qid"], t["m"], strict=True)) for c, t in scores.items()}
    want = np.mean([(j["A3"][q] - j["A2"][q]) - (j["G3"][q] - j["G2"][q]) for q in qids[1:]])
    assert res["n_queries"] == 119 and res["n_docs"] == 30
    assert res["delta"] == pytest.approx(want, rel=1e-12)
    assert res["ci_low"] < 0.02 < res["ci_high"] and res["p"] < 0.05
    # its MDE beside the answer: 2.8016 times the document-clustered se, which the bootstrap's
    # interval agrees with (half-width about 1.96 se)
    assert res["mde80"] == pytest.approx(2.8016 * res["se"], rel=1e-4)
    assert (res["ci_high"] - res["ci_low"]) / 3.92 == pytest.approx(res["se"], rel=0.25)
    few = {c: t.filter(pl.col("doc_id").is_in(["d0", "d1"])) for c, t in scores.items()}
    small = contrast_difference(few, ("A3", "A2"), ("G3", "G2"), "m", n_boot=100)
    assert math.isnan(small["ci_low"]) and math.isfinite(small["delta"])
    with pytest.raises(ValueError, match="no scores for GP"):
        contrast_difference(scores, ("A3", "A2"), ("G3", "GP"), "m")
