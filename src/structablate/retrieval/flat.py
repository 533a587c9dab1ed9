"""Flat top-k retrieval over all chunks of a corpus.

Both searchers return ``(idx, scores)``: ``idx[q]`` holds the row indices (into the chunk
table) of the top ``k`` chunks for query ``q`` by inner product, best first; ties in score are
broken by ascending row index, so the ranking is a pure function of the vectors.

* ``exact``: the score of a chunk is its inner product with the query accumulated in float64 and
  rounded to float32 (:func:`score_matrix`; block-size and BLAS independent). To run at float32
  speed, each block of queries is first scored with a plain float32 matrix product, which is off
  from the float64 value by at most ``γ·‖q‖·‖x‖`` (:func:`float32_error_bound`, the standard
  bound for any summation order of a length-``d`` float32 dot product, plus the float64 and
  final float32 roundings). Every chunk whose float32 score lies within twice that bound of a
  lower bound of the query's ``k``-th float32 score (:func:`kth_lower_bound`: the ``k``-th
  largest of group maxima, which ``k`` chunks reach) is kept as a candidate (provably a
  superset of the top ``k``: anything below is beaten by ``k`` chunks for certain); only the
  candidates are re-scored in float64 and ranked by (score desc, row asc). The float32 product
  runs per block of queries on BLAS's threads; the ranking runs in tasks of a few dozen queries
  on as many threads (:func:`_search_threads`), each query from its own row only, so block
  size and thread count change no bit. The result is the same as scoring every chunk in
  float64; as with any float64 route, a score whose float64 sum lies within a few float64 ulps
  of a float32 rounding boundary (~1e-8 per score) may round to either neighbour depending on
  the summation order. Inputs that are not finite take the full float64 route.
* ``hnsw``: an hnswlib index (inner-product space) built single-threaded with a fixed
  ``random_seed``, so the graph and the results are reproducible; ``ef_search`` is raised to at
  least ``k``. Its scores are recomputed exactly so both searchers report the same score for the
  same chunk. See :func:`hnsw_search` for the settings, the recall check and when exact search
  is used instead.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

import numpy as np
from tqdm import tqdm

from structablate.settings import HnswSettings


def topk_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Row-wise top-``k`` column indices, score descending then index ascending.

    Exact under ties: rows where the k-th score ties with an excluded column fall back to a
    stable full sort. Returns ``[n, min(k, m)]`` int64.
    """
    scores = np.asarray(scores)
    n, m = scores.shape
    k = min(k, m)
    if k <= 0:
        return np.empty((n, 0), dtype=np.int64)
    if k == m:
        return np.argsort(-scores, axis=1, kind="stable").astype(np.int64)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)
    top = np.take_along_axis(part, order, axis=1).astype(np.int64)
    # tie check: every column scoring exactly the k-th score must be inside the selection
    kth = np.take_along_axis(scores, top[:, -1:], axis=1)
    n_eq_all = (scores == kth).sum(axis=1)
    n_eq_sel = (np.take_along_axis(scores, top, axis=1) == kth).sum(axis=1)
    tied = np.flatnonzero(n_eq_all != n_eq_sel)
    if tied.size:
        top[tied] = np.argsort(-scores[tied], axis=1, kind="stable")[:, :k]
    return top


def score_matrix(query_vecs: np.ndarray, chunk_vecs: np.ndarray) -> np.ndarray:
    """``[nq, n]`` float32 inner products, accumulated in float64 (block-size independent)."""
    q = np.asarray(query_vecs, dtype=np.float64)
    x = np.asarray(chunk_vecs, dtype=np.float64)
    return (q @ x.T).astype(np.float32)


# bytes of the float64 gather buffer of pair_scores: a cache-sized piece (a fresh array per
# query is a fresh mapping of up to a few MB, and page faults cost more than the dot products)
_PAIR_BUFFER_BYTES = 1 << 21


def pair_scores(query_vecs: np.ndarray, chunk_vecs: np.ndarray, qrow: np.ndarray,
                crow: np.ndarray) -> np.ndarray:
    """Float32 inner products of the row pairs ``(qrow[t], crow[t])``, float64 accumulation.

    Every float64-accumulated score of the package (flat, routed and backfilled) comes from
    here: each is one contiguous length-``d`` float64 dot product (numpy's einsum kernel, the
    same for every pair whatever the others), so its value does not depend on the batch or on
    which other pairs are scored with it. (A float64 matrix product gives the same float32
    numbers up to the rare double rounding of the module docstring.) The pairs, grouped by
    query, are gathered in pieces of about a MB, widened to float64 once per piece and
    reduced against each query's widened row: no float64 copy of the corpus is made."""
    q = np.asarray(query_vecs)
    x = np.asarray(chunk_vecs)
    qrow = np.asarray(qrow, dtype=np.int64)
    crow = np.asarray(crow, dtype=np.int64)
    total = len(qrow)
    out = np.empty(total, dtype=np.float32)
    if not total:
        return out
    order = None if np.all(qrow[1:] >= qrow[:-1]) else np.argsort(qrow, kind="stable")
    qs = qrow if order is None else qrow[order]
    cs = crow if order is None else crow[order]
    d = x.shape[1]
    step = min(total, max(1, _PAIR_BUFFER_BYTES // (8 * max(d, 1))))
    xg = np.empty((step, d), dtype=x.dtype)
    x64 = np.empty((step, d), dtype=np.float64)
    res = np.empty(total, dtype=np.float32)
    for a in range(0, total, step):
        b = min(a + step, total)
        w = b - a
        x64[:w] = np.take(x, cs[a:b], axis=0, out=xg[:w])
        seg = qs[a:b]
        cuts = (np.flatnonzero(seg[1:] != seg[:-1]) + 1).tolist()
        for lo, hi in zip([0, *cuts], [*cuts, w], strict=True):
            res[a + lo : a + hi] = np.einsum("ij,j->i", x64[lo:hi], q[seg[lo]].astype(np.float64))
    if order is None:
        return res
    out[order] = res
    return out


def float32_error_bound(dim: int) -> float:
    """``γ`` such that ``|s32 − ref| <= γ·‖q‖·‖x‖`` for every pair of float32 vectors of length
    ``dim``, where ``s32`` is their float32 dot product summed in any order (with or without
    FMA) and ``ref`` the float64-accumulated dot product rounded to float32.

    Higham (2002, §3.1): a length-n dot product in precision ``u`` is off by at most
    ``γ_n·Σ|q_i x_i|`` with ``γ_n = n·u/(1 − n·u)``, whatever the order, and
    ``Σ|q_i x_i| <= ‖q‖·‖x‖``; so ``|s32 − e| <= γ_n(2⁻²⁴)·A``, ``|s64 − e| <= γ_n(2⁻⁵³)·A``
    and the final rounding adds ``<= 2⁻²⁴·|s64| <= 2⁻²⁴·(1 + γ)·A``. The sum of the three, with
    slack for the norms' own rounding.
    """
    u32, u64 = 2.0**-24, 2.0**-53
    g32 = dim * u32 / (1 - dim * u32)
    g64 = dim * u64 / (1 - dim * u64)
    return (g32 + g64 + 2 * u32) * (1 + 2.0**-20)


def _exact_float64(queries: np.ndarray, x64: np.ndarray, k: int, block: int):
    nq = queries.shape[0]
    idx_out = np.zeros((nq, k), dtype=np.int64)
    sc_out = np.zeros((nq, k), dtype=np.float32)
    # a progress bar where stderr is a terminal or a workflow job's log (structablate.workflow)
    bar = tqdm(total=nq, desc="exact search", unit="query", disable=None)
    for s in range(0, nq, block):
        scores = score_matrix(queries[s : s + block], x64)
        top = topk_desc(scores, k)
        idx_out[s : s + block] = top
        sc_out[s : s + block] = np.take_along_axis(scores, top, axis=1)
        bar.update(min(block, nq - s))
    bar.close()
    return idx_out, sc_out


def _group_size(n: int, k: int) -> int:
    """Columns per group for :func:`kth_lower_bound`: as many as keep at least ``8·k`` groups
    (so the top ``k`` rarely share one), at most 32."""
    return int(max(1, min(32, n // (8 * max(k, 1)))))


def group_columns(n: int, group: int) -> int:
    """``m = ⌈n / group⌉``: the number of groups of :func:`group_maxima` over ``n`` columns."""
    return -(-n // group)


def _padded(scores: np.ndarray, group: int) -> np.ndarray:
    """``scores`` with ``−inf`` columns appended up to a multiple of ``group`` (itself, no copy,
    when it is one already)."""
    b, n = scores.shape
    width = group_columns(n, group) * group
    if width == n:
        return scores
    out = np.full((b, width), -np.inf, dtype=scores.dtype)
    out[:, :n] = scores
    return out


def group_maxima(scores: np.ndarray, group: int) -> np.ndarray:
    """Per row, the maxima of ``m = ⌈n / group⌉`` disjoint column groups: group ``j`` holds the
    columns ``j, j + m, …, j + (group − 1)·m`` below ``n``. On a matrix ``group·m`` columns
    wide (the caller pads with ``−inf``, as :func:`exact_search` does in its score buffer) the
    groups are one reshape and ``group − 1`` elementwise maxima of contiguous slabs; narrower
    ones are padded here (a copy)."""
    scores = _padded(scores, group)
    b, width = scores.shape
    return scores.reshape(b, group, width // group).max(axis=1)


def kth_of_maxima(maxima: np.ndarray, k: int) -> np.ndarray:
    """The ``k``-th largest of each row of :func:`group_maxima` (see :func:`kth_lower_bound`)."""
    if maxima.shape[1] < k:
        raise ValueError(f"{maxima.shape[1]} groups cannot bound the top {k}")
    return np.partition(maxima, maxima.shape[1] - k, axis=1)[:, maxima.shape[1] - k].copy()


def kth_lower_bound(scores: np.ndarray, k: int, group: int) -> np.ndarray:
    """Per row, a value ``L`` with at least ``k`` entries ``>= L``, at most the row's ``k``-th
    largest: the ``k``-th largest of the :func:`group_maxima`. The ``k`` largest maxima come
    from ``k`` distinct columns, so ``L`` never exceeds the ``k``-th largest entry; it equals it
    when the top ``k`` fall in distinct groups. Partitioning ``m`` maxima instead of ``n``
    entries is what makes it cheap. Needs at least ``k`` groups."""
    return kth_of_maxima(group_maxima(scores, group), k)


def group_candidates(scores: np.ndarray, maxima: np.ndarray, thr: np.ndarray, group: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(row, column)`` of every entry ``scores[i, j] >= thr[i]``, rows ascending (``thr``
    finite), found through the :func:`group_maxima` (only a group whose maximum reaches
    ``thr`` can hold one): the full matrix is never compared or scanned again. The members of
    the groups that reach it are read with one flat ``take``."""
    scores = np.ascontiguousarray(_padded(scores, group))
    b, width = scores.shape
    m = width // group
    qi, gj = np.divmod(np.flatnonzero(maxima >= thr[:, None]), m)
    cols = gj[:, None] + m * np.arange(group)
    vals = scores.reshape(-1).take(cols + (qi * width)[:, None])
    hit = vals >= thr[qi][:, None]
    return np.broadcast_to(qi[:, None], cols.shape)[hit], cols[hit]


def _search_threads() -> int:
    """Threads for the ranking step of :func:`exact_search`: ``OMP_NUM_THREADS`` where set (a
    workflow job sets it to its ``threads``, as BLAS reads it), else the CPUs this process may
    run on. The result does not depend on it."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)))


def _rank_rows(s32: np.ndarray, qb: np.ndarray, x: np.ndarray, k: int, group: int,
               margin: np.ndarray, idx_out: np.ndarray, sc_out: np.ndarray) -> None:
    """Top ``k`` of the queries ``qb`` from their float32 scores ``s32`` (``[b, group·m]``,
    C-contiguous, padded with ``−inf``; ``margin``: each query's ``γ·‖q‖·max‖x‖`` + underflow
    slack), written into ``idx_out`` / ``sc_out`` (``[b, k]``): the candidates within
    ``2·margin`` of the ``k``-th float32 score's lower bound, re-scored by :func:`pair_scores`
    and ranked by (score desc, row asc). Each row's result depends on that row alone."""
    b = s32.shape[0]
    maxima = group_maxima(s32, group)
    thr = kth_of_maxima(maxima, k).astype(np.float64) - 2 * margin
    with np.errstate(over="ignore"):  # below float32's range: clamped just below
        thr32 = thr.astype(np.float32)
    low = thr32.astype(np.float64) > thr  # round the threshold down, never up
    thr32[low] = np.nextafter(thr32[low], np.float32(-np.inf))
    # never -inf (the buffer's padding columns must not pass): every finite score reaches
    # float32's lowest value anyway
    np.maximum(thr32, -np.finfo(np.float32).max, out=thr32)
    qi, cj = group_candidates(s32, maxima, thr32, group)  # by query
    ref = pair_scores(qb, x, qi, cj)  # rows widened per candidate: no float64 corpus copy
    order = np.lexsort((cj, -ref, qi))  # per query: score desc, then row asc
    first = np.searchsorted(qi, np.arange(b))
    pos = np.arange(len(qi)) - first[qi[order]]
    sel = pos < k
    keep = order[sel]
    idx_out[qi[keep], pos[sel]] = cj[keep]
    sc_out[qi[keep], pos[sel]] = ref[keep]


# queries per ranking task of exact_search: their float32 score rows (a few MB at 36k chunks)
# stay in cache from the group maxima to the candidates' gather
_RANK_ROWS = 32
# query-chunk pairs below which exact_search ranks on the calling thread alone
_THREADED_MIN_SCORES = 1 << 22


def exact_search(
    queries: np.ndarray, chunks: np.ndarray, k: int, block: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-``k`` (see module docstring for the scores and the tie rule).

    Each block of ``block`` queries is scored by one float32 matrix product (BLAS threads);
    its rows are then ranked (:func:`_rank_rows`) in tasks of a few dozen queries on
    :func:`_search_threads` threads. A query's result depends on its own row only, so it is the
    same for any block size and thread count. Returns ``min(k, n_chunks)`` columns.
    """
    x = np.ascontiguousarray(chunks, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    nq, n = queries.shape[0], x.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros((nq, 0), dtype=np.int64), np.zeros((nq, 0), dtype=np.float32)
    if k == n or not (np.isfinite(x).all() and np.isfinite(queries).all()):
        return _exact_float64(queries, x.astype(np.float64), k, block)
    gamma = float32_error_bound(x.shape[1])
    x_norm_max = float(np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64)).max())
    q_norm = np.sqrt(np.einsum("ij,ij->i", queries, queries, dtype=np.float64))
    # every partial sum of a float32 dot product is at most (1 + γ)·‖q‖·‖x‖ in magnitude:
    # below float32's largest value no product can overflow, and the scan for inf/NaN is moot
    may_overflow = (1 + gamma) * float(q_norm.max(initial=0.0)) * x_norm_max \
        >= 0.5 * float(np.finfo(np.float32).max)
    tiny = x.shape[1] * 2.0**-120  # products and sums that underflow or flush to zero
    margin = gamma * q_norm * x_norm_max + tiny
    idx_out = np.zeros((nq, k), dtype=np.int64)
    sc_out = np.zeros((nq, k), dtype=np.float32)
    # one score buffer reused across blocks (a fresh 10-100 MB array per block costs page
    # faults); its columns past n stay -inf, so the groups of group_maxima are contiguous slabs
    bsz = min(block, nq)
    group = _group_size(n, k)
    s32_buf = np.full((bsz, group_columns(n, group) * group), -np.inf, dtype=np.float32)
    # threads pay off only on large searches (starting them costs more than ranking a small one)
    threads = _search_threads() if nq * n >= _THREADED_MIN_SCORES else 1
    pool = ThreadPoolExecutor(threads, thread_name_prefix="exact-rank") if threads > 1 else None
    try:
        for s in range(0, nq, block):
            qb = queries[s : s + block]
            b = qb.shape[0]
            s32 = s32_buf[:b]
            np.matmul(qb, x.T, out=s32[:, :n])
            if may_overflow and not np.isfinite(s32[:, :n]).all():  # this block in float64
                i, sc = _exact_float64(qb, x.astype(np.float64), k, block)
                idx_out[s : s + b], sc_out[s : s + b] = i, sc
                continue
            rows = [(r, min(r + _RANK_ROWS, b)) for r in range(0, b, _RANK_ROWS)]
            tasks = [(s32[r:e], qb[r:e], x, k, group, margin[s + r : s + e],
                      idx_out[s + r : s + e], sc_out[s + r : s + e]) for r, e in rows]
            if pool is None:
                for t in tasks:
                    _rank_rows(*t)
            else:
                for f in [pool.submit(_rank_rows, *t) for t in tasks]:
                    f.result()
    finally:
        if pool is not None:
            pool.shutdown()
    return idx_out, sc_out


def exact_is_faster(
    n_queries: int, n_chunks: int, settings: HnswSettings
) -> tuple[bool, int | None]:
    """Whether exact search is predicted faster than HNSW, and the corpus size below which it is
    (``None``: at any size, for this many queries).

    Cost model (per dimension): exact ``n_queries·n_chunks`` multiply-adds; HNSW ``cost_ratio ×
    (n_chunks·ef_construction + n_queries·ef_search)`` distance evaluations (building the graph,
    then one beam per query; the recall check and the log factors are left out, which favours
    HNSW). A pure function of the sizes and settings, so the choice never depends on the
    machine's load.
    """
    r = settings.cost_ratio
    hnsw = r * (n_chunks * settings.ef_construction + n_queries * settings.ef_search)
    faster = n_queries * n_chunks <= hnsw
    denom = n_queries - r * settings.ef_construction
    crossover = None if denom <= 0 else int(r * settings.ef_search * n_queries / denom)
    return faster, crossover


def _hnsw_index(chunks: np.ndarray, M: int, ef_construction: int, seed: int):
    import hnswlib

    n, dim = chunks.shape
    index = hnswlib.Index(space="ip", dim=dim)
    index.init_index(max_elements=n, ef_construction=ef_construction, M=M, random_seed=seed)
    index.set_num_threads(1)
    index.add_items(chunks, np.arange(n), num_threads=1)
    return index


def _hnsw_query(index, queries: np.ndarray, k: int, ef: int) -> np.ndarray:
    index.set_ef(max(ef, k))
    labels, _ = index.knn_query(queries, k=k, num_threads=1)
    return labels.astype(np.int64)


def _rank_labels(queries: np.ndarray, chunks: np.ndarray, labels: np.ndarray):
    """Exact (float64-accumulated) scores of the found chunks, ordered score desc, row asc."""
    nq, k = labels.shape
    sc = pair_scores(queries, chunks, np.repeat(np.arange(nq), k), labels.ravel()).reshape(nq, k)
    order = np.lexsort((labels, -sc), axis=1)
    return np.take_along_axis(labels, order, axis=1), np.take_along_axis(sc, order, axis=1)


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean over queries of ``|found ∩ exact| / |exact|`` (rows of chunk indices)."""
    if exact.size == 0:
        return 1.0
    hits = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(found, exact, strict=True)]
    return float(np.mean(hits) / exact.shape[1])


def hnsw_search(
    queries: np.ndarray,
    chunks: np.ndarray,
    k: int,
    *,
    M: int = HnswSettings.M,
    ef_construction: int = HnswSettings.ef_construction,
    ef_search: int = HnswSettings.ef_search,
    seed: int = HnswSettings.seed,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate top-``k`` with hnswlib at fixed settings (deterministic: one thread, fixed
    seed); scores are the exact ones of :func:`pair_scores`. No recall check: see
    :func:`tuned_hnsw_search`."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    chunks = np.ascontiguousarray(chunks, dtype=np.float32)
    k = min(k, chunks.shape[0])
    index = _hnsw_index(chunks, M, ef_construction, seed)
    return _rank_labels(queries, chunks, _hnsw_query(index, queries, k, ef_search))


def tuned_hnsw_search(
    queries: np.ndarray, chunks: np.ndarray, k: int, settings: HnswSettings | None = None
) -> tuple[np.ndarray, np.ndarray, dict]:
    """HNSW search whose beam is raised until recall@k against exact search reaches the target
    on a seeded sample of the queries (see :class:`HnswSettings`), or exact search where that is
    predicted faster or the target is out of reach. Returns ``(idx, scores, report)``; the
    report (JSON-ready, deterministic) says which method ran, why, and the recall measured at
    every beam tried."""
    st = settings or HnswSettings()
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    chunks = np.ascontiguousarray(chunks, dtype=np.float32)
    nq, n = queries.shape[0], chunks.shape[0]
    k = min(k, n)
    faster, crossover = exact_is_faster(nq, n, st)
    report: dict = {
        "requested": "hnsw", "k": k, "n_queries": nq, "n_chunks": n,
        "settings": {f.name: getattr(st, f.name) for f in fields(st)},
        "exact_faster_below_chunks": crossover,
    }

    def exact(reason: str):
        idx, sc = exact_search(queries, chunks, k)
        return idx, sc, {**report, "method": "exact", "reason": reason}

    if k == 0 or k >= n:
        return exact("k covers the whole corpus")
    if st.prefer_exact and faster:
        return exact(
            f"exact search is predicted faster for {nq} queries x {n} chunks (cost model, "
            f"cost_ratio {st.cost_ratio:g}); HNSW pays off only above "
            + (f"{crossover} chunks" if crossover is not None else "many more queries"))
    rng = np.random.default_rng(st.seed)
    sample = np.sort(rng.choice(nq, size=min(st.recall_sample, nq), replace=False))
    truth, _ = exact_search(queries[sample], chunks, k)
    index = _hnsw_index(chunks, st.M, st.ef_construction, st.seed)
    tried: list[dict] = []
    ef = max(st.ef_search, k)
    chosen = None
    while True:
        found = _hnsw_query(index, queries[sample], k, ef)
        rec = recall_at_k(found, truth)
        tried.append({"ef_search": ef, "recall": round(rec, 6)})
        if rec >= st.target_recall:
            chosen = ef
            break
        if ef >= min(st.max_ef_search, n):
            break
        ef = min(2 * ef, st.max_ef_search, n)
    report.update({"recall_sample": int(len(sample)), "recall_tried": tried,
                   "target_recall": st.target_recall})
    if chosen is None:
        msg = (f"HNSW recall@{k} {tried[-1]['recall']:.4f} on {len(sample)} sampled queries "
               f"stays below {st.target_recall} up to ef_search {tried[-1]['ef_search']}")
        if st.on_shortfall == "raise":
            raise RuntimeError(msg + " (retrieval.hnsw.on_shortfall: raise)")
        return exact(msg + "; searched exactly instead")
    labels = _hnsw_query(index, queries, k, chosen)
    idx, sc = _rank_labels(queries, chunks, labels)
    rec = tried[-1]["recall"]
    report.update({
        "method": "hnsw", "ef_search_used": chosen, "recall_at_k": rec,
        "reason": f"recall@{k} {rec:.4f} >= {st.target_recall} on {len(sample)} sampled queries",
    })
    return idx, sc, report


def search_with_report(
    queries: np.ndarray, chunks: np.ndarray, k: int, method: str = "exact",
    hnsw: HnswSettings | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Dispatch on ``method`` (``exact`` | ``hnsw``); the report says what ran (write it beside
    the run)."""
    if method == "exact":
        idx, sc = exact_search(queries, chunks, k)
        return idx, sc, {"requested": "exact", "method": "exact", "k": int(idx.shape[1])}
    if method == "hnsw":
        st = hnsw or HnswSettings()
        return tuned_hnsw_search(queries, chunks, k, st)
    raise ValueError(f"unknown retrieval method {method!r} (exact or hnsw)")


def search(
    queries: np.ndarray, chunks: np.ndarray, k: int, method: str = "exact",
    hnsw: HnswSettings | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`search_with_report` without the report."""
    idx, sc, _ = search_with_report(queries, chunks, k, method, hnsw)
    return idx, sc
