"""Secondary MixedLM checks (paper, Appendix D.4), via statsmodels.

For one contrast the long data hold two rows per query (condition a = 1, condition b = 0).

* ``p_mixedlm`` — the pre-registered model: ``score ~ condition`` with a random intercept per
  document (REML). It omits the per-query effect, so it is conservative for paired data.
* ``p_mixedlm_query`` — the same model plus a query random intercept nested in the document
  (a variance component ``0 + C(qid)`` within document groups).
* ``p_mixedlm_slope`` — the model the agreement check uses: query intercepts, and a random
  slope of the condition per document (the effect may differ between documents, which is what
  the document-clustered bootstrap allows for). Fitted in its differenced form: the per-query
  deltas ``δ_q = a_q − b_q`` remove every query intercept (and so the document intercepts),
  and the per-document slope becomes a random intercept of the deltas, ``δ ~ 1 + (1 | doc)``
  (REML). Its fixed intercept is the mean effect; its Wald p is reported only when the fit
  converged (:func:`mixedlm_slope`).

The first two omit a per-document slope: their standard error assumes one effect shared by all
documents, so agreement of ``p_mixedlm_query`` with the bootstrap says little. The slope model
is the specification whose agreement means something.

Each returns the Wald p-value of the condition coefficient; NaN when the fit fails.
"""

from __future__ import annotations

import warnings

import numpy as np


def _fit_p(data, vc: bool) -> float:
    import statsmodels.formula.api as smf

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = {"vc_formula": {"query": "0 + C(qid)"}} if vc else {}
            res = smf.mixedlm("score ~ cond", data, groups="doc", **kw).fit(reml=True)
        p = float(res.pvalues["cond"])
    except (ValueError, np.linalg.LinAlgError, KeyError):
        return float("nan")
    return p if np.isfinite(p) else float("nan")


def mixedlm_pvalues(
    qids, doc_ids, score_a, score_b, *, query_effect: bool = True
) -> tuple[float, float]:
    """``(p_mixedlm, p_mixedlm_query)`` for paired scores of two conditions."""
    import pandas as pd

    a = np.asarray(score_a, dtype=np.float64)
    b = np.asarray(score_b, dtype=np.float64)
    n = len(a)
    data = pd.DataFrame(
        {
            "score": np.concatenate([a, b]),
            "cond": np.concatenate([np.ones(n), np.zeros(n)]),
            "doc": np.concatenate([np.asarray(doc_ids)] * 2),
            "qid": np.concatenate([np.asarray(qids)] * 2),
        }
    )
    if n < 3 or np.ptp(data["score"].to_numpy()) == 0:
        return float("nan"), float("nan")
    p_doc = _fit_p(data, vc=False)
    p_query = _fit_p(data, vc=True) if query_effect else float("nan")
    return p_doc, p_query


def mixedlm_slope(doc_ids, deltas) -> tuple[float, bool]:
    """``(p_mixedlm_slope, converged)`` for per-query deltas ``a − b`` grouped by document:
    ``δ ~ 1 + (1 | doc)`` by REML (module docstring). ``(NaN, False)`` when the fit fails,
    does not converge, or has nothing to fit (fewer than 3 queries, fewer than 2 documents, or
    no spread)."""
    import pandas as pd
    import statsmodels.api as sm

    d = np.asarray(deltas, dtype=np.float64)
    docs = np.asarray(doc_ids)
    if len(d) < 3 or len(np.unique(docs)) < 2 or np.ptp(d) == 0:
        return float("nan"), False
    data = pd.DataFrame({"delta": d, "doc": docs, "one": np.ones(len(d))})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sm.MixedLM(data["delta"], data[["one"]], groups=data["doc"]).fit(reml=True)
        p = float(res.pvalues["one"])
        converged = bool(getattr(res, "converged", False))
    except (ValueError, np.linalg.LinAlgError, KeyError):
        return float("nan"), False
    if not converged or not np.isfinite(p):
        return float("nan"), False
    return p, True
