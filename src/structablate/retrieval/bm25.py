"""The lexical baseline: BM25 gold-top-1 (paper, Appendix I).

BM25 gold-top-1 is the fraction of queries whose **top BM25 chunk over the whole corpus** is
binary-relevant (paper, Appendix C: ``|c∩g|/|g| >= 0.5`` or ``|c∩g|/|c| >= 0.8``, via
:func:`structablate.metrics.relevance.relevant_to_any`) to one of the query's gold spans. A
chunk of another document is never relevant.

Stated choices:

* **chunkset** — whatever chunk table is passed (the workflow passes the gold structural
  chunks, G2); a chunk's BM25 text is its **content** ``text[start:end]``; the prefix is left
  out unless ``include_prefix`` (relevance is on content offsets either way);
* **tokenization** (:func:`bm25_tokenize`) — Unicode NFKD with combining marks removed,
  case-folded, tokens = maximal runs of letters and digits (punctuation separates tokens), no
  stopword removal, no stemming; the same rule as the leakage filter
  (:func:`structablate.text.words.tokenize`);
* **BM25** — ``rank_bm25.BM25Okapi`` with its defaults (``k1`` 1.5, ``b`` 0.75, ``epsilon``
  0.25: a negative idf is floored at ``epsilon`` times the mean idf). ``BM25Okapi`` fits the
  index (term frequencies, document lengths, idf); the scores are ``BM25Okapi.get_scores``'s
  to the bit, computed from contributions precomputed per (term, chunk), as dense rows for
  frequent terms and posting lists for the rest (:class:`BM25Index`; ``get_scores``
  recomputes every weight for every query, hours on 36k chunks × 4k queries); a test checks
  bit-equality with ``get_scores``;
* **scope** — ``corpus`` (default): the top chunk over the whole chunkset; ``document``: the
  top chunk among the chunks of the query's own document (same index, so idf and average
  length still come from the whole chunkset). The paper does not state its scope; on full
  QASPER (4,301 questions, G2 chunks) the document scope gives 19.7% and the corpus scope
  4.2% against the paper's 22.7% (``docs/queries.md``), so the **document scope is the
  comparable figure** (:func:`bm25_report` headlines it);
* **ties** — the top chunk is the first of the maximal scores in chunk-table order
  (``numpy.argmax``); a query with no token in the index scores 0 everywhere and counts as a
  miss unless the first chunk happens to be relevant (``n_zero_score`` reports how many).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from rank_bm25 import BM25Okapi
from scipy import sparse

from structablate.metrics.relevance import relevant_to_any
from structablate.paper import PAPER_BM25_GOLD_TOP1, PAPER_CORPORA
from structablate.text.rouge import rouge_l, rouge_quantiles
from structablate.text.words import tokenize as bm25_tokenize

__all__ = ["BM25Index", "BM25_REPORT_KEYS", "PAPER_GOLD_TOP1", "bm25_gold_top1", "bm25_report",
           "bm25_tokenize", "chunk_index", "evidence_rouge"]


class BM25Index:
    """A ``BM25Okapi`` index over token lists with vectorized scoring.

    A query's scores are those of ``BM25Okapi.get_scores`` to the bit: every chunk's score is
    summed in the query's token order (a repeated token counts again, an unknown one adds
    nothing), one ``idf · weight`` per token, with the same arithmetic. Only the work differs:
    each (term, chunk) contribution ``idf · tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avgdl))`` is
    computed once at index time (as ``get_scores`` computes it), and a query adds up only its
    tokens' contributions, token by token, into one row of chunk scores that starts at 0.

    Two layouts, chosen per term by its document frequency ``df`` (chunks holding it):

    * **dense** (``df > dense_fraction · n_chunks``): the term's contributions over all chunks,
      0.0 where the term is absent; a query token adds the whole row with one vectorized
      ``+=``. Adding ``+0.0`` leaves every sum unchanged (a row starts at ``+0.0`` and a sum
      that started there is never ``-0.0``), so the bits are those of the posting list. Frequent
      terms (the stopwords of questions: on full QASPER's paragraphs 42 terms hold 109,000
      of a query's 125,000 postings on average) cost one contiguous pass instead of a
      scattered add per posting;
    * **sparse** (the rest): a posting list of chunk indices (unique within a term) and
      contributions; a token adds them with one gather-add-scatter ``row[chunks] += contrib``.

    A chunk's additions happen in token order in both layouts, so its float sum (and thus its
    bits) is ``get_scores``'s. ``dense_fraction`` only trades memory (``8 · n_chunks`` bytes per
    dense term; at most ``64 ·`` the number of postings bytes in all, since a dense term holds
    more than ``n_chunks · dense_fraction`` postings; 27 MB on full QASPER's 79,981 paragraphs)
    for speed; 0 makes every term dense, above 1 none.
    """

    def __init__(self, corpus: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25, dense_fraction: float = 0.125):
        if not corpus:
            raise ValueError("BM25 needs at least one chunk")
        self.okapi = BM25Okapi([list(t) for t in corpus], k1=k1, b=b, epsilon=epsilon)
        ok = self.okapi
        self.vocab = {w: i for i, w in enumerate(sorted(ok.idf))}
        self.idf = np.array([ok.idf[w] for w in sorted(ok.idf)], dtype=np.float64)
        rows, cols, vals = [], [], []
        doc_len = np.asarray(ok.doc_len, dtype=np.float64)
        norm = ok.k1 * (1 - ok.b + ok.b * doc_len / ok.avgdl)
        for d, freqs in enumerate(ok.doc_freqs):
            for w, tf in freqs.items():
                rows.append(d)
                cols.append(self.vocab[w])
                vals.append(tf * (ok.k1 + 1) / (tf + norm[d]))
        self.weights = sparse.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (rows, cols)),
            shape=(len(ok.doc_freqs), len(self.vocab)))
        n = self.weights.shape[0]
        # term-major: term j's chunks are wt.indices[wt.indptr[j]:wt.indptr[j + 1]], ascending
        wt = self.weights.T.tocsr()
        wt.sort_indices()
        # and its contributions idf_j · weight, as get_scores multiplies them
        df = np.diff(wt.indptr)
        self._ptr = wt.indptr.tolist()
        self._post_chunk = wt.indices.astype(np.intp)
        self._post_contrib = np.repeat(self.idf, df) * wt.data
        # term j is dense when _dense_row[j] >= 0: its contributions over all chunks are
        # _dense[_dense_row[j]]; otherwise its posting list above is used
        is_dense = df > dense_fraction * n
        dense_row = np.full(len(df), -1, dtype=np.int64)
        dense_row[is_dense] = np.arange(int(is_dense.sum()))
        self._dense_row = dense_row.tolist()
        self._dense = np.zeros((int(is_dense.sum()), n), dtype=np.float64)
        post_term = np.repeat(np.arange(len(df)), df)
        in_dense = is_dense[post_term]
        self._dense[dense_row[post_term[in_dense]], self._post_chunk[in_dense]] = \
            self._post_contrib[in_dense]

    def query_matrix(self, queries: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """``idf``-weighted term counts of the queries (a repeated query term counts again,
        as in ``get_scores``; unknown terms are ignored)."""
        rows, cols, vals = [], [], []
        for qi, toks in enumerate(queries):
            for w in toks:
                j = self.vocab.get(w)
                if j is not None:
                    rows.append(qi)
                    cols.append(j)
                    vals.append(self.idf[j])
        return sparse.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                                 shape=(len(queries), len(self.vocab)))

    def scores(self, queries: Sequence[Sequence[str]]) -> np.ndarray:
        """Dense ``(n_queries, n_chunks)`` scores (``get_scores`` of each query, to the bit)."""
        n = self.weights.shape[0]
        out = np.zeros((len(queries), n))
        for k, toks in enumerate(queries):
            self._row(toks, out[k])
        return out

    def _row(self, tokens: Sequence[str], row: np.ndarray) -> np.ndarray:
        """One query's scores over every chunk, added into ``row`` (all ``+0.0`` on entry),
        token by token in the query's order (class docstring); returns ``row``."""
        vocab, dense_row, dense = self.vocab, self._dense_row, self._dense
        ptr, chunk, contrib = self._ptr, self._post_chunk, self._post_contrib
        for w in tokens:
            j = vocab.get(w)
            if j is None:
                continue
            r = dense_row[j]
            if r >= 0:
                np.add(row, dense[r], out=row)
            else:
                lo, hi = ptr[j], ptr[j + 1]
                row[chunk[lo:hi]] += contrib[lo:hi]
        return row

    def top1(
        self,
        queries: Sequence[Sequence[str]],
        candidates: Sequence[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Index and score of each query's best chunk (first maximum), over all chunks or over
        ``candidates[q]`` (chunk indices in ascending order) for query ``q``."""
        idx = np.empty(len(queries), dtype=np.int64)
        best = np.empty(len(queries), dtype=np.float64)
        row = np.empty(self.weights.shape[0], dtype=np.float64)
        for k, toks in enumerate(queries):
            row.fill(0.0)
            self._row(toks, row)
            if candidates is None:
                i = int(row.argmax())
            else:
                cand = candidates[k]
                i = int(cand[int(row[cand].argmax())])
            idx[k], best[k] = i, row[i]
        return idx, best


def _chunk_texts(chunks: pl.DataFrame, documents: pl.DataFrame, include_prefix: bool
                 ) -> list[str]:
    texts = dict(documents.select("doc_id", "text").iter_rows())
    out = []
    for doc_id, s, e, prefix in chunks.select("doc_id", "start", "end", "prefix").iter_rows():
        if doc_id not in texts:
            raise ValueError(f"chunk of document {doc_id!r} that is not in the documents table")
        body = texts[doc_id][s:e]
        out.append((prefix or "") + body if include_prefix else body)
    return out


def chunk_index(chunks: pl.DataFrame, documents: pl.DataFrame, *, include_prefix: bool = False,
                k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> BM25Index:
    """The BM25 index of a chunk table's texts (content, or prefix + content), tokenized by
    :func:`bm25_tokenize`, in chunk-table order."""
    if "prefix" in chunks.columns:
        chunks = chunks.with_columns(pl.col("prefix").fill_null(""))
    else:
        chunks = chunks.with_columns(pl.lit("").alias("prefix"))
    return BM25Index([bm25_tokenize(t) for t in _chunk_texts(chunks, documents, include_prefix)],
                     k1=k1, b=b, epsilon=epsilon)


def bm25_gold_top1(
    chunks: pl.DataFrame,
    documents: pl.DataFrame,
    queries: pl.DataFrame,
    qrels: pl.DataFrame,
    *,
    include_prefix: bool = False,
    scope: str = "corpus",
    k1: float = 1.5,
    b: float = 0.75,
    epsilon: float = 0.25,
    index: BM25Index | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """BM25 gold-top-1 of ``queries`` over ``chunks`` (module docstring).

    ``scope``: ``corpus`` or ``document`` (module docstring). ``index``: the index of these
    chunks built with these settings (:func:`chunk_index`), to share one between scopes; built
    here when None. Returns the summary (``scope``, ``n_queries``, ``hits``, ``gold_top1``,
    ``by_qtype``, ``n_chunks``, ``n_zero_score``, the stated settings) and a per-query frame
    (qid, doc_id, qtype, top_chunk_id, top_doc_id, score, hit, same_doc).
    """
    if index is None:
        index = chunk_index(chunks, documents, include_prefix=include_prefix, k1=k1, b=b,
                            epsilon=epsilon)
    elif index.weights.shape[0] != chunks.height:
        raise ValueError(f"the BM25 index holds {index.weights.shape[0]} chunks, the chunk "
                         f"table {chunks.height}")
    gold: dict[str, list[tuple[int, int]]] = {}
    for qid, s, e in qrels.select("qid", "start", "end").iter_rows():
        gold.setdefault(qid, []).append((s, e))
    qs = queries.select("qid", "doc_id", "text", "qtype").filter(pl.col("qid").is_in(list(gold)))
    missing = queries.height - qs.height
    if scope not in ("corpus", "document"):
        raise ValueError(f"scope must be 'corpus' or 'document', got {scope!r}")
    cand = None
    if scope == "document":
        by_doc: dict[str, list[int]] = {}
        for i, d in enumerate(chunks["doc_id"].to_list()):
            by_doc.setdefault(d, []).append(i)
        absent = sorted(set(qs["doc_id"].to_list()) - set(by_doc))
        if absent:
            raise ValueError(f"queries on documents without chunks: {absent[:5]}")
        cand = [np.asarray(by_doc[d], dtype=np.int64) for d in qs["doc_id"].to_list()]
    top, score = index.top1([bm25_tokenize(t) for t in qs["text"].to_list()], cand)
    c_ids = chunks["chunk_id"].to_list()
    c_doc = chunks["doc_id"].to_list()
    c_s = chunks["start"].to_list()
    c_e = chunks["end"].to_list()
    rows = []
    for (qid, doc_id, _text, qtype), i, sc in zip(qs.iter_rows(), top.tolist(), score.tolist(),
                                                   strict=True):
        same = c_doc[i] == doc_id
        hit = same and relevant_to_any((c_s[i], c_e[i]), gold[qid])
        rows.append({"qid": qid, "doc_id": doc_id, "qtype": qtype, "top_chunk_id": c_ids[i],
                     "top_doc_id": c_doc[i], "score": float(sc), "hit": bool(hit),
                     "same_doc": bool(same)})
    per_query = pl.DataFrame(rows, schema={
        "qid": pl.String, "doc_id": pl.String, "qtype": pl.String, "top_chunk_id": pl.String,
        "top_doc_id": pl.String, "score": pl.Float64, "hit": pl.Boolean, "same_doc": pl.Boolean})
    n = per_query.height
    by_type = {}
    for qtype in sorted(set(per_query["qtype"].to_list())):
        sub = per_query.filter(pl.col("qtype") == qtype)
        by_type[qtype] = {"n": sub.height, "gold_top1": float(sub["hit"].mean())}
    summary = {
        "scope": scope,
        "n_queries": n,
        "queries_without_qrels": missing,
        "hits": int(per_query["hit"].sum()) if n else 0,
        "gold_top1": float(per_query["hit"].mean()) if n else None,
        "top1_in_gold_document": float(per_query["same_doc"].mean()) if n else None,
        "by_qtype": by_type,
        "n_chunks": chunks.height,
        "n_documents": documents.height,
        "n_zero_score": int((per_query["score"] <= 0).sum()) if n else 0,
        "tokenization": "NFKD, combining marks removed, casefold, [^\\W_]+ runs; "
                        "stopwords kept, no stemming",
        "bm25": {"impl": "rank_bm25.BM25Okapi", "k1": k1, "b": b, "epsilon": epsilon},
        "chunk_text": "prefix + content" if include_prefix else "content only",
        "relevance": "binary: |c∩g|/|g| >= 0.5 or |c∩g|/|c| >= 0.8, any gold span",
    }
    return summary, per_query


def evidence_rouge(
    documents: pl.DataFrame, queries: pl.DataFrame, qrels: pl.DataFrame
) -> tuple[dict[str, Any] | None, pl.DataFrame]:
    """ROUGE-L F1 of each query against its gold evidence (maximum over its spans), with the
    leakage filter's tokenizer; returns quantiles (overall and per qtype) and per-query values."""
    texts = dict(documents.select("doc_id", "text").iter_rows())
    gold: dict[str, list[tuple[str, int, int]]] = {}
    for qid, doc_id, s, e in qrels.select("qid", "doc_id", "start", "end").iter_rows():
        gold.setdefault(qid, []).append((doc_id, s, e))
    qids, types, vals = [], [], []
    for qid, text, qtype in queries.select("qid", "text", "qtype").iter_rows():
        if qid not in gold:
            continue
        qids.append(qid)
        types.append(qtype)
        vals.append(max(rouge_l(text, texts[d][s:e]) for d, s, e in gold[qid]))
    per_query = pl.DataFrame({"qid": qids, "qtype": types, "rouge_l": vals},
                             schema={"qid": pl.String, "qtype": pl.String,
                                     "rouge_l": pl.Float64})
    summary = rouge_quantiles(vals)
    if summary is not None:
        summary["by_qtype"] = {t: rouge_quantiles([v for v, tt in zip(vals, types, strict=True)
                                                   if tt == t]) for t in sorted(set(types))}
    return summary, per_query


PAPER_GOLD_TOP1 = {PAPER_CORPORA[kind].key: value for kind, value in PAPER_BM25_GOLD_TOP1.items()}
"""The paper's BM25 gold-top-1 (Appendix I, Table 10;
:data:`structablate.paper.PAPER_BM25_GOLD_TOP1`) under the keys of ``bm25.json``'s ``paper``
block (Wikipedia as ``wikipedia_fa``)."""

BM25_REPORT_KEYS = (
    "corpus", "chunkset", "headline", "gold_top1_within_document", "gold_top1_corpus_wide",
    "bm25_document", "bm25_corpus", "rouge_l_vs_evidence", "paper",
)
"""Top-level keys of :func:`bm25_report` (the workflow's ``bm25.json``). The report reads
``gold_top1_within_document`` (the headline, comparable to the paper's figures),
``gold_top1_corpus_wide`` and ``chunkset``."""


def bm25_report(
    chunks: pl.DataFrame,
    documents: pl.DataFrame,
    queries: pl.DataFrame,
    qrels: pl.DataFrame,
    *,
    corpus: str | None = None,
    chunkset: str | None = None,
    include_prefix: bool = False,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """The BM25 JSON of a corpus and its per-query frame, with explicit keys
    (:data:`BM25_REPORT_KEYS`):

    * ``gold_top1_within_document`` — BM25 gold-top-1 with the top chunk taken among the
      question's own document's chunks: the figure comparable to the paper's (``headline``);
    * ``gold_top1_corpus_wide`` — the same over the whole chunkset (secondary);
    * ``bm25_document`` / ``bm25_corpus`` — the full :func:`bm25_gold_top1` summaries;
    * ``rouge_l_vs_evidence`` — :func:`evidence_rouge`'s quantiles; ``paper`` — the paper's
      figures.

    The frame has one row per query with qrels: ``qid, top_chunk_corpus, hit_corpus,
    top_chunk_document, hit_document, rouge_l``.
    """
    out: dict[str, Any] = {"corpus": corpus, "chunkset": chunkset,
                           "headline": "gold_top1_within_document"}
    frames = {}
    index = chunk_index(chunks, documents, include_prefix=include_prefix)  # one for both scopes
    for scope in ("document", "corpus"):
        summary, per_query = bm25_gold_top1(chunks, documents, queries, qrels, scope=scope,
                                            include_prefix=include_prefix, index=index)
        out[f"bm25_{scope}"] = summary
        frames[scope] = per_query.select(
            "qid", pl.col("top_chunk_id").alias(f"top_chunk_{scope}"),
            pl.col("hit").alias(f"hit_{scope}"))
    out["gold_top1_within_document"] = out["bm25_document"]["gold_top1"]
    out["gold_top1_corpus_wide"] = out["bm25_corpus"]["gold_top1"]
    rouge, rouge_pq = evidence_rouge(documents, queries, qrels)
    out["rouge_l_vs_evidence"] = rouge
    out["paper"] = {"gold_top1": dict(PAPER_GOLD_TOP1),
                    "gold_top1_scope": "not stated; within-document matches it",
                    "rouge_l_typical_wikipedia_fa": [0.02, 0.13]}
    out = {k: out[k] for k in BM25_REPORT_KEYS}
    per_query = frames["corpus"].join(frames["document"], on="qid").join(
        rouge_pq.select("qid", "rouge_l"), on="qid", how="left")
    return out, per_query
