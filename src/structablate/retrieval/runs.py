"""From vectors to a run table (qid, rank, chunk_id, score, stage) for one condition."""

from __future__ import annotations

import numpy as np
import polars as pl

from structablate import study
from structablate.retrieval.flat import search_with_report
from structablate.settings import RerankerSettings, RetrievalSettings, Settings
from structablate.store.typed import ScoreStore
from structablate.study import Condition, Retrieval
from structablate.tables import frame


def _check_aligned(name: str, table: pl.DataFrame, vectors: np.ndarray) -> None:
    if vectors.ndim != 2 or vectors.shape[0] != table.height:
        raise ValueError(
            f"{name}: {vectors.shape[0] if vectors.ndim else 0} vectors for {table.height} rows; "
            "the embedding file is stale or belongs to another table"
        )


SEARCHES: frozenset[Retrieval] = frozenset({Retrieval.FLAT, Retrieval.TWO_STAGE})
"""The retrievals :func:`retrieve_run` carries out (every one starts from the flat ranking;
two-stage routing re-ranks it)."""


def retrieve_run(
    cond: Condition,
    queries: pl.DataFrame,
    query_vectors: np.ndarray,
    chunks: pl.DataFrame,
    chunk_vectors: np.ndarray,
    settings: RetrievalSettings,
    qrels: pl.DataFrame | None = None,
    report: dict | None = None,
) -> pl.DataFrame:
    """Rank the chunks for every query; ``rank`` is 1-based, ``stage`` says how a row got in.

    Flat conditions: ``stage = "flat"``. Two-stage conditions (A4, G4) route over sections
    (document + top-level section, centroid = renormalised mean of the same chunk vectors),
    rank the kept sections' chunks, and backfill from this flat ranking: rows kept by routing
    are ``"routed"``, backfilled rows ``"backfill"``. Two-stage runs carry per-query
    diagnostics repeated on every row of the query: ``n_backfill`` and, when ``qrels`` is given,
    ``section_recall`` (stage 1 kept a section overlapping gold evidence). Flat runs carry the
    same columns as nulls, so every run table has one schema.

    ``settings``: ``top_k``, ``method`` (``exact`` | ``hnsw``), ``hnsw``,
    ``hier_top_sections`` (:class:`~structablate.settings.RetrievalSettings`). When
    ``report`` is a dict, ``report["retrieval"]`` receives what the search did
    (:func:`~structablate.retrieval.flat.search_with_report`: the method that ran and why, and
    for HNSW the beam used and the recall@k measured against exact search on sampled queries).
    """
    if cond.retrieval not in SEARCHES:
        raise ValueError(f"{cond.name}: retrieve_run searches no {cond.retrieval.value!r} "
                         "retrieval: add a branch for it and to SEARCHES")
    _check_aligned("queries", queries, query_vectors)
    _check_aligned("chunks", chunks, chunk_vectors)
    k = min(settings.top_k, chunks.height)
    idx, scores, info = search_with_report(query_vectors, chunk_vectors, k, settings.method,
                                           settings.hnsw)
    if report is not None:
        report["retrieval"] = info
    nq = idx.shape[0]
    stage = np.full(idx.shape, "flat", dtype=object)
    n_backfill: list[int | None] = [None] * nq
    recall: list[bool | None] = [None] * nq
    if study.is_two_stage(cond):
        from structablate.retrieval import two_stage as ts

        keys, centroids, sec_index = ts.section_centroids(
            chunk_vectors, chunks["doc_id"].to_list(), chunks["top_section"].to_list()
        )
        idx, scores, codes, kept = ts.two_stage_search(
            query_vectors, chunk_vectors, sec_index, centroids, k,
            settings.hier_top_sections, global_idx=idx,
        )
        stage = ts.stage_labels(codes)
        n_backfill = ts.backfill_counts(codes).tolist()
        if qrels is not None:
            spans = ts.section_spans(keys, chunks)
            recall = ts.section_recall(
                kept, keys, spans, queries["qid"].to_list(), qrels
            ).tolist()
    kk = idx.shape[1]
    chunk_ids = np.asarray(chunks["chunk_id"].to_list(), dtype=object)
    qids = np.repeat(np.asarray(queries["qid"].to_list(), dtype=object), kk)
    run = frame(
        "runs",
        {
            "qid": qids.tolist(),
            "rank": np.tile(np.arange(1, kk + 1, dtype=np.int32), nq).tolist(),
            "chunk_id": chunk_ids[idx.reshape(-1)].tolist(),
            "score": scores.reshape(-1).astype(np.float32).tolist(),
            "stage": stage.reshape(-1).tolist(),
        },
    )
    return run.with_columns(
        pl.Series("n_backfill", np.repeat(np.asarray(n_backfill, dtype=object), kk).tolist(),
                  dtype=pl.Int32),
        pl.Series("section_recall", np.repeat(np.asarray(recall, dtype=object), kk).tolist(),
                  dtype=pl.Boolean),
    )


def rerank_run(
    run: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_texts: list[str],
    reranker: RerankerSettings,
    *,
    seed: int = Settings.seed,
    cache: ScoreStore | None = None,
    progress: bool = False,
) -> tuple[pl.DataFrame, dict]:
    """Reorder the top ``reranker.top_n`` of every query of ``run`` with a cross-encoder.

    ``chunk_texts`` are the embedded texts (prefix + content), row-aligned with ``chunks``,
    so the condition's prefix reaches the reranker too. Rows below ``top_n`` keep their order.
    The reranked table keeps the first-stage ``stage`` and diagnostics, takes the cross-encoder
    score in ``score`` (null below ``top_n``), and adds ``first_stage_rank`` and
    ``reranker_trained``. The torch seed is fixed before loading, so a cross-encoder whose head
    is not trained (a test fixture) is at least reproducible; reports must flag it. Pairs of
    all queries are scored in fixed-shape batches, those in ``cache`` are not scored again
    (:mod:`structablate.retrieval.rerank`). Returns the table and a report: model, resolved
    precision, batch shape, pairs scored vs served from the cache.
    """
    import torch

    from structablate.model_paths import model_digest, resolve_model_path
    from structablate.retrieval.rerank import load_cross_encoder, rerank

    if not reranker.model:
        raise ValueError("rerank_run: the reranker has no model (rerankers.<name>.model)")
    qids = queries["qid"].to_list()
    row_of = {c: i for i, c in enumerate(chunks["chunk_id"].to_list())}
    ordered = run.sort(["qid", "rank"])
    width = int(ordered.group_by("qid").len()["len"].max()) if ordered.height else 0
    idx = np.full((len(qids), width), -1, dtype=np.int64)
    pos = {q: i for i, q in enumerate(qids)}
    counters = np.zeros(len(qids), dtype=np.int64)
    for q, c in ordered.select("qid", "chunk_id").iter_rows():
        i = pos[q]
        idx[i, counters[i]] = row_of[c]
        counters[i] += 1
    torch.manual_seed(seed)
    path = resolve_model_path(reranker.model)  # a split model's folder is verified here
    weights = model_digest(reranker.model)
    ce = load_cross_encoder(path, device=reranker.device, max_length=reranker.max_seq_length)
    res = rerank(idx, queries["text"].to_list(), chunk_texts, ce, top_n=reranker.top_n,
                 trained=reranker.trained, batch_size=reranker.batch_size,
                 length_bucket=reranker.length_bucket, max_length=reranker.max_seq_length,
                 dtype=reranker.dtype, cache=cache, progress=progress, weights=weights)
    first = {(q, c): (r, s, st) for q, c, r, s, st in ordered.select(
        "qid", "chunk_id", "rank", "stage", "section_recall").iter_rows()}
    extra = ordered.group_by("qid").agg(pl.col("n_backfill").first())
    n_backfill = dict(extra.iter_rows())
    chunk_ids = chunks["chunk_id"].to_list()
    rows: dict[str, list] = {k: [] for k in ("qid", "rank", "chunk_id", "score", "stage",
                                             "n_backfill", "section_recall",
                                             "first_stage_rank")}
    for i, q in enumerate(qids):
        for r in range(int(counters[i])):
            cid = chunk_ids[int(res.idx[i, r])]
            f_rank, f_stage, f_recall = first[(q, cid)]
            sc = float(res.scores[i, r])
            rows["qid"].append(q)
            rows["rank"].append(r + 1)
            rows["chunk_id"].append(cid)
            rows["score"].append(None if np.isnan(sc) else sc)
            rows["stage"].append(f_stage)
            rows["n_backfill"].append(n_backfill.get(q))
            rows["section_recall"].append(f_recall)
            rows["first_stage_rank"].append(f_rank)
    out = frame("runs", {k: rows[k] for k in ("qid", "rank", "chunk_id", "score", "stage")})
    return out.with_columns(
        pl.Series("n_backfill", rows["n_backfill"], dtype=pl.Int32),
        pl.Series("section_recall", rows["section_recall"], dtype=pl.Boolean),
        pl.Series("first_stage_rank", rows["first_stage_rank"], dtype=pl.Int32),
        pl.lit(bool(res.trained)).alias("reranker_trained"),
    ), {"model": reranker.model, "dtype": res.dtype, "device": reranker.device,
        "trained": bool(res.trained), "top_n": reranker.top_n,
        "batch_size": reranker.batch_size, "length_bucket": reranker.length_bucket,
        "queries": len(qids), **res.stats.as_dict()}
