"""The bottom text layer: plain-string utilities shared by corpus/, queries/, chunking/,
structure/ and retrieval/, depending on nothing of the package.

* :mod:`~structablate.text.sentences` — rule-based sentence spans and word starts (half-open
  ``[start, end)`` character offsets);
* :mod:`~structablate.text.words` — the lexical tokenizer of the leakage filter, BM25 and
  ROUGE-L (NFKD, case-folded runs of letters and digits), and token n-grams;
* :mod:`~structablate.text.rouge` — ROUGE-L F1 over those tokens and the quantile summary of
  ROUGE-L values that the query funnel and the BM25 report print.
"""
