"""What chance-corrected boundary agreement (kappa) gold structure keeps under controlled damage.

The structure-quality guard (``report.guard.min_boundary_kappa``, default 0.50) refuses a
comparison built on induced structure whose boundary F1 against gold, corrected for chance, is
below the threshold. This script calibrates that number: it damages QASPER's gold section
boundaries in known ways and measures the kappa the damaged structure keeps, exactly as the
guard measures an inducer (:func:`structablate.structure.quality.boundary_scores` within one
paragraph, :func:`~structablate.structure.quality.chance_agreement` with the damaged
structure's boundary count per document, 20 seeded draws,
:func:`~structablate.structure.quality.chance_corrected`).

Damage, applied to a share ``s`` of each paper's gold boundaries (a boundary is the first
paragraph of a section other than the first; seeded, independently per boundary):

* ``shift1`` / ``shift2``: the boundary moves by one (two) paragraphs, up or down at random
  (the other way when that collides or leaves the paper; kept when both do);
* ``merge``: the boundary is removed (the section merges into the one before);
* ``split``: a section of at least two paragraphs (a share ``s`` of them) gets an extra
  boundary at a random paragraph inside it;
* ``random``: the boundary moves to a random candidate that is not a boundary (at ``s = 1``
  the structure has gold's density and nothing else: kappa about 0).

Usage (docs/report.md, structure-quality guard)::

    python bench/kappa_calibration.py DATA/qasper/qasper-train-v0.3-reconstructed.json \\
        DATA/qasper/qasper-dev-v0.3-reconstructed.json DATA/qasper/qasper-test-v0.3.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from structablate.corpus.flatten import paragraphs_frame, sections_frame
from structablate.corpus.qasper import build_qasper_corpus, read_v03
from structablate.settings import Settings
from structablate.structure.quality import (
    _boundaries,
    boundary_scores,
    chance_agreement,
    chance_corrected,
)

DAMAGE = ("shift1", "shift2", "merge", "split", "random")
SHARES = (0.1, 0.25, 0.5, 0.75, 1.0)


def damage(bounds: list[int], n_par: int, kind: str, share: float,
           rng: np.random.Generator) -> list[int]:
    """The boundaries of one paper after ``kind`` damage to a share ``share`` of them (module
    docstring); paragraph indices in ``1 … n_par − 1``, sorted, distinct."""
    out = set(bounds)
    if kind == "split":
        edges = [0, *bounds, n_par]
        for a, b in zip(edges, edges[1:], strict=False):
            if b - a >= 2 and rng.random() < share:
                out.add(int(rng.integers(a + 1, b)))
        return sorted(out)
    for x in bounds:
        if rng.random() >= share:
            continue
        if kind == "merge":
            out.discard(x)
        elif kind.startswith("shift"):
            k = int(kind.removeprefix("shift"))
            for step in (k, -k) if rng.random() < 0.5 else (-k, k):
                y = x + step
                if 1 <= y <= n_par - 1 and y not in out:
                    out.discard(x)
                    out.add(y)
                    break
        elif kind == "random":
            free = [y for y in range(1, n_par) if y not in out]
            if free:
                out.discard(x)
                out.add(int(free[rng.integers(len(free))]))
    return sorted(out)


def flat_sections(bounds: dict[str, list[int]], n_par: dict[str, int]) -> pl.DataFrame:
    """A sections table with one level of sections cut at ``bounds`` (only boundaries are
    compared; titles and levels are placeholders)."""
    rows: dict[str, list] = {k: [] for k in ("doc_id", "section_idx", "title", "level",
                                             "para_start", "para_end", "start", "end", "path")}
    for doc in sorted(bounds):
        edges = [0, *bounds[doc], n_par[doc]]
        for i, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
            for k, v in (("doc_id", doc), ("section_idx", i), ("title", f"s{i}"), ("level", 1),
                         ("para_start", a), ("para_end", b), ("start", 0), ("end", 0),
                         ("path", [f"s{i}"])):
                rows[k].append(v)
    return pl.DataFrame(rows, schema={"doc_id": pl.String, "section_idx": pl.Int32,
                                      "title": pl.String, "level": pl.Int32,
                                      "para_start": pl.Int32, "para_end": pl.Int32,
                                      "start": pl.Int64, "end": pl.Int64,
                                      "path": pl.List(pl.String)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("qasper", nargs="+", help="QASPER v0.3 JSON files")
    ap.add_argument("--seed", type=int, default=Settings.seed)
    args = ap.parse_args()
    t0 = time.time()
    docs = []
    for path in args.qasper:
        docs += build_qasper_corpus(read_v03(path)).documents
    docs = sorted(docs, key=lambda d: d.doc_id)
    gold = sections_frame([(d.doc_id, d.sections) for d in docs])
    paragraphs = paragraphs_frame(docs)
    n_par = {d: int(n) for d, n in paragraphs.group_by("doc_id").agg(pl.len()).iter_rows()}
    gb = _boundaries(gold, top_only=False)
    multi = sum(1 for b in gb.values() if b)
    print(f"{len(docs)} papers ({multi} with a gold boundary), "
          f"{sum(map(len, gb.values())):,} gold boundaries, seed {args.seed}")
    print(f"{'damage':<8}{'share':>7}{'boundaries':>12}{'F1':>8}{'chance':>8}{'kappa':>8}")
    for kind in DAMAGE:
        for share in SHARES:
            rng = np.random.default_rng(np.random.SeedSequence(
                [args.seed, DAMAGE.index(kind), int(share * 100)]))
            bounds = {doc: damage(gb.get(doc, []), n_par[doc], kind, share, rng)
                      for doc in sorted(n_par)}
            damaged = flat_sections(bounds, n_par)
            f1 = boundary_scores(damaged, gold)["f1"]
            chance = chance_agreement(damaged, gold, paragraphs=paragraphs,
                                      seed=args.seed)["boundary_f1"]
            print(f"{kind:<8}{share:>7.2f}{sum(map(len, bounds.values())):>12,}{f1:>8.3f}"
                  f"{chance:>8.3f}{chance_corrected(f1, chance):>8.3f}", flush=True)
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
