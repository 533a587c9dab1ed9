"""The document-level sign-flip test (stats.smallsample) and its use below MIN_DOCS documents in
the contrasts table (p_method, mixedlm_disagrees)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from structablate.stats import (
    MIN_DOCS,
    OUTPUT_COLUMNS,
    bootstrap_p,
    cluster_bootstrap,
    contrast_table,
    holm,
    per_doc,
)
from structablate.stats.contrasts import _mixedlm_disagreement
from structablate.stats.smallsample import EXACT_MAX_DOCS, sign_flip


def brute_force(sums: np.ndarray, counts: np.ndarray, theta: float) -> tuple[float, float]:
    """One-sided randomization p-values ``Pr[T_ε ≥ T]`` and ``Pr[T_ε ≤ T]`` over all 2^D sign
    vectors of ``T = Σ ε_d (S_d − θ n_d)``, by enumeration."""
    c = sums - theta * counts
    t = c.sum()
    ts = np.array([(np.array(e) * c).sum() for e in itertools.product((1, -1), repeat=len(c))])
    tol = 1e-12
    return float((ts >= t - tol).mean()), float((ts <= t + tol).mean())


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 6, 7).astype(float)
    sums = rng.normal(0.05, 0.2, 7) * counts
    return sums, counts


def test_exact_enumeration_equals_brute_force(tiny):
    sums, counts = tiny
    sf = sign_flip(sums, counts)
    assert sf.exact and sf.n_vectors == 2**7 and sf.n_identity == 1
    assert sf.method == "sign-flip-exact"
    for theta in (-0.3, -0.05, 0.0, 0.02, 0.11, 0.4):
        ge, le = brute_force(sums, counts, theta)
        assert sf.p_greater(theta)[0] == pytest.approx(ge, abs=1e-12)
        assert sf.p_less(theta)[0] == pytest.approx(le, abs=1e-12)
    ge, le = brute_force(sums, counts, 0.0)
    assert sf.p_zero()[0] == pytest.approx(min(1.0, 2 * min(ge, le)))
    assert sf.delta[0] == pytest.approx(sums.sum() / counts.sum())


def test_interval_is_the_inverted_test(tiny):
    """The interval's ends are where the brute-force one-sided p crosses 2.5 %: just inside
    both tests keep θ, just outside one rejects it; and p < 0.05 iff 0 lies outside."""
    sums, counts = tiny
    sf = sign_flip(sums, counts)
    lo, hi = sf.interval(0.90)
    assert lo[0] < sf.delta[0] < hi[0]
    eps = 1e-9
    assert brute_force(sums, counts, lo[0] + eps)[0] >= 0.05
    assert brute_force(sums, counts, lo[0] - eps)[0] < 0.05
    assert brute_force(sums, counts, hi[0] - eps)[1] >= 0.05
    assert brute_force(sums, counts, hi[0] + eps)[1] < 0.05
    # duality on many random data sets (Monte Carlo and exact)
    rng = np.random.default_rng(1)
    for d in (8, 12, 20, 25):
        for _ in range(20):
            n = rng.integers(1, 5, d).astype(float)
            s = rng.normal(rng.normal(0, 0.05), 0.1, d) * n
            f = sign_flip(s, n, 2000, seed=3)
            lo, hi = f.interval(0.95)
            assert (f.p_zero()[0] < 0.05) == (lo[0] > 0 or hi[0] < 0)


def test_tost_and_equivalence_bound_agree_with_the_interval():
    rng = np.random.default_rng(4)
    n = rng.integers(1, 5, 20).astype(float)
    s = rng.normal(0.004, 0.03, 20) * n
    f = sign_flip(s, n, 4000, seed=9)
    bound = float(f.equivalence_bound(family_size=4)[0])
    assert np.isfinite(bound) and bound > abs(f.delta[0])
    passes = f.tost(bound + 1e-9, family_size=4)
    fails = f.tost(bound - 1e-9, family_size=4)
    assert passes["p_tost_adj"][0] < 0.05 <= fails["p_tost_adj"][0]
    lo, hi = passes["ci_tost_low"][0], passes["ci_tost_high"][0]
    assert -(bound + 1e-9) < lo and hi < bound + 1e-9


def test_five_documents_can_never_be_significant():
    """2^5 = 32 sign vectors: the smallest two-sided p is 2/32, and no 95 % interval is
    finite: what five documents can carry. The bootstrap gives p = 0."""
    s, n = np.array([0.5, 0.6, 0.4, 0.7, 0.55]), np.ones(5)
    f = sign_flip(s, n)
    assert f.p_zero()[0] == pytest.approx(2 / 32)
    lo, hi = f.interval(0.95)
    assert np.isneginf(lo[0]) and np.isposinf(hi[0])
    # one-sided at 5 %, 1/32 suffices (any margin above the largest document mean); at the
    # level of a family of four (1.25 % a side) no margin does
    assert f.equivalence_bound()[0] == pytest.approx(0.7)
    assert np.isnan(f.equivalence_bound(family_size=4)[0])
    # the bootstrap calls the same five documents significant with p = 0
    assert bootstrap_p(cluster_bootstrap(s, n, 2000, seed=1)) == 0.0


def test_monte_carlo_is_deterministic_under_its_seed():
    rng = np.random.default_rng(2)
    d = EXACT_MAX_DOCS + 9
    n = rng.integers(1, 6, d).astype(float)
    s = rng.normal(0.02, 0.1, (d, 3)) * n[:, None]
    a, b = sign_flip(s, n, 3000, seed=11), sign_flip(s, n, 3000, seed=11)
    c = sign_flip(s, n, 3000, seed=12)
    assert not a.exact and a.method == "sign-flip-mc" and a.n_vectors == 3001
    assert np.array_equal(a.roots, b.roots) and np.array_equal(a.p_zero(), b.p_zero())
    assert not np.array_equal(a.roots, c.roots)
    # one statistic alone gets the same draws as in a group (shared sign vectors)
    one = sign_flip(s[:, 1], n, 3000, seed=11)
    assert np.array_equal(one.roots[:, 0], a.roots[:, 1])
    # the exact test does not depend on the seed
    e1, e2 = sign_flip(s[:12], n[:12], seed=1), sign_flip(s[:12], n[:12], seed=2)
    assert np.array_equal(e1.roots, e2.roots)


def clustered(rng: np.random.Generator, n_docs: int, delta: float = 0.0):
    """Per-document delta sums and counts of a clustered design: 1–8 questions per document,
    a document effect (sd 0.08) shared by its questions, question noise (sd 0.05)."""
    counts = rng.integers(1, 9, n_docs)
    doc = np.repeat(np.arange(n_docs), counts)
    d = delta + rng.normal(0, 0.08, n_docs)[doc] + rng.normal(0, 0.05, len(doc))
    _, sums, cnt = per_doc(d, doc)
    return sums[:, 0], cnt


def test_level_and_coverage_under_the_null_on_clustered_data():
    """Over 400 clustered 12-document designs with Δ = 0 the sign-flip test rejects at most
    at its level (Monte-Carlo error ±1.1 points) while the percentile bootstrap, on the very
    same designs, rejects more often; a shifted design is covered at least 92.5 %."""
    rng = np.random.default_rng(20260710)
    reps = 400
    flip_rej = boot_rej = covered = 0
    for i in range(reps):
        s, n = clustered(rng, 12)
        flip_rej += sign_flip(s, n).p_zero()[0] < 0.05
        boot_rej += bootstrap_p(cluster_bootstrap(s, n, 1000, seed=i)) < 0.05
        s2, n2 = clustered(rng, 12, delta=0.03)
        lo, hi = sign_flip(s2, n2).interval(0.95)
        covered += lo[0] <= 0.03 <= hi[0]
    assert flip_rej / reps <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)
    assert boot_rej > flip_rej
    assert covered / reps >= 0.925


# ---------------------------------------------------------------- the contrasts table


def scores_for(doc_deltas: list[list[float]]) -> pl.DataFrame:
    """Long scores of one cell, two conditions (A3 and its control A2): one document per
    inner list, one question per delta (A2 scores 0.3, A3 scores 0.3 + delta)."""
    rows = []
    for d, deltas in enumerate(doc_deltas):
        for k, x in enumerate(deltas):
            qid = f"q{d:03d}-{k}"
            rows.append(("c", "e", "none", "A2", qid, f"D{d:03d}", 0.3))
            rows.append(("c", "e", "none", "A3", qid, f"D{d:03d}", 0.3 + x))
    return pl.DataFrame(rows, schema=["corpus", "embedder", "reranker", "condition", "qid",
                                      "doc_id", "covNDCG@10"], orient="row")


def random_docs(n_docs: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(rng.normal(0.02, 0.1, int(rng.integers(1, 5)))) for _ in range(n_docs)]


FAMILY = {"C": ("A3", "A2")}


def test_the_switch_at_min_docs():
    """29 documents: the sign-flip test decides (p as computed by hand, its interval, its
    TOST); 30 documents: the bootstrap, bit-identical to the table without the switch; below
    MIN_BOOTSTRAP_DOCS (10) the row stays withheld."""
    assert MIN_DOCS == 30
    margin = {"covNDCG@10": 0.05}
    below = scores_for(random_docs(MIN_DOCS - 1, 5))
    t = contrast_table(below, FAMILY, n_boot=2000, seed=3, mixedlm="none",
                       equivalence_margin=margin)
    row = t.row(0, named=True)
    assert t.columns == OUTPUT_COLUMNS
    assert row["n_docs"] == 29 and row["p_method"] == "sign-flip-mc"
    j = below.pivot("condition", index=["qid", "doc_id"], values="covNDCG@10").sort("qid")
    _, s, c = per_doc((j["A3"] - j["A2"]).to_numpy(), j["doc_id"].to_numpy())
    f = sign_flip(s, c, 2000, seed=3)
    assert row["p"] == float(f.p_zero()[0]) and row["p_holm"] == row["p"]
    lo, hi = f.interval(0.95)
    assert (row["ci_low"], row["ci_high"]) == (float(lo[0]), float(hi[0]))
    tost = f.tost(0.05)
    assert row["p_tost_adj"] == float(tost["p_tost_adj"][0])
    assert row["ci_tost_low"] == float(tost["ci_tost_low"][0])
    # the bootstrap's own answer differs (it is still computed: se, mde)
    boot = contrast_table(below, FAMILY, n_boot=2000, seed=3, mixedlm="none",
                          equivalence_margin=margin, small_sample_docs=0).row(0, named=True)
    assert boot["p_method"] == "bootstrap" and boot["p"] != row["p"]
    assert boot["se"] == row["se"] and boot["mde80"] == row["mde80"]

    at = scores_for(random_docs(MIN_DOCS, 5))
    kw = dict(n_boot=2000, seed=3, mixedlm="none", equivalence_margin=margin)
    t30 = contrast_table(at, FAMILY, **kw)
    assert t30["p_method"].to_list() == ["bootstrap"]
    assert t30.equals(contrast_table(at, FAMILY, small_sample_docs=0, **kw))

    exact = contrast_table(scores_for(random_docs(EXACT_MAX_DOCS, 6)), FAMILY, **kw)
    assert exact["p_method"].to_list() == ["sign-flip-exact"]
    few = contrast_table(scores_for(random_docs(9, 6)), FAMILY, **kw).row(0, named=True)
    assert few["p_method"] is None and few["p"] is None and few["withheld"]


def seventeen_documents() -> list[list[float]]:
    """The issue's kind of corpus: 17 documents, the effect lives in 5 of them (4 questions
    each, Δ ≈ +0.25); the other 12 documents have two questions that cancel (+x, −x)."""
    big = [[0.25 + 0.01 * k - 0.005 * q for q in range(4)] for k in range(5)]
    rest = [[0.02 * (k % 4 + 1), -0.02 * (k % 4 + 1)] for k in range(12)]
    return big + rest


def test_a_17_document_clustered_effect_is_not_called_on_the_bootstrap_alone():
    """The percentile bootstrap calls it (Holm p < 0.05 in a family of two): drawing none of
    the five documents is rare. The sign-flip test does not: flipping those five documents'
    signs gives 2 of the 32 equally likely arrangements as extreme as the data, p = 2/32."""
    scores = scores_for(seventeen_documents())
    family = {"C": ("A3", "A2"), "other": ("A3", "absent")}
    kw = dict(n_boot=10_000, seed=20260710, mixedlm="all")
    boot = contrast_table(scores, family, small_sample_docs=0, **kw).row(0, named=True)
    rule = contrast_table(scores, family, **kw).row(0, named=True)
    assert rule["n_docs"] == 17 and rule["p_method"] == "sign-flip-mc"
    assert boot["p_holm"] < 0.05 and boot["decision"] == "difference"
    assert rule["p"] == pytest.approx(2 / 32, abs=0.01)
    assert rule["p_holm"] >= 0.05 and rule["decision"] == "inconclusive"
    assert rule["ci_low"] <= 0 < rule["ci_high"]
    assert boot["ci_low"] > 0
    # the same mixed models, compared with each row's own answer, Holm-adjusted over the
    # family of two (the absent contrast enters with p = 1)
    for row in (boot, rule):
        sig = row["p_holm"] < 0.05
        off = [c for c in ("p_mixedlm", "p_mixedlm_query", "p_mixedlm_slope")
               if np.isfinite(row[c]) and (min(1.0, 2 * row[c]) < 0.05) != sig]
        assert row["mixedlm_disagreeing"] == ",".join(off)
        assert row["mixedlm_disagrees"] == bool(off)


def test_mixedlm_disagreement_holm_adjusts_the_models():
    nan = float("nan")
    fam = [
        # significant; the slope model's 0.02 is 0.06 after Holm over three: disagrees
        {"p": 0.001, "p_holm": 0.003, "p_mixedlm": 0.001, "p_mixedlm_query": 0.002,
         "p_mixedlm_slope": 0.02},
        # not significant; every model agrees after adjustment
        {"p": 0.4, "p_holm": 0.4, "p_mixedlm": 0.03, "p_mixedlm_query": 0.3,
         "p_mixedlm_slope": 0.5},
        # no model fitted: nothing to compare
        {"p": 0.2, "p_holm": 0.4, "p_mixedlm": nan, "p_mixedlm_query": nan,
         "p_mixedlm_slope": nan},
    ]
    _mixedlm_disagreement(fam, 3, 0.05)
    assert holm([0.02, 0.5, 1.0])[0] == pytest.approx(0.06)
    assert [r["mixedlm_disagrees"] for r in fam] == [True, False, None]
    assert fam[0]["mixedlm_disagreeing"] == "p_mixedlm_slope"
    assert fam[1]["mixedlm_disagreeing"] == ""
    assert fam[2]["mixedlm_disagreeing"] is None
    # unadjusted, the second row's document-intercept model (0.03) would have disagreed
    assert fam[1]["p_mixedlm"] < 0.05
