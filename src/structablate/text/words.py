"""Lexical tokens: the one tokenizer of the leakage filter, BM25 and ROUGE-L.

Normalization (:func:`tokenize`):

1. Unicode NFKD, combining marks dropped (``Göttingen`` → ``gottingen``: an unaccented copy
   of a name is still a copy), then case-folded;
2. tokens are the maximal runs of letters and digits; every other character (punctuation,
   hyphens, apostrophes, symbols) separates tokens, so ``Apollo's`` → ``apollo s`` and
   ``mid-1968`` → ``mid 1968``;
3. **stopwords are kept** and nothing is stemmed.

Stopwords are kept because the leakage filter (:mod:`structablate.queries.leakage`) is about
*verbatim* copying, and a 4-gram such as ``the battle of the`` is one; dropping stopwords would
turn its n-gram test into a test of skip-grams over content words (``battle bulge``) and would
change ROUGE-L values relative to the ``rouge-score`` package the threshold was set with. On
ASCII text the tokenizer gives exactly the tokens of ``rouge-score``'s default tokenizer without
stemming (lower-case, split on anything not ``[a-z0-9]``), so the ROUGE-L values
(:func:`structablate.text.rouge.rouge_l`) are the package's; the Unicode steps only add accented
and non-Latin letters, which the default tokenizer would delete.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_TOKEN = re.compile(r"[^\W_]+")


def normalize(text: str) -> str:
    """NFKD, combining marks removed, case-folded (step 1 of the module docstring)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def tokenize(text: str) -> list[str]:
    """Lexical tokens of ``text``: runs of letters/digits of the normalized text."""
    return _TOKEN.findall(normalize(text))


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """The distinct ``n``-grams of ``tokens`` (consecutive runs of ``n`` tokens)."""
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}
