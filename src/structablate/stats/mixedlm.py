"""Secondary MixedLM check (paper, Appendix D.4), via statsmodels.

For one contrast the long data hold two rows per query (condition a = 1, condition b = 0).

* ``p_mixedlm`` — the pre-registered model: ``score ~ condition`` with a random intercept per
  document (REML). It omits the per-query effect, so it is conservative for paired data.
* ``p_mixedlm_query`` — the respecification: the same model plus a query random intercept
  nested in the document (a variance component ``0 + C(qid)`` within document groups).

Both return the Wald p-value of the condition coefficient; NaN when the fit fails.
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
