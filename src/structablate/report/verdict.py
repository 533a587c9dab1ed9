"""The verdict page: four plain questions a practitioner asks, answered from one cell.

For a corpus, the cell is the pre-registered primary one (primary embedder, primary reranker).
Each answer names the contrast behind it with its delta, 95% clustered-bootstrap CI, Holm p and
the equivalence test (TOST) verdict, and reads:

* **yes** / **no, it hurts** — Holm p < 0.05 and the 95% CI excludes zero, by the sign;
* **no measurable difference** — the equivalence test puts the 90% CI inside ±margin;
* **inconclusive** — neither: the data cannot tell at this sample size;
* **not run** — a condition of the contrast is not in the grid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from .render import Note, Table

ALPHA = 0.05


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    pairs: tuple[tuple[str, str], ...]  # candidate (cond_a, cond_b), first available wins
    meaning: str


QUESTIONS = (
    Question("boundaries", "Does cutting at structure help here?",
             (("A2", "A0"), ("G2", "A0")),
             "structural chunks without any prefix against size-matched fixed windows"),
    Question("metadata", "Do real heading paths help beyond token injection?",
             (("A3", "P"),),
             "real heading paths against shuffled paths of other documents (C2)"),
    Question("contexts", "Is LLM contextualisation worth its tokens?",
             (("A3", "A1"),),
             "structure with heading paths against LLM-contextualised fixed windows (C1)"),
    Question("routing", "Is two-stage routing safe?",
             (("A4", "A3"), ("G4", "G3")),
             "route-to-section-then-rank against flat search over the same vectors (C4)"),
)


def _row(contrasts: pl.DataFrame, a: str, b: str, metric: str) -> dict | None:
    if not contrasts.height:
        return None
    sub = contrasts.filter((pl.col("cond_a") == a) & (pl.col("cond_b") == b)
                           & (pl.col("metric") == metric))
    return sub.row(0, named=True) if sub.height else None


def answer(row: Mapping | None) -> str:
    """One of: yes, no (it hurts), no measurable difference, inconclusive, not run."""
    if row is None:
        return "not run"
    if row.get("verdict") == "equivalent":
        return "no measurable difference"
    significant = row["p_holm"] < ALPHA and (row["ci_low"] > 0 or row["ci_high"] < 0)
    if significant:
        return "yes" if row["delta"] > 0 else "no, it hurts"
    return "inconclusive"


def _numbers(row: Mapping, metric: str) -> str:
    dz = row["dz"]
    # every per-query difference equal: no spread, so no standardised effect size
    dz_text = "undefined (no spread)" if dz is None or math.isnan(dz) else f"{dz:+.2f}"
    return (f"Δ {metric} = {row['delta']:+.4f} [95% CI {row['ci_low']:+.4f}, "
            f"{row['ci_high']:+.4f}], Holm p = {row['p_holm']:.3g}, dz = {dz_text}, "
            f"{row['n_queries']} queries over {row['n_docs']} documents"
            + (f"; equivalence test: {row['verdict']}" if row.get("verdict") else ""))


def _mean(summary: pl.DataFrame, cond: str, measure: str) -> float | None:
    sub = summary.filter((pl.col("condition") == cond) & (pl.col("measure") == measure))
    return float(sub["mean"][0]) if sub.height else None


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
) -> list:
    """The verdict of one corpus as report blocks (a table, then one note per question)."""
    rows, notes = [], []
    for q in QUESTIONS:
        pair = next((p for p in q.pairs if _row(contrasts, *p, metric) is not None), q.pairs[0])
        row = _row(contrasts, *pair, metric)
        verdict = answer(row)
        label = f"{pair[0]} − {pair[1]}"
        rows.append([q.text, verdict, label,
                     "—" if row is None else f"{row['delta']:+.4f}",
                     "—" if row is None else f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]",
                     "—" if row is None else f"{row['p_holm']:.3g}"])
        if row is None:
            notes.append(Note(f"{q.text} Not run: the grid lacks {pair[0]} or {pair[1]}, "
                              f"needed to compare {q.meaning}.", "not-run"))
            continue
        text = f"{q.text} Answer: {verdict}. {q.meaning[0].upper()}{q.meaning[1:]}: " \
               f"{_numbers(row, metric)}."
        if q.key == "contexts":
            extra = []
            for budget in ("TokCov@512", "TokCov@2048"):
                a1, a0 = _mean(summary, "A1", budget), _mean(summary, "A0", budget)
                if a1 is not None and a0 is not None:
                    extra.append(f"{budget}: A1 {a1:.3f} vs A0 {a0:.3f}")
            if a1_prefix_tokens is not None:
                extra.append(f"the contexts add {a1_prefix_tokens:.1f} tokens per chunk on "
                             "average")
            if a1_llm_calls is not None:
                extra.append(f"{a1_llm_calls} LLM calls made them")
            if extra:
                text += " Under token budgets (prefix tokens charged): " + "; ".join(extra) + "."
        if q.key == "routing" and section_recall.height:
            sr = section_recall.filter(pl.col("condition") == pair[0])
            if sr.height:
                text += (f" Stage 1 kept a gold-bearing section for "
                         f"{float(sr['section_recall'][0]):.0%} of the queries.")
        notes.append(Note(text, "warning" if verdict == "no, it hurts" else "info"))
    label = " / ".join(cell)
    table = Table(f"verdict-{corpus}", f"Verdict for {corpus} ({label}, {metric})",
                  ["question", "answer", "contrast", "delta", "95% CI", "Holm p"], rows,
                  note="Plain-words answers from the primary cell; every number is in the "
                       "contrast tables below. 'inconclusive' means the data cannot tell.",
                  align=["l", "l", "l", "r", "r", "r"])
    return [table, *notes]
