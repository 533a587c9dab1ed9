"""Validation and array layout shared by the vectorized measures.

:func:`prepare` turns the four input frames into flat numpy arrays:

* queries sorted by ``qid`` (index ``q``), each with a document code and its gold spans as a
  CSR block ``span_ptr[q]:span_ptr[q+1]`` of ``gs``/``ge``;
* the condition's chunks sorted by ``(doc, start, end, chunk_id)`` (index ``c``), with per-document
  blocks ``doc_ptr[d]:doc_ptr[d+1]`` and a flag ``doc_overlap[d]`` set when two chunks of the
  document overlap (such documents take the exact general path);
* the run sorted by ``(q, rank)`` (rows ``r_ptr[q]:r_ptr[q+1]``), with 1-based positions
  ``r_pos`` (ranks are authoritative: they fix the order; gaps in them are closed).

:class:`Pairs` then lists every (gold span, chunk) pair of positive overlap on the query's own
document, which is all the vectorized measures need.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

_BIG = np.int64(1) << np.int64(40)  # offsets are < 2**40; doc * _BIG + offset is a sort key

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


@dataclass
class Prepared:
    qids: list[str]
    q_doc_id: list[str]
    qtypes: list[str]
    q_doc: np.ndarray  # int64 document code per query
    span_ptr: np.ndarray
    gs: np.ndarray
    ge: np.ndarray
    span_q: np.ndarray
    c_doc: np.ndarray
    cs: np.ndarray
    ce: np.ndarray
    ctok: np.ndarray
    ptok: np.ndarray
    doc_ptr: np.ndarray
    doc_overlap: np.ndarray
    r_q: np.ndarray
    r_c: np.ndarray
    r_pos: np.ndarray
    r_ptr: np.ndarray

    @property
    def nq(self) -> int:
        return len(self.qids)

    @property
    def n_spans(self) -> np.ndarray:
        return np.diff(self.span_ptr)

    @property
    def general(self) -> np.ndarray:
        """Queries whose document has overlapping chunks (exact general path)."""
        return self.doc_overlap[self.q_doc]

    @cached_property
    def pairs(self) -> Pairs:
        return Pairs(self)


def prepare(
    run: pl.DataFrame, chunks: pl.DataFrame, qrels: pl.DataFrame, queries: pl.DataFrame
) -> Prepared:
    """Validate the inputs of :func:`structablate.metrics.score_run` and lay them out."""
    for df, name in ((run, "run"), (chunks, "chunks"), (qrels, "qrels"), (queries, "queries")):
        _require(df, name)

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
        .with_row_index("_c")
    )
    nd = docs.len()

    # gold spans
    qr = qrels.select(
        pl.col("qid").cast(pl.String),
        pl.col("doc_id").cast(pl.String).alias("_qrel_doc"),
        pl.col("start").cast(pl.Int64),
        pl.col("end").cast(pl.Int64),
    ).unique()
    qr = qr.join(q.select("qid", "doc_id", "_q"), on="qid", how="inner")
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

    # run rows: only queries we score; chunk ids must exist in this condition
    r = run.select(
        pl.col("qid").cast(pl.String),
        pl.col("rank").cast(pl.Int64),
        pl.col("chunk_id").cast(pl.String),
    ).join(q.select("qid", "_q"), on="qid", how="inner")
    if r["rank"].null_count() or r["chunk_id"].null_count():
        raise ValueError("score_run: the run has null ranks or chunk ids")
    dup = r.filter(pl.struct("qid", "rank").is_duplicated())
    if dup.height:
        raise ValueError(
            "score_run: the run repeats a rank within a query (ranks must be unique): "
            f"{_first(dup)}"
        )
    dup = r.filter(pl.struct("qid", "chunk_id").is_duplicated())
    if dup.height:
        raise ValueError(f"score_run: the run retrieves a chunk twice for a query: {_first(dup)}")
    r = r.join(ch.select("chunk_id", "_c"), on="chunk_id", how="left")
    unknown = r.filter(pl.col("_c").is_null())
    if unknown.height:
        raise ValueError(
            f"score_run: {unknown.height} run rows name chunks absent from the chunk table "
            f"(wrong condition?), first: {_first(unknown)}"
        )
    r = r.sort(["_q", "rank"])
    r_q = r["_q"].to_numpy().astype(np.int64)
    r_counts = np.bincount(r_q, minlength=q.height)
    r_ptr = np.concatenate([[0], np.cumsum(r_counts)]).astype(np.int64)
    r_pos = np.arange(len(r_q), dtype=np.int64) - r_ptr[r_q] + 1

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

    return Prepared(
        qids=q["qid"].to_list(),
        q_doc_id=q["doc_id"].to_list(),
        qtypes=q["qtype"].to_list(),
        q_doc=q["_d"].to_numpy().astype(np.int64),
        span_ptr=span_ptr,
        gs=qr["start"].to_numpy().astype(np.int64),
        ge=qr["end"].to_numpy().astype(np.int64),
        span_q=qr["_q"].to_numpy().astype(np.int64),
        c_doc=c_doc,
        cs=cs,
        ce=ce,
        ctok=ch["content_tokens"].to_numpy().astype(np.int64),
        ptok=ch["prefix_tokens"].to_numpy().astype(np.int64),
        doc_ptr=doc_ptr,
        doc_overlap=doc_overlap,
        r_q=r_q,
        r_c=r["_c"].to_numpy().astype(np.int64),
        r_pos=r_pos,
        r_ptr=r_ptr,
    )


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[i], hi[i])`` return (owner i, value) of every element, in order."""
    n = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), n)
    start = np.cumsum(n) - n
    value = lo[owner] + (np.arange(int(n.sum()), dtype=np.int64) - start[owner])
    return owner, value


class Pairs:
    """Every (gold span, chunk) pair with positive overlap, for queries on the fast path.

    Arrays: ``span`` (index into gs/ge), ``q``, ``c`` (chunk index), ``ov`` (characters in
    common), ``rel`` (binary rule), ``row`` (run row of chunk ``c`` for query ``q``, -1 if the
    run does not retrieve it). Pairs of general-path queries are left out.
    """

    def __init__(self, p: Prepared) -> None:
        fast_span = ~p.general[p.span_q] if len(p.span_q) else np.zeros(0, dtype=bool)
        sp = np.flatnonzero(fast_span)
        d = p.q_doc[p.span_q[sp]]
        # chunks of one fast document are sorted by start and, not overlapping, by end too
        ckey_s = p.c_doc * _BIG + p.cs
        ckey_e = p.c_doc * _BIG + p.ce
        lo = np.searchsorted(ckey_e, d * _BIG + p.gs[sp], side="right")
        hi = np.searchsorted(ckey_s, d * _BIG + p.ge[sp], side="left")
        owner, c = _expand(lo, hi)
        span = sp[owner]
        ov = np.minimum(p.ce[c], p.ge[span]) - np.maximum(p.cs[c], p.gs[span])
        keep = ov > 0
        self.span, self.c, self.ov = span[keep], c[keep], ov[keep]
        self.q = p.span_q[self.span]
        glen = p.ge[self.span] - p.gs[self.span]
        clen = p.ce[self.c] - p.cs[self.c]
        from .relevance import relevant_pairs

        self.rel = relevant_pairs(self.ov, clen, glen)
        self.gain = self.ov / glen  # share of the span this pair covers
        # locate each pair's chunk in the query's run
        nc = max(len(p.cs), 1)
        rkey = p.r_q * nc + p.r_c
        order = np.argsort(rkey, kind="stable")
        skey = rkey[order]
        pkey = self.q * nc + self.c
        at = np.searchsorted(skey, pkey)
        at_c = np.minimum(at, max(len(skey) - 1, 0))
        found = (at < len(skey)) & (skey[at_c] == pkey) if len(skey) else np.zeros(len(pkey), bool)
        self.row = np.where(found, order[at_c] if len(skey) else 0, -1)
        # per (query, chunk) aggregates: static gain and binary relevance
        ukey, inv = np.unique(pkey, return_inverse=True)
        self.qc_q = ukey // nc
        self.qc_gain_sum = np.bincount(inv, weights=self.gain, minlength=len(ukey))
        self.qc_rel = np.bincount(inv, weights=self.rel, minlength=len(ukey)) > 0


def discounts(n: int) -> np.ndarray:
    """``1 / log2(i + 1)`` for ranks ``i = 1..n``."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
