"""Benchmark: the metrics on the full QASPER against ranx and ir_measures, and the paper grid.

Real chunk tables (8 chunksets of the full QASPER, gold sections standing in for induced ones),
real queries and qrels (4,301 questions); runs are synthetic (top-100 per query: up to half
from the query's own paper, the rest random, shuffled), the shape retrieval writes.

Lines of the table:
- covNDCG@10 of one run (layout prepared once per chunkset, as ``score_runs`` does) against
  ranx's nDCG@10 + MRR ``evaluate`` (Qrels and Run built beforehand, numba compiled);
- binary nDCG@10 + RR against ranx and ir_measures (``iter_calc`` from Qrel/ScoredDoc
  tuples), with the values checked equal;
- the metric suite of the paper grid (8 cells x 11 conditions = 88 runs, 7 measures), all in:
  one Python process per run (``score_run``, the workflow before) against one per cell and one
  for the whole corpus (``score_runs``), start-up included; the score tables are checked equal.

    python bench/bench_metrics.py --qasper DATA/qasper [--work DIR] [--cells 8]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from _qasper import (
    CHUNKSETS,
    CONDITION_CHUNKSET,
    chunk_tables,
    corpus_tables,
    median_time,
    synthetic_run,
    table_row,
)

from structablate.metrics import DEFAULT_MEASURES, prepare_layout, score_layout, score_run
from structablate.metrics.trec import chunk_qrels


def one_run_lines(chunks, run, qrels, queries, repeat: int) -> None:
    lay = prepare_layout(chunks, qrels, queries)
    score_layout(run, lay, ["covNDCG@10", "nDCG@10", "RR"])  # warm the layout caches
    w_cov, _, _ = median_time(lambda: score_layout(run, lay, ["covNDCG@10"]), repeat)
    w_bin, _, ours = median_time(lambda: score_layout(run, lay, ["nDCG@10", "RR"]), repeat)
    w_full, _, _ = median_time(lambda: score_run(run, chunks, qrels, queries, ["covNDCG@10"]),
                               repeat)
    w_prep, _, _ = median_time(lambda: prepare_layout(chunks, qrels, queries).pairs, repeat)
    print(f"ours: covNDCG@10 {w_cov * 1000:.0f} ms, nDCG@10+RR {w_bin * 1000:.0f} ms per run "
          f"(layout prepared once per chunkset: {w_prep * 1000:.0f} ms; score_run with its own "
          f"layout {w_full * 1000:.0f} ms)")
    cq = chunk_qrels(qrels, chunks, include_nonrelevant=True)
    r = run.sort("qid", "rank")
    t_ranx = t_irm = None
    try:
        from ranx import Qrels, Run, evaluate

        qd: dict[str, dict[str, int]] = {}
        for a, b, c in cq.filter(pl.col("relevance") > 0).iter_rows():
            qd.setdefault(a, {})[b] = int(c)
        rd: dict[str, dict[str, float]] = {}
        for a, k, c in r.select("qid", "rank", "chunk_id").iter_rows():
            if a in qd:
                rd.setdefault(a, {})[c] = float(-k)
        qrels_r = Qrels(qd)
        evaluate(qrels_r, Run(rd), ["ndcg@10", "mrr"])  # numba compile
        runs_r = [Run(rd) for _ in range(repeat)]  # fresh Run objects: ranx caches results
        it = iter(runs_r)
        t_ranx, _, vals = median_time(
            lambda: evaluate(qrels_r, next(it), ["ndcg@10", "mrr"], return_mean=False), repeat)
        order = {q: i for i, q in enumerate(runs_r[0].keys())}
        sub = ours.filter(pl.col("qid").is_in(list(qd)))
        idx = np.array([order[q] for q in sub["qid"].to_list()])
        diff = max(float(np.abs(vals["ndcg@10"][idx] - sub["nDCG@10"].to_numpy()).max()),
                   float(np.abs(vals["mrr"][idx] - sub["RR"].to_numpy()).max()))
        print(f"ranx nDCG@10+MRR evaluate: {t_ranx * 1000:.0f} ms; max |ours - ranx| "
              f"{diff:.1e} over {len(idx)} queries with a relevant chunk")
    except ImportError:
        print("ranx not installed (pip install '.[bench]')")
    try:
        import ir_measures
        from ir_measures import RR, Qrel, ScoredDoc, nDCG

        iq = [Qrel(a, b, int(c)) for a, b, c in cq.iter_rows()]
        ir = [ScoredDoc(a, c, float(-k)) for a, k, c in r.select("qid", "rank", "chunk_id")
              .iter_rows()]
        t_irm, _, res = median_time(
            lambda: {(m.query_id, str(m.measure)): m.value
                     for m in ir_measures.iter_calc([nDCG @ 10, RR], iq, ir)}, repeat)
        diff = max(abs(res[(q, "nDCG@10")] - a) + abs(res[(q, "RR")] - b)
                   for q, a, b in ours.select("qid", "nDCG@10", "RR").iter_rows()
                   if (q, "RR") in res)
        print(f"ir_measures nDCG@10+RR iter_calc: {t_irm * 1000:.0f} ms; max diff {diff:.1e}")
    except ImportError:
        print("ir_measures not installed")
    if t_ranx:
        table_row("covNDCG@10, one 4,301-query run", f"{w_cov * 1000:.0f} ms",
                  f"ranx nDCG@10+MRR {t_ranx * 1000:.0f} ms", w_cov / t_ranx,
                  f"layout once per chunkset ({w_prep * 1000:.0f} ms)")
        table_row("binary metrics vs ranx", f"nDCG@10+RR {w_bin * 1000:.0f} ms",
                  f"ranx {t_ranx * 1000:.0f} ms", w_bin / t_ranx)
    if t_irm:
        table_row("binary metrics vs ir_measures", f"nDCG@10+RR {w_bin * 1000:.0f} ms",
                  f"ir_measures {t_irm * 1000:.0f} ms", w_bin / t_irm)


PER_RUN = """
import sys, polars as pl
from structablate.metrics import score_run
run, chunks, qrels, queries, out = sys.argv[1:6]
m = sys.argv[6].split(',')
score_run(pl.read_parquet(run), pl.read_parquet(chunks), pl.read_parquet(qrels),
          pl.read_parquet(queries), m).write_parquet(out)
"""

PER_GROUP = """
import sys, json, polars as pl
from structablate.metrics import score_runs
spec = json.load(open(sys.argv[1]))
tables = {}
chunks = {}
for key, path in spec["chunks"].items():
    tables.setdefault(path, None)
    if tables[path] is None:
        tables[path] = pl.read_parquet(path)
    chunks[key] = tables[path]
runs = {k: pl.read_parquet(p) for k, p in spec["runs"].items()}
out = score_runs(runs, chunks, pl.read_parquet(spec["qrels"]), pl.read_parquet(spec["queries"]),
                 spec["measures"])
for k, df in out.items():
    df.write_parquet(spec["out"][k])
"""


def grid_line(chunks: dict, queries, qrels, n_cells: int, work: Path) -> None:
    import json

    measures = list(DEFAULT_MEASURES)
    for cs, df in chunks.items():
        df.write_parquet(work / f"chunks_{cs}.parquet")
    queries.write_parquet(work / "queries.parquet")
    qrels.write_parquet(work / "qrels.parquet")
    keys = []
    for cell in range(n_cells):
        for k, (cond, cs) in enumerate(CONDITION_CHUNKSET.items()):
            key = f"cell{cell}/{cond}"
            synthetic_run(chunks[cs], queries, seed=1000 * cell + k).write_parquet(
                work / f"run_{cell}_{cond}.parquet")
            keys.append((key, cell, cond, cs))
    py = [sys.executable, "-c"]
    t0 = time.perf_counter()
    for _key, cell, cond, cs in keys:
        subprocess.run(py + [PER_RUN, str(work / f"run_{cell}_{cond}.parquet"),
                             str(work / f"chunks_{cs}.parquet"), str(work / "qrels.parquet"),
                             str(work / "queries.parquet"),
                             str(work / f"old_{cell}_{cond}.parquet"), ",".join(measures)],
                       check=True)
    t_old = time.perf_counter() - t0

    def group_spec(name, sel):
        spec = {"chunks": {k: str(work / f"chunks_{cs}.parquet") for k, _, _, cs in sel},
                "runs": {k: str(work / f"run_{c}_{cond}.parquet") for k, c, cond, _ in sel},
                "out": {k: str(work / f"{name}_{c}_{cond}.parquet") for k, c, cond, _ in sel},
                "qrels": str(work / "qrels.parquet"), "queries": str(work / "queries.parquet"),
                "measures": measures}
        path = work / f"spec_{name}_{sel[0][1]}.json"
        path.write_text(json.dumps(spec))
        return path

    t0 = time.perf_counter()
    for cell in range(n_cells):
        sel = [x for x in keys if x[1] == cell]
        subprocess.run(py + [PER_GROUP, str(group_spec("cell", sel))], check=True)
    t_cell = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run(py + [PER_GROUP, str(group_spec("corpus", keys))], check=True)
    t_corpus = time.perf_counter() - t0
    for _, cell, cond, _ in keys:
        old = pl.read_parquet(work / f"old_{cell}_{cond}.parquet")
        for name in ("cell", "corpus"):
            assert old.equals(pl.read_parquet(work / f"{name}_{cell}_{cond}.parquet")), (cell,
                                                                                         cond)
    n = len(keys)
    print(f"{n} runs x {len(measures)} measures, all in: one process per run {t_old:.1f}s, "
          f"one per cell {t_cell:.1f}s, one for the corpus {t_corpus:.1f}s; scores identical")
    table_row(f"metric suite, paper grid ({n} runs), all in", f"{t_cell:.1f} s (per cell), "
              f"{t_corpus:.1f} s (per corpus)", f"one process per run {t_old:.1f} s",
              t_cell / t_old, f"per corpus {t_corpus / t_old:.2f}x")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qasper", required=True, help="directory with the three QASPER v0.3 files")
    ap.add_argument("--work", default=None, help="cache directory for the corpus tables")
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-grid", action="store_true")
    args = ap.parse_args(argv)
    t = corpus_tables(args.qasper, args.work)
    chunks = chunk_tables(t, args.work, CHUNKSETS)
    queries, qrels = t["queries"], t["qrels"]
    print(f"{queries.height} queries, {t['documents'].height} papers, "
          f"{chunks['G3'].height} chunks per chunkset")
    one_run_lines(chunks["G3"], synthetic_run(chunks["G3"], queries, seed=7), qrels, queries,
                  args.repeat)
    if not args.skip_grid:
        with tempfile.TemporaryDirectory() as tmp:
            grid_line(chunks, queries, qrels, args.cells, Path(tmp))


if __name__ == "__main__":
    main()
