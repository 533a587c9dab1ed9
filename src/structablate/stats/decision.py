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
``withheld``. The rule is monotone: a smaller ``p_holm`` never turns a claim of an effect into a
weaker one, and a smaller ``p_tost_adj`` never turns a claim of equivalence into a weaker one.
"""

from __future__ import annotations

import math
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
           alpha: float = ALPHA) -> Decision:
    """The decision for one row (module docstring). ``p_holm`` None or NaN: ``withheld``;
    ``p_tost_adj`` None or NaN: no equivalence test (no margin)."""
    if not _finite(p_holm):
        return "withheld"
    significant = p_holm < alpha
    equivalent = _finite(p_tost_adj) and p_tost_adj < alpha
    if significant:
        return "negligible" if equivalent else "difference"
    return "equivalent" if equivalent else "inconclusive"


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
                   bound: float | None = None, relative: float | None = None) -> str:
    """The decision in plain words, with the margin where it matters: "yes" / "no, it hurts" for a
    difference (by the sign of ``delta``), "a real but negligible difference (smaller than
    ±m)", "no difference larger than ±m", "too small to tell", "withheld". An equivalence
    answer also gives ``bound``, the smallest margin at which it holds (the row's
    ``equivalence_bound``), so a reader can apply their own: "no difference larger than ±0.01;
    holds for any margin above ±0.0096". ``relative``: the share of the control's mean the
    margin was set as (:func:`margin_text`)."""
    m = margin_text(margin, relative)
    at = f"; holds for any margin above ±{bound:.2g}" if _finite(bound) else ""
    if decision == "difference":
        return "yes" if (delta or 0) > 0 else "no, it hurts"
    if decision == "negligible":
        return f"a real but negligible difference (smaller than {m}{at})"
    if decision == "equivalent":
        return f"no difference larger than {m}{at}"
    if decision == "inconclusive":
        return "too small to tell"
    if decision == "withheld":
        return "withheld"
    raise ValueError(f"unknown decision {decision!r}; known: {', '.join(DECISIONS)}")
