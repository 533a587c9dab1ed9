"""Benchmark: the 8 chunksets of the full QASPER, tokenizing once per corpus vs per chunkset.

New flow (the workflow's): one corpus job tokenizes every document once and splits its
paragraphs into sentences (``tokenize_corpus``), writes the table, and each of the 8 chunk
jobs reads it; content tokens come from the table. Anchor (the flow before): each chunk job
tokenizes the documents itself, splits sentences itself and counts every chunk's content by
re-tokenizing it. Both flows run the same planner, so the ratio isolates the data flow; the
chunk tables of both are checked equal. Wall and CPU seconds (the machine is shared).

    python bench/bench_chunking.py --qasper DATA/qasper [--work DIR] [--docs N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _qasper import CHUNKSETS, TOKENIZER, corpus_tables, table_row

from structablate.chunking.build import build_chunks, chunk_stats
from structablate.chunking.tokens import (
    TokenCounter,
    read_corpus_tokens,
    tokenize_corpus,
    write_corpus_tokens,
)
from structablate.settings import ChunkingSettings
from structablate.study import condition


class PerChunkCounter(TokenCounter):
    """The tokenizer, counting every chunk by re-tokenizing it (the flow before)."""

    @property
    def whitespace_local(self) -> bool:
        return False


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qasper", required=True, help="directory with the three QASPER v0.3 files")
    ap.add_argument("--work", default=None, help="cache directory for the corpus tables")
    ap.add_argument("--docs", type=int, default=None, help="first N papers only")
    ap.add_argument("--chunksets", nargs="+", default=list(CHUNKSETS))
    ap.add_argument("--skip-anchor", action="store_true")
    args = ap.parse_args(argv)
    t = corpus_tables(args.qasper, args.work, args.docs)
    d, p, s = t["documents"], t["paragraphs"], t["sections"]
    counter = TokenCounter.from_model(TOKENIZER)
    params = ChunkingSettings()
    print(f"{d.height} documents; chunksets {args.chunksets}")

    # new flow
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        write_corpus_tokens(tokenize_corpus(d, counter, paragraphs=p, progress=False),
                            Path(tmp) / "tokens.parquet")
        tok_w, tok_c = time.perf_counter() - t0, time.process_time() - c0
        new, new_w, new_c = {}, tok_w, tok_c
        for cs in args.chunksets:
            t0, c0 = time.perf_counter(), time.process_time()
            table = read_corpus_tokens(Path(tmp) / "tokens.parquet")  # each job reads it
            new[cs] = build_chunks(condition(cs), d, p, s, counter, params, size_reference=s,
                                   progress=False, tokens=table)
            w, c = time.perf_counter() - t0, time.process_time() - c0
            new_w, new_c = new_w + w, new_c + c
            st = chunk_stats(new[cs], params, s)
            print(f"  {cs:6s} {w:6.1f}s wall {c:6.1f}s cpu  {new[cs].height} chunks, max "
                  f"{st['content_tokens_max']} tokens (bound {st['structural_bound']}), "
                  f"{st['n_cross_top']} across top-level sections")
    print(f"new flow: tokenize once {tok_w:.1f}s wall {tok_c:.1f}s cpu; total {new_w:.1f}s wall "
          f"{new_c:.1f}s cpu")
    if args.skip_anchor:
        table_row(f"chunking, {len(args.chunksets)} chunksets, {d.height} papers",
                  f"{new_w:.1f} s wall / {new_c:.1f} s cpu", "per-chunkset tokenization: skipped",
                  None)
        return

    slow = PerChunkCounter(counter._tok)
    old_w = old_c = 0.0
    for cs in args.chunksets:
        t0, c0 = time.perf_counter(), time.process_time()
        old = build_chunks(condition(cs), d, p, s, slow, params, size_reference=s,
                           progress=False)
        w, c = time.perf_counter() - t0, time.process_time() - c0
        old_w, old_c = old_w + w, old_c + c
        assert old.equals(new[cs]), f"{cs}: the two flows give different chunk tables"
        print(f"  anchor {cs:6s} {w:6.1f}s wall {c:6.1f}s cpu")
    print(f"per-chunkset tokenization: {old_w:.1f}s wall {old_c:.1f}s cpu; tables identical")
    table_row(f"chunking, {len(args.chunksets)} chunksets, {d.height} papers",
              f"{new_w:.1f} s wall / {new_c:.1f} s cpu",
              f"tokenize per chunkset {old_w:.1f} s wall / {old_c:.1f} s cpu",
              new_c / old_c, "ratio of cpu seconds; tables identical")


if __name__ == "__main__":
    main()
