"""The embedder interaction of a contrast (structablate.stats.embedders)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from structablate.stats.embedders import COLUMNS, embedder_contrasts, embedder_levels
from structablate.stats.holm import holm

N_DOCS, PER_DOC = 30, 3


def _table(values: np.ndarray, qids=None) -> pl.DataFrame:
    qids = qids if qids is not None else [f"q{i:03d}" for i in range(len(values))]
    docs = [f"d{i // PER_DOC:02d}" for i in range(len(values))]
    return pl.DataFrame({"qid": qids, "doc_id": docs, "covNDCG@10": values,
                         "R@50": np.clip(values * 2, 0, 1)})


@pytest.fixture
def scores():
    rng = np.random.default_rng(7)
    n = N_DOCS * PER_DOC
    base = rng.uniform(0.1, 0.5, n)
    return {
        # weak: G3 = G2 exactly; strong: G3 = G2 + 0.1 on every question
        "minilm": {"G2": _table(base), "G3": _table(base.copy()), "GP": _table(base - 0.02)},
        "mpnet": {"G2": _table(base + 0.05), "G3": _table(base + 0.15),
                  "GP": _table(base + 0.03)},
    }


def test_a_constant_shift_is_the_interaction_with_a_degenerate_interval(scores):
    t = embedder_contrasts(scores, "minilm", "mpnet", {"G3-G2": ("G3", "G2")},
                           ["covNDCG@10"], n_boot=500, seed=1)
    assert t.schema == pl.Schema(COLUMNS)
    r = t.row(0, named=True)
    assert (r["n_queries"], r["n_docs"]) == (N_DOCS * PER_DOC, N_DOCS)
    assert r["delta_weak"] == pytest.approx(0.0, abs=1e-12)
    assert r["delta_strong"] == pytest.approx(0.1)
    assert r["interaction"] == pytest.approx(0.1)
    assert r["ci_lo"] == pytest.approx(0.1) and r["ci_hi"] == pytest.approx(0.1)
    assert r["p"] == 0.0
    mean_g2_strong = float(scores["mpnet"]["G2"]["covNDCG@10"].mean())
    assert r["mean_b_strong"] == pytest.approx(mean_g2_strong)
    assert r["rel_strong"] == pytest.approx(0.1 / mean_g2_strong)


def test_the_same_effect_under_both_embedders_is_no_interaction(scores):
    # G3 - GP: +0.02 under minilm, +0.12 under mpnet; G2 - GP: +0.02 under both
    t = embedder_contrasts(scores, "minilm", "mpnet", {"G2-GP": ("G2", "GP")},
                           ["covNDCG@10"], n_boot=500, seed=1)
    r = t.row(0, named=True)
    assert r["delta_weak"] == pytest.approx(0.02) and r["delta_strong"] == pytest.approx(0.02)
    assert r["interaction"] == pytest.approx(0.0, abs=1e-12)
    assert r["p"] == 1.0  # every replicate is zero: both tails


def test_interaction_is_the_difference_of_the_deltas_and_holm_runs_per_measure(scores):
    rng = np.random.default_rng(3)
    noisy = {e: {c: df.with_columns(pl.col("covNDCG@10") + rng.normal(0, 0.05, df.height))
                 for c, df in conds.items()} for e, conds in scores.items()}
    contrasts = {"G3-G2": ("G3", "G2"), "G3-GP": ("G3", "GP"), "G2-GP": ("G2", "GP")}
    t = embedder_contrasts(noisy, "minilm", "mpnet", contrasts, ["covNDCG@10", "R@50"],
                           n_boot=400, seed=5)
    assert t.height == 6
    for r in t.iter_rows(named=True):
        assert r["interaction"] == pytest.approx(r["delta_strong"] - r["delta_weak"])
        eps = 1e-12  # a constant delta's percentile interval equals it up to rounding
        assert r["ci_lo"] - eps <= r["interaction"] <= r["ci_hi"] + eps
        assert r["ci_lo_weak"] - eps <= r["delta_weak"] <= r["ci_hi_weak"] + eps
    for metric in ("covNDCG@10", "R@50"):
        part = t.filter(pl.col("metric") == metric)
        assert np.allclose(part["p_holm"].to_numpy(), holm(part["p"].to_numpy()))
    # same seed, same table (byte-identical Parquet downstream)
    again = embedder_contrasts(noisy, "minilm", "mpnet", contrasts, ["covNDCG@10", "R@50"],
                               n_boot=400, seed=5)
    assert again.equals(t)


def test_a_contrast_that_did_not_run_is_left_out(scores):
    t = embedder_contrasts(scores, "minilm", "mpnet", {"G4-G3": ("G4", "G3")},
                           ["covNDCG@10"], n_boot=50)
    assert t.height == 0 and t.schema == pl.Schema(COLUMNS)


def test_different_question_sets_are_refused(scores):
    g3 = scores["mpnet"]["G3"]
    scores["mpnet"]["G3"] = g3.with_columns(
        pl.when(pl.col("qid") == "q000").then(pl.lit("q999")).otherwise(pl.col("qid"))
        .alias("qid"))
    with pytest.raises(ValueError, match="scored different questions"):
        embedder_contrasts(scores, "minilm", "mpnet", {"G3-G2": ("G3", "G2")},
                           ["covNDCG@10"], n_boot=50)


def test_levels_are_paired_differences_per_condition(scores):
    t = embedder_levels(scores, "minilm", "mpnet", ["G2", "G3", "G4"], ["covNDCG@10"],
                        n_boot=300, seed=2)
    assert t["condition"].to_list() == ["G2", "G3"]  # G4 was not scored: left out
    g2, g3 = t.row(0, named=True), t.row(1, named=True)
    assert g2["difference"] == pytest.approx(0.05) and g3["difference"] == pytest.approx(0.15)
    assert g2["mean_strong"] - g2["mean_weak"] == pytest.approx(g2["difference"])
    assert g2["ci_lo"] == pytest.approx(0.05) and g2["p"] == 0.0
    assert np.allclose(t["p_holm"].to_numpy(), holm(t["p"].to_numpy()))
