"""Cross-encoder reranking of a first-stage run (paper: bge-reranker-v2-m3 over the top 50).

The top ``top_n`` results of each query are re-scored by a sentence-transformers
``CrossEncoder`` on ``(query text, chunk text)`` pairs and re-ordered by that score (descending;
ties keep the first-stage order). Results below ``top_n`` keep their first-stage order and
positions. Scores are the model's raw outputs (logits: no sigmoid, which would saturate and
create ties); results below ``top_n`` get NaN, since their first-stage scores are on another
scale. Consumers must order by rank.

Determinism and batching: pairs of *all* queries are scored together in fixed-shape batches,
the technique of :mod:`structablate.embedding`. Each pair's token length (question + chunk with
the model's special tokens) is rounded up to a multiple of ``length_bucket`` (capped at the
truncation length); pairs of one bucket are padded to that length, and every batch is filled to
``batch_size`` rows with empty pairs. Every forward pass therefore has one of a few shapes
``[batch_size, bucket]``, and a pair's score is a function of the pair alone (plus model,
precision, truncation length, bucket and batch size), never of its neighbours: scored alone, in
another query's company or from the cache, it is the same float. Scores are byte-identical run
to run on the same hardware.

Precision: ``dtype`` (``float32``, ``float16``, ``bfloat16``, ``auto``) is the precision of the
transformer layers, resolved like the embedders' (:func:`structablate.embedding.resolve_dtype`:
``auto`` is bf16 on CUDA GPUs that compute it natively, float32 elsewhere, CPUs included).
Logits are always returned as float32.

Cache: a :class:`~structablate.store.typed.ScoreStore` keyed by ``(model signature, precision,
question text, chunk text)``. A pair met in another condition (A3/A4 share chunk texts, so do
chunks two chunksets cut identically) or in a rerun is served from the cache instead of being
scored; the store's shards make it safe for many jobs on many nodes (docs/cache.md).

``trained`` says whether the cross-encoder has a trained relevance head. No trained
cross-encoder ships offline here, so tests build one from the offline MiniLM bi-encoder with a
randomly initialised head; :func:`rerank` reports ``trained=False`` for such a model so a
report can say plainly that a cell ran without a trained reranker. Inference: a model whose
config names a ``*ForSequenceClassification`` architecture was saved as a classifier; a bare
encoder (e.g. ``BertModel``) converted on load has an untrained head. Pass ``trained=`` to
override.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from structablate.embedding import (
    BatchBuilder,
    Tokenized,
    autocast_dtype,
    in_background,
    on_device,
    padded_tokens,
    plan_batches,
    resolve_dtype,
    tokenize_once,
    use_sdpa,
)
from structablate.model_paths import model_digest
from structablate.settings import is_gpu
from structablate.store.typed import (
    ReportDict,
    ScoreStore,
    fill_found,
    per_second,
    reported,
    rounded,
)

log = logging.getLogger(__name__)

DEFAULT_TOP_N = 50
DEFAULT_BATCH_SIZE = 64
DEFAULT_LENGTH_BUCKET = 32


@dataclass
class RerankStats(ReportDict):
    """Bookkeeping of one :func:`score_pairs` call: ``pairs`` asked for, ``unique_pairs``
    among them, ``cache_hits`` (unique pairs served from the cache), ``scored`` (unique pairs
    run through the model), ``padded_tokens`` (tokens of the batches run, padding included),
    ``seconds_scoring`` (wall seconds in the model). :meth:`as_dict` reports ``cache_hits`` as
    ``pairs_from_cache``, ``scored`` as ``pairs_scored``, ``batches`` as
    ``batches_per_length`` and adds ``pairs_per_second`` (scored / seconds_scoring)."""

    pairs: int = reported()
    unique_pairs: int = reported()
    cache_hits: int = reported(key="pairs_from_cache")
    scored: int = reported(key="pairs_scored")
    truncated: int = reported()
    padded_tokens: int = reported()
    batches: dict[int, int] = reported(
        key="batches_per_length", default_factory=dict,
        form=lambda b: {str(k): v for k, v in sorted(b.items())})
    """Batches run per padded length (tokens)."""
    seconds_scoring: float = reported(
        0.0, form=rounded(3), then={"pairs_per_second": per_second("scored", "seconds_scoring")})
    extra: dict = field(default_factory=dict)



@dataclass(frozen=True)
class RerankResult:
    """``idx`` [nq, K] chunk rows (first-stage padding ``-1`` kept at the end), ``scores``
    [nq, K] float32 (NaN below ``top_n`` and on padding), ``reranked`` [nq, K] bool (inside the
    re-scored head), ``trained`` (the model has a trained relevance head), ``model`` (name),
    ``dtype`` (the resolved precision), ``stats`` (pairs scored vs served from the cache)."""

    idx: np.ndarray
    scores: np.ndarray
    reranked: np.ndarray
    trained: bool
    model: str
    dtype: str = "float32"
    stats: RerankStats = field(default_factory=RerankStats)


def has_trained_head(model) -> bool:
    """Whether a loaded ``CrossEncoder`` was saved as a sequence classifier (see module doc)."""
    config = getattr(model, "config", None)
    archs = list(getattr(config, "architectures", None) or [])
    return any(a.endswith("ForSequenceClassification") for a in archs)


def load_cross_encoder(
    model_name_or_path: str | os.PathLike, *, device: str | None = None, max_length=None
):
    """A ``CrossEncoder`` in eval mode (single relevance output)."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(
        os.fspath(model_name_or_path), device=device, max_length=max_length, num_labels=1
    )
    model.eval()
    return model


class PairScorer:
    """A loaded ``CrossEncoder`` run on fixed-shape batches of (question, chunk) pairs.

    ``model`` is a loaded ``CrossEncoder``; ``name`` the model's name for cache keys and
    reports. ``dtype`` is resolved on the model's device (never ``auto`` afterwards): on a CPU a
    lower precision runs through autocast (weights stay float32), on a GPU the transformer is
    cast. ``max_seq_length`` (tokens) defaults to the model's, capped at 512.
    """

    def __init__(self, model, name: str, *, dtype: str = "float32",
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 length_bucket: int = DEFAULT_LENGTH_BUCKET,
                 max_seq_length: int | None = None, weights: str | None = None):
        import torch

        if batch_size < 1 or length_bucket < 1:
            raise ValueError("reranker batch_size and length_bucket must be >= 1")
        self._torch = torch
        self.model = model
        self.model.eval()
        self.name = name
        self.weights = weights
        """The digest of the model's files (:func:`structablate.model_paths.model_digest`;
        ``None``: known by its name), part of :attr:`signature`."""
        self.device = str(model.device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.batch_size = int(batch_size)
        self.length_bucket = int(length_bucket)
        own = getattr(model, "max_seq_length", None) or 512
        self.max_seq_length = int(max_seq_length or min(int(own), 512))
        self.tokenizer = model.tokenizer
        self._hf = model[0].model  # the transformers *ForSequenceClassification module
        self._autocast = autocast_dtype(self._hf, self.dtype, self.device, f"reranker {name!r}")
        self._cuda = is_gpu(self.device)
        config = getattr(self._hf, "config", None)
        self.attention = str(getattr(config, "_attn_implementation", "unknown"))
        if self._cuda:
            self.attention = use_sdpa(self._hf)
        self._builder = BatchBuilder(self.tokenizer, self.tokenize([("", "")]))

    @property
    def signature(self) -> str:
        """What a score depends on besides the pair and the precision (part of the cache key)."""
        return (f"{self.name}|len={self.max_seq_length}|bucket={self.length_bucket}|"
                f"batch={self.batch_size}|logit"
                + (f"|weights={self.weights}" if self.weights else ""))

    def token_lengths(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """Token counts of the pairs with special tokens, before truncation."""
        return self.tokenize(pairs).lengths

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> Tokenized:
        """``pairs`` tokenized once (one batch call), cut ``longest_first`` to the truncation
        length."""
        return tokenize_once(self.tokenizer, [q for q, _ in pairs], [c for _, c in pairs],
                             self.max_seq_length, truncation="longest_first")

    def plan(self, pairs: Sequence[tuple[str, str]] | Tokenized
             ) -> list[tuple[int, list[int]]]:
        """The fixed-shape batches ``(padded_length, rows)`` that :meth:`score` runs."""
        lengths = pairs.lengths if isinstance(pairs, Tokenized) else self.token_lengths(pairs)
        return plan_batches(lengths, self.length_bucket, self.batch_size, self.max_seq_length)

    def _forward(self, arrays: dict[str, np.ndarray]):
        """float32 logits of one fixed-shape batch, as a tensor on the device."""
        torch = self._torch
        feats = on_device(arrays, self.device)
        with torch.inference_mode():
            if self._autocast is not None:
                with torch.autocast("cpu", dtype=self._autocast):
                    logits = self._hf(**feats).logits
            else:
                logits = self._hf(**feats).logits
            return logits.float()[:, 0]

    def score_tokens(self, tok: Tokenized, *, progress: bool = False, desc: str = "rerank",
                     plan: list[tuple[int, list[int]]] | None = None) -> np.ndarray:
        """Raw logits (float32) of tokenized pairs, row ``i`` for item ``i``: batches built
        from the ids (on a GPU in a producer thread, pinned, copied without blocking), logits
        kept on the device and copied back once."""
        out = np.zeros(len(tok), dtype=np.float32)
        plan = self.plan(tok) if plan is None else plan
        if not plan:
            return out
        bs = self.batch_size
        batches = ((rows, self._builder.build(tok, rows, padded, bs)) for padded, rows in plan)
        if self._cuda:
            batches = in_background(batches)
        rows_done: list[int] = []
        parts = []
        try:
            for rows, arrays in tqdm(batches, total=len(plan), desc=desc,
                                     disable=not progress, unit="batch"):
                parts.append(self._forward(arrays)[: len(rows)])
                rows_done.extend(rows)
        finally:
            batches.close()
        out[rows_done] = self._torch.cat(parts).cpu().numpy()
        return out

    def score(self, pairs: Sequence[tuple[str, str]], *, progress: bool = False,
              desc: str = "rerank") -> np.ndarray:
        """Raw logits (float32) of ``pairs``, row ``i`` for ``pairs[i]``."""
        return self.score_tokens(self.tokenize(pairs), progress=progress, desc=desc)


def score_pairs(pairs: Sequence[tuple[str, str]], scorer: PairScorer,
                cache: ScoreStore | None = None, *, progress: bool = False,
                desc: str = "rerank", commit_every: int = 8192
                ) -> tuple[np.ndarray, RerankStats]:
    """float32 scores of ``pairs`` (row per pair), scoring only what ``cache`` lacks.

    Duplicate pairs are scored once. New scores are committed to ``cache`` every
    ``commit_every`` pairs (a killed job loses at most that many); before each further part the
    cache is re-read, so concurrent jobs that share pairs do not score them twice.
    """
    stats = RerankStats(pairs=len(pairs))
    order: dict[tuple[str, str], int] = {}
    for p in pairs:
        order.setdefault(p, len(order))
    unique = list(order)
    stats.unique_pairs = len(unique)
    scores = np.zeros(len(unique), dtype=np.float32)
    keys = [ScoreStore.key(scorer.signature, scorer.dtype, q, c) for q, c in unique]
    missing = list(range(len(unique)))

    def place(i: int, v: float) -> None:
        scores[i] = np.float32(v)  # stored exactly (a float32 widened to float64)

    def fill(rows: list[int]) -> list[int]:
        still = fill_found(cache.get_scores([keys[i] for i in rows]), keys, rows, place)
        stats.cache_hits += len(rows) - len(still)
        return still

    if cache is not None:
        missing = fill(missing)
    parts = [missing[c: c + commit_every] for c in range(0, len(missing), commit_every)]
    tokenize_s = 0.0
    real = 0
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
        ahead = pool.submit(scorer.tokenize, [unique[i] for i in parts[0]]) if parts else None
        for k, part in enumerate(parts):
            tok = ahead.result()
            tokenize_s += tok.seconds
            if k + 1 < len(parts):  # the next part is tokenized while this one is scored
                ahead = pool.submit(scorer.tokenize, [unique[i] for i in parts[k + 1]])
            if cache is not None and k > 0:
                cache.refresh(force=True)
                still = set(fill(part))
                keep = [j for j, i in enumerate(part) if i in still]
                part, tok = [part[j] for j in keep], tok.take(keep)
            if not part:
                continue
            plan = scorer.plan(tok)
            stats.truncated += sum(n > scorer.max_seq_length for n in tok.lengths)
            stats.padded_tokens += padded_tokens(plan, scorer.batch_size)
            real += sum(min(n, scorer.max_seq_length) for n in tok.lengths)
            for padded, _ in plan:
                stats.batches[padded] = stats.batches.get(padded, 0) + 1
            got = scorer.score_tokens(tok, progress=progress, plan=plan,
                                      desc=f"{desc} [{_items_through(parts, k)}/{len(missing)}]")
            scores[part] = got
            stats.scored += len(part)
            if cache is not None:
                cache.put_scores([(keys[i], float(got[j])) for j, i in enumerate(part)])
                cache.flush()
    stats.seconds_scoring = time.perf_counter() - t0
    stats.extra.update({"seconds_tokenizing": round(tokenize_s, 3), "real_tokens": real,
                        "attention": scorer.attention})
    if cache is not None and cache.quarantined:
        stats.extra["cache_quarantined"] = list(cache.quarantined)
    return scores[[order[p] for p in pairs]], stats


def _items_through(parts: Sequence[Sequence[int]], k: int) -> int:
    """Items in ``parts[0..k]`` (for the progress label)."""
    return sum(len(p) for p in parts[: k + 1])


def rerank(
    run_idx: np.ndarray,
    query_texts: Sequence[str],
    chunk_texts: Sequence[str],
    model_name_or_path,
    top_n: int = DEFAULT_TOP_N,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    trained: bool | None = None,
    device: str | None = None,
    max_length: int | None = None,
    dtype: str = "float32",
    length_bucket: int = DEFAULT_LENGTH_BUCKET,
    cache: ScoreStore | None = None,
    progress: bool = False,
    weights: str | None = None,
) -> RerankResult:
    """Rerank the top ``top_n`` of each row of ``run_idx`` with a cross-encoder.

    ``run_idx`` holds chunk rows (``-1`` padding allowed at the end of a row), row-aligned with
    ``query_texts``; ``chunk_texts[i]`` is the text of chunk row ``i`` (use the text that was
    embedded, prefix included, so the condition's treatment reaches the reranker).
    ``model_name_or_path`` is a name, a local path, or an already loaded ``CrossEncoder``.
    The pairs of all queries are scored together in fixed-shape batches (module docstring),
    those in ``cache`` are not scored again. ``weights``: the digest of a loaded model's files
    (:func:`structablate.model_paths.model_digest`), taken from the folder when a name or path
    is given; part of the cache key, so replaced weights never get the old scores.
    """
    run = np.asarray(run_idx, dtype=np.int64)
    if run.ndim != 2 or run.shape[0] != len(query_texts):
        raise ValueError("run_idx must be [n_queries, K], row-aligned with query_texts")
    if isinstance(model_name_or_path, str | os.PathLike):
        name = os.fspath(model_name_or_path)
        weights = model_digest(name)  # a folder's files, hashed before they load
        model = load_cross_encoder(name, device=device, max_length=max_length)
    else:
        model = model_name_or_path
        config = getattr(model, "config", None)
        name = str(getattr(config, "_name_or_path", "") or type(model).__name__)
    is_trained = has_trained_head(model) if trained is None else bool(trained)
    if not is_trained:
        log.warning("reranker %s has no trained relevance head: scores are not relevance", name)
    scorer = PairScorer(model, name, dtype=dtype, batch_size=batch_size,
                        length_bucket=length_bucket, max_seq_length=max_length, weights=weights)

    nq, width = run.shape
    head = min(top_n, width)
    idx = run.copy()
    scores = np.full((nq, width), np.nan, dtype=np.float32)
    reranked = np.zeros((nq, width), dtype=bool)
    cands = []
    pairs: list[tuple[str, str]] = []
    for i in range(nq):
        cand = run[i, :head]
        cand = cand[cand >= 0]
        cands.append(cand)
        pairs.extend((query_texts[i], chunk_texts[int(c)]) for c in cand)
    flat, stats = score_pairs(pairs, scorer, cache, progress=progress)
    at = 0
    for i, cand in enumerate(cands):
        s = flat[at: at + cand.size]
        at += cand.size
        if cand.size == 0:
            continue
        order = np.lexsort((np.arange(cand.size), -s))  # score desc, first-stage rank asc
        idx[i, : cand.size] = cand[order]
        scores[i, : cand.size] = s[order]
        reranked[i, : cand.size] = True
    return RerankResult(idx=idx, scores=scores, reranked=reranked, trained=is_trained,
                        model=name, dtype=scorer.dtype, stats=stats)
