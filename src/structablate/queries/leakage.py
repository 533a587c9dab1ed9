"""The lexical-leakage filter of the synthetic queries (paper, Appendix F).

A query *leaks* its evidence when

* its ROUGE-L F1 against a gold span exceeds ``rouge_max`` (0.35), or
* it shares any verbatim ``ngram_block``-gram (4) of tokens with a gold span.

With several gold spans (multihop) ROUGE-L is computed against each span separately and the
maximum counts; the n-gram test rejects a query sharing an n-gram with any span. Both tests
compare **strictly**: ROUGE-L exactly 0.35 passes, 0.35 plus anything rejects.

Both tests use the lexical tokens of :func:`structablate.text.words.tokenize` (NFKD,
case-folded runs of letters and digits, stopwords kept, nothing stemmed; that module says
why) and ROUGE-L is :func:`structablate.text.rouge.rouge_l` over the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from structablate.text.rouge import rouge_l
from structablate.text.words import ngrams, tokenize

ROUGE_MAX = 0.35
NGRAM_BLOCK = 4


def shared_ngrams(query: str, evidence: str, n: int = NGRAM_BLOCK) -> list[str]:
    """The ``n``-grams (space-joined, sorted) that ``query`` and ``evidence`` share."""
    common = ngrams(tokenize(query), n) & ngrams(tokenize(evidence), n)
    return sorted(" ".join(g) for g in common)


@dataclass(frozen=True)
class LeakageCheck:
    """The outcome of the filter for one query against its gold span(s)."""

    rouge_l: float
    """ROUGE-L F1, maximum over the spans."""
    shared: tuple[str, ...]
    """Shared ``n``-grams over all spans (sorted)."""
    rouge_max: float
    ngram_block: int

    @property
    def rouge_leak(self) -> bool:
        return self.rouge_l > self.rouge_max

    @property
    def ngram_leak(self) -> bool:
        return bool(self.shared)

    @property
    def passed(self) -> bool:
        return not (self.rouge_leak or self.ngram_leak)

    @property
    def reason(self) -> str:
        """``pass``, ``rouge``, ``ngram`` or ``rouge+ngram``."""
        if self.passed:
            return "pass"
        return "+".join(r for r, hit in (("rouge", self.rouge_leak), ("ngram", self.ngram_leak))
                        if hit)


def check_leakage(
    query: str,
    evidence: str | Sequence[str],
    *,
    rouge_max: float = ROUGE_MAX,
    ngram_block: int = NGRAM_BLOCK,
) -> LeakageCheck:
    """Apply the filter to ``query`` against one evidence text or several (max / any)."""
    spans = [evidence] if isinstance(evidence, str) else list(evidence)
    if not spans:
        raise ValueError("the leakage filter needs at least one evidence text")
    if ngram_block < 1:
        raise ValueError("ngram_block must be >= 1")
    q_tokens = tokenize(query)
    q_grams = ngrams(q_tokens, ngram_block)
    best = 0.0
    shared: set[tuple[str, ...]] = set()
    for text in spans:
        best = max(best, rouge_l(query, text))
        if q_grams:
            shared |= q_grams & ngrams(tokenize(text), ngram_block)
    return LeakageCheck(
        rouge_l=best,
        shared=tuple(sorted(" ".join(g) for g in shared)),
        rouge_max=float(rouge_max),
        ngram_block=int(ngram_block),
    )
