"""Validation and array layout shared by the vectorized measures.

Scoring has a part that depends only on the condition's chunk table, the qrels and the queries
(:class:`Layout`, built once per chunkset by :func:`prepare_layout`) and a part that depends on
the run (:class:`BoundRun`, :func:`bind_run`). Conditions that share a chunkset (A3 and A4, G3
and G4) and every embedder and reranker of a corpus share one layout.

:class:`Layout` holds:

* queries sorted by ``qid`` (index ``q``), each with a document code and its gold spans as a
  CSR block ``span_ptr[q]:span_ptr[q+1]`` of ``gs``/``ge``;
* the condition's chunks sorted by ``(doc, start, end, chunk_id)`` (index ``c``), with
  per-document blocks ``doc_ptr[d]:doc_ptr[d+1]`` and a flag ``doc_overlap[d]`` set when two
  chunks of the document overlap (such documents take the exact general path);
* every (gold span, chunk) pair of positive overlap on the query's own document (fast-path
  queries only), with its binary relevance and coverage share: all the measures need, and
  independent of the run.

:class:`BoundRun` holds the run sorted by ``(q, rank)`` (rows ``r_ptr[q]:r_ptr[q+1]``) with
1-based positions ``r_pos`` (ranks are authoritative: they fix the order; gaps in them are
closed), and for every pair of the layout the run row that retrieves its chunk for its query
(``pair_row``, ``-1`` if none) and that row's position (``pair_pos``, 0 if none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from .relevance import relevant_pairs

_BIG = np.int64(1) << np.int64(40)  # offsets are < 2**40; doc * _BIG + offset is a sort key
DENSE_LIMIT = 50_000_000
"""Largest ``n_queries x deepest run`` matrix :func:`bind_run` builds to check and locate
chunks per query; deeper runs take a sort instead (same result)."""

_NEED = {
    "run": ("qid", "rank", "chunk_id"),
    "chunks": ("chunk_id", "doc_id", "start", "end", "content_tokens", "prefix_tokens"),
    "qrels": ("qid", "doc_id", "start", "end"),
    "queries": ("qid", "doc_id", "qtype"),
}


def _require(df: pl.DataFrame, name: str) -> None:
    missing = [c for c in _NEED[name] if c not in df.columns]
    if missing:
        raise ValueError(f"score_run: the {name} frame lacks column(s) {missing}")


def _first(df: pl.DataFrame, n: int = 3) -> list[dict]:
    return df.head(n).to_dicts()


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[i], hi[i])`` return (owner i, value) of every element, in order."""
    n = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), n)
    start = np.cumsum(n) - n
    value = lo[owner] + (np.arange(int(n.sum()), dtype=np.int64) - start[owner])
    return owner, value


def discounts(n: int) -> np.ndarray:
    """``1 / log2(i + 1)`` for ranks ``i = 1..n``."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


@dataclass(eq=False)
class QueryTables:
    """Queries and qrels, validated and sorted once (shared by every chunkset of a corpus)."""

    q: pl.DataFrame  # qid, doc_id, qtype sorted by qid
    qr: pl.DataFrame  # qid, _qrel_doc, start, end (deduplicated)


def prepare_queries(qrels: pl.DataFrame, queries: pl.DataFrame) -> QueryTables:
    """Validate the queries and qrels frames (see :func:`prepare_layout`)."""
    _require(queries, "queries")
    _require(qrels, "qrels")
    q = queries.select(
        pl.col("qid").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("qtype").cast(pl.String),
    ).sort("qid")
    dup = q.filter(pl.col("qid").is_duplicated())
    if dup.height:
        raise ValueError(
            f"score_run: duplicate qid in queries: {dup['qid'].unique().to_list()[:5]}"
        )
    if q["qid"].null_count():
        raise ValueError("score_run: the queries frame has a null qid")
    qr = qrels.select(
        pl.col("qid").cast(pl.String),
        pl.col("doc_id").cast(pl.String).alias("_qrel_doc"),
        pl.col("start").cast(pl.Int64),
        pl.col("end").cast(pl.Int64),
    ).unique()
    return QueryTables(q, qr)


@dataclass(eq=False)
class Layout:
    """The run-independent arrays of one chunkset against the corpus's queries and qrels."""

    qids: list[str]
    q_doc_id: list[str]
    qtypes: list[str]
    q_doc: np.ndarray  # int64 document code per query
    span_ptr: np.ndarray
    gs: np.ndarray
    ge: np.ndarray
    span_q: np.ndarray
    chunk_ids: list[str]  # in chunk order c
    c_doc: np.ndarray
    cs: np.ndarray
    ce: np.ndarray
    ctok: np.ndarray
    ptok: np.ndarray
    doc_ptr: np.ndarray
    doc_overlap: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def nq(self) -> int:
        return len(self.qids)

    @property
    def nc(self) -> int:
        return len(self.cs)

    @property
    def n_spans(self) -> np.ndarray:
        return np.diff(self.span_ptr)

    @cached_property
    def general(self) -> np.ndarray:
        """Queries whose document has overlapping chunks (exact general path)."""
        return self.doc_overlap[self.q_doc]

    @cached_property
    def qid_codes(self) -> StringCodes:
        return StringCodes(self.qids)

    @cached_property
    def chunk_codes(self) -> StringCodes:
        return StringCodes(self.chunk_ids)

    @cached_property
    def pairs(self) -> Pairs:
        return Pairs(self)

    def cached(self, key, compute):
        """Memoise a run-independent array (ideal DCGs per cutoff, …) on the layout."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


def prepare_layout(
    chunks: pl.DataFrame,
    qrels: pl.DataFrame | None = None,
    queries: pl.DataFrame | None = None,
    *,
    query_tables: QueryTables | None = None,
) -> Layout:
    """Validate a chunk table (and the qrels and queries, unless ``query_tables`` holds them
    validated already) and lay them out for :func:`bind_run` and the measures."""
    if query_tables is None:
        if qrels is None or queries is None:
            raise ValueError("prepare_layout needs qrels and queries (or query_tables)")
        query_tables = prepare_queries(qrels, queries)
    _require(chunks, "chunks")
    q = query_tables.q
    ch = chunks.select(
        pl.col("chunk_id").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("start").cast(pl.Int64),
        pl.col("end").cast(pl.Int64),
        pl.col("content_tokens").cast(pl.Int64),
        pl.col("prefix_tokens").cast(pl.Int64),
    )
    if ch.null_count().sum_horizontal().item():
        raise ValueError("score_run: the chunks frame has nulls")
    dup = ch.filter(pl.col("chunk_id").is_duplicated())
    if dup.height:
        raise ValueError(f"score_run: duplicate chunk_id in chunks: {_first(dup)}")
    bad = ch.filter(
        (pl.col("start") < 0)
        | (pl.col("end") <= pl.col("start"))
        | (pl.col("content_tokens") < 0)
        | (pl.col("prefix_tokens") < 0)
    )
    if bad.height:
        raise ValueError(f"score_run: invalid chunk rows (empty span or negative): {_first(bad)}")

    # document codes over the union of query and chunk documents
    docs = pl.concat([q["doc_id"], ch["doc_id"]]).unique().sort()
    dmap = pl.DataFrame({"doc_id": docs, "_d": np.arange(docs.len(), dtype=np.int64)})
    q = q.join(dmap, on="doc_id", how="left", maintain_order="left").with_row_index("_q")
    ch = (
        ch.join(dmap, on="doc_id", how="left", maintain_order="left")
        .sort(["_d", "start", "end", "chunk_id"])
    )
    nd = docs.len()

    # gold spans
    qr = query_tables.qr.join(q.select("qid", "doc_id", "_q"), on="qid", how="inner")
    bad = qr.filter(pl.col("_qrel_doc") != pl.col("doc_id"))
    if bad.height:
        raise ValueError(f"score_run: qrels name another document than the query: {_first(bad)}")
    bad = qr.filter((pl.col("start") < 0) | (pl.col("end") <= pl.col("start")))
    if bad.height:
        raise ValueError(f"score_run: empty or negative gold spans in qrels: {_first(bad)}")
    qr = qr.sort(["_q", "start", "end"])
    n_spans = np.bincount(qr["_q"].to_numpy().astype(np.int64), minlength=q.height)
    if q.height and (n_spans == 0).any():
        missing = [q["qid"][int(i)] for i in np.flatnonzero(n_spans == 0)[:10]]
        raise ValueError(
            f"score_run: {int((n_spans == 0).sum())} queries have no qrels (first: {missing}); "
            "every scored query needs at least one gold span"
        )
    span_ptr = np.concatenate([[0], np.cumsum(n_spans)]).astype(np.int64)

    c_doc = ch["_d"].to_numpy().astype(np.int64)
    cs = ch["start"].to_numpy().astype(np.int64)
    ce = ch["end"].to_numpy().astype(np.int64)
    doc_ptr = np.concatenate([[0], np.cumsum(np.bincount(c_doc, minlength=nd))]).astype(np.int64)
    # overlap flag: a chunk starts before the running max end of earlier chunks of its doc
    doc_overlap = np.zeros(nd, dtype=bool)
    if len(cs) > 1:
        run_max = np.maximum.accumulate(c_doc * _BIG + ce)
        hit = (c_doc[1:] == c_doc[:-1]) & (c_doc[1:] * _BIG + cs[1:] < run_max[:-1])
        doc_overlap[c_doc[1:][hit]] = True

    return Layout(
        qids=q["qid"].to_list(),
        q_doc_id=q["doc_id"].to_list(),
        qtypes=q["qtype"].to_list(),
        q_doc=q["_d"].to_numpy().astype(np.int64),
        span_ptr=span_ptr,
        gs=qr["start"].to_numpy().astype(np.int64),
        ge=qr["end"].to_numpy().astype(np.int64),
        span_q=qr["_q"].to_numpy().astype(np.int64),
        chunk_ids=ch["chunk_id"].to_list(),
        c_doc=c_doc,
        cs=cs,
        ce=ce,
        ctok=ch["content_tokens"].to_numpy().astype(np.int64),
        ptok=ch["prefix_tokens"].to_numpy().astype(np.int64),
        doc_ptr=doc_ptr,
        doc_overlap=doc_overlap,
    )


class Pairs:
    """Every (gold span, chunk) pair with positive overlap, for queries on the fast path.

    Arrays: ``span`` (index into gs/ge), ``q``, ``c`` (chunk index), ``ov`` (characters in
    common), ``rel`` (binary rule), ``gain`` (share of the span the pair covers). Per
    (query, chunk): ``qc_q``, ``qc_gain_sum`` (static coverage gain), ``qc_rel``. Pairs of
    general-path queries are left out.
    """

    def __init__(self, lay: Layout) -> None:
        fast_span = ~lay.general[lay.span_q] if len(lay.span_q) else np.zeros(0, dtype=bool)
        sp = np.flatnonzero(fast_span)
        d = lay.q_doc[lay.span_q[sp]]
        # chunks of one fast document are sorted by start and, not overlapping, by end too
        ckey_s = lay.c_doc * _BIG + lay.cs
        ckey_e = lay.c_doc * _BIG + lay.ce
        lo = np.searchsorted(ckey_e, d * _BIG + lay.gs[sp], side="right")
        hi = np.searchsorted(ckey_s, d * _BIG + lay.ge[sp], side="left")
        owner, c = _expand(lo, hi)
        span = sp[owner]
        ov = np.minimum(lay.ce[c], lay.ge[span]) - np.maximum(lay.cs[c], lay.gs[span])
        keep = ov > 0
        self.span, self.c, self.ov = span[keep], c[keep], ov[keep]
        self.q = lay.span_q[self.span]
        glen = lay.ge[self.span] - lay.gs[self.span]
        clen = lay.ce[self.c] - lay.cs[self.c]
        self.rel = relevant_pairs(self.ov, clen, glen)
        self.gain = self.ov / glen  # share of the span this pair covers
        nc = max(lay.nc, 1)
        pkey = self.q * nc + self.c
        ukey, inv = np.unique(pkey, return_inverse=True)
        self.qc_q = ukey // nc
        self.qc_gain_sum = np.bincount(inv, weights=self.gain, minlength=len(ukey))
        self.qc_rel = np.bincount(inv, weights=self.rel, minlength=len(ukey)) > 0


@dataclass(eq=False)
class BoundRun:
    """A run laid out against a :class:`Layout` (see the module docstring)."""

    r_q: np.ndarray
    r_c: np.ndarray
    r_pos: np.ndarray
    r_ptr: np.ndarray
    pair_row: np.ndarray
    pair_pos: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    def cached(self, key, compute):
        """Memoise an array shared by several measures of this run."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


class StringCodes:
    """Positions of strings among a fixed list of distinct categories (``-1`` when absent).

    Strings are matched by a 64-bit hash through an integer lookup, and every match is
    confirmed by comparing the strings themselves, so a hash collision can never map a string
    to the wrong position (much faster than hashing strings into a polars ``Enum``).
    """

    _SEED = 20260710

    def __init__(self, categories: Sequence[str]) -> None:
        self.categories = pl.Series(list(categories), dtype=pl.String)
        self.keys = self.categories.hash(self._SEED)
        self.index = pl.Series(np.arange(len(self.categories), dtype=np.int64))
        self.exact = self.keys.n_unique() == len(self.keys)  # no collision among categories
        if not self.exact:
            self.enum = pl.Enum(self.categories)

    def codes(self, values: pl.Series) -> np.ndarray:
        """The position of every value (``-1`` when it is not a category)."""
        values = values.cast(pl.String)
        if len(values) > 64:
            # runs list each query's rows together: look each run of equal values up once
            ids = values.rle_id().to_numpy()
            if ids[-1] + 1 <= len(values) // 4:
                starts = np.flatnonzero(np.diff(ids, prepend=-1))
                return self._codes(values.gather(pl.Series(starts)))[ids]
        return self._codes(values)

    def _codes(self, values: pl.Series) -> np.ndarray:
        if not self.exact:
            phys = values.cast(self.enum, strict=False).to_physical()
            return phys.fill_null(-1).to_numpy().astype(np.int64)
        codes = values.hash(self._SEED).replace_strict(self.keys, self.index, default=-1)
        out = codes.to_numpy().astype(np.int64)
        found = out >= 0
        same = (values == self.categories.gather(pl.Series(np.where(found, out, 0))))
        out[~(same.fill_null(False).to_numpy() & found)] = -1
        return out


def _order(q: np.ndarray, rank: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts rows by ``(q, rank)``; None when they already are."""
    n = len(q)
    if n == 0:
        return None
    if np.all((q[1:] > q[:-1]) | ((q[1:] == q[:-1]) & (rank[1:] > rank[:-1]))):
        return None
    # common case: each query's rows form one block in rank order (runs as retrieval writes
    # them, queries in table order): sort the blocks, not the rows
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.append(change, n)
    bq = q[starts]
    in_block_sorted = np.all((rank[1:] > rank[:-1]) | (q[1:] != q[:-1]))
    if in_block_sorted and len(np.unique(bq)) == len(bq):
        border = np.argsort(bq, kind="stable")
        _, rows = _expand(starts[border], ends[border])
        return rows
    return np.lexsort((rank, q))


def bind_run(run: pl.DataFrame, lay: Layout) -> BoundRun:
    """Validate ``run`` against the layout and lay it out (rows of queries that ``lay`` does
    not score are dropped; an unknown chunk, a repeated rank or chunk within a query, or a null
    rank or chunk id raises ``ValueError``)."""
    _require(run, "run")
    qcodes = lay.qid_codes.codes(run["qid"])
    keep = qcodes >= 0
    all_kept = bool(keep.all())
    r = run if all_kept else run.filter(pl.Series(keep))
    q = qcodes if all_kept else qcodes[keep]
    rank_s = r["rank"].cast(pl.Int64)
    cid = r["chunk_id"].cast(pl.String)
    if rank_s.null_count() or cid.null_count():
        raise ValueError("score_run: the run has null ranks or chunk ids")
    rank = rank_s.to_numpy()
    c = lay.chunk_codes.codes(cid)
    if (c < 0).any():
        bad = np.flatnonzero(c < 0)
        sample = r.select("qid", "rank", "chunk_id")[bad[:3].tolist()].to_dicts()
        raise ValueError(
            f"score_run: {len(bad)} run rows name chunks absent from the chunk table "
            f"(wrong condition?), first: {sample}"
        )
    order = _order(q, rank)
    if order is not None:
        q, rank, c = q[order], rank[order], c[order]
    if len(q) > 1:
        dup = np.flatnonzero((q[1:] == q[:-1]) & (rank[1:] == rank[:-1]))
        if dup.size:
            i = int(dup[0])
            raise ValueError(
                "score_run: the run repeats a rank within a query (ranks must be unique): "
                f"{[{'qid': lay.qids[int(q[i])], 'rank': int(rank[i])}]}"
            )
    counts = np.bincount(q, minlength=lay.nq)
    r_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    r_pos = np.arange(len(q), dtype=np.int64) - r_ptr[q] + 1
    pr = lay.pairs
    width = int(counts.max()) if len(counts) else 0
    if lay.nq * width <= DENSE_LIMIT:
        pair_row, pair_pos = _locate_dense(lay, q, c, r_pos, r_ptr, width, pr)
    else:
        pair_row, pair_pos = _locate_sorted(lay, q, c, r_pos, pr)
    return BoundRun(q, c, r_pos, r_ptr, pair_row, pair_pos)


def _duplicate_error(lay: Layout, qi: int, ci: int) -> ValueError:
    return ValueError(
        "score_run: the run retrieves a chunk twice for a query: "
        f"{[{'qid': lay.qids[qi], 'chunk_id': lay.chunk_ids[ci]}]}"
    )


def _locate_dense(lay, q, c, r_pos, r_ptr, width, pr):
    """Per-query chunk matrix: duplicate check by a row-wise sort, pair lookup by comparison."""
    mat = np.full((lay.nq, max(width, 1)), -1, dtype=np.int64)
    mat[q, r_pos - 1] = c
    srt = np.sort(mat, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
    if dup.any():
        qi, j = np.argwhere(dup)[0]
        raise _duplicate_error(lay, int(qi), int(srt[qi, j]))
    pair_row = np.full(len(pr.q), -1, dtype=np.int64)
    pair_pos = np.zeros(len(pr.q), dtype=np.int64)
    if len(pr.q) and width:
        block = 4096
        for b0 in range(0, len(pr.q), block):
            pq, pc = pr.q[b0 : b0 + block], pr.c[b0 : b0 + block]
            hit = mat[pq] == pc[:, None]
            found = hit.any(axis=1)
            j = hit.argmax(axis=1)
            pair_pos[b0 : b0 + block] = np.where(found, j + 1, 0)
            pair_row[b0 : b0 + block] = np.where(found, r_ptr[pq] + j, -1)
    return pair_row, pair_pos


def _locate_sorted(lay, q, c, r_pos, pr):
    """Same as :func:`_locate_dense` through one sort of the (query, chunk) keys."""
    nc = max(lay.nc, 1)
    rkey = q * nc + c
    order = np.argsort(rkey, kind="stable")
    skey = rkey[order]
    if len(skey) > 1:
        dup = np.flatnonzero(skey[1:] == skey[:-1])
        if dup.size:
            k = int(skey[dup[0]])
            raise _duplicate_error(lay, k // nc, k % nc)
    pkey = pr.q * nc + pr.c
    at = np.searchsorted(skey, pkey)
    at_c = np.minimum(at, max(len(skey) - 1, 0))
    found = (at < len(skey)) & (skey[at_c] == pkey) if len(skey) else np.zeros(len(pkey), bool)
    pair_row = np.where(found, order[at_c] if len(skey) else 0, -1)
    pair_pos = np.where(found, r_pos[np.maximum(pair_row, 0)], 0)
    return pair_row.astype(np.int64), pair_pos.astype(np.int64)


def row_relevance(lay: Layout, br: BoundRun) -> np.ndarray:
    """Binary relevance of every run row (fast-path queries; a fresh array)."""
    def compute() -> np.ndarray:
        out = np.zeros(len(br.r_q), dtype=bool)
        out[br.pair_row[(br.pair_row >= 0) & lay.pairs.rel]] = True
        return out

    return br.cached("row_relevance", compute).copy()
