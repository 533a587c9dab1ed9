"""The report's pure functions: blocks, the statistics they format (bootstrap CIs, section
recall, size matching), funnel, provenance flags, figures and HTML rendering (no Snakemake)."""

import json
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO, SAMPLE

from structablate.plan import Plan
from structablate.report import blocks, figures, render
from structablate.report.page import (
    CellData,
    CorpusData,
    PageSettings,
    build_page,
    overview_html,
)
from structablate.report.provenance import (
    cell_flags,
    llm_conditions,
    llm_status,
    provenance_blocks,
)
from structablate.stats import condition_mean_cis, section_recall_cis, size_gap, size_matching
from structablate.stats.bootstrap import cluster_bootstrap, per_doc, percentile_ci
from structablate.tables import span_identity


def _scores(values, docs):
    return pl.DataFrame({"qid": [f"q{i}" for i in range(len(values))], "doc_id": docs,
                         "qtype": ["x"] * len(values), "covNDCG@10": values,
                         "RR": [v / 2 for v in values]})


def _contrast_rows():
    base = dict(corpus="qasper", embedder="large", reranker="none", n_queries=40, n_docs=12,
                p_mixedlm_query=float("nan"))
    return pl.DataFrame([
        {**base, "metric": "covNDCG@10", "contrast": "G2-A0", "cond_a": "G2", "cond_b": "A0",
         "delta": 0.03, "ci_low": 0.01, "ci_high": 0.05, "p": 0.004, "p_holm": 0.008,
         "dz": 0.31, "p_mixedlm": float("nan"), "primary": False, "family": "exploratory"},
        {**base, "metric": "covNDCG@10", "contrast": "C4", "cond_a": "A4", "cond_b": "A3",
         "delta": -0.0147, "ci_low": -0.0192, "ci_high": -0.0104, "p": 0.0001,
         "p_holm": 0.0004, "dz": -0.11, "mde80": 0.0051, "mde80_family": 0.0063,
         "p_mixedlm": 0.0002, "p_mixedlm_slope": 0.0003, "primary": True,
         "family": "pre-registered", "margin": 0.01, "p_tost_adj": 0.6},
        {**base, "metric": "RR", "contrast": "C4", "cond_a": "A4", "cond_b": "A3",
         "delta": 0.002, "ci_low": -0.01, "ci_high": 0.012, "p": 0.7, "p_holm": 0.7,
         "dz": 0.01, "p_mixedlm": float("nan"), "primary": False,
         "family": "pre-registered"},
    ])


class _Tables(HTMLParser):
    """Table ids, their header cells, and image sources of an HTML page."""

    def __init__(self):
        super().__init__()
        self.tables, self.imgs, self._cur, self._in_th, self.text = {}, [], None, False, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._cur = a.get("id")
            self.tables[self._cur] = {"th": [], "td": []}
        elif tag == "th":
            self._in_th = True
        elif tag == "img":
            self.imgs.append(a["src"])

    def handle_endtag(self, tag):
        if tag == "th":
            self._in_th = False
        elif tag == "table":
            self._cur = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cur is not None and data.strip():
            self.tables[self._cur]["th" if self._in_th else "td"].append(data.strip())


# ---------------------------------------------------------------- formatting and Table 1


def test_p_and_number_formatting_follow_the_paper():
    assert blocks.fmt_p(0.0004) == "<0.001"
    assert blocks.fmt_p(0.0171) == "0.017"
    assert blocks.fmt_p(float("nan")) == "—"
    assert blocks.fmt(-0.0147, 4, True) == "−0.0147"
    assert blocks.fmt_ci(-0.0192, -0.0104) == "[−0.0192, −0.0104]"
    assert blocks.fmt_ci(0.1, 0.3, 3, signed=False) == "[0.100, 0.300]"


def test_contrast_table_has_table1_layout_preregistered_first():
    t = blocks.contrasts_block(_contrast_rows(), ["covNDCG@10", "RR"])
    assert t.columns == ["contrast", "family", "metric", "queries / docs", "tied (Δ = 0)", "Δ",
                         "95% CI", "p", "p (Holm)", "dz", "MDE (80%, family)", "margin",
                         "p TOST (adj.)", "equivalence holds above", "p (MixedLM doc)",
                         "p (MixedLM query in doc)", "p (MixedLM slope)", "answer", "role"]
    first = t.rows[0]
    assert first[:3] == ["C4: A4 − A3", "pre-registered", "covNDCG@10"]
    # the fixture's C4 row: delta −0.0147, p 0.0001, Holm 0.0004, dz −0.11, MDE 0.0063,
    # margin 0.01 (no relative share), TOST 0.6, MixedLM 0.0002 / NaN / 0.0003
    assert first[3:] == ["40 / 12", "—", "−0.0147", "[−0.0192, −0.0104]", "<0.001", "<0.001",
                         "−0.110", "±0.0063", "±0.0100", "0.600", "—", "<0.001", "—",
                         "<0.001", "no, it hurts", "confirmatory"]
    assert [r[0] for r in t.rows] == ["C4: A4 − A3", "C4: A4 − A3", "G2-A0: G2 − A0"]
    # no MDE recorded (a table from before the column existed); no margin for RR; MixedLM not
    # fitted off-primary
    rr = t.rows[1]
    assert rr[2] == "RR" and rr[10] == "—" and rr[11] == "— (no margin for this measure)"
    assert rr[16] == "—" and rr[17] == "too small to tell" and rr[18] == "exploratory"
    # the guard's mark travels with the row, and qualifies it (an old table's `not_testable`
    # column is read as reasons; the answer is never replaced)
    marked = _contrast_rows().with_columns(
        pl.Series("not_testable", ["x", "stage 1 keeps every section", None]))
    t = blocks.contrasts_block(marked, ["covNDCG@10", "RR"])
    # rows sort C4 (covNDCG@10), C4 (RR), G2-A0; the marks were given in input order
    assert [r[17] for r in t.rows] == [
        "no, it hurts — about routing that ranks flat search's own candidates [a]",
        "too small to tell",
        f"{t.rows[2][17].split(' — ')[0]} — about what the structure guard found [b]"]
    assert not t.rows[2][17].startswith("not testable")
    assert "[b] About what the structure guard found: x." in t.note
    assert "[a] About routing that ranks flat search's own candidates: stage 1 keeps every " \
        "section." in t.note
    only = blocks.contrasts_block(_contrast_rows(), ["RR"])
    assert len(only.rows) == 1


# ---------------------------------------------------------------- bootstrap CIs


def test_condition_cis_are_the_clustered_bootstrap_of_each_condition():
    rng = np.random.default_rng(3)
    docs = [f"d{i % 7}" for i in range(40)]
    a = _scores(rng.random(40).tolist(), docs)
    b = _scores(rng.random(40).tolist(), docs)
    cis = condition_mean_cis({"A0": a, "G2": b}, n_boot=500, seed=11)
    assert cis.columns == ["condition", "measure", "mean", "ci_low", "ci_high", "n_queries",
                           "n_docs"]
    assert cis.height == 4
    row = cis.filter((pl.col("condition") == "G2") & (pl.col("measure") == "covNDCG@10")).row(
        0, named=True)
    _, s, c = per_doc(b["covNDCG@10"].to_numpy(), b["doc_id"].to_numpy())
    lo, hi = percentile_ci(cluster_bootstrap(s[:, 0], c, 500, 11))
    assert row["ci_low"] == pytest.approx(lo) and row["ci_high"] == pytest.approx(hi)
    assert row["mean"] == pytest.approx(b["covNDCG@10"].mean())
    assert row["n_queries"] == 40 and row["n_docs"] == 7
    assert row["ci_low"] < row["mean"] < row["ci_high"]
    again = condition_mean_cis({"A0": a, "G2": b}, n_boot=500, seed=11)
    assert again.equals(cis)


def test_condition_ci_collapses_when_documents_agree():
    # every document has the same mean: any resample of documents has that mean
    df = _scores([0.2, 0.4, 0.3, 0.3], ["a", "a", "b", "b"])
    row = condition_mean_cis({"G3": df}, n_boot=200).filter(
        pl.col("measure") == "covNDCG@10").row(0, named=True)
    assert row["ci_low"] == pytest.approx(0.3) and row["ci_high"] == pytest.approx(0.3)


# ---------------------------------------------------------------- section recall


def _run(recall, backfill):
    rows = []
    for i, (r, n) in enumerate(zip(recall, backfill, strict=True)):
        for rank in (1, 2):
            rows.append({"qid": f"q{i}", "rank": rank, "chunk_id": f"c{rank}", "score": 1.0,
                         "stage": "routed", "n_backfill": n, "section_recall": r})
    return pl.DataFrame(rows, schema_overrides={"section_recall": pl.Boolean})


def test_section_recall_per_query_not_per_row():
    queries = pl.DataFrame({"qid": ["q0", "q1", "q2", "q3"], "doc_id": ["a", "a", "b", "c"]})
    run = _run([True, False, True, None], [0, 3, 0, 5])
    sr = section_recall_cis({"G4": run}, queries, n_boot=300)
    r = sr.row(0, named=True)
    assert r["condition"] == "G4" and r["n_queries"] == 3 and r["n_docs"] == 2
    assert r["section_recall"] == pytest.approx(2 / 3)
    assert r["mean_backfill"] == pytest.approx(1.0)
    assert r["share_backfilled"] == pytest.approx(1 / 3)
    assert 0 <= r["ci_low"] <= r["section_recall"] <= r["ci_high"] <= 1
    t = blocks.section_recall_block(sr)
    assert t.rows[0][:3] == ["G4", "3 / 2", "0.667"] and t.rows[0][5] == "33.3 %"
    assert section_recall_cis({}, queries).height == 0


def test_a_cells_descriptive_statistics_read_section_recall_of_two_stage_runs_only():
    """The cell_statistics rule's tables: CIs of every condition, section recall of the
    two-stage conditions only (a flat run has no diagnostic column), ranking identity of
    every pair of conditions."""
    from structablate.stats.cell import describe_cell

    queries = pl.DataFrame({"qid": ["q0", "q1", "q2"], "doc_id": ["a", "a", "b"]})
    g4 = _run([True, False, True], [0, 2, 0])
    g3 = g4.drop("section_recall", "n_backfill").with_columns(pl.lit("flat").alias("stage"))
    chunks = pl.DataFrame({"chunk_id": ["c1", "c2"], "doc_id": ["a", "a"], "start": [0, 10],
                           "end": [10, 20]})
    scores = {"G3": _scores([0.5, 0.2, 0.9], ["a", "a", "b"]),
              "G4": _scores([0.4, 0.2, 0.9], ["a", "a", "b"])}
    out = describe_cell(scores, {"G3": g3, "G4": g4}, {"G3": chunks, "G4": chunks}, queries,
                        ["G4"], n_boot=200, seed=1)
    assert sorted(out) == ["condition_cis", "ranking_identity", "section_recall"]
    assert out["section_recall"]["condition"].to_list() == ["G4"]
    assert out["section_recall"]["section_recall"][0] == pytest.approx(2 / 3)
    assert out["condition_cis"].equals(condition_mean_cis(scores, n_boot=200, seed=1))
    ident = out["ranking_identity"].row(0, named=True)
    assert (ident["cond_a"], ident["cond_b"], ident["identical_share"]) == ("G3", "G4", 1.0)


def test_section_recall_needs_the_diagnostic_column():
    run = _run([True], [0]).drop("section_recall")
    with pytest.raises(ValueError, match="section_recall"):
        section_recall_cis({"A4": run}, pl.DataFrame({"qid": ["q0"], "doc_id": ["a"]}))


# ---------------------------------------------------------------- size matching


def _chunks(content, prefix, target=None):
    d = {"chunk_id": [f"c{i}" for i in range(len(content))],
         "doc_id": ["a"] * (len(content) - 1) + ["b"], "content_tokens": content,
         "prefix_tokens": prefix}
    if target is not None:
        d["size_target"] = target
    return pl.DataFrame(d)


def test_size_matching_reports_means_gap_and_truncation():
    chunks = {"A0": _chunks([250, 260, 240], [0, 0, 0], [250.0, 250.0, 251.0]),
              "G2": _chunks([200, 300, 254], [0, 0, 0], [None, None, None]),
              "G3": _chunks([200, 300, 254], [20, 22, 24])}
    stats = {("small", cs): {"truncation_rate": r} for cs, r in
             (("A0", 0.0), ("G2", 0.1), ("G3", 0.25))}
    sm = size_matching(chunks, stats, ["A0", "G2", "G3", "G4"])
    g3 = sm.filter(pl.col("chunkset") == "G3").row(0, named=True)
    assert g3["conditions"] == "G3, G4" and g3["mean_prefix_tokens"] == pytest.approx(22)
    assert g3["mean_total_tokens"] == pytest.approx((754 + 66) / 3)
    assert g3["truncation_rate:small"] == 0.25 and g3["n_docs"] == 2
    assert np.isnan(sm.filter(pl.col("chunkset") == "G2")["mean_size_target"][0])
    assert size_gap(sm, "gold") == pytest.approx(250 - 754 / 3)
    assert size_gap(sm, "induced") is None
    # A0 follows size_match_structure (here induced); A0g always gold: never averaged together
    both = size_matching({**chunks, "A0g": _chunks([300, 300, 300], [0, 0, 0])}, stats,
                         ["A0", "A0g", "G2", "G3"])
    assert size_gap(both, "gold", "induced") == pytest.approx(300 - 754 / 3)
    assert size_gap(both, "gold", "gold") == pytest.approx(275 - 754 / 3)
    t = blocks.size_matching_block(sm, "gold")
    assert t.columns[-1] == "truncated (small)"
    assert t.rows[2][-1] == "25.0 %"
    assert "+" not in t.note.split("tokens:")[1][:3]  # negative gap shown with a minus


def test_induced_chunk_spans_are_compared_with_gold_spans():
    def spans(rows):
        return pl.DataFrame(
            {"chunk_id": [f"c{i}" for i in range(len(rows))],
             "doc_id": [r[0] for r in rows], "start": [r[1] for r in rows],
             "end": [r[2] for r in rows], "content_tokens": [10] * len(rows),
             "prefix_tokens": [0] * len(rows)})

    gold = spans([("a", 0, 10), ("a", 10, 30), ("b", 0, 5)])
    # (a, 0, 10) matches; (a, 10, 20) only starts like a gold span; (b, 0, 10) only starts
    # like one (b's gold span ends at 5); (c, 0, 10) has no gold document at all
    induced = spans([("a", 0, 10), ("a", 10, 20), ("b", 0, 10), ("c", 0, 10)])
    assert span_identity(induced, gold) == 0.25
    assert span_identity(gold, gold) == 1.0
    assert np.isnan(span_identity(induced.head(0), gold))
    sm = size_matching({"G2": gold, "A2": induced, "A3": induced}, {}, ["G2", "A2", "A3"])
    ident = dict(zip(sm["chunkset"], sm["gold_span_identity"], strict=True))
    assert ident["A2"] == ident["A3"] == 0.25 and np.isnan(ident["G2"])
    row = blocks.size_matching_block(sm, "induced").rows[1]
    assert row[10] == "25.0 %"


# ---------------------------------------------------------------- funnel


def test_funnel_steps_from_qasper_and_wikipedia_reports():
    q = {"funnel": [["all questions", 45], ["answerable", 44]], "evidence_exact_share": 0.96,
         "papers": 15, "papers_with_kept_questions": 15}
    assert blocks.funnel_steps(q) == [("all questions", 45), ("answerable", 44)]
    t = blocks.funnel_block(q)
    assert t.rows[1] == ["answerable", "44", "97.8 %"] and "96.0 %" in t.note
    w = {"n_candidates": 6000, "n_examined": 900, "n_accepted": 200,
         "reject_counts": {"min_words": 500}}
    assert [n for _, n in blocks.funnel_steps(w)] == [6000, 900, 200]
    byo = {"documents": 3, "queries": {"funnel": [["user queries", 21], ["mapped", 20]]}}
    assert blocks.funnel_steps(byo) == [("user queries", 21), ("mapped", 20)]
    with pytest.raises(ValueError):
        blocks.funnel_steps({})


# ---------------------------------------------------------------- provenance flags


def test_untrained_reranker_is_flagged_from_config_or_run_files():
    rr = {"none": {}, "ce": {"model": "x/ce", "trained": False}, "ok": {"model": "y/ce"}}
    assert cell_flags(("q", "e", "none"), rr) == []
    assert "WITHOUT a trained reranker" in cell_flags(("q", "e", "ce"), rr)[0]
    assert cell_flags(("q", "e", "ok"), rr, observed_trained=True) == []
    msg = cell_flags(("q", "e", "ok"), rr, observed_trained=False)
    assert len(msg) == 1 and "run files" in msg[0]


# Plan.stage_conditions() of the default grid with the LLM inducer and windows sized to
# induced structure (test_report_takes_which_conditions_need_an_llm_from_the_plan checks it)
LLM_STAGES = {"induction": ["A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4"],
              "contexts": ["A1"]}
TT_STAGES = {"induction": [], "contexts": ["A1"]}  # the default: TextTiling induces


def test_llm_replay_is_flagged_and_absence_is_handled():
    def status(llm, conditions):
        return llm_status(llm, conditions, stage_conditions=LLM_STAGES)

    text, flags = status(None, ["G2"])
    assert flags == [] and "no condition" in text
    text, flags = status(None, ["A1"])
    assert "A1" in text
    text, flags = status({"backend": "none", "mode": "replay", "model": "gemma"}, ["A2"])
    assert len(flags) == 1 and "REPLAYED" in flags[0]
    _, flags = status({"backend": "vllm", "mode": "replay", "cache": "g.sqlite"}, ["A1"])
    assert len(flags) == 1 and "mode: replay, g.sqlite" in flags[0]
    text, flags = status({"backend": "vllm", "mode": "replay"}, ["G2"])
    assert flags == [] and "no condition" in text  # nothing was replayed
    _, flags = status({"backend": "vllm", "model": "gemma", "mode": "cached"}, ["A2"])
    assert flags == []


def test_provenance_names_the_models_and_warns():
    emb = {"small": {"model": "BAAI/bge-small-en-v1.5",
                     "query_instruction": "Represent this sentence: "}}
    rr = {"none": {}, "ce": {"model": "BAAI/bge-reranker-v2-m3", "top_n": 50,
                             "trained": False}}
    cells = [("qasper", "small", "none"), ("qasper", "small", "ce")]
    blocks = provenance_blocks(emb, rr, cells, llm={"backend": "none", "mode": "replay"},
                               conditions=["A0", "A1", "G2"], size_match_structure="gold",
                               stage_conditions=TT_STAGES)
    warnings = [b.text for b in blocks if isinstance(b, render.Note) and b.kind == "warning"]
    assert len(warnings) == 3  # untrained reranker, replay, gold size matching
    table = next(b for b in blocks if isinstance(b, render.TableBlock))
    assert table.rows[0][1] == "small: BAAI/bge-small-en-v1.5"
    assert table.rows[1][-1] == "NOT TRAINED"


# ---------------------------------------------------------------- figures


def test_figures_write_png_and_placeholders_say_not_run(tmp_path):
    contrasts = _contrast_rows()
    fig = figures.forest_plot(contrasts, "covNDCG@10")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == 2 and any("C4: A4−A3" in s for s in labels)
    figures.save(fig, tmp_path / "forest.png")
    assert (tmp_path / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = pl.DataFrame(schema={"metric": pl.String, "slope": pl.Float64})
    cis = condition_mean_cis({"G2": _scores([0.1, 0.2], ["a", "b"])}, n_boot=100)
    dose = figures.dose_response_plot(empty, cis, "covNDCG@10")
    assert not dose.axes and "Not run" in " ".join(t.get_text() for t in dose.texts)
    sr = figures.section_recall_plot(section_recall_cis({}, pl.DataFrame(
        {"qid": [], "doc_id": []}, schema={"qid": pl.String, "doc_id": pl.String})))
    assert "Not run" in " ".join(t.get_text() for t in sr.texts)
    figures.save(figures.condition_bars(cis), tmp_path / "bars.svg")
    assert (tmp_path / "bars.svg").read_text().lstrip().startswith("<?xml")


def test_dose_response_plot_with_the_full_ladder():
    rng = np.random.default_rng(0)
    docs = [f"d{i % 5}" for i in range(20)]
    scores = {c: _scores((rng.random(20) * 0.1 + 0.1 * k).tolist(), docs)
              for k, c in enumerate(["A2", "A3-d1", "A3-d2", "A3"])}
    cis = condition_mean_cis(scores, n_boot=100)
    dose = pl.DataFrame({"metric": ["covNDCG@10"], "slope": [0.1], "ci_low": [0.08],
                         "ci_high": [0.12], "p": [0.0]})
    fig = figures.dose_response_plot(dose, cis, "covNDCG@10")
    line = fig.axes[0].lines[0]
    assert list(line.get_xdata()) == [0, 1, 2, 3]
    assert np.all(np.diff(line.get_ydata()) > 0)


# ---------------------------------------------------------------- page


def test_page_html_holds_tables_figures_and_escapes(tmp_path):
    corpus_report = json.loads(json.dumps({"funnel": [["all questions", 3], ["kept", 2]]}))
    scores = {c: _scores([0.1, 0.3, 0.2], ["a", "b", "b"]) for c in ("A0", "G2")}
    from structablate.report.summary import summarize_cell

    cell = CellData(("qasper", "small", "none"), summarize_cell(scores), _contrast_rows(),
                    condition_mean_cis(scores, n_boot=100),
                    section_recall_cis({}, pl.DataFrame({"qid": ["q0"], "doc_id": ["a"]})),
                    pl.DataFrame(), None,
                    {"bars": "qasper/small/none/condition_bars.png",
                     "dose": "qasper/small/none/dose_response.png",
                     "section_recall": "qasper/small/none/section_recall.png"})
    sm = size_matching({"A0": _chunks([10, 12], [0, 0])},
                              {("small", "A0"): {"truncation_rate": 0.0}}, ["A0"])
    corpus = CorpusData("qasper", "qasper", corpus_report, sm,
                        {"forest": "qasper/forest.png", "funnel": "qasper/funnel.png"})
    intro, sections = build_page([cell], [corpus], PageSettings(
        embedders={"small": {"model": "BAAI/<small>"}},
        rerankers={"none": {}}, conditions=["A0", "G2"], measures=["covNDCG@10", "RR"],
        primary={"metric": "covNDCG@10", "embedder": "small", "reranker": "none"},
        stage_conditions=TT_STAGES))
    html = render.page_html("t", sections, intro)
    p = _Tables()
    p.feed(html)
    assert {"table-1", "table-2", "models", "contrasts-qasper-small-none",
            "size-matching-qasper", "funnel-qasper-table"} <= set(p.tables)
    assert {"Δ", "95% CI", "p (Holm)", "dz", "p (MixedLM slope)", "answer"} <= set(
        p.tables["table-1"]["th"])
    assert set(p.imgs) == {"qasper/forest.png", "qasper/funnel.png",
                           "qasper/small/none/condition_bars.png",
                           "qasper/small/none/dose_response.png",
                           "qasper/small/none/section_recall.png"}
    assert "BAAI/<small>" in "".join(p.text) and "BAAI/<small>" not in html  # escaped
    assert 'class="primary"' in html  # the primary row is highlighted
    md = render.page_markdown("t", sections, intro)
    assert "| C4: A4 − A3 |" in md.replace("| qasper / small / none ", "")
    assert "![" in md and "**Not run:**" in md
    ov = overview_html(intro, sections)
    assert 'id="table-1"' in ov and 'id="models"' in ov and "<img" not in ov


def test_sample_funnel_renders():
    # the bundled corpus's real funnel, as the build_qasper rule writes it
    from structablate.corpus.qasper import build_qasper_corpus, read_v03

    funnel = build_qasper_corpus(read_v03(SAMPLE)).funnel.as_dict()
    steps = blocks.funnel_steps(funnel)
    assert steps[0] == ("all questions", 45) and steps[-1][1] == 44
    t = blocks.funnel_block(funnel)
    assert "evidence mapped exactly" in t.note
    fig = figures.funnel_plot(steps)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][0] == "all questions"


def test_llm_status_names_each_stage_and_flags_each_replay():
    ind = {"backend": "llamacpp", "model": "qwen", "mode": "replay", "cache": "ind.jsonl"}
    ctx = {"backend": "llamacpp", "model": "smollm2", "mode": "cached"}
    text, flags = llm_status(
        {"stages": {"structure induction": ind, "A1 contexts": ctx, "queries (wiki)": None}},
        ["A1", "A3"], stage_conditions=LLM_STAGES)
    assert "structure induction: backend `llamacpp` (replay" in text
    assert "A1 contexts: backend `llamacpp`, model `smollm2`" in text
    assert "queries (wiki)" not in text  # a stage that did not run is not described
    assert flags == ["structure induction: LLM outputs were REPLAYED from a recording "
                     "(llm mode: replay, ind.jsonl), not generated by a live model in this run."]
    text, flags = llm_status({"stages": {"A1 contexts": None}}, ["A0"], stage_conditions=LLM_STAGES)
    assert flags == [] and "No stage" in text


def test_report_takes_which_conditions_need_an_llm_from_the_plan(monkeypatch):
    """One answer: the report's "used by" list is the plan's stage_conditions(), so A0 (fixed
    windows sized to LLM-induced structure) counts under induction with the LLM inducer."""
    monkeypatch.chdir(REPO)
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg["conditions"] = ["A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4"]
    default = Plan.from_config(cfg)  # the default's settings with A1 added
    assert default.stage_conditions() == TT_STAGES
    cfg["induction"]["inducer"] = "llm"
    cfg["induction"]["llm"] = {"model": cfg["contexts"]["llm"]["model"]}
    plan = Plan.from_config(cfg)
    assert plan.settings.size_match_structure == "induced"
    assert plan.stage_conditions() == LLM_STAGES
    conds = ["A0", "A2", "G2"]
    assert llm_conditions(plan.stage_conditions(), conds) == ["A0", "A2"]
    text, _ = llm_status(None, conds, "llm", stage_conditions=plan.stage_conditions())
    assert text.endswith("conditions A0, A2 need one.")
    text, _ = llm_status(None, conds, "texttiling", stage_conditions=default.stage_conditions())
    assert "no condition of this run needs an LLM" in text
    # gold-sized windows need no induced structure, so A0 needs no LLM then
    cfg["size_match_structure"] = "gold"
    assert "A0" not in Plan.from_config(cfg).stage_conditions()["induction"]
