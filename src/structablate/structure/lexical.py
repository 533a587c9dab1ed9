"""The opening-words model of the supervised inducer (:mod:`structablate.structure.supervised`).

Hand-written cue phrases (:data:`structablate.structure.features.OPEN_CUES`) name a few ways a
section opens; the words that open sections in a corpus are many more ("Table 2 shows", "To
evaluate", "Recently,", a paper's own terms) and differ between corpora. This model learns them
from gold: a logistic regression over the **gap tokens** of every gap (:func:`gap_tokens`), whose
decision value (the log-odds that a section starts at the gap) joins the gap's row as a feature
of the boundary trees. Its own weights come only from the training documents, so in a cross-fit
the scores of a held-out document come from a model that never saw its gold; the trees are
trained on out-of-fold scores of their own training documents (:func:`out_of_fold_scores`), the
same kind of score they meet when applied.

**Gap tokens** of the gap between paragraphs ``g`` and ``g + 1`` (word tokens: runs of letters,
runs of digits, single other characters, lower-cased; :func:`word_tokens`):

* the next paragraph's first four tokens (``N_<w>``), each also with its position
  (``NI_<i>_<w>``, ``i`` in 0 … 5 for the first six), its first three token bigrams
  (``NB_<w1>_<w2>``) and its first trigram (``NF_<w1>_<w2>_<w3>``);
* the previous paragraph's last four tokens (``P_<w>``) and last bigram (``PB_<w1>_<w2>``);
* the distinct tokens of the next paragraph's first 60 tokens (``NW_<w>``) and of the previous
  paragraph's last 60 (``PW_<w>``);
* the distinct alphabetic tokens of more than three characters that both paragraphs hold
  (``S_<w>``: repeated terms say the topic goes on);
* the distinct tokens of the next paragraph's first sentence (up to its first ``.`` token;
  ``FS_<w>``);
* the two paragraphs' lengths in tokens, in steps of 20 up to 200 (``LN_<k>``, ``LP_<k>``,
  ``k = min(tokens // 20, 10)``);
* one paragraph further on each side: the first three tokens of paragraph ``g + 2``
  (``N2_<w>``) and the last three of paragraph ``g − 1`` (``P2_<w>``), where they exist.

**Scoring** (:meth:`OpeningModel.score`): a gap's tokens are counted; tokens outside the
model's vocabulary are dropped; the counts are divided by their Euclidean norm (so a long
paragraph weighs no more than a short one); the score is ``intercept + Σ count·weight / norm``
(``intercept`` alone when no token is known). This is scikit-learn's ``CountVectorizer`` →
``normalize`` → ``LogisticRegression.decision_function`` written out, so the model is plain
JSON data (vocabulary and weights), not a pickle; a test checks the two agree to 1e-12.

**Training** (:func:`fit_opening_model`): the vocabulary is every token seen in at least
:data:`MIN_ROWS` gaps of the training documents; L2-regularised logistic regression
(``C`` = :data:`C`, lbfgs, at most :data:`MAX_ITER` iterations), deterministic for the same rows.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from structablate.corpus.flatten import FlatDocument

MIN_ROWS = 5
"""A token enters the vocabulary when at least this many training gaps hold it."""

C = 1.0
"""Inverse L2 regularisation strength of the logistic regression."""

MAX_ITER = 500
"""lbfgs iterations at most."""

_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def word_tokens(text: str) -> list[str]:
    """``text``'s tokens, lower case: runs of ASCII letters, runs of digits, and every other
    non-space character alone."""
    return [t.lower() for t in _TOKEN.findall(text)]


def _gap_token_list(before: list[str], after: list[str]) -> list[str]:
    """The tokens of one gap read from the paragraphs on its two sides (module docstring,
    all but ``N2_``/``P2_``)."""
    out = [f"N_{w}" for w in after[:4]]
    out += [f"NB_{after[i]}_{after[i + 1]}" for i in range(min(3, len(after) - 1))]
    out.append("NF_" + "_".join(after[:3]))
    out += [f"P_{w}" for w in before[-4:]]
    out.append("PB_" + "_".join(before[-2:]))
    out += [f"NW_{w}" for w in sorted(set(after[:60]))]
    out += [f"PW_{w}" for w in sorted(set(before[-60:]))]
    out += [f"NI_{i}_{w}" for i, w in enumerate(after[:6])]
    out += [f"S_{w}" for w in sorted(set(before) & set(after)) if w.isalpha() and len(w) > 3]
    first = after[:after.index(".")] if "." in after else after
    out += [f"FS_{w}" for w in sorted(set(first))]
    out += [f"LN_{min(len(after) // 20, 10)}", f"LP_{min(len(before) // 20, 10)}"]
    return out


def gap_tokens(doc: FlatDocument) -> list[list[str]]:
    """The gap tokens (module docstring) of each of ``doc``'s ``n − 1`` gaps, gap ``g`` between
    paragraphs ``g`` and ``g + 1``."""
    words = [word_tokens(doc.paragraph_text(i)) for i in range(len(doc.paragraphs))]
    n = len(words)
    out = []
    for g in range(n - 1):
        toks = _gap_token_list(words[g], words[g + 1])
        if g + 2 < n:
            toks += [f"N2_{w}" for w in words[g + 2][:3]]
        if g >= 1:
            toks += [f"P2_{w}" for w in words[g - 1][-3:]]
        out.append(toks)
    return out


@dataclass(frozen=True)
class OpeningModel:
    """Vocabulary weights and intercept of the opening-words model (module docstring)."""

    weights: Mapping[str, float]
    intercept: float

    def score(self, token_lists: Sequence[Sequence[str]]) -> np.ndarray:
        """The decision value (log-odds) of each gap's tokens (module docstring, *Scoring*);
        float64, one per list."""
        out = np.full(len(token_lists), self.intercept, dtype=np.float64)
        w = self.weights
        for r, toks in enumerate(token_lists):
            counts = Counter(t for t in toks if t in w)
            if not counts:
                continue
            norm = math.sqrt(sum(c * c for c in counts.values()))
            out[r] = self.intercept + math.fsum(c * w[t] for t, c in sorted(counts.items())) / norm
        return out

    def as_data(self) -> dict[str, Any]:
        return {"intercept": self.intercept,
                "weights": {t: self.weights[t] for t in sorted(self.weights)}}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> OpeningModel:
        return cls({str(k): float(v) for k, v in d["weights"].items()}, float(d["intercept"]))


def fit_opening_model(token_lists: Sequence[Sequence[str]], labels: np.ndarray
                      ) -> OpeningModel:
    """The opening-words model trained on gaps' tokens and their gold labels (1: a section
    starts at the gap). A training set with one class only gives a constant model (its
    log-odds, clipped to ±20), without weights."""
    y = np.asarray(labels, dtype=np.int64)
    if len(y) != len(token_lists):
        raise ValueError(f"{len(token_lists)} token lists for {len(y)} labels")
    pos = int(y.sum())
    if pos == 0 or pos == len(y):
        p = (pos + 0.5) / (len(y) + 1.0)
        return OpeningModel({}, float(np.clip(math.log(p / (1 - p)), -20, 20)))
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import normalize

    def analyzer(toks: Sequence[str]) -> Sequence[str]:
        return toks

    vec = CountVectorizer(analyzer=analyzer, min_df=MIN_ROWS, lowercase=False)
    try:
        x = normalize(vec.fit_transform(token_lists))
    except ValueError:  # no token reaches MIN_ROWS gaps: the intercept alone
        p = pos / len(y)
        return OpeningModel({}, math.log(p / (1 - p)))
    lr = LogisticRegression(C=C, max_iter=MAX_ITER).fit(x, y)
    names = vec.get_feature_names_out()
    coef = lr.coef_[0]
    return OpeningModel({str(names[j]): float(coef[j]) for j in range(len(names))},
                        float(lr.intercept_[0]))
