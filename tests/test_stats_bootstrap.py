"""Document-clustered bootstrap: formula, determinism, vectorized == loop, null coverage,
p-values of discrete deltas against exact fractions, the standard error."""

from fractions import Fraction

import numpy as np
import pytest

from structablate.stats import (
    ZERO_TOL,
    bootstrap_p,
    bootstrap_se,
    cluster_bootstrap,
    draw_blocks,
    per_doc,
    percentile_ci,
    tost,
)


def test_per_doc_groups_sums_and_counts():
    docs, sums, counts = per_doc(np.array([1.0, 2.0, 3.0, 4.0]), ["b", "a", "b", "c"])
    assert docs.tolist() == ["a", "b", "c"]
    assert sums[:, 0].tolist() == [2.0, 4.0, 4.0]
    assert counts.tolist() == [1.0, 2.0, 1.0]


def test_vectorized_equals_per_replicate_loop_with_same_draws():
    rng = np.random.default_rng(3)
    n_docs, n_boot = 37, 500
    sums = rng.normal(size=(n_docs, 3))
    counts = rng.integers(1, 6, size=n_docs).astype(float)
    vec = cluster_bootstrap(sums, counts[:, None].repeat(3, 1), n_boot, seed=11, block_rows=64)
    loop = []
    for block in draw_blocks(np.random.default_rng(11), n_docs, n_boot, block_rows=7):
        for idx in block:  # one replicate: the drawn documents, with repeats
            loop.append(sums[idx].sum(axis=0) / counts[idx].sum())
    np.testing.assert_allclose(vec, np.array(loop), rtol=1e-12, atol=1e-15)
    # and draws per row equal one rng.integers(0, D, size=D) call per replicate
    g = np.random.default_rng(11)
    first = g.integers(0, n_docs, size=n_docs)
    assert vec[0, 0] == pytest.approx(sums[first, 0].sum() / counts[first].sum())


def test_same_seed_same_result_and_block_size_does_not_matter():
    rng = np.random.default_rng(0)
    sums, counts = rng.normal(size=50), rng.integers(1, 4, size=50).astype(float)
    a = cluster_bootstrap(sums, counts, 1000, seed=5)
    b = cluster_bootstrap(sums, counts, 1000, seed=5, block_rows=13)
    c = cluster_bootstrap(sums, counts, 1000, seed=6)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (1000,)


def test_single_document_replicates_equal_the_mean():
    reps = cluster_bootstrap(np.array([3.0]), np.array([4.0]), 10, seed=1)
    assert reps.tolist() == [0.75] * 10


def test_p_and_percentile_ci_hand_values():
    reps = np.array([-0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    # Pr[<=0] = 3/10, Pr[>=0] = 8/10 -> p = 0.6
    assert bootstrap_p(reps) == pytest.approx(0.6)
    assert bootstrap_p(np.ones(5)) == 0.0
    assert bootstrap_p(np.zeros(5)) == 1.0  # clipped
    lo, hi = percentile_ci(np.arange(101.0))
    assert (lo, hi) == (pytest.approx(2.5), pytest.approx(97.5))
    lo, hi = percentile_ci(np.arange(101.0), 0.90)
    assert (lo, hi) == (pytest.approx(5.0), pytest.approx(95.0))
    assert tost(reps, 0.25) == pytest.approx(max(0.0, 0.5))


def test_tost_p_below_level_iff_its_interval_lies_inside_the_margin():
    """p_tost < q exactly when the (1 - 2q) percentile interval lies inside (-m, m), up to the
    interpolation between the two replicates next to each interval end."""
    rng = np.random.default_rng(5)
    agree = checked = 0
    for _ in range(400):
        reps = rng.normal(rng.uniform(-0.01, 0.01), rng.uniform(0.001, 0.006), 2000)
        q, m = 0.05 / int(rng.integers(1, 6)), 0.01
        lo, hi = percentile_ci(reps, 1 - 2 * q)
        inside = -m < lo and hi < m
        srt = np.sort(reps)
        k = int(q * (len(reps) - 1))
        # the margin between the two order statistics an interval end interpolates: skip
        if any(a <= x <= b for x in (-m, m) for a, b in ((srt[k], srt[k + 1]),
                                                          (srt[-k - 2], srt[-k - 1]))):
            continue
        checked += 1
        agree += inside == (tost(reps, m) < q)
    assert checked > 300 and agree == checked


def test_null_coverage_is_about_95_percent():
    """200 seeded null simulations, B = 1000: the 95% CI covers 0 in 0.90-0.99 of them.

    With 200 simulations the binomial sd of the coverage is ~0.015 at 0.95; the percentile
    cluster bootstrap runs slightly liberal with 80 clusters, hence the lower bound 0.90.
    """
    rng = np.random.default_rng(20260710)
    covered, rejected = 0, 0
    n_sims = 200
    for s in range(n_sims):
        n_docs = 80
        sizes = rng.integers(1, 6, size=n_docs)
        doc = np.repeat(np.arange(n_docs), sizes)
        delta = rng.normal(0, 0.5, n_docs)[doc] + rng.normal(0, 1.0, len(doc))
        delta -= 0.0  # null: true mean 0
        _, sums, counts = per_doc(delta, doc)
        reps = cluster_bootstrap(sums[:, 0], counts, 1000, seed=s)
        lo, hi = percentile_ci(reps)
        covered += lo <= 0 <= hi
        rejected += bootstrap_p(reps) < 0.05
    assert 0.90 <= covered / n_sims <= 0.99
    assert 0.01 <= rejected / n_sims <= 0.10


def _exact_p(doc_deltas, draws):
    """2·min(Pr[d <= 0], Pr[d >= 0]) over the replicate means computed in exact fractions."""
    le = ge = 0
    for idx in draws:
        num = sum((sum(doc_deltas[i], Fraction(0)) for i in idx), Fraction(0))
        den = sum(len(doc_deltas[i]) for i in idx)
        m = num / den
        le += m <= 0
        ge += m >= 0
    n = len(draws)
    return min(Fraction(1), 2 * min(Fraction(le, n), Fraction(ge, n)))


def test_discrete_deltas_p_equals_the_exact_fraction_p():
    """R@50-like per-query deltas (multiples of 1/3, 1/5, 1/7) whose replicate means are often
    exactly 0: floating-point sums leave some at ±1e-17, which counted by sign land in one
    tail only. With zeros counted in both tails the p equals the p of exact fractions."""
    rng = np.random.default_rng(20260710)
    steps = [Fraction(k, d) for d in (3, 5, 7) for k in (-1, 0, 0, 0, 1)]
    doc_deltas = [[steps[int(j)] for j in rng.integers(0, len(steps), int(rng.integers(1, 4)))]
                  for _ in range(12)]
    values = [float(x) for d in doc_deltas for x in d]
    docs = [f"d{i:02d}" for i, d in enumerate(doc_deltas) for _ in d]
    _, sums, counts = per_doc(np.array(values), docs)
    n_boot = 2000
    reps = cluster_bootstrap(sums[:, 0], counts, n_boot, seed=7)
    draws = [row for block in draw_blocks(np.random.default_rng(7), 12, n_boot)
             for row in block]
    exact = _exact_p(doc_deltas, draws)
    tiny = (reps != 0) & (np.abs(reps) <= ZERO_TOL)
    assert tiny.any()  # the data do produce float-noise zeros
    assert bootstrap_p(reps) == pytest.approx(float(exact), abs=1e-12)
    # counting by sign alone (the old rule) gives a different, too small p here
    by_sign = min(1.0, 2 * min((reps <= 0).mean(), (reps >= 0).mean()))
    assert by_sign < float(exact)


def test_bootstrap_se_is_the_replicate_sd_and_matches_theory():
    reps = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])
    np.testing.assert_allclose(bootstrap_se(reps), [2.0, 0.0])
    assert np.isnan(bootstrap_se(np.ones((1, 2)))).all()
    # equal-size clusters: the bootstrap SE of the mean approaches sd(cluster means)/sqrt(D)
    rng = np.random.default_rng(1)
    n_docs = 400
    means = rng.normal(0, 1, n_docs)
    reps = cluster_bootstrap(means * 3, np.full(n_docs, 3.0), 4000, seed=2)
    theory = means.std(ddof=0) / np.sqrt(n_docs)
    assert bootstrap_se(reps) == pytest.approx(theory, rel=0.05)
