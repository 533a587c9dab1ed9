"""ROUGE-L F1 over the lexical tokens (:func:`structablate.text.words.tokenize`) and the
quantile summary of ROUGE-L values.

The score is the ``rouge-score`` package's ``rougeL`` F-measure without stemming, with the
package's tokenizer replaced by :func:`~structablate.text.words.tokenize` (identical tokens on
ASCII text; see :mod:`structablate.text.words`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rouge_score import rouge_scorer

from structablate.text.words import tokenize

QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
"""The quantiles :func:`rouge_quantiles` reports (keys ``q0`` … ``q100``)."""


class _Tokenizer:
    """``rouge-score`` tokenizer interface over :func:`tokenize`."""

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


_SCORER = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=_Tokenizer())


def rouge_l(query: str, evidence: str) -> float:
    """ROUGE-L F1 of ``query`` (prediction) against ``evidence`` (target)."""
    return float(_SCORER.score(evidence, query)["rougeL"].fmeasure)


def rouge_quantiles(values: Sequence[float]) -> dict[str, float] | None:
    """Quantiles (keys ``q0`` … ``q100``) and mean of ``values``; ``None`` when empty."""
    if not len(values):
        return None
    arr = np.asarray(values, dtype=float)
    out = {f"q{round(q * 100)}": round(float(np.quantile(arr, q)), 4) for q in QUANTILES}
    out["mean"] = round(float(arr.mean()), 4)
    return out
