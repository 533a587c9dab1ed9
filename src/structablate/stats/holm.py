"""Holm step-down adjustment (paper, Appendix D.3)."""

from __future__ import annotations

import numpy as np


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values, in the input order.

    Sort ascending; multiply the i-th smallest (0-indexed) by ``m - i``; take the running
    maximum so adjusted values stay monotone; clip to 1. Ties keep their input order.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("holm: expected a 1-D sequence of p-values")
    if np.isnan(p).any():
        raise ValueError("holm: NaN p-value in the family")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adj
    return out
