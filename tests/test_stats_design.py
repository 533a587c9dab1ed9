"""The design step (issue 50 item 4): document-clustered MDEs and the questions a stated effect
needs, checked against a closed form derived by hand and against simulation."""

import math

import numpy as np
import polars as pl
import pytest
from conftest import REPO

from structablate.stats.design import (
    clustered_se,
    design_table,
    main,
    power_at,
    read_cells,
)
from structablate.stats.power import needed_for_delta, z_sum

TAU, SIGMA, M, D = 0.1, 0.3, 4, 100


def _design(rng, docs: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``docs`` documents of ``M`` questions: x = shift + u_doc + e, u ~ N(0, TAU²),
    e ~ N(0, SIGMA²)."""
    u = rng.normal(0, TAU, docs)
    ids = np.repeat(np.arange(docs), M)
    return shift + u[ids] + rng.normal(0, SIGMA, docs * M), ids


def test_the_closed_form_by_hand():
    """se² = (τ² + σ²/m)/D = (0.01 + 0.0225)/100; deff = 1 + (m − 1)ρ, ρ = τ²/(τ² + σ²) = 0.1;
    MDE = 2.8016 · se; 0.025 needs ceil(100 · (MDE/0.025)²) = 409 documents, 1,636 questions."""
    se = math.sqrt((TAU**2 + SIGMA**2 / M) / D)
    assert se == pytest.approx(0.0180278, rel=1e-5)
    assert z_sum() * se == pytest.approx(0.050507, rel=1e-4)
    assert needed_for_delta(D * M, D, z_sum() * se, 0.025) == (1636, 409)
    # with every document the same size the estimator is var(document means)/D exactly
    rng = np.random.default_rng(1)
    x, ids = _design(rng, D)
    means = x.reshape(D, M).mean(axis=1)
    assert clustered_se(x, ids)[0] == pytest.approx(math.sqrt(means.var(ddof=1) / D), rel=1e-12)
    assert clustered_se(x, ids)[1] == D
    assert math.isnan(clustered_se(x[:M], ids[:M])[0])  # one document: no spread to read


def test_the_estimate_matches_the_closed_form_and_the_mde_has_its_power():
    rng = np.random.default_rng(20260710)
    true_se = math.sqrt((TAU**2 + SIGMA**2 / M) / D)
    mde = z_sum() * true_se
    ses, hits = [], 0
    for _ in range(2000):
        x, ids = _design(rng, D, shift=mde)
        se, _ = clustered_se(x, ids)
        ses.append(se)
        hits += abs(x.mean()) / se > 1.959964
    assert np.mean(ses) == pytest.approx(true_se, rel=0.02)
    assert hits / 2000 == pytest.approx(0.80, abs=0.03)
    assert power_at(mde, true_se) == pytest.approx(0.80, abs=1e-3)
    # deff from the pilot: 1 + (m − 1) · 0.1 = 1.3
    x, ids = _design(rng, 2000)
    s = clustered_se(x, ids)[0]
    assert s * s / (x.std(ddof=1) ** 2 / x.size) == pytest.approx(1.3, abs=0.1)


def test_the_questions_needed_reach_the_stated_effect_with_80_percent_power():
    """A pilot (large, so its variance is read without noise: a small pilot's own sampling
    error in se passes into n*, which is why the page prints the pilot's size) states 0.025:
    n* is the closed form's 409 documents within a few, and a fresh design of that size detects
    0.025 in about 80 % of repetitions."""
    rng = np.random.default_rng(7)
    x, ids = _design(rng, 4000)
    se, d = clustered_se(x, ids)
    _, docs = needed_for_delta(x.size, d, z_sum() * se, 0.025)
    assert abs(docs - 409) <= 25
    hits = 0
    for _ in range(1000):
        y, yid = _design(rng, docs, shift=0.025)
        hits += abs(y.mean()) / clustered_se(y, yid)[0] > 1.959964
    assert hits / 1000 == pytest.approx(0.80, abs=0.05)


def _scores(rng, shift_strong: float) -> dict[str, dict[str, pl.DataFrame]]:
    out = {}
    for emb, shift in (("weak", 0.0), ("strong", shift_strong)):
        base, ids = _design(rng, 60)
        qid = [f"q{i:04d}" for i in range(ids.size)]
        doc = [f"d{j:03d}" for j in ids]
        out[emb] = {"A": pl.DataFrame({"qid": qid, "doc_id": doc, "m": base + 0.3 + shift}),
                    "B": pl.DataFrame({"qid": qid, "doc_id": doc, "m": np.full(ids.size, 0.3)})}
    return out


def test_the_table_has_contrast_and_interaction_rows_with_the_stated_effect():
    rng = np.random.default_rng(3)
    scores = _scores(rng, 0.05)
    t = design_table(scores, {"A-B": ("A", "B", "exploratory")}, ["m"], relative=0.1)
    assert t["kind"].to_list() == ["contrast", "contrast", "interaction"]
    assert t["embedder"].to_list() == ["weak", "strong", "strong − weak"]
    inter = t.row(2, named=True)
    # the interaction is per question: (A − B) under strong − the same under weak
    assert inter["estimate"] == pytest.approx(
        float((scores["strong"]["A"]["m"] - scores["weak"]["A"]["m"]).mean()))
    assert inter["mde"] == pytest.approx(z_sum() * inter["se"])
    # relative 0.1 of the control mean 0.3
    assert inter["target"] == pytest.approx(0.03)
    assert inter["queries_needed"] == needed_for_delta(240, 60, inter["mde"], 0.03)[0]
    t2 = design_table(scores, {"A-B": ("A", "B", "")}, ["m"], target=0.5,
                      targets={"A-B": -0.01})
    assert t2["target"].to_list() == [-0.01] * 3
    assert design_table(scores, {"A-B": ("A", "B", "")}, ["m"])["queries_needed"].null_count() == 3


def test_the_command_reads_the_shipped_two_embedder_tables(tmp_path, capsys):
    """The committed two-embedder page's tables: 321 questions over 98 documents; the
    interaction that the weaker-embedder reading implies for G4 − G3 (−0.010) has power under
    one half and needs several hundred more questions."""
    tables = REPO / "docs/results/qasper-two-embedders/tables"
    corpus, reranker, scores, contrasts = read_cells(tables)
    assert (corpus, reranker) == ("qasper", "none") and set(scores) == {"minilm", "mpnet"}
    out = tmp_path / "design.md"
    assert main([str(tables), "--target", "G4-G3=-0.01", "--out", str(out),
                 "--table", str(tmp_path / "d.parquet")]) == 0
    t = pl.read_parquet(tmp_path / "d.parquet")
    row = t.filter((pl.col("kind") == "interaction") & (pl.col("contrast") == "G4-G3")).row(
        0, named=True)
    assert (row["n_queries"], row["n_docs"]) == (321, 98)
    assert 0.3 < row["power_at_target"] < 0.5 and row["queries_needed"] > 600
    assert "Embedder × condition interactions" in out.read_text()
    assert main([str(tmp_path)]) == 2
    assert "no per-question score tables" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="CONTRAST=VALUE"):
        main([str(tables), "--target", "G4-G3"])
