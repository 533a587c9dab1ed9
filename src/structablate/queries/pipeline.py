"""Synthetic query generation with leakage control (paper, Appendix F).

:func:`generate_queries` runs the whole funnel on a list of documents:

1. **spans** — :func:`~structablate.queries.spans.sample_candidates` picks each candidate's gold
   span(s) (seeded; the model never chooses evidence);
2. **write** — one LLM call per candidate sees only the evidence text and writes a query
   (:mod:`~structablate.queries.prompts`); an answer without a usable query (unparsable, fewer
   than ``min_query_words`` words, too long, a degenerate repetition:
   :func:`unusable_reason`) is dropped (``no_query``);
3. **filter** — :func:`~structablate.queries.leakage.check_leakage` against the gold span(s)
   (``query_leak`` when it fails);
4. **paraphrase** — a second call rewrites each passing query without seeing the evidence; the
   paraphrase must pass the same filter (``no_paraphrase`` / ``paraphrase_leak``); passing
   paraphrases are the **survivors** and the paraphrase is what ships;
5. **balance** — :func:`~structablate.queries.balance.balance` picks ``per_type`` finals per type.

All generation goes through the cached :class:`~structablate.llm.client.LLMClient`: the first
calls of every candidate as one :meth:`generate_many` batch, then the paraphrases as another, so
a rerun replays from the cache and loads no model.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from structablate.corpus.flatten import FlatDocument
from structablate.llm.backends import ContextOverflowError
from structablate.queries.balance import balance
from structablate.queries.config import QueryGenSettings
from structablate.queries.leakage import LeakageCheck, check_leakage
from structablate.queries.prompts import (
    paraphrase_messages,
    parse_query,
    query_schema,
    writer_messages,
)
from structablate.queries.spans import Candidate, sample_candidates
from structablate.settings import dump
from structablate.tables import frame
from structablate.text.rouge import rouge_quantiles
from structablate.text.words import tokenize

log = logging.getLogger(__name__)

PAPER_FUNNEL = {
    "generated": 2306,
    "survivors": 1945,
    "finals": 951,
    "finals_per_type": {"factoid": 250, "underspecified": 250, "structural": 250,
                        "multihop": 201},
    "documents_with_finals": 184,
    "documents": 200,
    "rouge_l_typical": [0.02, 0.13],
}
STATUSES = ("no_query", "query_leak", "no_paraphrase", "paraphrase_leak", "survivor", "final")


@dataclass
class QueryGenResult:
    queries: pl.DataFrame
    """Contract ``queries`` table of the finals, with provenance columns."""
    qrels: pl.DataFrame
    """Contract ``qrels`` table of the finals (one row per gold span)."""
    candidates: pl.DataFrame
    """Every candidate with its span(s), both generations, filter values and final status."""
    funnel: dict[str, Any]


def _generate(client, requests) -> list[str | None]:
    """Answers in order; ``None`` for a request the backend cannot fit in its context."""
    try:
        return client.generate_many(requests)
    except ContextOverflowError as exc:
        if len(requests) == 1:
            log.warning("%s", exc)
            return [None]
        return [_generate(client, [r])[0] for r in requests]


def unusable_reason(q: str | None, cfg: QueryGenSettings) -> str | None:
    """Why a parsed answer is not a usable query (``None``: usable): ``unparsable``,
    ``too_short`` (< ``min_query_words`` words), ``too_long`` (> ``max_query_chars``
    characters or > ``max_query_words`` words), ``repetitive`` (at least 8 tokens, fewer than
    ``min_distinct_ratio`` of them distinct: a degenerate loop such as "the crew, the crew, …").
    """
    if q is None:
        return "unparsable"
    words = q.split()
    if len(words) < cfg.min_query_words:
        return "too_short"
    if len(q) > cfg.max_query_chars or len(words) > cfg.max_query_words:
        return "too_long"
    toks = tokenize(q)
    if len(toks) >= 8 and len(set(toks)) < cfg.min_distinct_ratio * len(toks):
        return "repetitive"
    return None


def _usable(q: str | None, cfg: QueryGenSettings, reasons: Counter, step: str) -> str | None:
    why = unusable_reason(q, cfg)
    if why is not None:
        reasons[f"{step}:{why}"] += 1
        return None
    return q


def generate_queries(
    docs: Sequence[FlatDocument],
    client,
    cfg: QueryGenSettings | None = None,
    *,
    progress_log: bool = True,
) -> QueryGenResult:
    """Run the funnel (module docstring) over ``docs`` with the LLM ``client``."""
    cfg = cfg or QueryGenSettings()
    by_id = {d.doc_id: d for d in docs}
    cands = sample_candidates(docs, cfg)
    schema = query_schema(cfg.max_query_chars) if cfg.use_schema else None

    def evidence(c: Candidate) -> list[str]:
        text = by_id[c.doc_id].text
        return [text[s:e] for s, e in c.spans]

    def check(q: str, c: Candidate) -> LeakageCheck:
        return check_leakage(q, evidence(c), rouge_max=cfg.rouge_max,
                             ngram_block=cfg.ngram_block)

    reqs = [client.request(writer_messages(c.qtype, evidence(c), cfg.max_evidence_chars),
                           json_schema=schema, max_tokens=cfg.max_tokens) for c in cands]
    if progress_log:
        log.info("writing %d candidate queries over %d documents", len(reqs), len(docs))
    raw = _generate(client, reqs)
    unusable: Counter = Counter()
    rec: list[dict[str, Any]] = []
    para_idx: list[int] = []
    for i, (c, answer) in enumerate(zip(cands, raw, strict=True)):
        r: dict[str, Any] = {
            "qid": c.qid, "doc_id": c.doc_id, "qtype": c.qtype,
            "starts": [s for s, _ in c.spans], "ends": [e for _, e in c.spans],
            "top_sections": list(c.top_sections), "query": None, "query_rouge_l": None,
            "query_shared_ngrams": [], "paraphrase": None, "paraphrase_rouge_l": None,
            "paraphrase_shared_ngrams": [], "status": "no_query",
        }
        q = _usable(parse_query(answer), cfg, unusable, "query")
        if q is not None:
            chk = check(q, c)
            r.update(query=q, query_rouge_l=chk.rouge_l, query_shared_ngrams=list(chk.shared))
            if not chk.passed:
                r["status"] = "query_leak"
            elif cfg.paraphrase:
                para_idx.append(i)
            else:
                r.update(paraphrase=None, status="survivor")
        rec.append(r)

    if para_idx:
        preqs = [client.request(paraphrase_messages(cands[i].qtype, rec[i]["query"]),
                                json_schema=schema, max_tokens=cfg.max_tokens)
                 for i in para_idx]
        if progress_log:
            log.info("paraphrasing %d queries that passed the filter", len(preqs))
        for i, answer in zip(para_idx, _generate(client, preqs), strict=True):
            p = _usable(parse_query(answer), cfg, unusable, "paraphrase")
            if p is None:
                rec[i]["status"] = "no_paraphrase"
                continue
            chk = check(p, cands[i])
            rec[i].update(paraphrase=p, paraphrase_rouge_l=chk.rouge_l,
                          paraphrase_shared_ngrams=list(chk.shared),
                          status="survivor" if chk.passed else "paraphrase_leak")

    survivors = [(r["qid"], r["doc_id"], r["qtype"]) for r in rec if r["status"] == "survivor"]
    finals = set(balance(survivors, cfg.per_type, cfg.seed, cfg.types))
    for r in rec:
        if r["qid"] in finals:
            r["status"] = "final"
        r["text"] = r["paraphrase"] if cfg.paraphrase else r["query"]
        r["rouge_l"] = r["paraphrase_rouge_l"] if cfg.paraphrase else r["query_rouge_l"]

    candidates = _candidates_frame(rec)
    chosen = [r for r in rec if r["status"] == "final"]
    queries = frame("queries", {
        "qid": [r["qid"] for r in chosen], "doc_id": [r["doc_id"] for r in chosen],
        "text": [r["text"] for r in chosen], "qtype": [r["qtype"] for r in chosen],
    }).with_columns(
        pl.Series("original_query", [r["query"] for r in chosen], dtype=pl.String),
        pl.Series("paraphrase", [r["paraphrase"] for r in chosen], dtype=pl.String),
        pl.Series("rouge_l", [r["rouge_l"] for r in chosen], dtype=pl.Float64),
        pl.Series("rouge_l_original", [r["query_rouge_l"] for r in chosen], dtype=pl.Float64),
        pl.Series("n_spans", [len(r["starts"]) for r in chosen], dtype=pl.Int32),
        pl.Series("top_sections", [r["top_sections"] for r in chosen],
                  dtype=pl.List(pl.Int32)),
    )
    qrel_rows: dict[str, list] = {"qid": [], "doc_id": [], "start": [], "end": [], "part": []}
    for r in chosen:
        for k, (s, e) in enumerate(zip(r["starts"], r["ends"], strict=True)):
            qrel_rows["qid"].append(r["qid"])
            qrel_rows["doc_id"].append(r["doc_id"])
            qrel_rows["start"].append(s)
            qrel_rows["end"].append(e)
            qrel_rows["part"].append(k)
    qrels = frame("qrels", qrel_rows).with_columns(pl.col("part").cast(pl.Int32))
    funnel = funnel_report(rec, cfg, n_docs=len(docs), llm=client.stats.as_dict(),
                           model=getattr(client, "model", None))
    funnel["unusable_reasons"] = dict(sorted(unusable.items()))
    return QueryGenResult(queries, qrels, candidates, funnel)


def _candidates_frame(rec: list[dict[str, Any]]) -> pl.DataFrame:
    cols = ["qid", "doc_id", "qtype", "status", "starts", "ends", "top_sections", "query",
            "query_rouge_l", "query_shared_ngrams", "paraphrase", "paraphrase_rouge_l",
            "paraphrase_shared_ngrams", "text", "rouge_l"]
    schema = {
        "qid": pl.String, "doc_id": pl.String, "qtype": pl.String, "status": pl.String,
        "starts": pl.List(pl.Int64), "ends": pl.List(pl.Int64),
        "top_sections": pl.List(pl.Int32), "query": pl.String, "query_rouge_l": pl.Float64,
        "query_shared_ngrams": pl.List(pl.String), "paraphrase": pl.String,
        "paraphrase_rouge_l": pl.Float64, "paraphrase_shared_ngrams": pl.List(pl.String),
        "text": pl.String, "rouge_l": pl.Float64,
    }
    return pl.DataFrame({c: [r[c] for r in rec] for c in cols}, schema=schema)


def funnel_report(rec: list[dict[str, Any]], cfg: QueryGenSettings, *, n_docs: int,
                  llm: dict | None = None, model: str | None = None) -> dict[str, Any]:
    """Counts per type at every step, the finals' ROUGE-L quantiles, and the paper's figures."""
    steps = ("candidates", "generated", "passed_filter", "paraphrased", "survivors", "finals")
    per_type: dict[str, dict[str, int]] = {}
    for qtype in cfg.types:
        rs = [r for r in rec if r["qtype"] == qtype]
        st = Counter(r["status"] for r in rs)
        gen = len(rs) - st["no_query"]
        passed = gen - st["query_leak"]
        paraphrased = passed - st["no_paraphrase"] if cfg.paraphrase else passed
        per_type[qtype] = {
            "candidates": len(rs), "generated": gen, "passed_filter": passed,
            "paraphrased": paraphrased, "survivors": st["survivor"] + st["final"],
            "finals": st["final"],
        }
    total = {s: sum(v[s] for v in per_type.values()) for s in steps}
    finals = [r for r in rec if r["status"] == "final"]
    reasons: Counter = Counter()
    for r in rec:
        if r["status"] in ("query_leak", "paraphrase_leak"):
            shared = r["query_shared_ngrams" if r["status"] == "query_leak"
                       else "paraphrase_shared_ngrams"]
            rouge = r["query_rouge_l" if r["status"] == "query_leak" else "paraphrase_rouge_l"]
            kinds = [k for k, hit in (("rouge", rouge > cfg.rouge_max), ("ngram", bool(shared)))
                     if hit]
            reasons[f"{r['status']}:{'+'.join(kinds)}"] += 1
    return {
        "documents": n_docs,
        "documents_with_candidates": len({r["doc_id"] for r in rec}),
        "documents_with_finals": len({r["doc_id"] for r in finals}),
        "per_type": per_type,
        "total": total,
        "funnel": [["generated", total["generated"]], ["survivors", total["survivors"]],
                   ["finals", total["finals"]]],
        "statuses": dict(sorted(Counter(r["status"] for r in rec).items())),
        "leak_reasons": dict(sorted(reasons.items())),
        "rouge_l_finals": rouge_quantiles([r["rouge_l"] for r in finals]),
        "rouge_l_finals_original": rouge_quantiles([r["query_rouge_l"] for r in finals]),
        "paper": PAPER_FUNNEL,
        "config": dump(cfg),
        "model": model,
        "llm": llm,
    }
