"""Two-stage (hierarchical) retrieval: route to sections, then rank chunks (A4, G4).

Paper §3.2, §6.4 and Appendix J. A *section* is a document plus a top-level heading, i.e. the
pair ``(doc_id, top_section)`` of the chunk table. Its vector is the renormalised mean of the
chunk vectors that flat retrieval searches (no re-embedding, so C4 compares algorithms, never
representations).

- Stage 1 ranks every section of the corpus by inner product with the query and keeps the top
  ``top_sections`` (``hier_top_sections = 5``).
- Stage 2 ranks all chunks of the kept sections by inner product with the query.
- If fewer than ``k`` chunks remain, the list is backfilled from the global flat ranking,
  skipping chunks already present. Routed results come first (score descending), backfilled
  ones follow in global-rank order; each result carries its stage.

All rankings order by score descending, then by row index ascending, so the result is
deterministic. Scores are inner products of the float32 vectors accumulated in float64 and
rounded to float32, every one of them computed by :func:`structablate.retrieval.flat.pair_scores`
(one contiguous float64 dot product per pair), so flat search, routed and backfilled scores and
any block size agree bit for bit; stage 1 and the flat ranking use
:func:`structablate.retrieval.flat.exact_search` (float32 candidates, float64 re-score).
Backfilled results can score *higher* than routed ones ranked above them: consumers must order
by rank, never by score.

Queries run in blocks with numpy after one search over the centroids for stage 1; stage 2
gathers the kept sections' chunks as a ragged list, scores it pair by pair and sorts it once
per block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from structablate.retrieval.flat import (  # score_matrix, topk_desc: re-exported
    exact_search,
    pair_scores,
    score_matrix,  # noqa: F401
    topk_desc,  # noqa: F401
)

STAGE_PAD = 0
STAGE_ROUTED = 1
STAGE_BACKFILL = 2
STAGE_FLAT = 3
STAGE_NAMES = {
    STAGE_PAD: "",
    STAGE_ROUTED: "routed",
    STAGE_BACKFILL: "backfill",
    STAGE_FLAT: "flat",
}

DEFAULT_BLOCK = 256


def stage_labels(stage: np.ndarray) -> np.ndarray:
    """The ``runs.stage`` strings of an array of stage codes."""
    names = np.array([STAGE_NAMES[i] for i in range(len(STAGE_NAMES))], dtype=object)
    return names[np.asarray(stage, dtype=np.int64)]


def _pair_scores(q: np.ndarray, x: np.ndarray, qrow: np.ndarray, crow: np.ndarray):
    """Float32 inner products of the row pairs ``(qrow[t], crow[t])``, float64 accumulation."""
    return pair_scores(q, x, qrow, crow)


def flat_search(
    query_vecs: np.ndarray, chunk_vecs: np.ndarray, k: int, *, block: int = DEFAULT_BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """Exact flat top-``k`` padded to ``k`` columns with ``-1`` / NaN (backfill source).

    Thin wrapper of :func:`structablate.retrieval.flat.exact_search`.
    """
    nq = np.asarray(query_vecs).shape[0]
    idx = np.full((nq, k), -1, dtype=np.int64)
    out = np.full((nq, k), np.nan, dtype=np.float32)
    top, sc = exact_search(query_vecs, chunk_vecs, k, block=block)
    idx[:, : top.shape[1]] = top
    out[:, : top.shape[1]] = sc
    return idx, out


def section_centroids(
    chunk_vecs: np.ndarray, doc_ids: Sequence[str], top_sections: Sequence[int]
) -> tuple[list[tuple[str, int]], np.ndarray, np.ndarray]:
    """Section keys, centroids and each chunk's section index.

    ``keys`` lists the ``(doc_id, top_section)`` pairs in order of first appearance in the
    chunk table; ``centroids[s]`` is the L2-renormalised mean of the vectors of section ``s``
    (float64 accumulation, float32 result); ``chunk_section_index[i]`` is the section of chunk
    row ``i``.
    """
    x = np.asarray(chunk_vecs, dtype=np.float32)
    if x.shape[0] != len(doc_ids) or x.shape[0] != len(top_sections):
        raise ValueError("chunk_vecs, doc_ids and top_sections must be row-aligned")
    codes: dict[tuple[str, int], int] = {}
    pairs = zip(doc_ids, top_sections, strict=True)
    sec = np.fromiter(
        (codes.setdefault((str(d), int(t)), len(codes)) for d, t in pairs),
        dtype=np.int64,
        count=x.shape[0],
    )
    keys = list(codes)
    if not keys:
        return keys, np.zeros((0, x.shape[1]), dtype=np.float32), sec
    order, indptr = _section_csr(sec, len(keys))
    sums = np.add.reduceat(x[order].astype(np.float64), indptr[:-1], axis=0)
    means = sums / np.diff(indptr)[:, None]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    centroids = np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)
    return keys, centroids.astype(np.float32), sec


def _section_csr(chunk_section_index: np.ndarray, n_sections: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk rows grouped by section (ascending row within a section) and group offsets."""
    order = np.argsort(chunk_section_index, kind="stable").astype(np.int64)
    counts = np.bincount(chunk_section_index, minlength=n_sections)
    indptr = np.zeros(n_sections + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return order, indptr


def two_stage_search(
    query_vecs: np.ndarray,
    chunk_vecs: np.ndarray,
    chunk_section_index: np.ndarray,
    centroids: np.ndarray,
    k: int,
    top_sections: int = 5,
    global_idx: np.ndarray | None = None,
    *,
    block: int = DEFAULT_BLOCK,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Route each query to ``top_sections`` sections, rank their chunks, backfill to ``k``.

    ``global_idx`` is the flat ranking (``[nq, >= k]`` chunk rows, ``-1`` padded) to backfill
    from; when ``None`` it is computed here from the same score matrix (exact flat search).

    Returns ``(idx, scores, stage, kept_sections)``: ``idx [nq, k]`` int64 chunk rows,
    ``scores [nq, k]`` float32, ``stage [nq, k]`` int8 codes (:data:`STAGE_ROUTED`,
    :data:`STAGE_BACKFILL`, :data:`STAGE_PAD` where fewer than ``k`` chunks exist; names via
    :func:`stage_labels`), ``kept_sections [nq, top_sections]`` int64 section indices in
    stage-1 order (``-1`` padded).
    """
    q = np.ascontiguousarray(query_vecs, dtype=np.float32)
    x = np.ascontiguousarray(chunk_vecs, dtype=np.float32)
    c = np.ascontiguousarray(centroids, dtype=np.float32)
    sec_of = np.asarray(chunk_section_index, dtype=np.int64)
    nq, n_chunks, n_sec = q.shape[0], x.shape[0], c.shape[0]
    if sec_of.shape[0] != n_chunks:
        raise ValueError("chunk_section_index must have one entry per chunk row")
    if global_idx is not None:
        global_idx = np.asarray(global_idx, dtype=np.int64)
        if global_idx.shape[0] != nq or global_idx.shape[1] < min(k, n_chunks):
            raise ValueError(f"global_idx must be [{nq}, >= {min(k, n_chunks)}]")
    order, indptr = _section_csr(sec_of, n_sec)

    idx = np.full((nq, k), -1, dtype=np.int64)
    scores = np.full((nq, k), np.nan, dtype=np.float32)
    stage = np.zeros((nq, k), dtype=np.int8)
    kept_all = np.full((nq, top_sections), -1, dtype=np.int64)
    # ---- stage 1 for all queries: route (exact search over the centroids)
    stage1 = exact_search(q, c, top_sections, block=block)[0] if n_sec else np.zeros(
        (nq, 0), dtype=np.int64)
    kept_all[:, : stage1.shape[1]] = stage1
    if global_idx is None:  # the flat ranking to backfill from
        global_idx = np.full((nq, k), -1, dtype=np.int64)
        top = exact_search(q, x, k, block=block)[0]
        global_idx[:, : top.shape[1]] = top

    for b0 in range(0, nq, block):
        qb = q[b0 : b0 + block]
        b = qb.shape[0]
        kept = stage1[b0 : b0 + b]
        # ---- stage 2: ragged list of (query, chunk) candidates in the kept sections
        lens = (indptr[kept + 1] - indptr[kept]).ravel()
        starts = indptr[kept].ravel()
        total = int(lens.sum())
        qrow = np.repeat(np.repeat(np.arange(b), kept.shape[1]), lens)
        offs = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
        crow = order[np.repeat(starts, lens) + offs]
        cand_scores = _pair_scores(qb, x, qrow, crow)
        gidx = global_idx[b0 : b0 + b]
        srt = np.lexsort((crow, -cand_scores, qrow))
        qrow, crow, cand_scores = qrow[srt], crow[srt], cand_scores[srt]
        n_cand = np.bincount(qrow, minlength=b)
        group_start = np.cumsum(n_cand) - n_cand
        pos = np.arange(total) - group_start[qrow]
        keep = pos < k
        bi, bp = qrow[keep] + b0, pos[keep]
        idx[bi, bp] = crow[keep]
        scores[bi, bp] = cand_scores[keep]
        stage[bi, bp] = STAGE_ROUTED
        # ---- backfill from the global ranking, skipping routed chunks
        n_routed = np.minimum(n_cand, k)
        need = k - n_routed
        rows = np.flatnonzero(need > 0)
        if rows.size:
            g = gidx[rows]
            valid = g >= 0
            # every chunk of a kept section is routed when fewer than k were routed
            g_sec = np.where(valid, sec_of[np.where(valid, g, 0)], -2)
            routed = (g_sec[:, :, None] == kept[rows][:, None, :]).any(axis=2)
            take = valid & ~routed
            rank = np.cumsum(take, axis=1)
            take &= rank <= need[rows][:, None]
            r_i, r_j = np.nonzero(take)
            dest = n_routed[rows][r_i] + rank[r_i, r_j] - 1
            chunk = g[r_i, r_j]
            qi = rows[r_i]
            idx[qi + b0, dest] = chunk
            scores[qi + b0, dest] = _pair_scores(qb, x, qi, chunk)
            stage[qi + b0, dest] = STAGE_BACKFILL
    return idx, scores, stage, kept_all


def backfill_counts(stage: np.ndarray) -> np.ndarray:
    """Per query, the number of backfilled results."""
    return (np.asarray(stage) == STAGE_BACKFILL).sum(axis=1)


def section_spans(section_keys: Sequence[tuple[str, int]], chunks: pl.DataFrame) -> np.ndarray:
    """``[S, 2]`` character range of each section: first chunk's start to last chunk's end."""
    spans = (
        chunks.group_by("doc_id", "top_section")
        .agg(pl.col("start").min(), pl.col("end").max())
        .with_columns(pl.col("top_section").cast(pl.Int64))
    )
    return _spans_in_key_order(section_keys, spans, "has no chunk in the chunk table")


def _spans_in_key_order(section_keys: Sequence[tuple[str, int]], spans: pl.DataFrame,
                        missing: str) -> np.ndarray:
    """``[S, 2]`` (start, end) of ``spans`` (columns doc_id, top_section, start, end) in the
    order of ``section_keys``; a key without a row is a ``KeyError`` ("a section key
    ``missing``")."""
    keys = pl.DataFrame(
        {"doc_id": [d for d, _ in section_keys], "top_section": [int(t) for _, t in section_keys]},
        schema={"doc_id": pl.String, "top_section": pl.Int64},
    ).with_row_index("_i")
    joined = keys.join(spans, on=["doc_id", "top_section"], how="left").sort("_i")
    if joined["start"].null_count():
        raise KeyError(f"a section key {missing}")
    return joined.select("start", "end").to_numpy().astype(np.int64)


def section_spans_from_sections(
    section_keys: Sequence[tuple[str, int]], sections: pl.DataFrame
) -> np.ndarray:
    """``[S, 2]`` character range of each top-level section from a sections table.

    A top-level section runs from the start of its own row to the end of the last row before
    the document's next level-1 section (or the document's last section).
    """
    s = sections.sort("doc_id", "section_idx").with_columns(
        (pl.col("level") == 1).cast(pl.Int32).cum_sum().over("doc_id").alias("_grp")
    )
    # rows before the first level-1 section form group 0 and belong to no top-level section
    tops = s.group_by("doc_id", "_grp").agg(
        pl.col("section_idx").first().cast(pl.Int64).alias("top_section"),
        pl.col("start").min(),
        pl.col("end").max(),
    )
    return _spans_in_key_order(section_keys, tops.select("doc_id", "top_section", "start", "end"),
                               "names no section of the sections table")


def section_recall(
    kept_sections: np.ndarray,
    section_keys: Sequence[tuple[str, int]],
    spans: np.ndarray,
    qids: Sequence[str],
    qrels: pl.DataFrame,
) -> np.ndarray:
    """Per query (row-aligned with ``qids``): did stage 1 keep a section overlapping gold?

    A kept section overlaps a gold span when it belongs to the span's document and their
    half-open character ranges intersect. ``spans`` comes from :func:`section_spans` or
    :func:`section_spans_from_sections`. Queries without qrels get ``False``.
    """
    kept = np.asarray(kept_sections, dtype=np.int64)
    qpos = {q: i for i, q in enumerate(qids)}
    rel = qrels.filter(pl.col("qid").is_in(list(qpos)))
    if rel.height == 0:
        return np.zeros(len(qids), dtype=bool)
    doc_code = {d: i for i, d in enumerate(sorted({d for d, _ in section_keys}))}
    sec_doc = np.array([doc_code[d] for d, _ in section_keys], dtype=np.int64)
    r_q = np.array([qpos[q] for q in rel["qid"].to_list()], dtype=np.int64)
    r_doc = np.array([doc_code.get(d, -1) for d in rel["doc_id"].to_list()], dtype=np.int64)
    r_start = rel["start"].to_numpy().astype(np.int64)
    r_end = rel["end"].to_numpy().astype(np.int64)
    ks = kept[r_q]  # [R, top]
    valid = ks >= 0
    ks0 = np.where(valid, ks, 0)
    hit = (
        valid
        & (sec_doc[ks0] == r_doc[:, None])
        & (spans[ks0, 0] < r_end[:, None])
        & (r_start[:, None] < spans[ks0, 1])
    ).any(axis=1)
    out = np.zeros(len(qids), dtype=bool)
    np.logical_or.at(out, r_q, hit)
    return out
