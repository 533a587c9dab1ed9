"""TextTiling's agreement with QASPER gold beside the agreement of random boundaries.

Induces the structure of QASPER papers with the TextTiling knobs of
``config/qasper-full-cpu.yaml`` (``induction.texttiling``), then prints the agreement columns of
the structure-quality table (``structablate.structure.quality.structure_quality``): observed,
chance (random boundaries with TextTiling's count per document, 20 seeded draws) and
chance-corrected. Example (docs/report.md, structure-quality guard)::

    nice -n 5 python bench/structure_chance.py resources/qasper/qasper-sample-v0.3.json
    nice -n 5 python bench/structure_chance.py DATA/qasper/qasper-test-v0.3.json --docs 120

``--docs N`` keeps the first N papers in ``doc_id`` order.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from structablate.corpus.flatten import paragraphs_frame, sections_frame
from structablate.corpus.qasper import build_qasper_corpus, read_v03
from structablate.settings import Settings
from structablate.structure import induce_documents
from structablate.structure.quality import CHANCE_FIGURES, structure_quality

CONFIG = Path(__file__).resolve().parents[1] / "config" / "qasper-full-cpu.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("qasper", help="a QASPER v0.3 JSON file")
    ap.add_argument("--docs", type=int, default=0, help="first N papers by doc_id (0: all)")
    ap.add_argument("--seed", type=int, default=Settings.seed)
    args = ap.parse_args()
    docs = sorted(build_qasper_corpus(read_v03(args.qasper)).documents, key=lambda d: d.doc_id)
    if args.docs:
        docs = docs[:args.docs]
    tiling = yaml.safe_load(CONFIG.read_text())["induction"]["texttiling"]
    t = time.time()
    pairs, _ = induce_documents(docs, {"inducer": "texttiling", "texttiling": tiling})
    wall = time.time() - t
    gold = sections_frame([(d.doc_id, d.sections) for d in docs])
    q = structure_quality(paragraphs_frame(docs),
                          {"gold": gold, "induced:texttiling": sections_frame(pairs)},
                          seed=args.seed)
    r = q.row(1, named=True)
    print(f"{len(docs)} papers of {args.qasper}, induced in {wall:.0f} s, seed {args.seed}")
    print(f"sections per paper: gold {q['sections_per_doc'][0]:.2f}, "
          f"TextTiling {r['sections_per_doc']:.2f}")
    print(f"{'figure':<24}{'observed':>10}{'chance':>10}{'kappa':>10}")
    for f in CHANCE_FIGURES:
        print(f"{f:<24}{r[f]:>10.3f}{r[f + '_chance']:>10.3f}{r[f + '_kappa']:>10.3f}")


if __name__ == "__main__":
    main()
