"""results/summary.md: the primary cell named by what ran, a small-sample banner, and the
bundled default called a demonstration of the instrument."""

import polars as pl

from structablate.report.summary import summary_markdown


def _summary(n_q: int, n_d: int) -> pl.DataFrame:
    return pl.DataFrame({"condition": ["A3", "P"], "measure": ["covNDCG@10"] * 2,
                         "mean": [0.3, 0.29], "n_queries": [n_q] * 2, "n_docs": [n_d] * 2})


def _contrasts(primary: bool) -> pl.DataFrame:
    return pl.DataFrame({"metric": ["covNDCG@10"], "contrast": ["C2"], "cond_a": ["A3"],
                         "cond_b": ["P"], "family": ["pre-registered"], "delta": [0.01],
                         "ci_low": [-0.01], "ci_high": [0.03], "p_holm": [0.4],
                         "p_tost_adj": [0.5], "margin": [0.01], "primary": [primary]})


def test_small_cells_get_a_banner_and_the_primary_cell_is_named_by_what_ran():
    cells = {("qasper", "minilm", "none"): _summary(44, 15),
             ("qasper", "bge", "none"): _summary(4301, 1508)}
    text = summary_markdown(cells, {"minilm": {"model": "m"}, "bge": {"model": "b"}},
                            {"none": {}},
                            contrasts={("qasper", "minilm", "none"): _contrasts(True),
                                       ("qasper", "bge", "none"): _contrasts(False)},
                            metric="covNDCG@10")
    assert "**SMALL SAMPLE.** qasper / minilm / none (44 questions over 15 documents)" in text
    assert "bge / none (4301" not in text
    assert "demonstration of the instrument" in text and "not findings" in text
    assert "primary cell qasper / minilm / none is confirmatory" in text
    assert "strong embedder" not in text
    # the configured primary cell wins; a run without it says everything is exploratory
    text = summary_markdown(cells, {}, {"none": {}}, metric="covNDCG@10",
                            primary={"metric": "covNDCG@10", "embedder": "bge",
                                     "reranker": "none"})
    assert "primary cell qasper / bge / none is confirmatory" in text
    big = {("qasper", "bge", "none"): _summary(4301, 1508)}
    text = summary_markdown(big, {}, {"none": {}}, metric="covNDCG@10")
    assert "SMALL SAMPLE" not in text and "every number below is exploratory" in text
