"""The structure-quality guard: what a comparison's answer is about, and why.

The measurements come from :mod:`structablate.structure.quality` (per corpus: the
structure-quality table and the comparison checks) and :func:`structablate.stats.
ranking_identity` (per cell); this module only compares them with the thresholds of
:class:`GuardSettings` and words the reasons. A reason **qualifies** a row, it never hides it:
the row keeps its answer by the one decision rule (a significant answer and its Δ stay
printed) and says what the answer is about — "no, it hurts — about this inducer's
segmentation [a]" — with the reason's full sentence once per page or cell under the letter
(:class:`Flags`). A guarded row is never called equivalent or safe *without* its
qualification.

Each reason reads ``"about WHAT: DETAIL"`` (:func:`split_reason`); per pair of conditions
``(a, b)`` (either order):

* **routing covers the pool** — two-stage vs its flat twin, when stage 1 keeps at least
  ``max_routed_section_share`` of the corpus's sections (every query keeps the same
  ``min(k, S)`` of ``S``; at 100% A4 ranks exactly A3's candidates);
* **one top-level section per document** — two-stage vs its flat twin, when at least
  ``max_single_top_share`` of the documents have a single top-level section (routing then
  picks documents, not sections);
* **same text** — two flat conditions with the same boundaries, when at least
  ``max_same_text_share`` of the chunks embed identical text under both (e.g. A3-d2 and A3 on a
  structure no deeper than two levels); with the placebo P the threshold is
  ``max_placebo_same_text_share`` (chunks whose shuffled path is textually their own dilute
  A3 − P toward zero by that share);
* **induced structure no closer to gold than chance** — a comparison that rests on induced
  structure (one side induced, the other not gold), when the induced section boundaries'
  chance-corrected agreement with gold, ``boundary_f1_kappa = (F1 − F1_chance) /
  (1 − F1_chance)`` (:mod:`structablate.structure.quality`: F1 within one paragraph, chance =
  random boundaries with the induced count per document), is below ``min_boundary_kappa``;
  skipped when gold has one section per document (nothing to agree with). Raw F1 is not used:
  with a paragraph of tolerance and a section every few paragraphs, random boundaries of the
  same density already reach most of it;
* **unchanged** — for at least ``max_unchanged_share`` of the queries the two runs return
  identical rankings (all ranks; the cell's ranking identity table, what the conditions did).
  Only where no ranking identity was measured does the row's own count of questions scored
  the same (per-query delta exactly 0, ``n_zero_delta``) stand in for it.

The reasons of identity — *same text* and *unchanged* — qualify only a claim of no
difference: they dilute a contrast toward 0, so an answer of "no difference" or "too small to
tell" would restate that the conditions coincide; they never touch a row whose Holm p is
below α (a difference found on the questions that do differ is a difference). The structural
reasons (routing, one top-level section, induced structure near chance) say what the contrast
measures and qualify every row, significant or not.

Tables written before this rule carry the reasons in a ``not_testable`` column in older words;
:func:`row_guard` reads either column and :func:`split_reason` words an old reason as a new one
(:func:`upgrade_reason`), so an old table's row is qualified, never hidden, too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from structablate import study
from structablate.settings import GuardSettings
from structablate.stats.decision import ALPHA
from structablate.study import Structure


def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


ABOUT_POOL = "about routing that ranks flat search's own candidates"
ABOUT_SINGLE_TOP = "about routing between documents, not sections"
ABOUT_PLACEBO = "about a placebo that mostly keeps the real paths"
ABOUT_SAME_TEXT = "about two conditions that embed the same text"
ABOUT_INDUCED = "about this inducer's segmentation"
ABOUT_UNCHANGED = "about two conditions that returned the same results"
ABOUT_OTHER = "about what the structure guard found"
"""What a reason says an answer is about: the short phrase a row prints (the reason's full
sentence is its flag, :class:`Flags`)."""


def induced_reason(kappa: str, floor: str, observed: str, chance: str) -> str:
    """The induced-structure reason from its four figures, as printed (two decimals)."""
    return (f"{ABOUT_INDUCED}: chance-corrected boundary agreement with gold {kappa} < "
            f"{floor} (the guard's floor), from boundary F1 {observed} within one paragraph "
            f"against {chance} for random boundaries with as many per document, so the answer "
            "describes how this inducer segments the documents, not their own structure")


_OLD_INDUCED = re.compile(
    r"the induced section boundaries agree with gold little beyond chance: boundary F1 "
    r"(?P<observed>\S+) \(within one paragraph\) against (?P<chance>\S+) for random boundaries "
    r"with as many per document, chance-corrected (?P<kappa>\S+) \(guard: at least "
    r"(?P<floor>[^)]+)\).*")
_OLD_ABOUT = (("stage 1 keeps", ABOUT_POOL), ("single top-level section", ABOUT_SINGLE_TOP),
              ("under the placebo", ABOUT_PLACEBO), ("embed the same text", ABOUT_SAME_TEXT),
              ("identical rankings", ABOUT_UNCHANGED), ("per-query Δ exactly 0", ABOUT_UNCHANGED))
"""The previous wording's reasons, by a phrase each held, and what they are about."""


def upgrade_reason(text: str) -> str:
    """A reason in this module's previous words (a ``not_testable`` column of an older table)
    in the current ``"about WHAT: DETAIL"`` form; a current reason is returned unchanged."""
    text = text.strip()
    if text.startswith("about "):
        return text
    m = _OLD_INDUCED.fullmatch(text)
    if m:
        return induced_reason(m["kappa"], m["floor"], m["observed"], m["chance"])
    about = next((a for key, a in _OLD_ABOUT if key in text), ABOUT_OTHER)
    return f"{about}: {text}"


def split_reason(text: str) -> tuple[str, str]:
    """``(about, detail)`` of a reason (:func:`upgrade_reason` first, so an old table's reason
    splits too): the short phrase a row prints and the rest of the sentence."""
    about, _, detail = upgrade_reason(text).partition(": ")
    return about, detail


def split_reasons(joined: str | None) -> list[str]:
    """The reasons of a ``guard`` (or old ``not_testable``) cell: joined by "; ", split only
    outside parentheses (a reason may hold "; " inside them)."""
    if not joined:
        return []
    out, depth, cur = [], 0, []
    i = 0
    while i < len(joined):
        ch = joined[i]
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and joined.startswith("; ", i):
            out.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]


def row_guard(row: Mapping) -> list[str]:
    """The guard's reasons recorded on a contrast row, in current words: its ``guard`` column,
    or the ``not_testable`` column of a table written before the guard qualified rows."""
    joined = row.get("guard") if row.get("guard") is not None else row.get("not_testable")
    return [upgrade_reason(r) for r in split_reasons(joined)]


class Flags:
    """The lettered qualifications of one page or cell: each distinct sentence gets a letter
    (a, b, …) the first time a row refers to it, so the rows print a short phrase and the
    letter and the sentence is printed once (:meth:`notes`)."""

    def __init__(self) -> None:
        self._letters: dict[str, str] = {}
        self._printed: set[str] = set()

    def ref(self, sentence: str) -> str:
        """The letter of ``sentence`` (a new one the first time)."""
        if sentence not in self._letters:
            n = len(self._letters)
            letter = ""
            while True:
                letter = chr(ord("a") + n % 26) + letter
                n = n // 26 - 1
                if n < 0:
                    break
            self._letters[sentence] = letter
        return self._letters[sentence]

    def reason(self, text: str) -> str:
        """A row's short qualification for a guard reason: ``"about WHAT [x]"``, the reason's
        whole sentence under letter ``x``."""
        about, detail = split_reason(text)
        sentence = f"{about[0].upper()}{about[1:]}: {detail}." if detail else \
            f"{about[0].upper()}{about[1:]}."
        return f"{about} [{self.ref(sentence)}]"

    def items(self) -> list[tuple[str, str]]:
        """``(letter, sentence)`` in letter order."""
        return [(v, k) for k, v in self._letters.items()]

    def notes(self, *, new_only: bool = False) -> list[str]:
        """``"[x] sentence"`` for every flag (``new_only``: those not printed by an earlier
        call with ``new_only``, so a page prints each flag once)."""
        out = []
        for letter, sentence in self.items():
            if new_only and letter in self._printed:
                continue
            self._printed.add(letter)
            out.append(f"[{letter}] {sentence}")
        return out


def _pair_rows(df: pl.DataFrame | None, a: str, b: str) -> list[dict]:
    if df is None or not df.height:
        return []
    sub = df.filter(((pl.col("cond_a") == a) & (pl.col("cond_b") == b))
                    | ((pl.col("cond_a") == b) & (pl.col("cond_b") == a)))
    return list(sub.iter_rows(named=True))


@dataclass(frozen=True)
class Agreement:
    """The induced structure's boundary agreement with gold, as the guard reads it: boundary
    F1 within one paragraph (``observed``), the mean F1 of random boundaries with the induced
    count per document (``chance``), and ``kappa = (observed − chance) / (1 − chance)``
    (columns ``boundary_f1``, ``boundary_f1_chance``, ``boundary_f1_kappa`` of the
    structure-quality table)."""

    observed: float
    chance: float
    kappa: float
    source: str

    def describe(self) -> str:
        """The three figures in words, for a reason or a note."""
        return (f"boundary F1 {self.observed:.2f} (within one paragraph) against "
                f"{self.chance:.2f} for random boundaries with as many per document, "
                f"chance-corrected {self.kappa:.2f}")


def induced_agreement(quality: pl.DataFrame | None) -> tuple[Agreement | None, str]:
    """(the induced structure's agreement with gold, what was measured or why nothing was):
    the first ``induced*`` row's boundary F1, its chance figure and the chance-corrected
    figure (:class:`Agreement`); ``(None, why)`` when it cannot be measured (no table, no gold,
    gold with one section per document, no induced row, a table without the chance columns,
    or a chance figure of 1)."""
    if quality is None or not quality.height:
        return None, "no structure-quality table"
    gold = quality.filter(pl.col("source") == Structure.GOLD.value)
    if not gold.height:
        return None, "no gold structure"
    if gold["sections_per_doc"][0] <= 1:
        return None, "gold has one section per document"
    ind = quality.filter(pl.col("source").str.starts_with(Structure.INDUCED.value))
    if not ind.height:
        return None, "no induced structure"
    if "boundary_f1_kappa" not in quality.columns:
        return None, ("no chance-corrected agreement in the structure-quality table (written "
                      "before it was measured; rerun structure_quality)")
    r = ind.row(0, named=True)
    if not _finite(r["boundary_f1"]):
        return None, "no section boundary on either side"
    if not _finite(r["boundary_f1_kappa"]):
        return None, (f"boundary F1 {r['boundary_f1']:.2f} equals what random boundaries "
                      "reach (every candidate paragraph boundary is one)")
    return Agreement(float(r["boundary_f1"]), float(r["boundary_f1_chance"]),
                     float(r["boundary_f1_kappa"]), r["source"]), "boundary F1"


def _max_depth(quality: pl.DataFrame | None, structure: Structure | None) -> int | None:
    if quality is None or not quality.height or structure is None:
        return None
    sub = quality.filter(pl.col("source") == Structure.GOLD.value) \
        if structure is Structure.GOLD else \
        quality.filter(pl.col("source").str.starts_with(Structure.INDUCED.value))
    return int(sub["max_depth"][0]) if sub.height else None


def comparison_flags(
    cond_a: str,
    cond_b: str,
    *,
    quality: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
    ranking: pl.DataFrame | None = None,
    settings: GuardSettings | None = None,
    gold_agreement: bool = True,
    row: Mapping | None = None,
) -> list[str]:
    """What ``cond_a`` vs ``cond_b``'s answer is about here, when not the question it was
    asked for (empty: no qualification).

    ``quality``: the corpus's structure-quality table; ``checks``: its comparison checks;
    ``ranking``: the cell's ranking identity (:func:`structablate.stats.ranking_identity`);
    ``gold_agreement=False`` leaves out the induced-far-from-gold reason (for asking only
    whether two conditions differ at all); ``row``: the contrast row (its ``metric``,
    ``n_queries``, ``n_zero_delta`` and ``p_holm``): a row whose Holm p is below
    :data:`~structablate.stats.decision.ALPHA` gets no reason of identity (module
    docstring). Each reason reads ``"about WHAT: DETAIL"`` (:func:`split_reason`).
    """
    s = settings or GuardSettings()
    a, b = study.condition(cond_a), study.condition(cond_b)
    out: list[str] = []
    by_check = {r["check"]: r for r in _pair_rows(checks, cond_a, cond_b)}
    two, flat = (a, b) if study.is_two_stage(a) else (b, a)
    pool = by_check.get("routing_pool")
    if pool and _finite(pool["value"]) and pool["value"] >= s.max_routed_section_share:
        how = ("so it ranks exactly the candidates flat search ranks (by construction)"
               if pool["value"] >= 1 else "almost every candidate of flat search")
        out.append(f"{ABOUT_POOL}: stage 1 keeps {pool['count']} of the corpus's "
                   f"{pool['total']} top-level sections for every query "
                   f"({_pct(pool['value'])}), {how}: {two.name} ≈ {flat.name}")
    single = by_check.get("routing_single_top")
    if single and _finite(single["value"]) and single["value"] >= s.max_single_top_share:
        out.append(f"{ABOUT_SINGLE_TOP}: {single['count']} of {single['total']} documents "
                   f"have a single top-level section ({two.structure} structure), so routing "
                   "picks documents, not sections")
    significant = row is not None and _finite(row.get("p_holm")) and row["p_holm"] < ALPHA
    same = by_check.get("same_text")
    if same and _finite(same["value"]) and not significant:
        placebo = study.uses_placebo(a) or study.uses_placebo(b)
        limit = s.max_placebo_same_text_share if placebo else s.max_same_text_share
        if same["value"] >= limit:
            if placebo:
                pairs = by_check.get("placebo_pairs_identical")
                extra = (f"; {pairs['count']} of {pairs['total']} unique (document, path) "
                         "pairs got their own path back" if pairs else "")
                out.append(f"{ABOUT_PLACEBO}: {_pct(same['value'])} of the chunks carry the "
                           f"same heading path "
                           f"under the placebo as under the real paths (too few distinct "
                           f"paths to shuffle{extra}), which dilutes the contrast toward 0")
            else:
                depth = _max_depth(quality, a.structure)
                why = ""
                if depth is not None and study.uses_real_breadcrumb(a) \
                        and study.uses_real_breadcrumb(b) \
                        and depth <= min(a.depth, b.depth):
                    why = (f": the {a.structure} structure is at most {depth} level"
                           f"{'s' if depth != 1 else ''} deep, so breadcrumbs of depth "
                           f"{min(a.depth, b.depth)} and {max(a.depth, b.depth)} are the same")
                out.append(f"{ABOUT_SAME_TEXT}: {_pct(same['value'])} of the chunks embed the "
                           f"same text under {cond_a} and {cond_b}{why}")
    structures = {a.structure, b.structure}
    if gold_agreement and Structure.INDUCED in structures and Structure.GOLD not in structures:
        agree, _ = induced_agreement(quality)
        if agree is not None and agree.kappa < s.min_boundary_kappa:
            out.append(induced_reason(f"{agree.kappa:.2f}", f"{s.min_boundary_kappa:.2f}",
                                      f"{agree.observed:.2f}", f"{agree.chance:.2f}"))
    if significant:
        return out
    ranked = _pair_rows(ranking, cond_a, cond_b)
    for r in ranked:
        if _finite(r["identical_share"]) and r["identical_share"] >= s.max_unchanged_share:
            out.append(f"{ABOUT_UNCHANGED}: {cond_a} and {cond_b} returned identical "
                       f"rankings for {r['identical']} of {r['n_queries']} queries")
    if not ranked and row is not None and row.get("n_zero_delta") is not None \
            and row.get("n_queries"):
        share = row["n_zero_delta"] / row["n_queries"]
        if share >= s.max_unchanged_share:
            out.append(f"{ABOUT_UNCHANGED}: {cond_a} and {cond_b} score the same "
                       f"{row.get('metric', '')} "
                       f"(per-query Δ exactly 0) on {row['n_zero_delta']} of "
                       f"{row['n_queries']} queries (no ranking identity was measured to say "
                       "whether they returned the same results)")
    return out
