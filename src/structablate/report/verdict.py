"""The verdict page: plain questions a practitioner asks, answered from one cell.

For a corpus, the cell is the pre-registered primary one (primary embedder, primary reranker).
Each answer names the contrast behind it with its delta, 95% clustered-bootstrap CI, Holm p over
the declared family, the equivalence margin and family-adjusted TOST p, the smallest effect the
design resolves at the decision's level, and the models that produced it. The answer is the
first that applies, in this order:

1. **not run** — no contrast row compares the pair: a condition of the pair is not in the grid,
   or both ran but no configured contrast compares them (e.g. ``C1`` redefined onto another
   pair); the note says which, from ``conditions`` and ``configured`` when given;
2. **withheld** — too few documents for the bootstrap (the row's ``withheld``);
3. otherwise the one decision rule of :mod:`structablate.stats.decision`, in words
   (:func:`~structablate.stats.decision.row_words`): **yes** / **no, it hurts** (a
   difference), **a real but negligible difference (smaller than ±m)**, **no difference larger
   than ±m**, **too small to tell** (then: the effects this corpus resolves at the family's
   level, and how many questions and documents the paper's effects would need), **too small
   to tell (all N tie)** for a sample without spread.

Where the structure-quality guard (:mod:`.guard`) has reasons against the pair (e.g. induced
boundaries near chance), the answer stays the rule's and says what it is about — "no, it
hurts — about this inducer's segmentation [a]" — with each reason's sentence once under its
letter after the answers table, and what the user can do about it in the question's note.

Each question lists its candidate contrasts, the paper's (induced-structure) arm first and the
gold-structure arm after it: the first that ran without a guard reason answers (else the
first that ran, qualified); when a later one answers (e.g. G2 − A0g for "Does cutting at
structure help?"), the note says so and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from structablate import study
from structablate.paper import paper_relative_effects
from structablate.stats.decision import ALPHA, margin_text, no_spread, row_decision, row_words
from structablate.stats.power import (
    MIN_DOCS,
    MIN_QUERIES,
    PAPER_DELTAS,
    PAPER_DZ,
    needed_for_delta,
    needed_for_dz,
    sample_warnings,
)

from .blocks import method_qualifiers
from .guard import Flags, GuardSettings, comparison_flags, split_reason
from .render import Note, TableBlock


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    pairs: tuple[tuple[str, str], ...]  # candidate (cond_a, cond_b), the paper's first
    meaning: str


QUESTIONS = (
    Question("boundaries", "Does cutting at structure help here?",
             study.QUESTION_PAIRS["boundaries"],
             "structural chunks without any prefix against size-matched fixed windows"),
    Question("paths", "Do heading paths help, added to structural chunks?",
             study.QUESTION_PAIRS["paths"],
             "structural chunks with their heading paths against the same chunks without"),
    Question("metadata", "Do real heading paths help beyond token injection?",
             study.QUESTION_PAIRS["metadata"],
             "real heading paths against shuffled paths of other documents (C2)"),
    Question("contexts", "Is LLM contextualisation worth its tokens?",
             study.QUESTION_PAIRS["contexts"],
             "structure with heading paths against LLM-contextualised fixed windows (C1)"),
    Question("routing", "Is two-stage routing safe?",
             study.QUESTION_PAIRS["routing"],
             "route-to-section-then-rank against flat search over the same vectors (C4)"),
)
"""The questions, each with its candidate pairs (:data:`structablate.study.QUESTION_PAIRS`):
the paper's arm first (induced structure, as the paper's conditions), then the gold-structure
arm, which answers where the corpus has real headings and induced structure is guarded
(G2 − A0g and G3 − GP are structablate's own controls, beyond the paper; docs/conditions.md)."""


def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _row(contrasts: pl.DataFrame, a: str, b: str, metric: str) -> dict | None:
    if not contrasts.height:
        return None
    sub = contrasts.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                           & (pl.col("metric") == metric))
    return sub.row(0, named=True) if sub.height else None


def significant(row: Mapping) -> bool:
    """Holm p (over the declared family) below α: the decision rule's "significant"."""
    return _finite(row.get("p_holm")) and row["p_holm"] < ALPHA


def decision_of(row: Mapping) -> str:
    """The row's decision by the one rule (:func:`structablate.stats.decision.row_decision`)."""
    return row_decision(row)


def answer(row: Mapping | None, flags: Sequence[str] = (), letters: Flags | None = None,
           resolves: float | None = None) -> str:
    """One of: not run, withheld, or the decision in words (yes, no, it hurts, a real but
    negligible difference (smaller than ±m), no difference larger than ±m, too small to tell
    [(all N tie)]), followed by what the guard's reasons ``flags`` say it is about ("— about
    this inducer's segmentation [a]", the letter from ``letters`` when given); module
    docstring for the order. The guard never replaces the answer. ``resolves``: the MDE at the
    family's level, printed after "too small to tell" where the sample has spread."""
    if row is None:
        return "not run"
    words = row_words(row)
    if _finite(resolves) and row_decision(row) == "inconclusive" and no_spread(row) is None:
        words += f" (resolves ±{resolves:.3f})"
    quals = [letters.reason(f) if letters is not None else split_reason(f)[0] for f in flags]
    quals += method_qualifiers(row)
    return f"{words} — {'; '.join(quals)}" if quals else words


def mixedlm_disagreement(row: Mapping) -> str | None:
    """A sentence when the bootstrap p and the MixedLM with a per-document slope
    (``p_mixedlm_slope``) fall on different sides of 0.05 (both unadjusted), or when that model
    was fitted but did not converge (then there is no agreement check); None otherwise or when
    MixedLM was not fitted."""
    p, ps = row.get("p"), row.get("p_mixedlm_slope")
    if not _finite(p):
        return None
    if not _finite(ps):
        if _finite(row.get("p_mixedlm")):
            return ("The MixedLM with a per-document slope did not converge on these data, so "
                    "no model-based check of the bootstrap is available for this contrast.")
        return None
    if (p < ALPHA) == (ps < ALPHA):
        return None
    return (f"Bootstrap and MixedLM disagree: the document-clustered bootstrap gives p = "
            f"{p:.3g} (Holm {row['p_holm']:.3g}), the MixedLM with a per-document slope p = "
            f"{ps:.3g} (both unadjusted except Holm). The bootstrap is the primary test "
            "(paper, Appendix D.4); read the answer as fragile.")


def _numbers(row: Mapping, metric: str, equivalence: bool = True) -> str:
    dz = row["dz"]
    # every per-query difference equal: no spread, so no standardised effect size
    dz_text = "undefined (no spread)" if dz is None or math.isnan(dz) else f"{dz:+.2f}"
    size = row.get("family_size")
    fam = f" over a family of {size}" if size else ""
    if not _finite(row.get("p_holm")):
        return (f"Δ {metric} = {row['delta']:+.4f}, dz = {dz_text}, {row['n_queries']} "
                f"queries over {row['n_docs']} documents; bootstrap withheld: "
                f"{row.get('withheld') or 'no p-value'}")
    text = (f"Δ {metric} = {row['delta']:+.4f} [95% CI {row['ci_low']:+.4f}, "
            f"{row['ci_high']:+.4f}], Holm p = {row['p_holm']:.3g}{fam}, dz = {dz_text}, "
            f"{row['n_queries']} queries over {row['n_docs']} documents")
    mde_f = row.get("mde80_family")
    if _finite(mde_f):
        text += f", resolves ±{mde_f:.4f} (80% power at the family's level)"
    margin = row.get("margin")
    if equivalence and _finite(margin) and _finite(row.get("p_tost_adj")):
        text += (f"; equivalence margin {margin_text(margin, row.get('margin_relative'))} "
                 f"(structablate's choice): TOST p "
                 f"{row['p_tost_adj']:.3g} adjusted over the family")
        if _finite(row.get("ci_tost_low")) and _finite(row.get("ci_tost_high")):
            text += (f", interval at the family's level [{row['ci_tost_low']:+.4f}, "
                     f"{row['ci_tost_high']:+.4f}]")
    return text


def _range(lo: int | None, hi: int | None) -> str:
    if lo is None or hi is None:
        return "—"
    lo, hi = sorted((lo, hi))
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def needed_sentence(row: Mapping) -> str:
    """How many questions / documents like these the paper's effect sizes would need at 80%
    power and the level of the decision (two-sided α / family size). The paper's effects are
    taken on this cell's own scale: its real contrasts' |Δ| as a share of their control's
    mean (:func:`structablate.paper.paper_relative_effects`) times this row's control mean
    (``mean_b``); a row without ``mean_b`` (a table from before it was recorded) falls back to
    the paper's absolute |Δ|, saying so."""
    mde_f = row.get("mde80_family")
    if not _finite(mde_f):
        return ""
    nq, nd = row["n_queries"], row["n_docs"]
    size = int(row.get("family_size") or 1)
    level = row.get("mean_b")
    if _finite(level) and level > 0:
        lo_s, hi_s = paper_relative_effects()
        lo, hi = lo_s * level, hi_s * level
        what = (f"|Δ| {100 * lo_s:.1f}–{100 * hi_s:.1f} % of the control's mean, here "
                f"{lo:.4f}–{hi:.4f}")
    else:
        lo, hi = min(PAPER_DELTAS), max(PAPER_DELTAS)
        what = (f"|Δ| {lo:.3f}–{hi:.3f} on the paper's scale; this table has no control mean "
                "to put them on this cell's")
    big = needed_for_delta(nq, nd, mde_f, hi)
    small = needed_for_delta(nq, nd, mde_f, lo)
    text = (f"To detect the paper's effects at 80% power and the family's level (α = "
            f"{ALPHA:g}/{size}) ({what}) this "
            f"design needs about {_range(big[0], small[0])} questions over "
            f"{_range(big[1], small[1])} documents")
    deff = row.get("design_effect")
    if _finite(deff):
        zb = needed_for_dz(nq, nd, deff, max(PAPER_DZ), alpha=ALPHA / size)
        zs = needed_for_dz(nq, nd, deff, min(PAPER_DZ), alpha=ALPHA / size)
        text += (f" (dz {min(PAPER_DZ):.2f}–{max(PAPER_DZ):.2f}: {_range(zb[0], zs[0])} "
                 f"questions over {_range(zb[1], zs[1])} documents)")
    return text + (f", assuming the standard error shrinks as 1/√documents at the observed "
                   f"{nq / nd:.1f} questions per document.")


def _mean(summary: pl.DataFrame, cond: str, measure: str) -> float | None:
    sub = summary.filter((pl.col("condition") == cond) & (pl.col("measure") == measure))
    return float(sub["mean"][0]) if sub.height else None


def made_with(pair: tuple[str, str], provenance: Mapping[str, str] | None) -> str:
    """"Made with: …" for a pair of conditions: the embedder and reranker, and the structure
    source or LLM each condition needs (``provenance`` keys: embedder, reranker, induced, gold,
    contexts; missing keys are left out)."""
    if not provenance:
        return ""
    parts = [provenance[k] for k in ("embedder", "reranker") if provenance.get(k)]
    if any(study.on_induced(c) for c in pair) and provenance.get("induced"):
        parts.append(provenance["induced"])
    if any(study.on_gold(c) for c in pair) and provenance.get("gold"):
        parts.append(provenance["gold"])
    if any(study.needs_llm_contexts(c) for c in pair) and provenance.get("contexts"):
        parts.append(provenance["contexts"])
    return "Made with: " + "; ".join(parts) + "." if parts else ""


def not_run_reason(pair: tuple[str, str], metric: str, *,
                   conditions: Sequence[str] | None = None,
                   configured: Mapping[str, Mapping[str, Sequence[str]]] | None = None) -> str:
    """Why a cell's contrasts table has no row for ``pair`` (``a − b``) and ``metric``.

    ``conditions``: the conditions the run has; ``configured``: ``{"statistics.contrasts":
    {name: [a, b]}, "statistics.extra_contrasts": {…}}`` as configured. Without them the
    reason says only what the table shows."""
    a, b = pair
    if conditions is not None:
        missing = [c for c in pair if c not in conditions]
        if missing:
            return (f"{' and '.join(missing)} {'was' if len(missing) == 1 else 'were'} not "
                    "run (not in conditions)")
    if configured is None:
        if conditions is None:
            return f"no contrast row compares {a} with {b} for {metric}"
        return f"{a} and {b} both ran, but no configured contrast compares them"
    for family, contrasts in configured.items():
        for name, (x, y) in (contrasts or {}).items():
            if (x, y) == pair:
                return (f"{family}.{name} compares them, but this cell's contrasts have no "
                        f"{metric} row for it")
    both = f"{a} and {b} both ran, but " if conditions is not None else ""
    name = study.paper_contrast_name(pair)
    redefined = (configured.get("statistics.contrasts") or {}).get(name) if name else None
    if redefined is not None:
        x, y = redefined
        return (f"{both}no configured contrast compares {a} with {b}: "
                f"statistics.contrasts.{name} is [{x}, {y}] in this run (the paper's {name} is "
                f"[{a}, {b}])")
    return (f"{both}no configured contrast compares {a} with {b} (add [{a}, {b}] to "
            "statistics.extra_contrasts)")


def next_steps(q: Question, pair: tuple[str, str], contrasts: pl.DataFrame, metric: str
               ) -> str:
    """What the user can do when ``pair`` cannot answer ``q``: run the question's gold-structure
    pair (the corpus's own headings) when it did not run, and improve the induced structure (an
    LLM inducer) when the pair rests on it."""
    out = []
    induced = any(study.on_induced(c) for c in pair)
    gold = [p for p in q.pairs if p != pair
            and any(study.on_gold(c) for c in p if study.is_condition(c))]
    if induced:
        out.append("Induced structure that agrees better with the documents' own (an LLM "
                   "inducer, induction.inducer: llm) would make the induced arm testable.")
        unrun = [p for p in gold if _row(contrasts, *p, metric) is None]
        if unrun:
            a, b = unrun[0]
            out.append(f"If the corpus has real headings, the gold-structure pair {a} − {b} "
                       f"answers from them: add {a} and {b} to conditions and [{a}, {b}] to "
                       "statistics.extra_contrasts.")
    return " ".join(out)




def _choose(q: Question, contrasts, metric, flag_of, reason_of, letters: Flags
            ) -> tuple[tuple[str, str], dict | None, list[str], str]:
    """(pair, row, flags, why-not-the-paper's) for a question: the first pair that ran without
    a guard reason, else the first that ran (its reasons qualify the answer)."""
    ran = [(p, _row(contrasts, *p, metric)) for p in q.pairs]
    ran = [(p, r) for p, r in ran if r is not None]
    if not ran:
        return q.pairs[0], None, [], ""
    first = q.pairs[0]
    for p, r in ran:
        flags = flag_of(p)
        if not flags:
            if p == first:
                return p, r, [], ""
            paper = next((x for x in ran if x[0] == first), None)
            why = (f"{first[0]} − {first[1]} did not run ({reason_of(first)})"
                   if paper is None else
                   f"{first[0]} − {first[1]}'s answer would be "
                   + "; ".join(letters.reason(f) for f in flag_of(first))
                   + f" (it reads: {answer(paper[1], flag_of(first), letters)})")
            return p, r, [], why
    p, r = ran[0]
    return p, r, flag_of(p), ""


def verdict_blocks(
    corpus: str,
    cell: tuple[str, str, str],
    contrasts: pl.DataFrame,
    summary: pl.DataFrame,
    section_recall: pl.DataFrame,
    metric: str,
    *,
    a1_prefix_tokens: float | None = None,
    a1_llm_calls: int | None = None,
    quality: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
    ranking: pl.DataFrame | None = None,
    guard: GuardSettings | None = None,
    provenance: Mapping[str, str] | None = None,
    conditions: Sequence[str] | None = None,
    configured: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    top_k: int | None = None,
) -> list:
    """The verdict of one corpus as report blocks: sample-size warnings, the answers table,
    then one note per question.

    ``quality`` / ``checks``: the corpus's structure-quality table and comparison checks
    (:func:`structablate.structure.quality.corpus_structure_report`); ``ranking``: the cell's
    ranking identity (:func:`structablate.stats.ranking_identity`); ``guard``: thresholds;
    ``provenance``: what produced each input (:func:`made_with`). Without the guard inputs no
    comparison is flagged. ``conditions`` (the run's) and ``configured`` (the configured
    contrast families, see :func:`not_run_reason`) let a question that cannot be answered say
    why: a condition did not run, or no configured contrast compares the pair. ``top_k``: the
    results per question, so the routing answer says what share was back-filled from the flat
    ranking.
    """
    def flag_of(pair):
        return comparison_flags(*pair, quality=quality, checks=checks, ranking=ranking,
                                settings=guard, row=_row(contrasts, *pair, metric))

    def reason_of(pair):
        return not_run_reason(pair, metric, conditions=conditions, configured=configured)

    blocks: list = []
    sized = contrasts.filter(pl.col("metric") == metric) if contrasts.height else contrasts
    if sized.height:
        nq, nd = int(sized["n_queries"].max()), int(sized["n_docs"].max())
        few = sample_warnings(nq, nd)
        if "documents" in few:
            blocks.append(Note(
                f"Only {nd} documents (fewer than {MIN_DOCS}): the document-clustered bootstrap "
                "resamples too few independent units for its 95% intervals to keep their "
                "coverage, so the p-values and CIs below are optimistic.", "warning"))
        if "queries" in few:
            blocks.append(Note(
                f"Only {nq} questions (fewer than {MIN_QUERIES}): even independent questions "
                f"this few cannot detect the paper's largest standardised effect (dz "
                f"{max(PAPER_DZ):.2f}) with 80% power, so 'too small to tell' is the expected "
                "answer to most questions here.", "warning"))
    rows, notes = [], []
    letters = Flags()
    for q in QUESTIONS:
        pair, row, flags, why = _choose(q, contrasts, metric, flag_of, reason_of, letters)
        resolves = None if row is None else row.get("mde80_family")
        verdict = answer(row, flags, letters)
        cell_answer = answer(row, flags, letters, resolves)
        disagree = mixedlm_disagreement(row) if row is not None else None
        label = f"{pair[0]} − {pair[1]}"
        inconclusive = row is not None and decision_of(row) == "inconclusive"
        if disagree and verdict != "not run" and row.get("mixedlm_disagrees") is None:
            cell_answer += "; MixedLM disagrees" if "disagree" in disagree else \
                "; MixedLM did not converge"
        has_p = row is not None and _finite(row.get("p_holm"))
        rows.append([q.text, cell_answer, label,
                     "—" if row is None else f"{row['delta']:+.4f}",
                     f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]" if has_p else "—",
                     f"{row['p_holm']:.3g}" if has_p else "—",
                     "—" if row is None or not _finite(row.get("margin"))
                     else margin_text(row["margin"], row.get("margin_relative")),
                     f"±{resolves:.4f}" if _finite(resolves) else "—"])
        if row is None:
            reasons = "; ".join(f"{a} − {b}: {reason_of((a, b))}" for a, b in q.pairs)
            notes.append(Note(f"{q.text} Not run: no contrast compares "
                              + " or ".join(f"{a} − {b}" for a, b in q.pairs)
                              + f" in this cell ({reasons}); it is needed to compare "
                              f"{q.meaning}.", "not-run"))
            continue
        meaning = f"{q.meaning[0].upper()}{q.meaning[1:]}"
        qualified = ""
        if flags:
            qualified = (f" The answer is {'; '.join(letters.reason(f) for f in flags)}, not "
                         f"the question asked (the letters' sentences follow the answers "
                         f"table). {next_steps(q, pair, contrasts, metric)}").rstrip()
        if inconclusive:
            text = (f"{q.text} Answer: {verdict}: at the family's level this corpus "
                    "resolves effects of "
                    + (f"±{resolves:.4f} or larger. " if _finite(resolves)
                       else "an unknown size (no standard error recorded). ")
                    + f"{meaning} ({label}): {_numbers(row, metric)}. {needed_sentence(row)}")
        else:
            text = f"{q.text} Answer: {verdict}. {meaning} ({label}): {_numbers(row, metric)}."
        text += qualified
        if why:
            text += (f" This answer uses {label} instead of the paper's contrast "
                     f"{q.pairs[0][0]} − {q.pairs[0][1]}, because {why}.")
        if disagree:
            text += " " + disagree
        contextual = [c for c in pair if study.needs_llm_contexts(c)]
        if contextual:
            # the LLM-contextualised windows against the same windows without contexts
            ctx = contextual[0]
            base = study.derived_from(ctx)
            extra = []
            for budget in ("TokCov@512", "TokCov@2048"):
                a1, a0 = _mean(summary, ctx, budget), _mean(summary, base, budget)
                if a1 is not None and a0 is not None:
                    extra.append(f"{budget}: {ctx} {a1:.3f} vs {base} {a0:.3f}")
            if a1_prefix_tokens is not None:
                extra.append(f"the contexts add {a1_prefix_tokens:.1f} tokens per chunk on "
                             "average")
            if a1_llm_calls is not None:
                extra.append(f"{a1_llm_calls} LLM calls made them")
            if extra:
                text += " Under token budgets (prefix tokens charged): " + "; ".join(extra) + "."
        if study.is_two_stage(pair[0]) and section_recall.height:
            sr = section_recall.filter(pl.col("condition") == pair[0])
            if sr.height:
                text += (f" Stage 1 kept a gold-bearing section for "
                         f"{float(sr['section_recall'][0]):.0%} of the queries (the routing "
                         "hit rate)")
                nb = sr["mean_backfill"][0] if "mean_backfill" in sr.columns else None
                if nb is not None and top_k:
                    text += (f"; on average {nb:.1f} of each question's {top_k} results "
                             f"({nb / top_k:.0%}) were back-filled from the flat ranking")
                text += "."
        mw = made_with(pair, provenance)
        if mw:
            text += " " + mw
        kind = "warning" if verdict.startswith("no, it hurts") or flags or disagree else "info"
        notes.append(Note(text, kind))
    label = " / ".join(cell)
    blocks.append(TableBlock(
        f"verdict-{corpus}", f"Verdict for {corpus} ({label}, {metric})",
        ["question", "answer", "contrast", "delta", "95% CI", "Holm p", "margin",
         "resolves (80%, family level)"], rows,
        note="Plain-words answers from the primary cell by one rule (docs/statistics.md): a "
             "difference when the Holm p over the declared family is below 0.05, equivalence "
             "when the family-adjusted TOST p is below 0.05 (the margin is structablate's "
             "choice, not the paper's), both: a real but negligible difference, neither: too "
             "small to tell. Every number is in the contrast tables below. Where the "
             "structure-quality guard qualifies an answer, the answer is kept and says what it "
             "is about, with a letter whose sentence follows this table.",
        align=["l", "l", "l", "r", "r", "r", "r", "r"]))
    blocks += [Note(n, "warning") for n in letters.notes()]
    return [*blocks, *notes]
