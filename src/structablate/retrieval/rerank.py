"""Cross-encoder reranking of a first-stage run (paper: bge-reranker-v2-m3 over the top 50).

The top ``top_n`` results of each query are re-scored by a sentence-transformers
``CrossEncoder`` on ``(query text, chunk text)`` pairs and re-ordered by that score (descending;
ties keep the first-stage order). Results below ``top_n`` keep their first-stage order and
positions. Scores are the model's raw outputs (logits: no sigmoid, which would saturate and
create ties); results below ``top_n`` get NaN, since their first-stage scores are on another
scale. Consumers must order by rank.

Determinism: the model runs in eval mode without gradients, and each query's candidates form
their own ``predict`` call, so a query's scores do not depend on which other queries share the
run (sentence-transformers sorts a call's inputs by length before batching). Scores are
bit-identical across calls with the same ``batch_size`` on the same hardware; another
``batch_size`` pads batches differently and can move scores in the last bits, so fix it in the
config.

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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_TOP_N = 50


@dataclass(frozen=True)
class RerankResult:
    """``idx`` [nq, K] chunk rows (first-stage padding ``-1`` kept at the end), ``scores``
    [nq, K] float32 (NaN below ``top_n`` and on padding), ``reranked`` [nq, K] bool (inside the
    re-scored head), ``trained`` (the model has a trained relevance head), ``model`` (name)."""

    idx: np.ndarray
    scores: np.ndarray
    reranked: np.ndarray
    trained: bool
    model: str


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


def rerank(
    run_idx: np.ndarray,
    query_texts: Sequence[str],
    chunk_texts: Sequence[str],
    model_name_or_path,
    top_n: int = DEFAULT_TOP_N,
    batch_size: int = 64,
    *,
    trained: bool | None = None,
    device: str | None = None,
    max_length: int | None = None,
) -> RerankResult:
    """Rerank the top ``top_n`` of each row of ``run_idx`` with a cross-encoder.

    ``run_idx`` holds chunk rows (``-1`` padding allowed at the end of a row), row-aligned with
    ``query_texts``; ``chunk_texts[i]`` is the text of chunk row ``i`` (use the text that was
    embedded, prefix included, so the condition's treatment reaches the reranker).
    ``model_name_or_path`` is a name, a local path, or an already loaded ``CrossEncoder``.
    """
    import torch

    run = np.asarray(run_idx, dtype=np.int64)
    if run.ndim != 2 or run.shape[0] != len(query_texts):
        raise ValueError("run_idx must be [n_queries, K], row-aligned with query_texts")
    if isinstance(model_name_or_path, str | os.PathLike):
        name = os.fspath(model_name_or_path)
        model = load_cross_encoder(name, device=device, max_length=max_length)
    else:
        model = model_name_or_path
        model.eval()
        config = getattr(model, "config", None)
        name = str(getattr(config, "_name_or_path", "") or type(model).__name__)
    is_trained = has_trained_head(model) if trained is None else bool(trained)
    if not is_trained:
        log.warning("reranker %s has no trained relevance head: scores are not relevance", name)

    nq, width = run.shape
    head = min(top_n, width)
    idx = run.copy()
    scores = np.full((nq, width), np.nan, dtype=np.float32)
    reranked = np.zeros((nq, width), dtype=bool)
    identity = torch.nn.Identity()
    with torch.inference_mode():
        for i in range(nq):
            cand = run[i, :head]
            cand = cand[cand >= 0]
            if cand.size == 0:
                continue
            pairs = [(query_texts[i], chunk_texts[int(c)]) for c in cand]
            s = model.predict(
                pairs,
                batch_size=min(batch_size, len(pairs)),
                activation_fn=identity,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            s = np.asarray(s, dtype=np.float32).reshape(len(pairs))
            order = np.lexsort((np.arange(cand.size), -s))  # score desc, first-stage rank asc
            idx[i, : cand.size] = cand[order]
            scores[i, : cand.size] = s[order]
            reranked[i, : cand.size] = True
    return RerankResult(idx=idx, scores=scores, reranked=reranked, trained=is_trained, model=name)
