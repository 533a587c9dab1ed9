"""Contrasts table, per-qtype cuts, equivalence, MixedLM columns, dose-response."""

import numpy as np
import polars as pl
import pytest

from structablate.stats import (
    OUTPUT_COLUMNS,
    contrast_table,
    dose_response,
    equivalence_table,
    holm,
    mixedlm_pvalues,
    per_query_slopes,
)

CONDS = ["A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G3"]
# the primary cell of these synthetic scores (the library has no default primary cell)
PRIMARY = {"metric": "covNDCG@10", "embedder": "strong", "reranker": "none"}
SHIFT = {
    "A1": -0.02,
    "A2": 0.0,
    "A3-d1": 0.01,
    "A3-d2": 0.02,
    "A3": 0.03,
    "P": 0.03,
    "A4": -0.05,
    "G3": 0.03,
}


def make_scores(n_docs=60, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    rows = []
    qn = 0
    for d in range(n_docs):
        doc_eff = rng.normal(0, 0.1)
        for _ in range(int(rng.integers(1, 5))):
            base = 0.4 + doc_eff + rng.normal(0, 0.15)
            qtype = ["factoid", "multihop"][qn % 2]
            for emb in ("strong", "weak"):
                for c in CONDS:
                    y = base + SHIFT[c] + rng.normal(0, noise)
                    rows.append(
                        ("qasper", emb, "none", c, f"q{qn:04d}", f"D{d:03d}", qtype, y, 2 * y)
                    )
            qn += 1
    return pl.DataFrame(
        rows,
        schema=[
            "corpus",
            "embedder",
            "reranker",
            "condition",
            "qid",
            "doc_id",
            "qtype",
            "covNDCG@10",
            "R@50",
        ],
        orient="row",
    )


@pytest.fixture(scope="module")
def scores():
    return make_scores()


@pytest.fixture(scope="module")
def table(scores):
    return contrast_table(scores, n_boot=500, seed=1, mixedlm="primary", primary=PRIMARY)


def test_layout_and_family(scores, table):
    assert table.columns == OUTPUT_COLUMNS
    assert table.height == 2 * 2 * 4  # embedders x metrics x contrasts
    fam = table.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "covNDCG@10"))
    assert fam["contrast"].to_list() == ["C1", "C2", "C3", "C4"]
    assert fam["cond_a"].to_list() == ["A3", "A3", "G3", "A4"]
    np.testing.assert_allclose(fam["p_holm"].to_numpy(), holm(fam["p"].to_numpy()))
    assert fam["primary"].all()
    assert not table.filter(pl.col("embedder") == "weak")["primary"].any()
    assert table.filter(~pl.col("primary"))["p_mixedlm"].is_nan().all()
    prim = fam.filter(pl.col("contrast") == "C4").row(0, named=True)
    assert 0 <= prim["p_mixedlm"] <= 1 and 0 <= prim["p_mixedlm_query"] <= 1


def test_an_exploratory_family_is_never_primary_but_gets_the_mixedlm_check(scores, table):
    """mixedlm: primary fits both specifications on every row of the primary cell and metric,
    the exploratory family's too; only the pre-registered family is marked primary."""
    extra = contrast_table(scores, {"G3-A2": ("G3", "A2")}, n_boot=500, seed=1,
                           mixedlm="primary", primary_family=False,
                           primary=PRIMARY)
    assert not extra["primary"].any()
    prim = extra.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "covNDCG@10"))
    row = prim.row(0, named=True)
    assert 0 <= row["p_mixedlm"] <= 1 and 0 <= row["p_mixedlm_query"] <= 1
    rest = extra.filter((pl.col("embedder") != "strong") | (pl.col("metric") != "covNDCG@10"))
    assert rest.height == 3 and rest["p_mixedlm"].is_nan().all()
    # the same contrast as a pre-registered one: the same numbers, marked primary
    same = contrast_table(scores, {"G3-A2": ("G3", "A2")}, n_boot=500, seed=1,
                          mixedlm="primary", primary=PRIMARY)
    assert same.drop("primary").equals(extra.drop("primary"))
    assert same.filter(pl.col("primary")).height == 1


def test_delta_dz_and_counts_by_hand(scores, table):
    s = scores.filter(pl.col("embedder") == "strong")
    a = s.filter(pl.col("condition") == "A3").sort("qid")["covNDCG@10"].to_numpy()
    b = s.filter(pl.col("condition") == "A1").sort("qid")["covNDCG@10"].to_numpy()
    d = a - b
    row = table.filter(
        (pl.col("embedder") == "strong")
        & (pl.col("metric") == "covNDCG@10")
        & (pl.col("contrast") == "C1")
    ).row(0, named=True)
    assert row["delta"] == pytest.approx(d.mean())
    assert row["dz"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert row["n_queries"] == len(d)
    assert row["n_docs"] == 60
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert row["delta"] == pytest.approx(0.05, abs=0.02)
    assert row["p"] < 0.01  # a 0.05 effect with noise 0.07 over ~150 queries
    # second metric is 2x the first -> delta doubles
    r2 = table.filter(
        (pl.col("embedder") == "strong")
        & (pl.col("metric") == "R@50")
        & (pl.col("contrast") == "C1")
    ).row(0, named=True)
    assert r2["delta"] == pytest.approx(2 * row["delta"])


def test_rerun_is_identical_and_pairs_on_the_intersection(scores, table):
    again = contrast_table(scores, n_boot=500, seed=1, mixedlm="primary", primary=PRIMARY)
    assert again.equals(table)
    drop = scores.filter(~((pl.col("condition") == "A1") & (pl.col("qid") == "q0000")))
    t = contrast_table(drop, n_boot=200, seed=1, mixedlm="none")
    c1 = t.filter((pl.col("contrast") == "C1") & (pl.col("embedder") == "strong"))
    c2 = t.filter((pl.col("contrast") == "C2") & (pl.col("embedder") == "strong"))
    assert c1["n_queries"][0] == c2["n_queries"][0] - 1


def test_qtype_cuts_and_equivalence(scores):
    cuts = contrast_table(scores, n_boot=300, seed=1, by=["qtype"], mixedlm="none")
    assert set(cuts["qtype"].unique().to_list()) == {"factoid", "multihop"}
    assert not cuts["primary"].any()
    n = cuts.filter(
        (pl.col("embedder") == "strong")
        & (pl.col("metric") == "covNDCG@10")
        & (pl.col("contrast") == "C1")
    )["n_queries"].sum()
    assert (
        n == scores.filter((pl.col("embedder") == "strong") & (pl.col("condition") == "A3")).height
    )
    eq = equivalence_table(scores, n_boot=500, seed=1, margin=0.03)
    verdict = dict(
        zip(
            eq.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "covNDCG@10"))[
                "contrast"
            ].to_list(),
            eq.filter((pl.col("embedder") == "strong") & (pl.col("metric") == "covNDCG@10"))[
                "decision"
            ].to_list(),
            strict=True,
        )
    )
    # C2 (A3 - P) and C3 (G3 - A3) have true delta 0 -> equivalent within ±0.03;
    # C1 (A3 - A1) is +0.05 and C4 (A4 - A3) -0.08 -> a difference
    assert verdict == {"C1": "difference", "C2": "equivalent", "C3": "equivalent",
                       "C4": "difference"}


def test_mixedlm_query_effect_tightens_a_paired_contrast():
    rng = np.random.default_rng(2)
    n_docs = 40
    doc = np.repeat(np.arange(n_docs), 4)
    base = rng.normal(0, 0.3, len(doc)) + rng.normal(0, 0.1, n_docs)[doc]
    a = base + 0.02 + rng.normal(0, 0.02, len(doc))
    b = base + rng.normal(0, 0.02, len(doc))
    qids = np.array([f"q{i}" for i in range(len(doc))])
    p_doc, p_query = mixedlm_pvalues(qids, doc, a, b)
    # the query variance inflates the document-only model's error; nesting the query fixes it
    assert p_doc > 0.05
    assert p_query < 1e-6


def test_dose_response_slope():
    x = [0, 1, 2, 3]
    assert per_query_slopes(np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.3]]), x) == (
        pytest.approx([1.0, 0.09])
    )
    s = make_scores(noise=0.0)
    dr = dose_response(s, n_boot=200, seed=1, metrics=["covNDCG@10"])
    assert dr.height == 2
    row = dr.row(0, named=True)
    assert row["slope"] == pytest.approx(0.01)  # A2 0, d1 .01, d2 .02, A3 .03
    assert row["ci_low"] == pytest.approx(0.01) and row["ci_high"] == pytest.approx(0.01)
    assert row["p"] == 0.0
    noisy = dose_response(make_scores(seed=3), n_boot=300, seed=1, metrics=["covNDCG@10"])
    assert noisy["slope"][0] == pytest.approx(0.01, abs=0.006)


def test_mixedlm_slope_widens_when_the_effect_varies_by_document():
    """With an effect that differs between documents, the query-in-document model (one shared
    effect) is overconfident; the per-document-slope model is not, and its fit converges."""
    from structablate.stats import mixedlm_slope

    rng = np.random.default_rng(4)
    n_docs = 120
    doc = np.repeat(np.arange(n_docs), 3)
    slope = rng.normal(0.01, 0.06, n_docs)
    base = rng.normal(0.3, 0.2, len(doc))
    a = base + slope[doc] + rng.normal(0, 0.01, len(doc))
    b = base + rng.normal(0, 0.01, len(doc))
    p_slope, converged = mixedlm_slope(doc, a - b)
    _, p_query = mixedlm_pvalues(np.arange(len(doc)), doc, a, b)
    assert converged and 0 < p_slope <= 1
    assert p_slope > 5 * p_query
    # nothing to fit: no spread, or a single document
    assert mixedlm_slope(doc, np.zeros(len(doc))) == (pytest.approx(float("nan"), nan_ok=True),
                                                      False)
    assert mixedlm_slope(np.zeros(9), rng.normal(size=9))[1] is False
