"""The verdict page's plain-words answers: order (significance before equivalence), the guard's
qualification (never hiding an answer), resolving power, the paper's contrast or a labelled
fallback, MixedLM disagreement, sample-size warnings, provenance, BM25 and what was left out."""

import polars as pl
import pytest

from structablate.errors import ConfigError
from structablate.report import blocks
from structablate.report.guard import comparison_flags
from structablate.report.page import (
    CellData,
    CorpusData,
    PageSettings,
    build_page,
)
from structablate.report.render import page_markdown
from structablate.report.verdict import _numbers, answer, mixedlm_disagreement, verdict_blocks
from structablate.settings import (
    EmbedderSettings,
    GuardSettings,
    LLMSettings,
    PrimaryCell,
    RerankerSettings,
    parse,
)
from structablate.structure.quality import CHANCE_FIGURES, CHECKS_SCHEMA, QUALITY_SCHEMA

METRIC = "covNDCG@10"


def _row(cond_a, cond_b, delta, lo, hi, p_holm, equivalence, *, n_q=400, n_d=60, mde80=0.012,
         p=None, p_ms=float("nan"), family_size=1):
    """A contrast row; ``equivalence``: "equivalent" (family-adjusted TOST p 0.01) or anything
    else (0.5); ``mde80`` is the MDE at the family's level."""
    eq = equivalence == "equivalent"
    return {"corpus": "c", "embedder": "e", "reranker": "none", "metric": METRIC,
            "contrast": f"{cond_a}-{cond_b}", "cond_a": cond_a, "cond_b": cond_b,
            "n_queries": n_q, "n_docs": n_d, "delta": delta, "ci_low": lo, "ci_high": hi,
            "p": p_holm if p is None else p, "p_holm": p_holm, "dz": delta * 5,
            "se": mde80 / 2.8016, "mde80": mde80, "mde80_family": mde80, "design_effect": 1.5,
            "p_mixedlm": float("nan") if p_ms != p_ms else 0.5, "p_mixedlm_query": float("nan"),
            "p_mixedlm_slope": p_ms, "margin": 0.01, "p_tost_adj": 0.01 if eq else 0.5,
            "ci_tost_low": -0.008 if eq else -0.03, "ci_tost_high": 0.008 if eq else 0.03,
            "family_size": family_size, "family_missing": "", "n_zero_delta": 0}


def _quality(induced_kappa=0.8, induced_single=0.0, induced_depth=3, *, chance=0.6):
    """Gold and one induced row; the induced boundaries' chance-corrected agreement with gold
    is ``induced_kappa`` (boundary F1 ``chance + kappa · (1 − chance)``)."""
    nan = float("nan")
    base = {"n_docs": 5, "n_sections": 60, "sections_per_doc": 12.0,
            "top_sections_per_doc": 6.0, "single_top_share": 0.0, "depth_1": 0.5,
            "depth_2": 0.3, "depth_3": 0.2, "depth_4plus": 0.0, "max_depth": 3,
            "docs_depth3_share": 1.0, "section_span_identity": nan, "chunk_span_identity": nan,
            "boundary_precision": nan, "boundary_recall": nan, "boundary_f1": nan,
            "top_boundary_f1": nan, **{f"{f}_{k}": nan for f in CHANCE_FIGURES
                                       for k in ("chance", "kappa")}}
    ind = {**base, "source": "induced:llm", "top_sections_per_doc": 1.0 if induced_single
           else 4.0, "single_top_share": induced_single, "max_depth": induced_depth,
           "section_span_identity": 0.2, "chunk_span_identity": 0.5,
           "boundary_f1": chance + induced_kappa * (1 - chance), "boundary_f1_chance": chance,
           "boundary_f1_kappa": induced_kappa, "top_boundary_f1": 0.1}
    return pl.DataFrame([{**base, "source": "gold"}, ind], schema=QUALITY_SCHEMA)


def _checks(rows):
    return pl.DataFrame([{"cond_a": a, "cond_b": b, "check": c, "value": n / t, "count": n,
                          "total": t, "detail": ""} for a, b, c, n, t in rows],
                        schema=CHECKS_SCHEMA)


DEGENERATE = _checks([("A3", "A4", "routing_pool", 5, 5),
                      ("A3", "A4", "routing_single_top", 5, 5),
                      ("A3-d2", "A3", "same_text", 120, 120),
                      ("A3", "P", "same_text", 80, 120),
                      ("A3", "P", "placebo_pairs_identical", 9, 12)])
HEALTHY = _checks([("A3", "A4", "routing_pool", 5, 900),
                   ("A3", "A4", "routing_single_top", 0, 150),
                   ("A3-d2", "A3", "same_text", 30, 1200),
                   ("A3", "P", "same_text", 40, 1200),
                   ("G3", "G4", "routing_pool", 5, 1000),
                   ("G3", "G4", "routing_single_top", 0, 150)])
FORBIDDEN = ("no measurable difference", "equivalent", "safe")


def test_answer_order_significance_before_equivalence():
    assert answer(None) == "not run"
    assert answer(_row("A2", "A0", 0.02, 0.01, 0.03, 0.001, "different")) == "yes"
    assert answer(_row("A4", "A3", -0.03, -0.04, -0.02, 0.001, "different")) == "no, it hurts"
    # a Holm-significant small effect (+0.005) inside a ±0.01 margin: real but negligible
    small = _row("A3", "P", 0.005, 0.003, 0.007, 0.004, "equivalent")
    assert answer(small) == "a real but negligible difference (smaller than ±0.01)"
    # significant before Holm, not after: too small to tell, never "yes"
    assert answer(_row("A3", "P", 0.01, 0.001, 0.02, 0.08, "different")) == "too small to tell"
    assert answer(_row("G3", "A3", 0.001, -0.004, 0.006, 0.7, "equivalent")) == (
        "no difference larger than ±0.01")
    assert answer(_row("A3", "A1", 0.01, -0.01, 0.03, 0.4, "inconclusive")) == (
        "too small to tell")
    # a flagged comparison keeps its answer and says what it is about (issue 50)
    assert answer(_row("A4", "A3", -0.03, -0.04, -0.02, 0.001, "different"),
                  ["about this inducer's segmentation: κ 0.25 < 0.50"]) == (
        "no, it hurts — about this inducer's segmentation")
    # an old table's reason (no "about" clause) is still a qualification, never a hiding
    assert answer(_row("A4", "A3", 0.0, -0.01, 0.01, 1.0, "inconclusive"), ["x"]) == (
        "too small to tell — about what the structure guard found")
    # every question tied: too small to tell, never equivalence
    tied = _row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "equivalent") | {"n_zero_delta": 400}
    assert answer(tied) == "too small to tell (all 400 tie)"


def _verdict(contrasts, **kw):
    summary = pl.DataFrame({"condition": ["A0"], "measure": [METRIC], "mean": [0.2]})
    recall = pl.DataFrame({"condition": ["A4", "G4"], "section_recall": [1.0, 0.45]})
    out = verdict_blocks("c", ("c", "e", "none"), pl.DataFrame(contrasts), summary, recall,
                         METRIC, **kw)
    table = next(b for b in out if hasattr(b, "rows"))
    answers = {r[0]: r for r in table.rows}
    notes = {q: next((n for n in out if getattr(n, "text", "").startswith(q)), None)
             for q in answers}
    warnings = [n.text for n in out if getattr(n, "kind", "") == "warning"
                and not any(n.text.startswith(q) for q in answers)]
    return answers, notes, warnings


def test_degenerate_structure_qualifies_answers_with_reasons():
    """The bundled default's failure: one top-level section per document, routing keeps 5 of
    5 sections, no level 3, induced structure 11% like gold; A4 = A3 exactly. Each answer
    keeps the rule's words and says what it is about; each reason's sentence is printed once,
    under its letter, after the answers table."""
    rows = [_row("A2", "A0", 0.004, -0.01, 0.02, 0.6, "inconclusive"),
            _row("A3", "P", 0.0, -0.003, 0.003, 1.0, "equivalent"),
            _row("A3", "A1", 0.01, -0.01, 0.03, 0.4, "inconclusive"),
            _row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "equivalent") | {"n_zero_delta": 400}]
    ranking = pl.DataFrame({"cond_a": ["A3"], "cond_b": ["A4"], "n_queries": [33],
                            "identical": [33], "identical_share": [1.0]})
    answers, notes, warnings = _verdict(rows, quality=_quality(0.11, 1.0, 2),
                                        checks=DEGENERATE, ranking=ranking)
    routing_q = "Is two-stage routing safe?"
    for q in (routing_q, "Do real heading paths help beyond token injection?",
              "Is LLM contextualisation worth its tokens?"):
        assert "not testable" not in answers[q][1] and " — about " in answers[q][1]
        text = notes[q].text
        assert "not testable" not in text and notes[q].kind == "warning"
        said = text.removeprefix(q).split("Made with")[0]
        assert not any(w in said for w in FORBIDDEN), said
    # A4 = A3 on every question: no equivalence, the tie said, then what it is about
    assert answers[routing_q][1].startswith("too small to tell (all 400 tie) — about routing "
                                            "that ranks flat search's own candidates [")
    routing = notes[routing_q].text
    assert "about routing between documents, not sections [" in routing
    assert "about this inducer's segmentation [" in routing
    flags = "\n".join(warnings)
    assert "stage 1 keeps 5 of the corpus's 5 top-level sections" in flags
    assert "by construction" in flags and "identical rankings for 33 of 33" in flags
    assert "routing picks documents, not sections" in flags
    assert ("About this inducer's segmentation: chance-corrected boundary agreement with gold "
            "0.11 < 0.50 (the guard's floor), from boundary F1 0.64 within one paragraph "
            "against 0.60 for random boundaries with as many per document") in flags
    assert "too few distinct paths to shuffle; 9 of 12 unique" in flags
    # each sentence once, by letter, however many answers it qualifies
    assert flags.count("About this inducer's segmentation") == 1
    assert all(w.startswith("[") for w in warnings if "About" in w)
    # no G2 − A0 in the grid: the paper's contrast answers, qualified
    assert answers["Does cutting at structure help here?"][1].startswith(
        "too small to tell (resolves ±0.012) — about this inducer's segmentation [")
    assert answers["Does cutting at structure help here?"][2] == "A2 − A0"


def test_fallback_to_gold_is_labelled_with_the_reason():
    rows = [_row("A2", "A0", 0.004, -0.01, 0.02, 0.6, "inconclusive"),
            _row("G2", "A0", 0.03, 0.02, 0.04, 0.001, "different")]
    answers, notes, _ = _verdict(rows, quality=_quality(0.11), checks=HEALTHY)
    row = answers["Does cutting at structure help here?"]
    assert row[1:3] == ["yes", "G2 − A0"]
    text = notes["Does cutting at structure help here?"].text
    assert "uses G2 − A0 instead of the paper's contrast A2 − A0, because A2 − A0's answer " \
           "would be about this inducer's segmentation [a] (it reads: too small to tell — " \
           "about this inducer's segmentation [a])" in text
    # with a good inducer the paper's contrast answers and no fallback is mentioned
    answers, notes, _ = _verdict(rows, quality=_quality(0.8), checks=HEALTHY)
    assert answers["Does cutting at structure help here?"][1:3] == ["too small to tell "
                                                                  "(resolves ±0.012)",
                                                                  "A2 − A0"]
    assert "instead of" not in notes["Does cutting at structure help here?"].text
    # the paper's contrast did not run at all
    answers, notes, _ = _verdict(rows[1:], quality=_quality(0.8), checks=HEALTHY)
    assert "because A2 − A0 did not run" in notes["Does cutting at structure help here?"].text


def test_healthy_structure_gives_resolving_power_instead_of_inconclusive():
    rows = [_row("A2", "A0", 0.004, -0.01, 0.02, 0.6, "inconclusive", mde80=0.0213,
                 n_q=951, n_d=184),
            _row("A3", "P", 0.005, 0.003, 0.007, 0.004, "equivalent"),
            _row("A4", "A3", -0.033, -0.045, -0.02, 0.0004, "different"),
            _row("A3", "A1", 0.001, -0.004, 0.006, 0.7, "equivalent")]
    answers, notes, warnings = _verdict(rows, quality=_quality(0.8), checks=HEALTHY)
    assert warnings == []  # 400+ questions over 60+ documents: no small-sample warning
    cut = notes["Does cutting at structure help here?"].text
    assert answers["Does cutting at structure help here?"][1] == (
        "too small to tell (resolves ±0.021)")
    assert ("too small to tell: at the family's level this corpus resolves effects of ±0.0213 "
            "or larger") in cut
    assert "inconclusive" not in cut
    # (0.0213 / 0.033)^2 * 184 = 76.7 -> 77 documents, * 951 / 184 -> 398 questions;
    # (0.0213 / 0.010)^2 * 184 = 834.8 -> 835 documents -> 4,315.7 -> 4,316 questions;
    # dz: 1.5 * (2.8016 / 0.17)^2 = 407.4 -> 408 questions (78.9 -> 79 documents),
    #     1.5 * (2.8016 / 0.06)^2 = 3,270.4 -> 3,271 questions (632.9 -> 633 documents)
    assert "about 398–4,316 questions over 77–835 documents" in cut
    assert "(dz 0.06–0.17: 408–3,271 questions over 79–633 documents)" in cut
    assert "1/√documents at the observed 5.2 questions per document" in cut
    assert answers["Do real heading paths help beyond token injection?"][1] == (
        "a real but negligible difference (smaller than ±0.01)")
    assert "equivalence margin ±0.01 (structablate's choice)" in notes[
        "Do real heading paths help beyond token injection?"].text
    assert answers["Is two-stage routing safe?"][1] == "no, it hurts"
    assert answers["Is LLM contextualisation worth its tokens?"][1] == (
        "no difference larger than ±0.01")


def test_needed_sample_is_at_the_level_of_the_family():
    """The same design in a family of four: alpha 0.05 / 4 two-sided, so
    z = 2.4977 + 0.8416 = 3.3393; dz 0.17: 1.5 * (3.3393 / 0.17)^2 = 578.8 -> 579 questions
    (579 * 184 / 951 = 112.03 -> 113 documents)."""
    row = _row("A2", "A0", 0.004, -0.01, 0.02, 0.6, "inconclusive", mde80=0.0254, n_q=951,
               n_d=184, family_size=4)
    answers, notes, _ = _verdict([row], quality=_quality(0.8), checks=HEALTHY)
    cut = notes["Does cutting at structure help here?"].text
    assert "α = 0.05/4" in cut and "(dz 0.06–0.17: 579–" in cut and "over 113–" in cut


def test_few_questions_and_documents_are_warned_and_mixedlm_disagreement_shown():
    """The unseen 19-question corpus: Holm p 0.022 but MixedLM p 0.32."""
    rows = [_row("A2", "A0", 0.05, 0.01, 0.09, 0.022, "different", n_q=19, n_d=4,
                 mde80=0.04, p=0.011, p_ms=0.32)]
    answers, notes, warnings = _verdict(rows)
    assert answers["Does cutting at structure help here?"][1] == "yes; MixedLM disagrees"
    text = notes["Does cutting at structure help here?"].text
    assert "Bootstrap and MixedLM disagree" in text and "p = 0.32" in text
    assert any(w.startswith("Only 4 documents (fewer than 30)") for w in warnings)
    assert any(w.startswith("Only 19 questions (fewer than 272)") for w in warnings)
    assert mixedlm_disagreement(_row("A2", "A0", 0.05, 0.01, 0.09, 0.02, "different",
                                     p=0.01, p_ms=0.03)) is None
    # fitted (document-intercept p present) but the slope model did not converge: said so
    unconverged = _row("A2", "A0", 0.05, 0.01, 0.09, 0.02, "different", p=0.01) | {
        "p_mixedlm": 0.2}
    assert "did not converge" in mixedlm_disagreement(unconverged)


def test_answers_name_the_models_behind_them():
    prov = {"embedder": "embedder minilm (pkg:m)", "reranker": "no reranker",
            "induced": "structure induced by the LLM inducer (qwen, replayed from a recording)",
            "gold": "gold structure (the documents' own headings)",
            "contexts": "A1 contexts by smollm2"}
    rows = [_row("G2", "A0", 0.03, 0.02, 0.04, 0.001, "different"),
            _row("A3", "A1", 0.001, -0.004, 0.006, 0.7, "equivalent")]
    _, notes, _ = _verdict(rows, provenance=prov)
    cut = notes["Does cutting at structure help here?"].text
    assert "Made with: embedder minilm (pkg:m); no reranker; gold structure" in cut
    assert "qwen" not in cut and "smollm2" not in cut
    ctx = notes["Is LLM contextualisation worth its tokens?"].text
    assert "qwen, replayed from a recording" in ctx and "A1 contexts by smollm2" in ctx


def test_unchanged_scores_qualify_a_comparison_only_without_rankings():
    """Top-10 identical but the tails differ (Wikipedia sample, A4 vs A3): rankings are not
    identical, yet every per-query covNDCG@10 delta is 0. What the conditions did decides:
    with the ranking identity measured the score ties flag nothing; without it they stand in
    (for a row that is not significant)."""
    row = {**_row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "different", n_q=33, n_d=5),
           "n_zero_delta": 33}
    ranking = pl.DataFrame({"cond_a": ["A3"], "cond_b": ["A4"], "n_queries": [33],
                            "identical": [4], "identical_share": [4 / 33]})
    assert comparison_flags("A4", "A3", ranking=ranking, row=row) == []
    flags = comparison_flags("A4", "A3", row=row)
    assert flags == ["about two conditions that returned the same results: A4 and A3 score the "
                     "same covNDCG@10 (per-query Δ exactly 0) on 33 of 33 queries (no ranking "
                     "identity was measured to say whether they returned the same results)"]
    assert comparison_flags("A4", "A3", row={**row, "n_zero_delta": 20}) == []
    answers, notes, _ = _verdict([row])
    assert answers["Is two-stage routing safe?"][1] == (
        "too small to tell (all 33 tie) — about two conditions that returned the same results "
        "[a]")


def test_guard_thresholds_are_settings():
    # the Wikipedia sample: 5 of 6 sections kept is almost flat search; 5 of 7 is not
    almost = comparison_flags("A4", "A3", checks=_checks([("A3", "A4", "routing_pool", 5, 6)]))
    assert almost == ["about routing that ranks flat search's own candidates: stage 1 keeps 5 "
                      "of the corpus's 6 top-level sections for every query (83%), almost "
                      "every candidate of flat search: A4 ≈ A3"]
    assert comparison_flags("A4", "A3", checks=_checks([("A3", "A4", "routing_pool", 5, 7)])) \
        == []
    q = _quality(0.35)
    assert comparison_flags("A2", "A0", quality=q) != []
    assert comparison_flags("A2", "A0", quality=q,
                            settings=GuardSettings(min_boundary_kappa=0.3)) == []
    with pytest.raises(ConfigError, match="report.guard.max_single_top_share: 1.5 is greater"):
        parse(GuardSettings, {"max_single_top_share": 1.5}, "report.guard")
    with pytest.raises(ConfigError, match="'min_gold_agreement' was unexpected"):
        parse(GuardSettings, {"min_gold_agreement": 0.4}, "report.guard")
    assert parse(GuardSettings, {"min_boundary_kappa": 0.6}).min_boundary_kappa == 0.6
    # gold with one section per document: nothing to agree with, no agreement flag
    flat_gold = _quality(0.0).with_columns(
        pl.when(pl.col("source") == "gold").then(1.0).otherwise(pl.col("sections_per_doc"))
        .alias("sections_per_doc"))
    assert comparison_flags("A2", "A0", quality=flat_gold) == []


def test_identical_runs_have_no_effect_size():
    row = {**_row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "equivalent"), "dz": float("nan")}
    text = _numbers(row, METRIC)
    assert "dz = undefined (no spread)" in text and "nan" not in text
    assert "dz = +0.25" in _numbers(_row("A2", "A0", 0.05, 0.0, 0.1, 0.2, "inconclusive"),
                                    METRIC)


def test_dropped_inputs_and_bm25_headline():
    byo = {"skipped": [{"where": "a.md", "reason": "not UTF-8"},
                       {"where": "b.html", "reason": "no body text"}],
           "queries": {"dropped_unknown_document": 2, "dropped_no_evidence": 1,
                       "dropped_unmapped": 0, "kept": 16}}
    lines = blocks.dropped_inputs(byo)
    assert lines[0] == "2 input file(s) skipped: a.md (not UTF-8); b.html (no body text)."
    assert lines[1] == "Questions dropped: 2 unknown document, 1 no evidence (kept 16)."
    qasper = {"dropped_unanswerable": 1, "dropped_numeric_only": 0, "kept": 44}
    assert blocks.dropped_inputs(qasper) == ["Questions dropped: 1 unanswerable (kept 44)."]
    wiki = {"reject_counts": {"min_words": 2}, "source": {"skipped": {
        "non_article_namespace": 3, "without_required_template": 0}}}
    funnel = {"statuses": {"final": 33, "query_leak": 90, "survivor": 0, "no_query": 10},
              "leak_reasons": {"query_leak:rouge": 90}}
    lines = blocks.dropped_inputs(wiki, funnel)
    assert "Export pages skipped: 3 non article namespace." in lines
    assert "Candidate documents rejected: 2 min words." in lines
    assert ("Generated questions dropped: 10 no usable question generated, 90 question leaked "
            "its evidence (kept 33).") in lines
    assert blocks.dropped_inputs({"kept": 44}) == []
    s = blocks.bm25_sentence({"gold_top1_within_document": 0.197,
                              "gold_top1_corpus_wide": 0.042, "chunkset": "G2"}, "qasper")
    assert s.index("19.7 % within the question's own document (comparable to the paper's "
                   "22.7 % on QASPER)") < s.index("4.2 % over the whole corpus")
    assert blocks.bm25_sentence(None) == ""


def test_page_verdict_section_shows_guard_table_bm25_and_left_out():
    contrasts = pl.DataFrame([_row("A4", "A3", 0.0, 0.0, 0.0, 1.0, "equivalent", n_q=33,
                                   n_d=5) | {"n_zero_delta": 33}])
    summary = pl.DataFrame({"condition": ["A3", "A4"], "measure": [METRIC, METRIC],
                            "mean": [0.3, 0.3], "n_queries": [33, 33], "n_docs": [5, 5]})
    cell = CellData(("c", "e", "none"), summary, contrasts, pl.DataFrame(
        {"condition": [], "measure": [], "mean": [], "ci_low": [], "ci_high": [],
         "n_queries": [], "n_docs": []}), pl.DataFrame({"condition": [],
                                                         "section_recall": []}),
        pl.DataFrame({"metric": [METRIC], "slope": [0.0], "ci_low": [0.0], "ci_high": [0.0],
                      "p": [1.0]}))
    corpus = CorpusData("c", "wikipedia", {"n_candidates": 6, "n_examined": 6,
                                           "n_accepted": 5, "reject_counts": {"min_depth": 1}},
                        pl.DataFrame(), structure_quality=_quality(0.11, 1.0, 2),
                        comparison_checks=DEGENERATE,
                        bm25={"gold_top1_within_document": 0.5, "gold_top1_corpus_wide": 0.1},
                        question_funnel={"statuses": {"final": 33, "query_leak": 4}},
                        questions_generated=True)
    def replayed(model):
        return LLMSettings(backend="llamacpp", model=model, mode="replay")

    llm = {"structure induction": replayed("qwen"), "queries (other)": replayed("q"),
           "queries (c)": replayed("q")}
    intro, sections = build_page([cell], [corpus], PageSettings(
        embedders={"e": EmbedderSettings(model="pkg:m")}, rerankers={"none": RerankerSettings()},
        conditions=["A3", "A4"], measures=[METRIC],
        primary=PrimaryCell(metric=METRIC, embedder="e", reranker="none"), llm=llm,
        stage_conditions={"induction": ["A3", "A4"], "contexts": []}))
    verdict = next(s for s in sections if s.key == "verdict-c")
    keys = [getattr(b, "key", None) for b in verdict.blocks]
    assert "structure-quality-c" in keys and "verdict-c" in keys
    md = page_markdown("t", [verdict])
    assert "SYNTHETIC" in md and "structure induction: LLM outputs were REPLAYED" in md
    # another corpus's question generation is not this corpus's concern
    assert "queries (c): LLM outputs were REPLAYED" in md and "queries (other)" not in md
    provenance = page_markdown("t", [s for s in sections if s.key == "provenance"])
    assert "queries (other): LLM outputs were REPLAYED" in provenance
    assert "Is two-stage routing safe? Answer: too small to tell (all 33 tie) — about routing" \
        in md and "not testable" not in md
    assert "50.0 % within the question's own document (comparable to the paper's 36.3 % on " \
           "Wikipedia-FA); 10.0 % over the whole corpus" in md
    assert "Left out of this corpus: Candidate documents rejected: 1 min depth." in md
    assert "Generated questions dropped: 4 question leaked its evidence (kept 33)." in md
    assert "| induced:llm | 5 | 12.0 | 1.0 | 100.0 % | 2 |" in md
    # the cell section qualifies the contrast under its table, once, by letter
    cell_md = page_markdown("t", [s for s in sections if s.key == "cell-c-e-none"])
    assert "[a] About routing that ranks flat search's own candidates: stage 1 keeps 5 of" \
        in cell_md and cell_md.count("stage 1 keeps 5 of") == 1
    assert "not testable" not in cell_md
    # the dose-response carries the guard: a rung twice, and the induced structure near chance
    ladder = [line for line in cell_md.split("\n\n") if "breadcrumb-depth slope" in line]
    assert any("about two conditions that embed the same text: A3-d2 vs A3: 100% of the "
               "chunks embed the same text under A3-d2 and A3: the induced structure is at "
               "most 2 levels deep" in x for x in ladder), ladder
    assert any("about this inducer's segmentation" in x for x in ladder)
    assert "A3-d1 vs A3-d2" not in cell_md


def test_the_guards_mark_travels_to_every_place_a_contrast_appears():
    """A contrast the guard qualifies keeps its answer and says what it is about in the marked
    table, the contrast table, the summary and the forest plot, its reason printed once per
    table by letter; the depth ladder's flags reach its figure."""
    from structablate.report import figures
    from structablate.report.summary import summary_markdown
    from structablate.report.testable import dose_flags, mark_contrasts

    rows = pl.DataFrame([_row("A4", "A3", -0.03, -0.04, -0.02, 0.001, "different"),
                         _row("G4", "G3", -0.01, -0.02, -0.001, 0.01, "different")])
    rows = rows.with_columns(pl.lit("pre-registered").alias("family"),
                             pl.lit(False).alias("primary"))
    marked = mark_contrasts(rows, quality=_quality(0.11, 1.0, 2), checks=DEGENERATE)
    a4, g4 = marked.row(0, named=True), marked.row(1, named=True)
    assert "stage 1 keeps 5 of the corpus's 5" in a4["guard"]
    assert a4["answer"].startswith("no, it hurts — about routing that ranks flat search's own "
                                   "candidates; about routing between documents, not sections")
    assert g4["guard"] is None and g4["answer"] == "no, it hurts"
    table = blocks.contrasts_block(marked, [METRIC])
    answer = blocks.CONTRAST_COLUMNS.index("answer")
    assert [r[answer] for r in table.rows] == [
        "no, it hurts — about routing that ranks flat search's own candidates [a]; about "
        "routing between documents, not sections [b]; about this inducer's segmentation [c]",
        "no, it hurts"]
    assert table.note.count("[a] About routing that ranks") == 1 and "[c] About this" in \
        table.note
    summary = pl.DataFrame({"condition": ["A3"], "measure": [METRIC], "mean": [0.2],
                            "n_queries": [400], "n_docs": [60]})
    md = summary_markdown({("c", "e", "none"): summary}, {"e": {"model": "m"}}, {},
                          contrasts={("c", "e", "none"): marked}, metric=METRIC)
    # the report page's contrast table, the guard's reasons once under it by letter
    assert "not testable" not in md and "| no, it hurts |" in md
    assert "| no, it hurts — about routing that ranks flat search's own candidates [a]" in md
    assert md.count("stage 1 keeps 5") == 1
    fig = figures.forest_plot(marked, METRIC)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sum("[about routing" in x for x in labels) == 1
    assert any("A4−A3" in x and "[about routing" in x for x in labels)
    flags = dose_flags(["A2", "A3-d1", "A3-d2", "A3"], quality=_quality(0.11, 1.0, 2),
                       checks=DEGENERATE)
    assert any(f.startswith("about two conditions that embed the same text: A3-d2 vs A3: ")
               for f in flags)
    assert any("chance-corrected boundary agreement with gold 0.11 < 0.50" in f for f in flags)
    dose = pl.DataFrame({"metric": [METRIC], "slope": [0.01], "ci_low": [0.0],
                         "ci_high": [0.02], "p": [0.04]})
    cis = pl.DataFrame({"condition": ["A2", "A3-d1", "A3-d2", "A3"], "measure": [METRIC] * 4,
                        "mean": [0.1, 0.11, 0.12, 0.13], "ci_low": [0.09] * 4,
                        "ci_high": [0.14] * 4})
    fig = figures.dose_response_plot(dose, cis, METRIC, flags=flags)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[0].startswith("ABOUT TWO CONDITIONS THAT EMBED THE SAME TEXT; ABOUT THIS "
                               "INDUCER'S SEGMENTATION: slope +0.0100")


def test_routing_rows_say_how_often_routing_hit_and_how_much_was_back_filled():
    """A user corpus's routing contrast: every question tied, routing kept a gold-bearing
    section for 75 % of them and 86 of each question's 100 results came from the flat ranking;
    the verdict and the contrast table say so, and never "no difference"."""
    row = _row("G4", "G3", 0.0, 0.0, 0.0, 1.0, "equivalent", n_q=20, n_d=12) | {
        "n_zero_delta": 20, "family": "exploratory", "primary": False}
    recall = pl.DataFrame({"condition": ["G4"], "n_queries": [20], "n_docs": [12],
                           "section_recall": [0.75], "ci_low": [0.5], "ci_high": [0.9],
                           "mean_backfill": [86.0], "share_backfilled": [1.0]})
    summary = pl.DataFrame({"condition": ["G3"], "measure": [METRIC], "mean": [0.2]})
    out = verdict_blocks("c", ("c", "e", "none"), pl.DataFrame([row]), summary, recall, METRIC,
                         top_k=100)
    note = next(b.text for b in out if getattr(b, "text", "").startswith("Is two-stage"))
    assert note.startswith("Is two-stage routing safe? Answer: too small to tell (all 20 tie)")
    assert "no difference larger" not in note
    assert ("Stage 1 kept a gold-bearing section for 75% of the queries (the routing hit "
            "rate); on average 86.0 of each question's 100 results (86%) were back-filled "
            "from the flat ranking.") in note
    table = blocks.contrasts_block(pl.DataFrame([row]), [METRIC], section_recall=recall,
                                   top_k=100)
    assert table.rows[0][blocks.CONTRAST_COLUMNS.index("answer")] == (
        "too small to tell (all 20 tie) — routing hit 75.0 %, 86.0 % of the 100 results "
        "back-filled from the flat ranking")
    # a flat contrast gets no routing figures
    flat = row | {"cond_a": "G3", "cond_b": "G2", "contrast": "G3-G2"}
    assert blocks.routing_row(flat, recall) is None
