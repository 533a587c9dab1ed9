"""Gap features of the supervised boundary inducer (:mod:`structablate.structure.supervised`).

A document of ``n`` paragraphs (indices ``0 … n−1``) has ``n − 1`` **gaps**; gap ``g``
(``0 … n−2``) lies between paragraphs ``g`` and ``g + 1``, and a section boundary there is the
boundary ``b = g + 1`` of :mod:`structablate.structure.quality` (the index of the first
paragraph of a section other than the first). :func:`gap_features` gives one row per gap and
one column per name of :data:`FEATURES` (float64); every feature is a function of the
document's own paragraphs (their text, read through the paragraph table's half-open
character offsets ``[start, end)`` on the flat text), never of its gold sections, and is
computed the same way for every corpus:

* **position**: relative position of the boundary ``b / n``, ``log(1 + b)``,
  ``log(1 + n − b)``, ``log n``, whether ``b`` is the first or the last candidate;
* **length**: ``log(1 + characters)`` of the paragraphs before and after the gap, their
  difference, and whether each is short (< 120 characters);
* **lexical cohesion** (content words: letters first, three characters or more, lower case,
  a final ``s`` stripped, minus :data:`structablate.structure.texttiling.STOP_WORDS`): cosine
  of the term-frequency vectors of the blocks of ``k`` paragraphs on either side of the gap
  (``k`` in :data:`BLOCKS`), that similarity as a z-score within the document, Hearst's depth
  score of the gap on that similarity curve (:func:`structablate.structure.texttiling.
  depth_scores`, the same depth TextTiling thresholds) as a z-score within the document, and
  the depth minus the larger depth of the two neighbouring gaps (a local peak is positive);
  the share of the next paragraph's content words unseen in the document so far;
* **cue phrases** of the next paragraph's first words and first sentence (section-opening cues
  such as "In this section", "We propose", "In conclusion"; continuation cues such as
  "However", "Moreover", "Thus"), and of the previous paragraph's end (a colon announces a
  continuation);
* **markers**: list items (``-``, ``*``, ``•``, ``1.``), captions (``Table 3:``,
  ``Figure 2.``), table/figure/section references (QASPER's ``TABREF``/``FIGREF``/``SECREF``
  placeholders and written ``Table 3``), citation and math placeholder density
  (``BIBREF``, ``INLINEFORM``/``DISPLAYFORM``), code (backticks) on either side;
* **embedding similarity** (only with ``embedding=True``, vectors from the run's embedder,
  L2-normalised): the block cosine for ``k`` in :data:`BLOCKS`, its z-score and its depth
  z-score, as for the lexical curves.

The names (and so a model's columns) are fixed by :func:`feature_names`; a model records them
and the inducer refuses a model whose names differ from the run's.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from structablate.corpus.flatten import FlatDocument
from structablate.structure.texttiling import STOP_WORDS, depth_scores

FEATURE_SET = "gap-v2"
"""The name of this feature definition; a pretrained model records it and the inducer refuses
a model trained on another definition. ``gap-v2``: these columns plus the opening-words
log-odds of :mod:`structablate.structure.lexical` (``gap-v1`` had the columns alone)."""

BLOCKS = (1, 2, 3)
"""Paragraphs per side of the cohesion blocks."""

SHORT_CHARS = 120
"""A paragraph shorter than this many characters counts as short."""

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]{2,}")
_PLACEHOLDER = re.compile(r"(?:bibref|inlineform|displayform|tabref|figref|secref)\d*")

OPEN_CUES: dict[str, re.Pattern[str]] = {
    "cue_this_section": re.compile(
        r"^(?:in|throughout) this (?:section|chapter|part)|^this (?:section|chapter)", re.I),
    "cue_this_paper": re.compile(r"^(?:in )?this (?:paper|work|article|study)", re.I),
    "cue_we": re.compile(r"^(?:we|our)\b", re.I),
    "cue_we_propose": re.compile(
        r"\bwe (?:propose|present|introduce|describe|define|use|follow|evaluate|compare|report"
        r"|conduct|train|consider|discuss)", re.I),
    "cue_to_purpose": re.compile(r"^to (?:\w+ ){0,3}(?:this|these|the|our|a|an)\b", re.I),
    "cue_conclusion": re.compile(
        r"^(?:in (?:conclusion|summary)|to (?:conclude|summarize|sum up)|overall|we (?:have )?"
        r"(?:presented|proposed|introduced|showed|shown|described))", re.I),
    "cue_related": re.compile(
        r"\b(?:related work|previous (?:work|studies|research)|prior work|recent(?:ly)?)\b",
        re.I),
    "cue_experiment": re.compile(
        r"\b(?:experiments?|datasets?|corpus|corpora|baselines?|evaluat\w+|results?"
        r"|hyperparameters?|implementation)\b", re.I),
    "cue_first": re.compile(r"^(?:first(?:ly)?|the first|initially|one of)\b", re.I),
    "cue_definite": re.compile(r"^(?:the|a|an)\b", re.I),
    "cue_demonstrative": re.compile(r"^(?:this|these|those|that|such|it|they)\b", re.I),
    "cue_continuation": re.compile(
        r"^(?:however|moreover|furthermore|additionally|also|in addition|thus|therefore|hence"
        r"|similarly|likewise|consequently|as a result|besides|nevertheless|instead|then"
        r"|finally|second(?:ly)?|third(?:ly)?|next|on the other hand|in contrast|note that"
        r"|for example|for instance|specifically|in particular|where|and|but|or)\b", re.I),
    "cue_question": re.compile(r"^(?:what|how|why|which|can|does|do|is|are)\b[^.]*\?", re.I),
}
"""Patterns matched on the next paragraph's text (``^``: its first words; else its first
sentence)."""

_LIST = re.compile(r"^(?:[-*•–]\s|\(?\d{1,2}[.)]\s|\(?[a-z][.)]\s)")
_CAPTION = re.compile(r"^(?:table|figure|fig\.|algorithm|listing)\s*\d+\s*[:.]", re.I)
_REF = re.compile(r"tabref\d*|figref\d*|\b(?:table|figure|fig\.)\s*\d+", re.I)
_SECREF = re.compile(r"secref\d*|\bsection\s*\d+", re.I)
_CITE = re.compile(r"bibref\d*|\[\d+(?:[,–-]\s*\d+)*\]", re.I)
_MATH = re.compile(r"inlineform\d*|displayform\d*", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def content_words(text: str) -> list[str]:
    """The paragraph's content words (module docstring, *lexical cohesion*), in order."""
    out = []
    for t in _WORD.findall(text):
        w = t.lower().strip("-")
        if len(w) < 3 or w in STOP_WORDS or _PLACEHOLDER.fullmatch(w):
            continue
        if w.endswith("s") and not w.endswith("ss") and len(w) > 4:
            w = w[:-1]
        out.append(w)
    return out


def _per_char(pattern: re.Pattern[str], text: str) -> float:
    """Matches per 100 characters."""
    return 100.0 * len(pattern.findall(text)) / max(1, len(text))


def _paragraph_row(text: str) -> dict[str, float]:
    """Per-paragraph facts reused on both sides of a gap."""
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    row = {
        "len": math.log1p(len(text)),
        "short": float(len(text) < SHORT_CHARS),
        "list": float(bool(_LIST.match(text))),
        "caption": float(bool(_CAPTION.match(text))),
        "ref": float(bool(_REF.search(text))),
        "secref": float(bool(_SECREF.search(first))),
        "cite": _per_char(_CITE, text),
        "math": _per_char(_MATH, text),
        "code": float("`" in text or "::" in text or "()" in text),
        "lower": float(text[:1].islower()),
        "ends_colon": float(text.rstrip().endswith(":")),
        "ends_no_stop": float(not text.rstrip().endswith((".", "!", "?", ":", '"', ")"))),
    }
    for name, pat in OPEN_CUES.items():
        row[name] = float(bool(pat.search(first if "^" not in pat.pattern else text[:200])))
    return row


_PARA_KEYS = tuple(_paragraph_row("x").keys())
_BOTH_SIDES = ("len", "short", "list", "caption", "ref", "cite", "math", "code")
_NEXT_ONLY = tuple(k for k in _PARA_KEYS if k not in _BOTH_SIDES and k != "ends_colon"
                   and k != "ends_no_stop")


def feature_names(embedding: bool = False) -> tuple[str, ...]:
    """The column names of :func:`gap_features`, in order."""
    names = ["rel_pos", "log_before", "log_after", "log_n", "first_gap", "last_gap",
             "len_diff"]
    names += [f"prev_{k}" for k in _BOTH_SIDES] + [f"next_{k}" for k in _BOTH_SIDES]
    names += [f"next_{k}" for k in _NEXT_ONLY] + ["prev_ends_colon", "prev_ends_no_stop"]
    names += ["novel_share", "novel_share_z"]
    for kind in ("lex", *(("emb",) if embedding else ())):
        for k in BLOCKS:
            names += [f"{kind}_sim{k}", f"{kind}_sim{k}_z", f"{kind}_depth{k}_z",
                      f"{kind}_peak{k}"]
    return tuple(names)


def _z(x: np.ndarray) -> np.ndarray:
    sd = float(x.std())
    return (x - float(x.mean())) / sd if sd > 0 else np.zeros_like(x)


def _curve(vectors: np.ndarray, k: int) -> np.ndarray:
    """Cosine between the summed rows of the ``k`` paragraphs on each side of every gap."""
    n = vectors.shape[0]
    csum = np.vstack([np.zeros((1, vectors.shape[1])), np.cumsum(vectors, axis=0)])
    gaps = np.arange(1, n)
    left = csum[gaps] - csum[np.maximum(0, gaps - k)]
    right = csum[np.minimum(n, gaps + k)] - csum[gaps]
    num = (left * right).sum(axis=1)
    den = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def _curve_features(vectors: np.ndarray) -> list[np.ndarray]:
    cols: list[np.ndarray] = []
    for k in BLOCKS:
        sim = _curve(vectors, k)
        depth = depth_scores(sim)
        padded = np.concatenate([[0.0], depth, [0.0]])
        peak = depth - np.maximum(padded[:-2], padded[2:])
        cols += [sim, _z(sim), _z(depth), peak]
    return cols


def term_matrix(paragraph_words: Sequence[Sequence[str]]) -> np.ndarray:
    """Term-frequency rows (paragraphs x the document's vocabulary, sorted), float64."""
    vocab = {w: i for i, w in enumerate(sorted({w for ws in paragraph_words for w in ws}))}
    m = np.zeros((len(paragraph_words), max(1, len(vocab))), dtype=np.float64)
    for r, ws in enumerate(paragraph_words):
        for w, c in Counter(ws).items():
            m[r, vocab[w]] = c
    return m


def gap_features(doc: FlatDocument, vectors: np.ndarray | None = None) -> np.ndarray:
    """The ``(n − 1) × len(feature_names(vectors is not None))`` feature matrix of ``doc``'s
    gaps (module docstring); ``vectors``: the paragraphs' embeddings (``n`` rows,
    L2-normalised), None for the lexical feature set. A document of one paragraph has no
    gap (zero rows)."""
    n = len(doc.paragraphs)
    names = feature_names(vectors is not None)
    if n < 2:
        return np.zeros((0, len(names)), dtype=np.float64)
    if vectors is not None and len(vectors) != n:
        raise ValueError(f"{doc.doc_id}: {len(vectors)} paragraph vectors for {n} paragraphs")
    texts = [doc.paragraph_text(i) for i in range(n)]
    rows = [_paragraph_row(t) for t in texts]
    words = [content_words(t) for t in texts]
    b = np.arange(1, n, dtype=np.float64)
    prev = {k: np.array([rows[i][k] for i in range(n - 1)]) for k in _PARA_KEYS}
    nxt = {k: np.array([rows[i][k] for i in range(1, n)]) for k in _PARA_KEYS}
    cols = [b / n, np.log1p(b), np.log1p(n - b), np.full(n - 1, math.log(n)),
            (b == 1).astype(float), (b == n - 1).astype(float), nxt["len"] - prev["len"]]
    cols += [prev[k] for k in _BOTH_SIDES] + [nxt[k] for k in _BOTH_SIDES]
    cols += [nxt[k] for k in _NEXT_ONLY] + [prev["ends_colon"], prev["ends_no_stop"]]
    seen: set[str] = set(words[0])
    novel = np.zeros(n - 1)
    for i in range(1, n):
        ws = set(words[i])
        novel[i - 1] = len(ws - seen) / len(ws) if ws else 0.0
        seen |= ws
    cols += [novel, _z(novel)]
    cols += _curve_features(term_matrix(words))
    if vectors is not None:
        cols += _curve_features(np.asarray(vectors, dtype=np.float64))
    out = np.column_stack(cols).astype(np.float64)
    if out.shape[1] != len(names):  # pragma: no cover - a bug in this module
        raise AssertionError(f"{out.shape[1]} feature columns for {len(names)} names")
    return out
