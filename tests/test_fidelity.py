"""The fidelity gate on score tables: a tiny perturbation passes, a shift of a condition's
mean beyond a tenth of the MDE fails, and a flipped verdict fails."""

import numpy as np
import polars as pl
import pytest

from structablate.fidelity import fidelity_gate, verdict_word

CONTRASTS = {"C3": ("G3", "A3")}


def _scores(shift_g3: float = 0.0, noise: float = 0.0, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(40):
        for q in range(3):
            base = rng.uniform(0.2, 0.8)
            for cond, lift in (("A3", 0.0), ("G3", 0.05 + shift_g3)):
                v = base + lift + rng.normal(0, 0.05)
                rows.append({"corpus": "qasper", "embedder": "e", "reranker": "none",
                             "condition": cond, "qid": f"d{d}q{q}", "doc_id": f"d{d}",
                             "ndcg": float(v)})
    table = pl.DataFrame(rows)
    if noise:
        table = table.with_columns(pl.col("ndcg") + pl.Series(
            np.random.default_rng(7).normal(0, noise, table.height)))
    return table


def test_identical_and_last_bit_changes_pass():
    ref = _scores()
    assert fidelity_gate(ref, ref, contrasts=CONTRASTS, n_boot=300).passed
    report = fidelity_gate(ref, _scores(noise=1e-6), contrasts=CONTRASTS, n_boot=300)
    assert report.passed, report.reasons
    assert report.mean_shifts["shift"].max() < 1e-5


def test_a_moved_mean_fails_and_names_the_condition():
    ref = _scores()
    report = fidelity_gate(ref, _scores(shift_g3=0.01), contrasts=CONTRASTS, n_boot=300)
    assert not report.passed
    assert any("G3: mean moved" in r for r in report.reasons)


def test_a_changed_verdict_fails():
    ref = _scores()
    gone = _scores(shift_g3=-0.05)  # the G3 lift vanishes: significant -> not significant
    report = fidelity_gate(ref, gone, contrasts=CONTRASTS, n_boot=300)
    assert report.verdicts["changed"].to_list() == [True]
    assert any("verdict higher -> not significant" in r for r in report.reasons)


def test_tables_of_other_queries_are_refused():
    with pytest.raises(ValueError, match="same"):
        fidelity_gate(_scores(), _scores().filter(pl.col("qid") != "d0q0"),
                      contrasts=CONTRASTS)


def test_verdict_words():
    assert verdict_word(0.1, 0.01) == "higher" and verdict_word(-0.1, 0.01) == "lower"
    assert verdict_word(0.1, 0.2) == "not significant"
    assert verdict_word(0.1, float("nan")) == "not significant"
