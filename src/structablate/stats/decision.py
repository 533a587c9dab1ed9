"""The one decision rule of structablate: what a contrast row lets us say.

Every place that words a contrast — the contrasts table's ``decision`` column, the verdict
page, the summary, the results pages — calls :func:`decide` on the row's two family-adjusted
p-values and nothing else, so the same numbers always give the same words.

Inputs (columns of :func:`structablate.stats.contrast_table`):

* ``p_holm`` — the document-clustered bootstrap's two-sided p of ``Δ = 0``, Holm-adjusted over
  the family the config declares (a declared contrast that did not run enters the adjustment
  with p = 1, so a partial run never reports a smaller adjusted p than the complete run would:
  Holm's adjusted p-values never decrease when another p-value of the family grows).
* ``p_tost_adj`` — the bootstrap two one-sided tests (TOST) p of ``|Δ| >= margin``,
  ``max(Pr[δ* <= −m], Pr[δ* >= m])``, Bonferroni-adjusted over the declared family
  (``min(1, m_family · p_tost)``). ``p_tost_adj < α`` exactly when the bootstrap's
  ``(1 − 2α / m_family)`` percentile interval lies inside ``(−margin, +margin)`` (the row's
  ``ci_tost_low``/``ci_tost_high``), which a reader can check on the row itself.

With ``α`` = :data:`ALPHA` (family-wise), the four outcomes:

============  =============  ===============================================================
significant   equivalent     decision
============  =============  ===============================================================
yes           no             ``difference`` (the verdict says "yes" or "it hurts" by sign)
yes           yes            ``negligible`` — real but smaller than ±margin
no            yes            ``equivalent`` — no difference larger than ±margin
no            no             ``inconclusive`` — too small to tell
============  =============  ===============================================================

A row without a margin (the metric has none configured) cannot be ``equivalent``; a row whose
bootstrap answers were withheld (too few documents, :data:`MIN_BOOTSTRAP_DOCS`) is
``withheld``. A row from a sample **without spread** is ``inconclusive`` whatever its
p-values say (:func:`no_spread`): when every question ties (every per-query Δ exactly 0,
``n_zero_delta == n_queries``) the bootstrap's replicates are all 0, so its TOST "passes" at
any margin and its equivalence answer would only restate that the two conditions returned the
same scores here; when the replicate distribution has zero width (``se == 0``) no interval
and no p-value describes sampling error. Such a row reads "too small to tell (all N tie)".
The rule is monotone: a smaller ``p_holm`` never turns a claim of an effect into a weaker one,
and a smaller ``p_tost_adj`` never turns a claim of equivalence into a weaker one (for a fixed
``no_spread``).

**Monte-Carlo error.** A bootstrap p is a share of ``B`` replicates, so it carries a binomial
error of its own; :func:`monte_carlo_flags` names the tests of a row whose adjusted p lies
within two Monte-Carlo standard errors of α (the decision could flip with another seed). The
rows are flagged, not recomputed with more replicates (docs/statistics.md says why).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from .power import ALPHA  # the family-wise level of every decision (paper, Appendix D.3)

MIN_BOOTSTRAP_DOCS = 10
"""Below this many documents a contrast's bootstrap answers (p, CI, decision) are withheld.

A document-clustered bootstrap over a handful of documents resamples too few independent
units: in the null simulation of :mod:`structablate.stats.power` 95% intervals covered 0 in
84% of designs at 5 documents and 90% at 10, and with one document every replicate equals the
observed mean (p = 0 and a zero-width interval). At 10 documents the interval keeps at least
nine tenths of its nominal coverage; between 10 and :data:`~structablate.stats.power.MIN_DOCS`
(30) the answers are printed with a warning that they are optimistic."""

Decision = Literal["difference", "negligible", "equivalent", "inconclusive", "withheld"]
DECISIONS: tuple[str, ...] = ("difference", "negligible", "equivalent", "inconclusive",
                              "withheld")


def _finite(x) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def decide(p_holm: float | None, p_tost_adj: float | None = None, *,
           alpha: float = ALPHA, spreadless: bool = False) -> Decision:
    """The decision for one row (module docstring). ``p_holm`` None or NaN: ``withheld``;
    ``p_tost_adj`` None or NaN: no equivalence test (no margin); ``spreadless``: the row's
    sample has no spread (:func:`no_spread`), so neither p-value can answer: ``inconclusive``."""
    if not _finite(p_holm):
        return "withheld"
    if spreadless:
        return "inconclusive"
    significant = p_holm < alpha
    equivalent = _finite(p_tost_adj) and p_tost_adj < alpha
    if significant:
        return "negligible" if equivalent else "difference"
    return "equivalent" if equivalent else "inconclusive"


def no_spread(row: Mapping) -> str | None:
    """Why a contrast row's sample has no spread, in words ready to follow "too small to
    tell", or None when it has some: ``"all N tie"`` when every one of its ``n_queries``
    questions scored the same under both conditions (``n_zero_delta == n_queries``, the
    per-query Δ exactly 0), ``"no spread: every bootstrap replicate equals Δ"`` when the
    bootstrap's standard error ``se`` is 0 (a zero-width replicate distribution). A row
    without these columns has spread as far as it shows."""
    n, tied = row.get("n_queries"), row.get("n_zero_delta")
    if _finite(n) and _finite(tied) and n > 0 and tied >= n:
        return f"all {int(n):,} tie"
    se = row.get("se")
    if _finite(se) and se == 0.0:
        return "no spread: every bootstrap replicate equals Δ"
    return None


def row_decision(row: Mapping, *, alpha: float = ALPHA) -> Decision:
    """:func:`decide` of a contrast row: its ``p_holm`` and ``p_tost_adj``, and whether its
    sample has spread (:func:`no_spread`). What every report reads a row's decision with."""
    return decide(row.get("p_holm"), row.get("p_tost_adj"), alpha=alpha,
                  spreadless=no_spread(row) is not None)


MC_SE_MULTIPLE = 2.0
"""How many Monte-Carlo standard errors from α a p-value must lie for its decision to stand
without a flag (:func:`monte_carlo_flags`): two, so a flagged decision is one another seed
could plausibly flip (a p̂ two standard errors from α crosses it with probability ≈ 2.3 %)."""


def monte_carlo_se(p_adj: float, p_raw: float, n_boot: int, *, alpha: float = ALPHA,
                   two_sided: bool = True) -> float | None:
    """The Monte-Carlo standard error, in the units of the adjusted ``p_adj``, of a bootstrap
    p-value estimated from ``n_boot`` replicates, taken at the point where the decision flips.

    The unadjusted ``p_raw`` is a share of replicates: one tail's share ``t`` has binomial
    variance ``t(1 − t)/B``; a two-sided p is ``2t``, so its variance is ``p(2 − p)/B``
    (one-sided, as the TOST's larger tail: ``p(1 − p)/B``). The adjustment multiplies it by
    ``c = p_adj / p_raw`` (Holm's step multiplier, or the family size of the Bonferroni TOST),
    so the decision flips where ``p_raw = α / c``; the error there, times ``c``, is returned.
    None when ``p_raw`` is 0 or not finite (no multiplier to read: such a p is far below α
    unless ``p_adj`` is itself near α, which a p of 0 cannot give), when ``p_adj`` is clipped
    at 1, or when ``n_boot`` < 1."""
    if not (_finite(p_adj) and _finite(p_raw)) or p_raw <= 0 or p_adj >= 1 or n_boot < 1:
        return None  # a clipped p_adj of 1 is far from any α this rule uses
    c = max(1.0, p_adj / p_raw)
    at = alpha / c
    var = at * (2.0 - at) if two_sided else at * (1.0 - at)
    return c * math.sqrt(var / n_boot)


def monte_carlo_flags(row: Mapping, n_boot: int, *, alpha: float = ALPHA) -> list[str]:
    """The tests of a contrast row whose adjusted p lies within :data:`MC_SE_MULTIPLE`
    Monte-Carlo standard errors (:func:`monte_carlo_se`) of ``alpha``: ``"significance"``
    (``p_holm`` from ``p``, two-sided) and ``"equivalence"`` (``p_tost_adj`` from ``p_tost``,
    the larger one-sided tail). ``n_boot``: the replicates the row's bootstrap drew (the run's
    ``statistics.bootstrap_iters``; a Monte-Carlo sign-flip test draws as many sign vectors).
    Empty for a row without spread, without a p, or whose p is exact (``p_method``
    ``"sign-flip-exact"``: every sign vector enumerated)."""
    if no_spread(row) is not None or row.get("p_method") == "sign-flip-exact":
        return []  # no spread: no question to flag; an exact p has no Monte-Carlo error
    out = []
    for name, adj, raw, two in (("significance", "p_holm", "p", True),
                                ("equivalence", "p_tost_adj", "p_tost", False)):
        se = monte_carlo_se(row.get(adj), row.get(raw), n_boot, alpha=alpha, two_sided=two)
        if se is not None and abs(row[adj] - alpha) < MC_SE_MULTIPLE * se:
            out.append(name)
    return out


def margin_text(margin: float | None, relative: float | None = None) -> str:
    """``±m`` (two significant digits), with the share of the control's mean a relative
    margin was set as: ``±0.0057 (7.9 % of the control's mean)``."""
    if not _finite(margin):
        return "the margin"
    text = f"±{margin:.2g}"
    if _finite(relative):
        text += f" ({100 * relative:.3g} % of the control's mean)"
    return text


def decision_words(decision: str, delta: float | None, margin: float | None, *,
                   bound: float | None = None, relative: float | None = None,
                   spreadless: str | None = None) -> str:
    """The decision in plain words, with the margin where it matters: "yes" / "no, it hurts" for a
    difference (by the sign of ``delta``), "a real but negligible difference (smaller than
    ±m)", "no difference larger than ±m", "too small to tell", "withheld". An equivalence
    answer also gives ``bound``, the smallest margin at which it holds (the row's
    ``equivalence_bound``), so a reader can apply their own: "no difference larger than ±0.01;
    holds for any margin above ±0.0096". ``relative``: the share of the control's mean the
    margin was set as (:func:`margin_text`). ``spreadless``: why the row's sample has no spread
    (:func:`no_spread`), printed after "too small to tell": "too small to tell (all 20 tie)"."""
    m = margin_text(margin, relative)
    at = f"; holds for any margin above ±{bound:.2g}" if _finite(bound) else ""
    if decision == "difference":
        return "yes" if (delta or 0) > 0 else "no, it hurts"
    if decision == "negligible":
        return f"a real but negligible difference (smaller than {m}{at})"
    if decision == "equivalent":
        return f"no difference larger than {m}{at}"
    if decision == "inconclusive":
        return f"too small to tell ({spreadless})" if spreadless else "too small to tell"
    if decision == "withheld":
        return "withheld"
    raise ValueError(f"unknown decision {decision!r}; known: {', '.join(DECISIONS)}")


def row_words(row: Mapping, *, alpha: float = ALPHA) -> str:
    """A contrast row's decision in words (:func:`row_decision`, :func:`decision_words`), with
    its margin, equivalence bound and, for a sample without spread, why (:func:`no_spread`)."""
    return decision_words(row_decision(row, alpha=alpha), row.get("delta"), row.get("margin"),
                          bound=row.get("equivalence_bound"),
                          relative=row.get("margin_relative"), spreadless=no_spread(row))
