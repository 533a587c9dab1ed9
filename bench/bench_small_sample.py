"""Simulation: level and coverage of a contrast's test over few documents, from real per-question
tables (issue 50, item 3).

    PYTHONPATH=src nice -n 5 python bench/bench_small_sample.py \
        [--tables docs/results/qasper-full-cpu/tables] [--corpora 6000] [--boot 10000] \
        [--flips 10000] [--sizes 5 10 17 30 80]

**Populations.** The shipped full-QASPER cell (``docs/results/qasper-full-cpu/tables``: 4,301
questions over 1,508 documents, MiniLM, no reranker): every contrast its config declares
(pre-registered and exploratory, ten that ran) on covNDCG@10, R@50 and RR, 30 designs. For
each design the per-question deltas ``a − b`` are centred on the population's question-weighted
mean, so the population's Δ is 0 exactly and each document keeps its own (skewed, clustered)
effect: a null that is mean-zero but not symmetric, so the sign-flip test is *not* exact by
construction here.

**Corpora.** A simulated corpus is one design (round-robin) and ``D`` of its 1,508 documents
drawn without replacement (seeded), with all their questions. Three data sets per corpus, the
same documents:

* **centred null**: the deltas that are not 0 (``|δ| > ZERO_TOL``) shifted by one constant so
  that the population's question-weighted mean is 0; tied questions stay exactly 0 (centring
  them too would give a corpus of tie-only documents a tiny Δ of one sign that any test
  "detects"). Mean-zero, skewed, clustered, not symmetric: the sign-flip test is not exact;
* **sign-flipped null**: the observed per-document delta sums, each multiplied by a random
  sign (drawn per corpus): the document-level null the sign-flip test is exact under, with the
  real documents' magnitudes (true Δ = 0);
* **clustered shift**: the centred null plus ``2θ`` on every question of a fixed random half
  of the population's documents (drawn once per design, seeded) and 0 on the others, with
  ``θ`` = 0.25 × the population's standard deviation of per-question deltas: an effect that
  lives in some documents only; the true Δ is the population's question-weighted mean shift.

**Methods.** (a) the shipped percentile bootstrap (:func:`~structablate.stats.cluster_bootstrap`,
``--boot`` replicates, :func:`~structablate.stats.bootstrap_p`, 2.5/97.5 percentiles);
(b) the document-level sign-flip test (:func:`~structablate.stats.smallsample.sign_flip`,
exact up to 16 documents, ``--flips`` Monte-Carlo sign vectors above), its p at 0 and its
inverted 95 % interval. Each corpus's bootstrap and sign-flip draws are seeded by its index.

**Rates** (each with its Monte-Carlo standard error ``sqrt(r(1 − r)/R)``, ``R`` corpora per
size): type-I (p < 0.05 under each null), coverage of the 95 % interval under the centred null
and under the clustered shift, the share of intervals wholly above / below the true Δ under the
centred null (each should be ≤ 2.5 %: the one-sided errors the TOST rests on), and power
under the clustered shift; then type-I under the centred null per measure and the worst
design. Output: two Markdown tables (the ones in docs/statistics.md).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from structablate.config import load_config_file
from structablate.stats import ZERO_TOL, bootstrap_p, cluster_bootstrap, per_doc, percentile_ci
from structablate.stats.smallsample import sign_flip

SEED = 20260710
METRICS = ("covNDCG@10", "R@50", "RR")
CELL = Path("qasper/minilm/none")


@dataclass(frozen=True)
class Design:
    """One population: a contrast on a measure, per document (measure units)."""

    name: str
    raw_sums: np.ndarray  # (P,) per-document delta sums as observed
    null_sums: np.ndarray  # (P,) centred per-document delta sums
    shift_sums: np.ndarray  # (P,) the same plus the clustered shift
    counts: np.ndarray  # (P,) questions per document
    true_shift: float  # the population's Δ under the shift


def designs(tables: Path) -> list[Design]:
    """The 30 designs of the module docstring from a shipped results-tables folder."""
    cfg = load_config_file(tables / "config.yaml")
    st = cfg["statistics"]
    contrasts = {**st.get("contrasts", {}), **st.get("extra_contrasts", {})}
    scores = {p.stem: pl.read_parquet(p) for p in (tables / CELL / "scores").glob("*.parquet")}
    rng = np.random.default_rng(SEED)
    out = []
    for name, (a, b) in contrasts.items():
        if a not in scores or b not in scores:
            continue
        j = scores[a].join(scores[b], on=["qid", "doc_id"], suffix="__b").sort("qid")
        for m in METRICS:
            d = (j[m] - j[f"{m}__b"]).to_numpy()
            _, raw, _ = per_doc(d, j["doc_id"].to_numpy())
            moved = np.abs(d) > ZERO_TOL
            d = np.where(moved, d - d.sum() / max(int(moved.sum()), 1), 0.0)
            _, sums, counts = per_doc(d, j["doc_id"].to_numpy())
            half = rng.permutation(len(counts)) < len(counts) // 2
            theta = 0.25 * float(d.std(ddof=1))
            shift = 2.0 * theta * half * counts
            out.append(Design(f"{name} {m}", raw[:, 0], sums[:, 0], sums[:, 0] + shift, counts,
                              float(shift.sum() / counts.sum())))
    return out


SCENARIOS = ("centred null", "sign-flipped null", "clustered shift")


def simulate(ds: list[Design], size: int, n_corpora: int, n_boot: int, n_flips: int
             ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Per method, an array (corpora, scenarios, 4) of booleans: rejected at 0, interval
    covers the true Δ, interval wholly above it, wholly below it; and each corpus's design."""
    rng = np.random.default_rng([SEED, size])
    rec = {k: np.zeros((n_corpora, len(SCENARIOS), 4), dtype=bool)
           for k in ("bootstrap", "sign-flip")}
    names = []
    for i in range(n_corpora):
        dz = ds[i % len(ds)]
        names.append(dz.name)
        idx = np.sort(rng.choice(len(dz.counts), size, replace=False))
        signs = rng.choice([-1.0, 1.0], size)
        sums = np.column_stack([dz.null_sums[idx], signs * dz.raw_sums[idx],
                                dz.shift_sums[idx]])
        cnts = dz.counts[idx]
        truth = np.array([0.0, 0.0, dz.true_shift])
        reps = cluster_bootstrap(sums, cnts, n_boot, seed=i)
        sf = sign_flip(sums, cnts, n_flips, seed=i)
        for k, (p, (lo, hi)) in {"bootstrap": (bootstrap_p(reps), percentile_ci(reps, 0.95)),
                                 "sign-flip": (sf.p_zero(), sf.interval(0.95))}.items():
            rec[k][i] = np.column_stack([p < 0.05, (lo <= truth) & (truth <= hi),
                                         lo > truth, hi < truth])
    return rec, names


def rate(x: np.ndarray) -> str:
    """``r % ± se`` of a boolean vector (percent; se the Monte-Carlo standard error)."""
    r = float(x.mean())
    return f"{100 * r:.1f} ± {100 * np.sqrt(r * (1 - r) / len(x)):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=Path, default=Path("docs/results/qasper-full-cpu/tables"))
    ap.add_argument("--corpora", type=int, default=6000, help="simulated corpora per size")
    ap.add_argument("--boot", type=int, default=10_000, help="bootstrap replicates")
    ap.add_argument("--flips", type=int, default=10_000, help="Monte-Carlo sign vectors")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 17, 30, 80])
    a = ap.parse_args()
    ds = designs(a.tables)
    print(f"{len(ds)} designs from {a.tables}; {a.corpora} corpora per size; "
          f"bootstrap {a.boot} replicates; sign-flip exact up to 16 documents, "
          f"{a.flips} sign vectors above\n")
    print("| documents | method | type-I %, centred null | type-I %, sign-flipped null | "
          "coverage %, centred null | coverage %, clustered shift | interval above / below "
          "Δ %, centred null | power %, clustered shift |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    per_measure = []
    for size in a.sizes:
        t0 = time.process_time()
        rec, names = simulate(ds, size, a.corpora, a.boot, a.flips)
        secs = time.process_time() - t0
        for k, r in rec.items():
            print(f"| {size} | {k} | {rate(r[:, 0, 0])} | {rate(r[:, 1, 0])} | "
                  f"{rate(r[:, 0, 1])} | {rate(r[:, 2, 1])} | "
                  f"{rate(r[:, 0, 2])} / {rate(r[:, 0, 3])} | {rate(r[:, 2, 0])} |", flush=True)
            nm = np.array(names)
            measure = np.array([n.split(" ")[1] for n in names])
            worst = max((float(r[nm == n, 0, 0].mean()), n) for n in set(names))
            per_measure.append(f"| {size} | {k} | "
                               + " | ".join(rate(r[measure == m, 0, 0]) for m in METRICS)
                               + f" | {worst[1]}: {100 * worst[0]:.1f} |")
        print(f"<!-- {size} documents: {secs:.0f} s CPU -->", flush=True)
    n_design = a.corpora // len(ds)
    print(f"\nType-I % under the centred null per measure ({a.corpora // len(METRICS)} "
          f"corpora each), and the worst of the {len(ds)} designs ({n_design} corpora each, "
          f"Monte-Carlo error up to ±{100 * np.sqrt(0.25 / n_design):.1f} points):\n")
    print("| documents | method | " + " | ".join(METRICS) + " | worst design |")
    print("| --- | --- | " + " | ".join("---" for _ in METRICS) + " | --- |")
    print("\n".join(per_measure))


if __name__ == "__main__":
    main()
