"""CPU-seconds per A1 call (chunk context) with llama.cpp, by worker layout and prefix reuse.

Writes the A1 contexts of the first ``--chunks`` fixed windows of ONE document of the bundled
QASPER sample with a fresh generation cache, and reports the CPU time of this process and its
children (the worker processes; model loading included) per call, the wall time, and the
contexts themselves (to compare layouts: they must be equal).

Layouts:

* ``in-process``: the backend in this process with ``--threads`` llama.cpp threads (the
  layout before worker processes; its default was every core);
* ``per-core``: ``--processes`` worker processes of one thread each, each owning whole
  documents (:func:`structablate.settings.one_process_per_core`);
* ``no-reuse``: in process, with llama.cpp's KV cache cleared before every call (what each call
  costs when it pays for the whole document).

    nice -n 5 python bench/bench_prefix_reuse.py --model smollm2-135m-instruct-q4_1 \\
        --layout per-core --processes 2 --chunks 4 --out bench/out/prefix_per_core.json

Measured 2026-12-07 on the 2-core development machine under load (load average 6.5-11),
SmolLM2-135M Q4_1, paper 1608.07836 (13,624 characters, 3,250 prompt tokens), 4 calls, equal
contexts in every run: ``--layout in-process --threads 2`` with main's code (its default
``n_threads``, every core) 264.2 CPU-s, 66.1 per call; ``--layout per-core --processes 2``
100.6 and 106.3 CPU-s, 25.1 and 26.6 per call (2.5-2.6x less). Both reuse the document's KV
cache (llama.cpp: "891 prefix-match hit" on a 1,040-token prompt, the later call 7 CPU-s
against 19 for the first): the gain is the layout, one thread per process.

Rounds, 2026-12-07 22:42-23:06 UTC, same machine, model and paper, 2 calls per run, layouts
interleaved, each run in its own process:

    nice -n 5 python bench/bench_prefix_reuse.py --model <SmolLM2 Q4_1 .gguf> --threads 2 \\
        --processes 2 --chunks 2 --rounds 3 --out bench/out/prefix_rounds.json

4 of 9 runs finished before the load (other jobs) reached 7.5 and the run was stopped.
CPU-s per call: ``in-process`` (2 threads, reuse) 94.7 (1 run, load 4.8-3.6); ``per-core``
26.5 / 32.3 / 38.0 min / median / max (2 runs, load 2.6-3.6); ``no-reuse`` (2 threads, KV
cache cleared) 45.9 (1 run, load 2.8-2.7; the stopped round-1 run had spent 222 CPU-s on its 2
calls at load 7.2-7.5). The 2-thread layouts' CPU-s follow the load (a thread spins while it
waits for the other on a shared core), so these runs do not separate reuse from no reuse; see
docs/llm.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from structablate.corpus.qasper import flatten_paper
from structablate.llm.client import client_from_config
from structablate.llm.contextualize import contextualize_chunks

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "resources" / "qasper" / "qasper-sample-v0.3.json"


def sample_document(doc_id: str):
    """One paper of the bundled QASPER sample, flattened as the QASPER build does."""
    return flatten_paper(doc_id, json.loads(SAMPLE.read_text(encoding="utf-8"))[doc_id])


def windows(text: str, n: int, size: int) -> list[tuple[int, int]]:
    """The first ``n`` windows of about ``size`` characters, cut at a space."""
    out, a = [], 0
    while len(out) < n and a < len(text):
        b = min(len(text), a + size)
        if b < len(text):
            b = text.rfind(" ", a + size // 2, b) + 1 or b
        out.append((a, b))
        a = b
    return out


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct-q4_1",
                    help="a packaged GGUF name or a .gguf path (structablate.llm.gguf)")
    ap.add_argument("--doc", default="1608.07836", help="paper id in the bundled sample")
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--chunk-chars", type=int, default=1200)
    ap.add_argument("--layout", choices=("in-process", "per-core", "no-reuse"),
                    default="per-core")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (in process)")
    ap.add_argument("--processes", type=int, default=2, help="worker processes (per-core)")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--out", default="bench/out/prefix_reuse.json")
    ap.add_argument("--rounds", type=int, default=0,
                    help="run --layouts in turn this many rounds, each run in its own process, "
                         "and summarise CPU-s per call (min / median / max) and load average")
    ap.add_argument("--layouts", default="in-process,per-core,no-reuse",
                    help="comma-separated layouts for --rounds")
    args = ap.parse_args()
    if args.rounds > 0:
        run_rounds(args)
        return

    doc = sample_document(args.doc)
    spans = windows(doc.text, args.chunks, args.chunk_chars)
    chunks = pl.DataFrame({"chunk_id": [f"A1:{doc.doc_id}:{i}" for i in range(len(spans))],
                           "doc_id": [doc.doc_id] * len(spans),
                           "start": [a for a, _ in spans], "end": [b for _, b in spans]})
    documents = pl.DataFrame({"doc_id": [doc.doc_id], "text": [doc.text]})
    tmp = tempfile.mkdtemp(prefix="bench_prefix_")
    block: dict = {"n_ctx": args.n_ctx}
    if args.layout == "per-core":
        block.update(processes=args.processes, n_threads=1)
    else:
        block.update(n_threads=args.threads)
    if Path(args.model).is_file():
        block["model_path"] = args.model
    llm = {"model": args.model, "backend": "llamacpp", "cache": f"{tmp}/gen.jsonl",
           "llamacpp": block}
    client = client_from_config(llm)
    if args.layout == "no-reuse":  # clear the KV cache before every call
        backend = client.backend
        plain = backend.generate

        def fresh(request):
            backend.llm.reset()
            backend.llm._ctx.kv_cache_clear()
            return plain(request)

        backend.generate = fresh
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    out = contextualize_chunks(chunks, documents, client, lambda s: len(s.split()),
                               max_doc_chars=3 * (args.n_ctx - 400) - 2 * args.chunk_chars)
    stats = client.stats.as_dict()
    client.close()  # joins the worker processes: their CPU time counts from here
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    calls = stats["generated"]
    result = {"layout": args.layout, "model": args.model, "doc_id": doc.doc_id,
              "doc_chars": len(doc.text), "calls": calls, "threads": args.threads,
              "processes": args.processes if args.layout == "per-core" else 1,
              "cpus": os.cpu_count(), "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
              "cpu_s_per_call": round(cpu / max(1, calls), 2), "llm": stats,
              "contexts": out["prefix"].to_list()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    json.dump({k: v for k, v in result.items() if k not in ("contexts", "llm")}, sys.stdout)
    print()


def run_rounds(args: argparse.Namespace) -> None:
    """Interleave the layouts over ``args.rounds`` rounds, each run in a fresh process.

    The order of the layouts rotates by one every round. Writes every run and the summary to
    ``args.out`` and prints, per layout, CPU-seconds per call (min / median / max over rounds)
    and the 1-minute load average read before and after each run (min / max). The contexts of
    every run must be equal (the run stops with an error naming the layout and round otherwise).
    """
    layouts = [s.strip() for s in args.layouts.split(",") if s.strip()]
    bad = [name for name in layouts if name not in ("in-process", "per-core", "no-reuse")]
    if bad:
        raise SystemExit(f"--layouts: unknown layout(s) {bad}; use in-process, per-core, no-reuse")
    tmp = Path(tempfile.mkdtemp(prefix="bench_prefix_rounds_"))
    runs: list[dict] = []
    reference: list[str] | None = None
    for r in range(args.rounds):
        order = layouts[r % len(layouts):] + layouts[:r % len(layouts)]
        for layout in order:
            out = tmp / f"r{r}-{layout}.json"
            load = os.getloadavg()[0]
            subprocess.run([sys.executable, __file__, "--model", args.model, "--doc", args.doc,
                            "--chunks", str(args.chunks), "--chunk-chars", str(args.chunk_chars),
                            "--layout", layout, "--threads", str(args.threads),
                            "--processes", str(args.processes), "--n-ctx", str(args.n_ctx),
                            "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
            run = json.loads(out.read_text(encoding="utf-8"))
            if reference is None:
                reference = run["contexts"]
            elif run["contexts"] != reference:
                raise SystemExit(f"round {r}, layout {layout}: contexts differ from the first run")
            run.update(round=r, load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2))
            runs.append(run)
            print(json.dumps({k: run[k] for k in ("round", "layout", "calls", "cpu_s",
                                                  "cpu_s_per_call", "wall_s", "load_before",
                                                  "load_after")}), flush=True)
    summary = {}
    for layout in layouts:
        per_call = [run["cpu_s_per_call"] for run in runs if run["layout"] == layout]
        loads = [run[k] for run in runs if run["layout"] == layout
                 for k in ("load_before", "load_after")]
        summary[layout] = {"cpu_s_per_call_min": min(per_call),
                           "cpu_s_per_call_median": statistics.median(per_call),
                           "cpu_s_per_call_max": max(per_call),
                           "load_min": min(loads), "load_max": max(loads), "rounds": len(per_call)}
        print(layout, json.dumps(summary[layout]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"summary": summary, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
