"""The lexical-leakage filter of the synthetic queries (paper, Appendix F).

A query *leaks* its evidence when

* its ROUGE-L F1 against a gold span exceeds ``rouge_max`` (0.35), or
* it shares any verbatim ``ngram_block``-gram (4) of tokens with a gold span.

With several gold spans (multihop) ROUGE-L is computed against each span separately and the
maximum counts; the n-gram test rejects a query sharing an n-gram with any span. Both tests
compare **strictly**: ROUGE-L exactly 0.35 passes, 0.35 plus anything rejects.

Normalization (one tokenizer for both tests, :func:`tokenize`):

1. Unicode NFKD, combining marks dropped (``Göttingen`` → ``gottingen``: an unaccented copy
   of a name is still a copy), then case-folded;
2. tokens are the maximal runs of letters and digits; every other character (punctuation,
   hyphens, apostrophes, symbols) separates tokens, so ``Apollo's`` → ``apollo s`` and
   ``mid-1968`` → ``mid 1968``;
3. **stopwords are kept** and nothing is stemmed.

Stopwords are kept because the paper's filter is about *verbatim* copying, and a 4-gram such
as ``the battle of the`` is one; dropping stopwords would turn the n-gram test into a test of
skip-grams over content words (``battle bulge``) and would change ROUGE-L values relative to
the ``rouge-score`` package the threshold was set with. On ASCII text the tokenizer gives
exactly the tokens of ``rouge-score``'s default tokenizer without stemming (lower-case, split
on anything not ``[a-z0-9]``), so the ROUGE-L values are the package's; the Unicode steps only
add accented and non-Latin letters, which the default tokenizer would delete.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from rouge_score import rouge_scorer

_TOKEN = re.compile(r"[^\W_]+")

ROUGE_MAX = 0.35
NGRAM_BLOCK = 4


def normalize(text: str) -> str:
    """NFKD, combining marks removed, case-folded (step 1 of the module docstring)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def tokenize(text: str) -> list[str]:
    """Leakage tokens of ``text``: runs of letters/digits of the normalized text."""
    return _TOKEN.findall(normalize(text))


class _Tokenizer:
    """``rouge-score`` tokenizer interface over :func:`tokenize`."""

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


_SCORER = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=_Tokenizer())


def rouge_l(query: str, evidence: str) -> float:
    """ROUGE-L F1 of ``query`` (prediction) against ``evidence`` (target)."""
    return float(_SCORER.score(evidence, query)["rougeL"].fmeasure)


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


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
