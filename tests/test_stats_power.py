"""Resolving power: the MDE formula, its power in simulation, the needed sample sizes, and the
contrast table's se / mde80 / design_effect columns."""

import numpy as np
import polars as pl
import pytest
from test_stats_contrasts import make_scores

from structablate.stats import (
    MIN_DOCS,
    MIN_QUERIES,
    bootstrap_se,
    cluster_bootstrap,
    contrast_table,
    design_effect,
    mde,
    needed_for_delta,
    needed_for_dz,
    per_doc,
    percentile_ci,
    resolving_power,
    sample_warnings,
)
from structablate.stats.power import z_sum


def test_mde_formula_and_thresholds():
    assert z_sum() == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert mde(0.01) == pytest.approx(0.028016, abs=1e-6)
    np.testing.assert_allclose(mde(np.array([0.01, np.nan])), [0.0280159, np.nan], rtol=1e-5)
    assert z_sum(0.05 / 4) == pytest.approx(2.4977 + 0.8416, abs=1e-3)  # Holm's first step
    # 272 = ceil((2.8016 / 0.17)^2): independent questions for the paper's largest dz
    assert MIN_QUERIES == 272 and MIN_DOCS == 30
    assert sample_warnings(271, 29) == ["documents", "queries"]
    assert sample_warnings(272, 30) == []


def test_needed_sizes_by_hand():
    # 100 questions over 20 documents resolve ±0.03: |Δ| 0.01 needs (0.03/0.01)^2 = 9x
    assert needed_for_delta(100, 20, 0.03, 0.01) == (900, 180)
    assert needed_for_delta(100, 20, 0.03, -0.03) == (100, 20)
    assert needed_for_delta(100, 20, float("nan"), 0.01) == (None, None)
    assert needed_for_delta(100, 20, 0.0, 0.01) == (None, None)  # no spread: says nothing
    # design effect 2, dz 0.17: 2 * 271.6 = 543.2 -> 544 questions at 5 per document
    assert needed_for_dz(100, 20, 2.0, 0.17) == (544, 109)
    assert needed_for_dz(100, 20, float("nan"), 0.17) == (None, None)
    assert design_effect(0.02, 0.1, 100) == pytest.approx(4.0)
    assert np.isnan(design_effect(0.02, 0.0, 100))


def test_an_effect_of_one_mde_is_detected_in_about_80_percent_of_designs():
    """Equal clusters (3 questions per document, 40 documents): the true standard error of the
    mean delta is sqrt((tau^2 + sigma^2/3) / 40). A true effect of 2.8016 of them should have
    its 95% CI exclude 0 in ~80% of simulated designs, and the bootstrap SE should estimate
    the true one."""
    rng = np.random.default_rng(20260710)
    n_docs, per, tau, sigma = 40, 3, 0.04, 0.08
    se_true = np.sqrt((tau ** 2 + sigma ** 2 / per) / n_docs)
    effect = mde(se_true)
    hits, ses = 0, []
    n_sims = 300
    for s in range(n_sims):
        doc = np.repeat(np.arange(n_docs), per)
        d = effect + rng.normal(0, tau, n_docs)[doc] + rng.normal(0, sigma, len(doc))
        _, sums, counts = per_doc(d, doc)
        reps = cluster_bootstrap(sums[:, 0], counts, 500, seed=s)
        lo, _ = percentile_ci(reps)
        hits += lo > 0
        ses.append(bootstrap_se(reps))
    assert 0.72 <= hits / n_sims <= 0.90
    assert np.mean(ses) == pytest.approx(se_true, rel=0.08)


@pytest.fixture(scope="module")
def table():
    return contrast_table(make_scores(n_docs=30, seed=4), n_boot=400, seed=3, mixedlm="none")


def test_contrast_table_reports_se_mde_and_design_effect(table):
    scores = make_scores(n_docs=30, seed=4)
    row = table.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "covNDCG@10")
                       & (pl.col("contrast") == "C2")).row(0, named=True)
    cell = scores.filter(pl.col("embedder") == "strong")
    a = cell.filter(pl.col("condition") == "A3").sort("qid")
    b = cell.filter(pl.col("condition") == "P").sort("qid")
    d = (a["covNDCG@10"] - b["covNDCG@10"]).to_numpy()
    _, sums, counts = per_doc(d, a["doc_id"].to_numpy())
    # C1..C4 share the documents, so they share the draws: C2's replicates are reproducible
    reps = cluster_bootstrap(sums[:, 0], counts, 400, seed=3)
    assert row["se"] == pytest.approx(float(bootstrap_se(reps)), rel=1e-9)
    assert row["mde80"] == pytest.approx(z_sum() * row["se"])
    assert row["design_effect"] == pytest.approx(row["se"] ** 2 / (d.std(ddof=1) ** 2 / len(d)))


def test_resolving_power_rows_follow_the_formulas(table):
    power = resolving_power(table)
    assert power.height == table.height
    r = power.row(0, named=True)
    t = table.row(0, named=True)
    # at the level of the decision: two-sided alpha / the declared family's size
    assert t["family_size"] == 4 and r["alpha"] == pytest.approx(0.05 / 4)
    assert r["mde80"] == t["mde80_family"] > t["mde80"]
    assert t["mde80_family"] == pytest.approx(z_sum(0.05 / 4) * t["se"])
    q, n = needed_for_delta(t["n_queries"], t["n_docs"], t["mde80_family"], 0.01)
    assert (r["queries_for_delta_0.01"], r["docs_for_delta_0.01"]) == (q, n)
    q, n = needed_for_dz(t["n_queries"], t["n_docs"], t["design_effect"], 0.06, alpha=0.05 / 4)
    assert (r["queries_for_dz_0.06"], r["docs_for_dz_0.06"]) == (q, n)
    # the unadjusted level needs fewer questions than the family's
    assert q > needed_for_dz(t["n_queries"], t["n_docs"], t["design_effect"], 0.06)[0]
    # a larger target needs fewer questions
    assert r["queries_for_delta_0.033"] <= r["queries_for_delta_0.01"]
    with pytest.raises(ValueError, match="mde80"):
        resolving_power(table.drop("mde80"))


def test_identical_conditions_have_every_delta_zero():
    scores = make_scores(n_docs=12, seed=2)
    a3 = scores.filter(pl.col("condition") == "A3")
    same = pl.concat([scores.filter(pl.col("condition") != "A4"),
                      a3.with_columns(pl.lit("A4").alias("condition"))])
    t = contrast_table(same, {"C4": ("A4", "A3"), "C2": ("A3", "P")}, n_boot=200, seed=1,
                       mixedlm="none")
    c4 = t.filter((pl.col("contrast") == "C4") & (pl.col("embedder") == "strong")
                  & (pl.col("metric") == "covNDCG@10")).row(0, named=True)
    assert c4["n_zero_delta"] == c4["n_queries"] and c4["se"] == 0.0 and c4["mde80"] == 0.0
    assert np.isnan(c4["dz"]) and c4["p"] == 1.0
    assert t.filter(pl.col("contrast") == "C2")["n_zero_delta"].max() == 0
