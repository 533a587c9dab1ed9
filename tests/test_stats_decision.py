"""The one decision rule (structablate.stats.decision) and the family fixed by the config:
monotone, a function of the family-adjusted p-values only, the same words everywhere, and no
shrunken Holm family in a partial run."""

import numpy as np
import polars as pl
import pytest
from test_stats_contrasts import make_scores

from structablate.report.blocks import row_answer
from structablate.report.verdict import answer
from structablate.stats import (
    DECISIONS,
    MIN_BOOTSTRAP_DOCS,
    contrast_table,
    decide,
    decision_words,
    holm,
)

# how strongly an outcome claims an effect (equivalence claims its absence)
EFFECT_CLAIM = {"difference": 2, "negligible": 1, "inconclusive": 0, "equivalent": -1}


def test_four_outcomes():
    assert decide(0.01, 0.5) == "difference"
    assert decide(0.01, 0.01) == "negligible"
    assert decide(0.5, 0.01) == "equivalent"
    assert decide(0.5, 0.5) == "inconclusive"
    assert decide(0.5, None) == "inconclusive"  # no margin: equivalence is not tested
    assert decide(0.01, float("nan")) == "difference"
    assert decide(None, 0.01) == "withheld"
    assert decide(float("nan"), 0.01) == "withheld"
    assert decide(0.05, 0.05) == "inconclusive"  # the level is strict: p < 0.05


def test_rule_is_monotone_over_random_rows():
    rng = np.random.default_rng(11)
    p = rng.uniform(0, 0.2, (5000, 4))
    for p1, p2, t1, t2 in p:
        lo, hi = sorted((p1, p2))
        # a smaller Holm p never gives a weaker claim of an effect
        assert EFFECT_CLAIM[decide(lo, t1)] >= EFFECT_CLAIM[decide(hi, t1)]
        # a smaller TOST p never gives a weaker claim of equivalence (or a stronger of effect)
        tlo, thi = sorted((t1, t2))
        assert EFFECT_CLAIM[decide(p1, tlo)] <= EFFECT_CLAIM[decide(p1, thi)]
        # the answer depends on which side of the level each adjusted p lies, nothing else
        same = decide(0.01 if p1 < 0.05 else 0.5, 0.01 if t1 < 0.05 else 0.5)
        assert decide(p1, t1) == same


def _row(**kw):
    base = dict(cond_a="G4", cond_b="G3", metric="covNDCG@10", n_queries=4301, n_docs=1508,
                dz=-0.037, mde80=0.0045, family_size=3, margin=0.01, n_zero_delta=0)
    return base | kw


def test_same_holm_p_and_both_intervals_inside_the_margin_give_one_answer():
    """The full-QASPER page's two rows (Holm p 0.058 for both, both intervals inside ±0.01):
    one read "too small to tell", the other "no measurable difference"."""
    g4_g3 = _row(delta=-0.0036, ci_low=-0.0069, ci_high=-0.0006, p=0.019, p_holm=0.058,
                 p_tost_adj=0.0003, ci_tost_low=-0.0074, ci_tost_high=-0.0001,
                 verdict="different")
    g2_a0 = _row(cond_a="G2", cond_b="A0", delta=0.0045, ci_low=-0.0000, ci_high=0.0092,
                 p=0.050, p_holm=0.058, p_tost_adj=0.02, ci_tost_low=-0.0009,
                 ci_tost_high=0.0098, verdict="equivalent")
    assert answer(g4_g3) == answer(g2_a0) == "no difference larger than ±0.01"
    assert row_answer(g4_g3) == row_answer(g2_a0) == answer(g2_a0)
    # significant and inside the margin: a real but negligible difference, for both signs
    assert answer(g4_g3 | {"p_holm": 0.01}) == answer(g2_a0 | {"p_holm": 0.01}) == \
        "a real but negligible difference (smaller than ±0.01)"


def test_words_cover_every_decision():
    for d in DECISIONS:
        assert decision_words(d, 0.01, 0.01)
    assert decision_words("difference", -0.01, 0.01) == "no, it hurts"
    assert decision_words("difference", 0.01, None) == "yes"
    with pytest.raises(ValueError, match="unknown decision"):
        decision_words("different", 0.0, 0.01)


def test_holm_never_decreases_when_another_p_grows():
    """Why a contrast that did not run enters with p = 1: whatever its p would have been, the
    others' adjusted p-values are at most what p = 1 gives."""
    rng = np.random.default_rng(3)
    for _ in range(2000):
        p = rng.uniform(0, 0.3, int(rng.integers(2, 7)))
        drop = rng.random(len(p)) < 0.4
        worst = holm(np.where(drop, 1.0, p))
        assert (worst[~drop] >= holm(p)[~drop] - 1e-15).all()


DECLARED = {"C1": ("A3", "A1"), "C2": ("A3", "P"), "C3": ("G3", "A3"), "C4": ("A4", "A3")}


@pytest.fixture(scope="module")
def families():
    scores = make_scores(n_docs=40, seed=8)
    kw = dict(n_boot=400, seed=1, mixedlm="none",
              equivalence_margin={"covNDCG@10": 0.01, "R@50": 0.01})
    full = contrast_table(scores, DECLARED, **kw)
    partial = contrast_table(scores.filter(pl.col("condition") != "A1"), DECLARED, **kw)
    return full, partial


def test_a_family_missing_a_contrast_is_not_shrunk(families):
    full, partial = families
    key = ["embedder", "metric", "contrast"]
    j = partial.join(full, on=key, suffix="_full")
    assert partial.height == full.height * 3 // 4  # C1 has no row without A1
    assert (partial["family_size"] == 4).all() and (partial["family_missing"] == "C1").all()
    assert (full["family_missing"] == "").all()
    # never a smaller adjusted p than the complete run
    assert (j["p_holm"] >= j["p_holm_full"] - 1e-15).all()
    # exactly Holm over the declared four, C1 at p = 1
    fam = partial.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "R@50"))
    np.testing.assert_allclose(fam["p_holm"].to_numpy(),
                               holm([*fam["p"].to_list(), 1.0])[:3])


def test_table_decision_is_the_rule(families):
    full, _ = families
    for r in full.iter_rows(named=True):
        assert r["decision"] == decide(r["p_holm"], r["p_tost_adj"])
        assert r["p_tost_adj"] == pytest.approx(min(1.0, 4 * r["p_tost"]))
        inside = -r["margin"] < r["ci_tost_low"] and r["ci_tost_high"] < r["margin"]
        assert inside == (r["p_tost_adj"] < 0.05) or r["p_tost_adj"] == pytest.approx(0.05,
                                                                                     abs=0.01)


def test_margin_per_measure():
    scores = make_scores(n_docs=30, seed=9)
    t = contrast_table(scores, DECLARED, n_boot=200, seed=1, mixedlm="none",
                       equivalence_margin={"covNDCG@10": 0.02})
    cov = t.filter(pl.col("metric") == "covNDCG@10")
    other = t.filter(pl.col("metric") == "R@50")
    assert (cov["margin"] == 0.02).all() and cov["p_tost"].is_not_null().all()
    assert other["margin"].is_null().all() and other["p_tost_adj"].is_null().all()
    assert set(other["decision"]) <= {"difference", "inconclusive"}  # never equivalent


def test_too_few_documents_are_withheld():
    scores = make_scores(n_docs=MIN_BOOTSTRAP_DOCS - 1, seed=2)
    t = contrast_table(scores, DECLARED, n_boot=200, seed=1, mixedlm="none")
    assert t.height and (t["decision"] == "withheld").all()
    for c in ("p", "p_holm", "ci_low", "ci_high", "se", "mde80_family"):
        assert t[c].is_null().all(), c
    assert t["withheld"].str.contains(f"fewer than the {MIN_BOOTSTRAP_DOCS}").all()
    assert t["delta"].is_not_null().all()  # the observed delta is still shown
    one = make_scores(n_docs=1, seed=2)  # one document: p would be 0 and the CI zero-wide
    t1 = contrast_table(one, DECLARED, n_boot=200, seed=1, mixedlm="none")
    assert (t1["decision"] == "withheld").all() and t1["p"].is_null().all()
    row = t1.row(0, named=True)
    assert answer(row) == "withheld"


# ---------------------------------------------------------------- issue 50: no spread, MC error

from structablate.stats.decision import (  # noqa: E402
    monte_carlo_flags,
    monte_carlo_se,
    no_spread,
    row_decision,
    row_words,
)


def test_all_questions_tied_is_too_small_to_tell_never_equivalence():
    """A user corpus's routing row: all 20 of 20 questions tied, so every replicate is 0,
    the TOST passes at any margin and the rule alone would say "no difference"."""
    scores = make_scores(n_docs=40, seed=4)
    same = scores.filter(pl.col("condition") == "A3")
    tied = pl.concat([same, same.with_columns(pl.lit("A4").alias("condition"))])
    t = contrast_table(tied, {"C4": ("A4", "A3")}, n_boot=300, seed=1, mixedlm="none",
                       equivalence_margin={"covNDCG@10": 0.01})
    row = t.filter(pl.col("metric") == "covNDCG@10").row(0, named=True)
    n = row["n_queries"]
    assert row["n_zero_delta"] == n and row["se"] == 0.0
    # the p-values alone would claim equivalence ...
    assert decide(row["p_holm"], row["p_tost_adj"]) == "equivalent"
    # ... the sample without spread cannot carry it
    assert no_spread(row) == f"all {n:,} tie"
    assert row_decision(row) == "inconclusive"
    assert row_words(row) == f"too small to tell (all {n:,} tie)"
    assert row_answer(row) == row_words(row) == answer(row)


def test_zero_width_bootstrap_is_too_small_to_tell():
    row = {"p_holm": 0.0, "p_tost_adj": 0.0, "n_queries": 50, "n_zero_delta": 0,
           "se": 0.0, "delta": 0.02, "margin": 0.01}
    assert decide(0.0, 0.0) == "negligible"  # what the p-values alone say
    assert row_decision(row) == "inconclusive"
    assert "no spread" in row_words(row)
    assert row_decision(row | {"se": 0.001}) == "negligible"
    assert no_spread(row | {"se": 0.001, "n_zero_delta": 49}) is None


def test_the_rule_stays_monotone_for_a_fixed_spread():
    rng = np.random.default_rng(12)
    for p1, p2, t1 in rng.uniform(0, 0.2, (2000, 3)):
        lo, hi = sorted((p1, p2))
        for flag in (False, True):
            assert EFFECT_CLAIM[decide(lo, t1, spreadless=flag)] >= \
                EFFECT_CLAIM[decide(hi, t1, spreadless=flag)]
    assert decide(None, 0.01, spreadless=True) == "withheld"  # withheld stays withheld


def test_monte_carlo_error_of_a_bootstrap_p_matches_a_simulation():
    """The standard error :func:`monte_carlo_se` gives for a two-sided p near α is the spread
    of p over bootstrap seeds (a binomial share of replicates), within 15 %."""
    rng = np.random.default_rng(0)
    n_boot, alpha = 2000, 0.05
    # replicates of a mean whose two-sided p is about α: the mean sits ~1.96 sd from 0
    ps = []
    for _ in range(400):
        reps = rng.normal(1.96, 1.0, n_boot)
        ps.append(min(1.0, 2 * min((reps <= 0).mean(), (reps >= 0).mean())))
    se = monte_carlo_se(float(np.mean(ps)), float(np.mean(ps)), n_boot, alpha=alpha)
    assert se == pytest.approx(float(np.std(ps)), rel=0.15)


def test_monte_carlo_flags_name_the_test_near_alpha():
    base = {"n_queries": 300, "n_zero_delta": 10, "se": 0.01}
    # Holm multiplier 4: the decision flips at p = 0.0125; 2 SE at 10,000 replicates ≈ 0.0126
    near = base | {"p": 0.012, "p_holm": 0.048, "p_tost": None, "p_tost_adj": None}
    far = base | {"p": 0.0025, "p_holm": 0.010}
    assert monte_carlo_flags(near, 10_000) == ["significance"]
    assert monte_carlo_flags(far, 10_000) == []
    # more replicates, a smaller error: the same p is no longer within it
    assert monte_carlo_flags(near | {"p": 0.0105, "p_holm": 0.042}, 1_000_000) == []
    # the equivalence test: Bonferroni over a family of 7, one-sided tail
    tost = base | {"p": 0.5, "p_holm": 1.0, "p_tost": 0.0068, "p_tost_adj": 0.0476}
    assert monte_carlo_flags(tost, 10_000) == ["equivalence"]
    # a sample without spread has no Monte-Carlo question
    assert monte_carlo_flags(near | {"n_zero_delta": 300}, 10_000) == []
    # a qualified answer on the page says so, with a letter whose sentence names the choice
    from structablate.report.guard import Flags
    flags = Flags()
    words = row_answer(near | {"delta": 0.01}, flags, 10_000)
    assert words == "yes — within Monte-Carlo error of α [a]"
    (letter, sentence), = flags.items()
    assert "two Monte-Carlo standard errors" in sentence and "rather than raising" in sentence


def test_small_sample_columns_qualify_the_answer():
    """The small-sample inference's optional columns (absent in older tables): a p from the
    sign-flip test and mixed models that disagree are said on the row; an exact p has no
    Monte-Carlo error to flag."""
    row = {"n_queries": 40, "n_zero_delta": 2, "se": 0.01, "delta": 0.069, "p": 0.004,
           "p_holm": 0.017, "p_method": "sign-flip-exact", "mixedlm_disagrees": True,
           "mixedlm_disagreeing": "p_mixedlm,p_mixedlm_slope"}
    assert row_answer(row) == ("yes — p from the exact document sign-flip test; the mixed "
                               "models disagree (p_mixedlm,p_mixedlm_slope)")
    near = row | {"p": 0.0125, "p_holm": 0.05 - 1e-4}
    assert monte_carlo_flags(near, 10_000) == []
    assert monte_carlo_flags(near | {"p_method": "sign-flip-mc"}, 10_000) == ["significance"]
    assert row_answer({k: v for k, v in row.items()
                       if k not in ("p_method", "mixedlm_disagrees")}) == "yes"


def test_all_tied_over_few_documents_is_too_small_to_tell_under_the_sign_flip_test_too():
    scores = make_scores(n_docs=12, seed=4)
    same = scores.filter(pl.col("condition") == "A3")
    tied = pl.concat([same, same.with_columns(pl.lit("A4").alias("condition"))])
    t = contrast_table(tied, {"C4": ("A4", "A3")}, n_boot=300, seed=1, mixedlm="none",
                       equivalence_margin={"covNDCG@10": 0.01})
    row = t.filter(pl.col("metric") == "covNDCG@10").row(0, named=True)
    assert row["p_method"] == "sign-flip-exact"
    assert row_decision(row) == "inconclusive"
    assert row_answer(row).startswith(f"too small to tell (all {row['n_queries']:,} tie) — ")
