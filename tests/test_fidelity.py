"""The fidelity gate on score tables: a tiny perturbation passes, a shift of a condition's
mean beyond a tenth of the MDE fails, and a changed verdict (the study's decision rule, in its
words) fails; the command compares two runs' written tables."""

import numpy as np
import polars as pl
import pytest

from structablate.fidelity import FidelityError, fidelity_gate, main, verdict
from structablate.stats import contrast_table

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


def test_a_contrast_of_two_conditions_that_score_alike_sets_no_limit():
    """A4 scores every question as A3 does (se 0, mde80 0, as identical rankings give on a
    small sample): the limit comes from the other contrast, so unchanged means pass."""
    ref = _scores()
    ref = pl.concat([ref, ref.filter(pl.col("condition") == "A3")
                     .with_columns(pl.lit("A4").alias("condition"))])
    pair = {**CONTRASTS, "C4": ("A4", "A3")}
    report = fidelity_gate(ref, ref, contrasts=pair, n_boot=300)
    assert report.passed, report.reasons
    assert (report.mean_shifts["limit"] > 0).all()


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
    assert report.verdicts["verdict_ref"].to_list() == ["yes"]
    assert any("C3: verdict 'yes' -> " in r for r in report.reasons)


def test_negligible_becoming_a_difference_is_a_changed_verdict():
    """Both runs find G3 significantly higher, but one says the difference is negligible
    (inside ±0.1) and the other that it is not: the study's verdicts differ, so the gate
    fails (a rule on the sign and p alone would call both "higher")."""
    ref = _scores()  # lift 0.05
    report = fidelity_gate(ref, _scores(shift_g3=0.05), contrasts=CONTRASTS, n_boot=300,
                           equivalence_margin={"ndcg": 0.1})
    assert report.verdicts["verdict_ref"].to_list() == [
        "a real but negligible difference (smaller than ±0.1)"]
    assert report.verdicts["verdict_low"].to_list() == ["yes"]
    assert report.verdicts["changed"].to_list() == [True]


def test_tables_of_other_queries_are_refused():
    with pytest.raises(FidelityError, match="2 only in the reference, 0 only"):
        fidelity_gate(_scores(), _scores().filter(pl.col("qid") != "d0q0"),
                      contrasts=CONTRASTS)


def test_verdict_is_the_decision_rule_in_words():
    assert verdict("difference", 0.1) == "yes" and verdict("difference", -0.1) == "no, it hurts"
    assert verdict("inconclusive", 0.1) == "too small to tell"
    assert verdict("equivalent", 0.0, 0.01) == "no difference larger than ±0.01"
    with pytest.raises(FidelityError, match="older structablate"):
        verdict(None, 0.1)


def _write_cell(results, embedder: str, table: pl.DataFrame) -> None:
    """One cell as the workflow lays it out: scores/<condition>.parquet (no cell columns) and
    contrasts.parquet with its family."""
    cell = results / "qasper" / embedder / "none"
    (cell / "scores").mkdir(parents=True)
    for cond in ("A3", "G3"):
        (table.filter(pl.col("condition") == cond)
         .drop("corpus", "embedder", "reranker", "condition")
         .write_parquet(cell / "scores" / f"{cond}.parquet"))
    (contrast_table(table.with_columns(pl.lit(embedder).alias("embedder")), CONTRASTS,
                    n_boot=300, mixedlm="none", primary=None, equivalence_margin=0.01)
     .with_columns(pl.lit("pre-registered").alias("family"))
     .write_parquet(cell / "contrasts.parquet"))


def test_the_command_compares_two_embedders_of_one_results_folder(tmp_path, capsys):
    _write_cell(tmp_path, "e32", _scores())
    _write_cell(tmp_path, "e16", _scores(noise=1e-6))
    _write_cell(tmp_path, "moved", _scores(shift_g3=0.01))
    assert main([str(tmp_path), "--embedders", "e32", "e16", "--save",
                 str(tmp_path / "gate")]) == 0
    assert "gate: pass" in capsys.readouterr().out
    shifts = pl.read_parquet(tmp_path / "gate" / "mean_shifts.parquet")
    assert set(shifts["condition"]) == {"A3", "G3"} and shifts["ok"].all()
    assert main([str(tmp_path), "--embedders", "e32", "moved"]) == 1
    out = capsys.readouterr().out
    assert "gate: FAIL" in out and "qasper/e32/none ndcg G3: mean moved" in out


def test_the_command_compares_one_embedder_of_two_folders_and_refuses_gaps(tmp_path, capsys):
    _write_cell(tmp_path / "a", "e", _scores())
    _write_cell(tmp_path / "b", "e", _scores(noise=1e-6))
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--embedders", "e"]) == 0
    (tmp_path / "b" / "qasper" / "e" / "none" / "contrasts.parquet").unlink()
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--embedders", "e"]) == 2
    assert "cell_statistics" in capsys.readouterr().err
    assert main([str(tmp_path / "a"), "--embedders", "nope", "e"]) == 2
    assert "no cell of embedder 'nope'" in capsys.readouterr().err
