"""Benchmark local generation: LLM structure induction and A1 contexts on QASPER papers.

Runs with a fresh (cold) cache, so every call is generated, and writes a JSON summary:
generation tokens/s, prompt tokens, seconds per document for induction, and seconds per
context (the first context of a document pays for the document prefix, the rest reuse it).

    python bench/bench_llm.py --model qwen2.5-coder-0.5b-instruct-q4_k_m --docs 2 \
        --qasper DATA/qasper/qasper-test-v0.3.json --out bench/out/llm_qwen05b.json

``--qasper`` defaults to ``$STRUCTABLATE_DATA/qasper/qasper-test-v0.3.json``.

``--model`` is a known packaged GGUF name or a path (see structablate.llm.gguf).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from benchdata import default_data_file, require_file

from structablate.corpus.qasper import flatten_paper
from structablate.llm.client import client_from_config
from structablate.llm.contextualize import contextualize
from structablate.structure import induce_documents

QASPER = ("qasper", "qasper-test-v0.3.json")


def qasper_docs(path: str, n: int):
    """The first ``n`` papers (by id) of a QASPER v0.3 file, flattened as the build does."""
    data = json.load(open(path, encoding="utf-8"))
    return [flatten_paper(pid, data[pid]) for pid in sorted(data)[:n]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    ap.add_argument("--qasper", default=default_data_file(*QASPER),
                    help="QASPER v0.3 JSON (default: $STRUCTABLATE_DATA/qasper/...)")
    ap.add_argument("--docs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--n-ctx", type=int, default=12288)
    ap.add_argument("--max-prompt-chars", type=int, default=24000)
    ap.add_argument("--contexts", type=int, default=4, help="chunks contextualized per doc")
    ap.add_argument("--out", default="bench/out/llm.json")
    args = ap.parse_args()

    path = require_file(args.qasper, what="bench_llm", flag="--qasper PATH", parts=QASPER)
    docs = qasper_docs(str(path), args.docs)
    tmp = tempfile.mkdtemp(prefix="bench_llm_")
    llm = {"model": args.model, "backend": "llamacpp", "cache": f"{tmp}/gen.sqlite",
           "llamacpp": {"n_ctx": args.n_ctx, "n_threads": args.threads}}
    if Path(args.model).is_file():
        llm["llamacpp"]["model_path"] = args.model
    result: dict = {"model": args.model, "machine": platform.platform(),
                    "cpus": os.cpu_count(), "threads": args.threads, "documents": []}
    for d in docs:  # one document at a time, for per-document wall time
        t0 = time.perf_counter()
        pairs, rep = induce_documents([d], {"inducer": "llm",
                                            "max_prompt_chars": args.max_prompt_chars}, llm)
        wall = time.perf_counter() - t0
        entry = {"doc_id": d.doc_id, "paragraphs": len(d.paragraphs), "chars": len(d.text),
                 "gold_sections": len(d.sections), "induced_sections": len(pairs[0][1]),
                 "status": next(k for k, v in rep["statuses"].items() if v),
                 "truncated": bool(rep["truncated_paragraphs"]), "windowed": bool(rep["windowed"]),
                 "induction_wall_s": round(wall, 2), **rep["llm"]}
        print(json.dumps(entry), flush=True)
        result["documents"].append(entry)
    # A1 contexts: chunks = the first paragraphs of each document
    client = client_from_config(llm)
    ctx = []
    for d in docs:
        for i in range(min(args.contexts, len(d.paragraphs))):
            t0 = time.perf_counter()
            contextualize(d.text, [d.paragraph_text(i)], client, max_tokens=100,
                          max_doc_chars=args.max_prompt_chars)
            ctx.append({"doc_id": d.doc_id, "chunk": i, "seconds": time.perf_counter() - t0})
            print(json.dumps(ctx[-1]), flush=True)
    result["contexts"] = ctx
    result["contexts_llm"] = client.stats.as_dict()
    first = [c["seconds"] for c in ctx if c["chunk"] == 0]
    rest = [c["seconds"] for c in ctx if c["chunk"] > 0]
    result["summary"] = {
        "induction_s_per_doc": round(sum(e["induction_wall_s"] for e in result["documents"])
                                     / len(docs), 1),
        "induction_completion_tokens_per_s": round(
            sum(e["completion_tokens"] for e in result["documents"])
            / sum(e["generation_seconds"] for e in result["documents"]), 1),
        "context_first_chunk_s": round(sum(first) / len(first), 1) if first else None,
        "context_other_chunks_s": round(sum(rest) / len(rest), 1) if rest else None,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result["summary"], sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
