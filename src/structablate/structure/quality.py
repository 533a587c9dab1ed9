"""Structure quality: what a structure source gives the conditions built on it, and how far it
is from gold.

A *structure source* is a sections table (contract in :mod:`structablate.tables`): gold, or
one induced by the LLM or by TextTiling. :func:`structure_quality` measures, per source:

* ``n_docs``, ``sections_per_doc``, ``top_sections_per_doc`` (top-level groups, the units
  two-stage routing ranks), ``single_top_share`` (documents with one top-level group),
* the depth distribution: ``depth_1`` … ``depth_4plus`` (share of sections whose true depth
  ``len(path)`` is 1, 2, 3, ≥ 4), ``max_depth`` and ``docs_depth3_share`` (documents with a
  section of depth ≥ 3, which A3 − A3-d2 needs),
* where a gold source is given, agreement with it:
  ``section_span_identity`` (share of the source's section spans ``(doc_id, start, end)`` equal
  to a gold section span), ``chunk_span_identity`` (the same over structural chunk spans, the
  paper's 78.9% / 75.8%, when chunk tables are given), and boundary precision / recall / F1
  with a tolerance of one paragraph, over all section starts (``boundary_*``) and over
  top-level starts (``top_boundary_f1``),
* beside ``section_span_identity``, ``boundary_f1`` and ``top_boundary_f1``: the same figure
  for random boundaries with the source's boundary count per document (``*_chance``) and the
  chance-corrected figure (``*_kappa``), see *Chance agreement* below.

:func:`comparison_checks` measures, from the chunk tables of the grid, the facts that decide
whether a comparison of two conditions can show anything: how much of the candidate pool
two-stage routing keeps, and how many chunks carry the same text under both conditions.
:func:`corpus_structure_report` runs both for one corpus (what a rule calls).

A **boundary** is the index of the first paragraph of a section other than the first (sections
tile the paragraphs, so the document's start is never a boundary). A predicted boundary ``b``
matches a gold boundary ``g`` when ``|b − g| <= tolerance`` paragraphs, each boundary matching
at most once (a greedy sweep in document order, which is a maximum matching for equal-width
windows); F1 ``= 2·TP / (n_predicted + n_gold)``, summed over documents (micro), NaN when
neither side has a boundary.

**Chance agreement.** A document with ``n`` paragraphs (indices ``0 … n−1``; a section is the
half-open paragraph range ``[para_start, para_end)``) has the ``n − 1`` candidate boundaries
``1 … n−1``. A *random segmentation* with ``k`` boundaries draws ``k`` of them uniformly without
replacement (``k`` capped at ``n − 1``); its sections are the ranges between consecutive
boundaries, ``[0, b_1), [b_1, b_2), …, [b_k, n)``. For a source, every document it shares with
gold gets ``k`` = the source's own number of boundaries in that document (top-level
boundaries for ``top_boundary_f1_chance``, drawn separately), so a random inducer is given the
source's segmentation density and nothing else. The chance figure is the mean, over
:data:`CHANCE_DRAWS` draws, of the figure computed for the random segmentations exactly as for
the source (same tolerance, same micro-averaging); span identity compares the random sections'
paragraph ranges with gold's (for sections that tile the paragraphs, a section's character span
is fixed by its paragraph range, so this is the same test as the observed figure's
``(doc_id, start, end)``). Draw ``d`` (``0 … CHANCE_DRAWS−1``) uses
``numpy.random.default_rng(SeedSequence([seed, d, stream]))`` (stream 0: all boundaries and the
sections they form, stream 1: top-level boundaries) over the documents in ``doc_id`` order, so
the figures are a function of the tables and the seed. The chance-corrected figure is
``kappa = (observed − chance) / (1 − chance)``: 1 for gold's own segmentation, about 0 for a
segmentation no better than random boundaries of the same density, negative below that; NaN
when either figure is NaN or ``chance`` is 1 (every candidate is a boundary: nothing to tell
apart). Structural chunk spans have no chance figure: it would need the tokenizer and the
chunker run per draw.

**Top-level groups** follow the chunker's rule (:func:`structablate.corpus.flatten.
top_section_ids`): a new group starts at every level-1 section and wherever the first heading of
the path changes. Two-stage routing ranks the pairs ``(doc_id, top_section)`` of a chunk table
(:mod:`structablate.retrieval.two_stage`): stage 1 ranks *every* such section of the corpus and
keeps ``hier_top_sections`` of them, so the candidate pool is all sections of the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from structablate import study
from structablate.settings import Settings
from structablate.tables import span_identity

DEPTH_BINS = ("depth_1", "depth_2", "depth_3", "depth_4plus")

CHANCE_DRAWS = 20
"""Random segmentations averaged per chance figure (module docstring). With TextTiling's
boundary counts, the standard error of the 20-draw mean is 0.004-0.007 on the bundled 15-paper
QASPER sample and 0.0015-0.0025 on 120 QASPER test papers (docs/report.md)."""

CHANCE_FIGURES = ("section_span_identity", "boundary_f1", "top_boundary_f1")
"""The agreement columns that get a ``_chance`` and a ``_kappa`` column."""

QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    "n_docs": pl.Int64(),
    "n_sections": pl.Int64(),
    "sections_per_doc": pl.Float64(),
    "top_sections_per_doc": pl.Float64(),
    "single_top_share": pl.Float64(),
    **{b: pl.Float64() for b in DEPTH_BINS},
    "max_depth": pl.Int64(),
    "docs_depth3_share": pl.Float64(),
    "section_span_identity": pl.Float64(),
    "chunk_span_identity": pl.Float64(),
    "boundary_precision": pl.Float64(),
    "boundary_recall": pl.Float64(),
    "boundary_f1": pl.Float64(),
    "top_boundary_f1": pl.Float64(),
    **{f"{f}_{kind}": pl.Float64() for f in CHANCE_FIGURES for kind in ("chance", "kappa")},
}
"""Columns of the structure-quality table (one row per source). Agreement columns (and their
``_chance`` / ``_kappa`` twins) are NaN for the gold row and wherever no gold source was
given."""

CHECKS_SCHEMA: dict[str, pl.DataType] = {
    "cond_a": pl.String(),
    "cond_b": pl.String(),
    "check": pl.String(),
    "value": pl.Float64(),
    "count": pl.Int64(),
    "total": pl.Int64(),
    "detail": pl.String(),
}
"""Columns of the comparison-checks table: one row per (pair of conditions, check); ``value``
is a share (``count / total``) and ``detail`` says what was counted."""

CHECKS = ("routing_pool", "routing_single_top", "same_text", "placebo_pairs_identical")
"""* ``routing_pool`` (two-stage vs its flat twin): ``count`` sections kept per query of the
  ``total`` sections of the corpus (``value = min(k, S) / S``);
* ``routing_single_top``: documents of the chunk table with one top-level section;
* ``same_text`` (two flat conditions with the same chunk boundaries): chunks whose embedded text
  (span and prefix) is identical under both; 1.0 means identical vectors and rankings;
* ``placebo_pairs_identical`` (pairs with P): the placebo assignment's unique (document, path)
  pairs whose placebo path is textually their own (chunk stats JSON, ``placebo`` report)."""


# ---------------------------------------------------------------- per-source measures


def top_groups(sections: pl.DataFrame) -> pl.DataFrame:
    """``doc_id, section_idx, top_section``: each section's top-level group (module docstring),
    sections in ``(doc_id, section_idx)`` order."""
    rows: dict[str, list] = {"doc_id": [], "section_idx": [], "top_section": []}
    prev_doc, current, prev_root = None, -1, None
    for doc, idx, title, level, path in sections.sort("doc_id", "section_idx").select(
            "doc_id", "section_idx", "title", "level", "path").iter_rows():
        if doc != prev_doc:
            prev_doc, current, prev_root = doc, -1, None
        root = path[0] if path else title
        if level == 1 or current < 0 or root != prev_root:
            current = idx
        prev_root = root
        rows["doc_id"].append(doc)
        rows["section_idx"].append(idx)
        rows["top_section"].append(current)
    return pl.DataFrame(rows, schema={"doc_id": pl.String, "section_idx": pl.Int32,
                                      "top_section": pl.Int32})


def _boundaries(sections: pl.DataFrame, top_only: bool) -> dict[str, list[int]]:
    s = sections.sort("doc_id", "section_idx")
    if top_only:
        g = top_groups(s)
        s = s.join(g, on=["doc_id", "section_idx"]).filter(
            pl.col("top_section") == pl.col("section_idx"))
    out: dict[str, list[int]] = {}
    for doc, starts in s.group_by("doc_id", maintain_order=True).agg(
            pl.col("para_start")).iter_rows():
        out[doc] = sorted(int(x) for x in starts if int(x) > 0)
    return out


def match_boundaries(predicted: Sequence[int], gold: Sequence[int], tolerance: int = 1) -> int:
    """Matched pairs between sorted boundary lists, each used once, ``|p − g| <= tolerance``."""
    p, g = sorted(predicted), sorted(gold)
    i = j = tp = 0
    while i < len(p) and j < len(g):
        if abs(p[i] - g[j]) <= tolerance:
            tp += 1
            i += 1
            j += 1
        elif p[i] < g[j]:
            i += 1
        else:
            j += 1
    return tp


def boundary_scores(sections: pl.DataFrame, gold: pl.DataFrame, *, tolerance: int = 1,
                    top_only: bool = False) -> dict[str, float]:
    """Micro-averaged boundary ``precision``, ``recall``, ``f1`` of ``sections`` against
    ``gold`` over the documents both hold (module docstring); NaN where undefined."""
    pred, ref = _boundaries(sections, top_only), _boundaries(gold, top_only)
    tp = n_p = n_g = 0
    for doc in sorted(set(pred) & set(ref)):
        tp += match_boundaries(pred[doc], ref[doc], tolerance)
        n_p += len(pred[doc])
        n_g += len(ref[doc])
    nan = float("nan")
    return {"precision": tp / n_p if n_p else nan, "recall": tp / n_g if n_g else nan,
            "f1": 2 * tp / (n_p + n_g) if n_p + n_g else nan}


def chance_corrected(observed: float, chance: float) -> float:
    """``(observed − chance) / (1 − chance)``; NaN when either is NaN or ``chance >= 1``."""
    if np.isnan(observed) or np.isnan(chance) or chance >= 1.0:
        return float("nan")
    return (observed - chance) / (1.0 - chance)


def random_boundaries(n_paragraphs: int, count: int, rng: np.random.Generator) -> list[int]:
    """``min(count, n_paragraphs − 1)`` distinct boundaries drawn uniformly without replacement
    from the candidates ``1 … n_paragraphs − 1`` (paragraph indices; module docstring), sorted.
    """
    k = min(count, n_paragraphs - 1)
    if k <= 0:
        return []
    return sorted(int(x) + 1 for x in rng.choice(n_paragraphs - 1, size=k, replace=False))


def _para_ranges(sections: pl.DataFrame) -> dict[str, set[tuple[int, int]]]:
    out: dict[str, set[tuple[int, int]]] = {}
    for doc, a, b in sections.select("doc_id", "para_start", "para_end").iter_rows():
        out.setdefault(doc, set()).add((int(a), int(b)))
    return out


def _n_paragraphs(paragraphs: pl.DataFrame | None, *tables: pl.DataFrame) -> dict[str, int]:
    """Paragraphs per document: from ``paragraphs`` when given, else the largest ``para_end``
    of the sections tables (sections tile the paragraphs)."""
    if paragraphs is not None:
        return {d: int(n) for d, n in paragraphs.group_by("doc_id").agg(pl.len()).iter_rows()}
    out: dict[str, int] = {}
    for t in tables:
        for d, n in t.group_by("doc_id").agg(pl.col("para_end").max()).iter_rows():
            out[d] = max(out.get(d, 0), int(n))
    return out


def chance_agreement(
    sections: pl.DataFrame,
    gold: pl.DataFrame,
    *,
    paragraphs: pl.DataFrame | None = None,
    tolerance: int = 1,
    seed: int = Settings.seed,
    draws: int = CHANCE_DRAWS,
) -> dict[str, float]:
    """Agreement with ``gold`` of random segmentations with ``sections``' boundary count per
    document, averaged over ``draws`` draws (module docstring, *Chance agreement*):
    ``section_span_identity``, ``boundary_f1`` and ``top_boundary_f1``, each the chance
    counterpart of the observed figure of :func:`structure_quality`.

    ``paragraphs`` gives each document's paragraph count (else the largest ``para_end`` of the
    two tables). Boundary figures cover the documents both tables hold, like
    :func:`boundary_scores`; span identity covers every document of ``sections`` (one missing
    from gold matches nothing), like :func:`span_identity`. NaN where the observed figure is
    undefined (no boundary on either side, no section).
    """
    if draws < 1:
        raise ValueError(f"chance_agreement: draws must be >= 1, got {draws}")
    n_par = _n_paragraphs(paragraphs, sections, gold)
    nan = float("nan")
    out: dict[str, float] = {}
    for stream, top_only in ((0, False), (1, True)):
        pred, ref = _boundaries(sections, top_only), _boundaries(gold, top_only)
        docs = sorted(set(pred) & set(ref))
        n_g = sum(len(ref[d]) for d in docs)
        span_docs = sorted(pred)
        gold_ranges = _para_ranges(gold)
        f1s, spans = [], []
        for d in range(draws):
            rng = np.random.default_rng(np.random.SeedSequence([seed, d, stream]))
            tp = n_p = same = n_sec = 0
            for doc in span_docs if not top_only else docs:
                if doc not in n_par:
                    raise ValueError(f"chance_agreement: document {doc!r} has no paragraphs")
                b = random_boundaries(n_par[doc], len(pred[doc]), rng)
                if doc in ref:
                    tp += match_boundaries(b, ref[doc], tolerance)
                    n_p += len(b)
                if not top_only:
                    edges = [0, *b, n_par[doc]]
                    ranges = gold_ranges.get(doc, set())
                    same += sum((edges[i], edges[i + 1]) in ranges for i in range(len(b) + 1))
                    n_sec += len(b) + 1
            f1s.append(2 * tp / (n_p + n_g) if n_p + n_g else nan)
            spans.append(same / n_sec if n_sec else nan)
        if top_only:
            out["top_boundary_f1"] = float(np.mean(f1s))
        else:
            out["boundary_f1"] = float(np.mean(f1s))
            out["section_span_identity"] = float(np.mean(spans)) if sections.height else nan
    return out


def _source_row(name: str, sections: pl.DataFrame) -> dict[str, Any]:
    docs = sections["doc_id"].n_unique()
    tops = top_groups(sections).group_by("doc_id").agg(
        pl.col("top_section").n_unique().alias("n"))
    depth = sections["path"].list.len().cast(pl.Int64)
    n = sections.height
    row: dict[str, Any] = {
        "source": name, "n_docs": docs, "n_sections": n,
        "sections_per_doc": n / docs if docs else float("nan"),
        "top_sections_per_doc": float(tops["n"].mean()) if docs else float("nan"),
        "single_top_share": float((tops["n"] == 1).mean()) if docs else float("nan"),
        "max_depth": int(depth.max()) if n else 0,
    }
    for k, b in enumerate(DEPTH_BINS, start=1):
        hit = depth >= k if b.endswith("plus") else depth == k
        row[b] = float(hit.mean()) if n else float("nan")
    deep = sections.filter(pl.col("path").list.len() >= 3)["doc_id"].n_unique()
    row["docs_depth3_share"] = deep / docs if docs else float("nan")
    return row


def structure_quality(
    paragraphs: pl.DataFrame | None,
    sources: Mapping[str, pl.DataFrame],
    *,
    gold: str | None = "gold",
    structural_chunks: Mapping[str, pl.DataFrame] | None = None,
    tolerance: int = 1,
    seed: int = Settings.seed,
    chance_draws: int = CHANCE_DRAWS,
) -> pl.DataFrame:
    """One row per structure source (columns :data:`QUALITY_SCHEMA`, sources in the given
    order).

    ``sources``: name -> sections table; ``gold``: the name of the gold source among them (its
    agreement columns are NaN; ``None``: no agreement is measured); ``structural_chunks``:
    name -> a structural chunk table of that source (e.g. G2 for gold, A2 for induced), for
    ``chunk_span_identity``. ``paragraphs`` (the paragraphs table), when given, is checked
    against the sections: a section range outside its document's paragraphs raises
    ``ValueError`` naming the source and document; it also gives the paragraph counts the
    random segmentations draw from. ``seed`` and ``chance_draws`` fix the ``*_chance`` columns
    (:func:`chance_agreement`; the workflow passes the config's ``seed``).
    """
    if gold is not None and gold not in sources:
        raise ValueError(f"structure_quality: gold source {gold!r} not among {list(sources)}")
    if paragraphs is not None:
        n_par = dict(paragraphs.group_by("doc_id").agg(pl.len()).iter_rows())
        for name, s in sources.items():
            bad = s.with_columns(pl.col("doc_id").replace_strict(
                n_par, default=-1, return_dtype=pl.Int64).alias("_n")).filter(
                (pl.col("_n") < 0) | (pl.col("para_end") > pl.col("_n")))
            if bad.height:
                r = bad.row(0, named=True)
                raise ValueError(f"structure_quality: source {name!r}, document {r['doc_id']!r}:"
                                 f" section {r['section_idx']} ends at paragraph "
                                 f"{r['para_end']}, beyond the paragraphs table")
    chunks = structural_chunks or {}
    rows = []
    for name, s in sources.items():
        row = _source_row(name, s)
        nan = float("nan")
        row |= {k: nan for k in QUALITY_SCHEMA if k not in row}
        if gold is not None and name != gold:
            g = sources[gold]
            b = boundary_scores(s, g, tolerance=tolerance)
            row |= {"section_span_identity": span_identity(s, g),
                    "boundary_precision": b["precision"], "boundary_recall": b["recall"],
                    "boundary_f1": b["f1"],
                    "top_boundary_f1": boundary_scores(s, g, tolerance=tolerance,
                                                       top_only=True)["f1"]}
            if name in chunks and gold in chunks:
                row["chunk_span_identity"] = span_identity(chunks[name], chunks[gold])
            chance = chance_agreement(s, g, paragraphs=paragraphs, tolerance=tolerance,
                                      seed=seed, draws=chance_draws)
            for f in CHANCE_FIGURES:
                row[f"{f}_chance"] = chance[f]
                row[f"{f}_kappa"] = chance_corrected(row[f], chance[f])
        rows.append(row)
    return pl.DataFrame(rows, schema=QUALITY_SCHEMA) if rows else pl.DataFrame(
        schema=QUALITY_SCHEMA)


# ---------------------------------------------------------------- comparison checks


def routing_pool(chunks: pl.DataFrame, top_sections: int) -> dict[str, Any]:
    """The candidate pool of two-stage routing over ``chunks``: ``n_sections`` (the
    ``(doc_id, top_section)`` pairs of the whole corpus, all of which stage 1 ranks), ``kept``
    (``min(top_sections, n_sections)``, kept for every query), ``kept_share``, ``n_docs`` and
    ``single_top_docs`` (documents with one section)."""
    if top_sections < 1:
        raise ValueError(f"routing_pool: top_sections must be >= 1, got {top_sections}")
    per_doc = chunks.group_by("doc_id").agg(pl.col("top_section").n_unique().alias("n"))
    n_sec = int(per_doc["n"].sum()) if per_doc.height else 0
    kept = min(top_sections, n_sec)
    return {"n_sections": n_sec, "kept": kept,
            "kept_share": kept / n_sec if n_sec else float("nan"),
            "n_docs": per_doc.height, "single_top_docs": int((per_doc["n"] == 1).sum())}


def same_text(chunks_a: pl.DataFrame, chunks_b: pl.DataFrame) -> tuple[int, int]:
    """(chunks of ``a`` whose span and prefix equal a chunk of ``b``, chunks of ``a``): how
    much of ``a``'s embedded text ``prefix + text[start:end]`` is unchanged in ``b``."""
    keys = ["doc_id", "start", "end"]
    a = chunks_a.select(*keys, pl.col("prefix").fill_null(""))
    b = chunks_b.select(*keys, pl.col("prefix").fill_null("")).unique()
    same = a.join(b, on=[*keys, "prefix"], how="semi").height
    return same, a.height


def comparison_checks(
    conditions: Sequence[str],
    chunks: Mapping[str, pl.DataFrame],
    *,
    hier_top_sections: int,
    chunk_stats: Mapping[str, Mapping] | None = None,
) -> pl.DataFrame:
    """The measured checks (:data:`CHECKS`) for every pair of ``conditions`` they apply to.

    ``chunks``: chunkset -> chunk table (every chunkset the conditions read); ``chunk_stats``:
    chunkset -> the chunk stats JSON (``chunks/{chunkset}.json``), whose ``placebo`` report
    gives ``placebo_pairs_identical``. Pairs are listed once, in grid order (``cond_a`` before
    ``cond_b``); readers look a contrast up in either order. Columns :data:`CHECKS_SCHEMA`.
    """
    rows: list[dict[str, Any]] = []
    conds = [study.condition(c) for c in conditions]
    for i, a in enumerate(conds):
        for b in conds[i + 1:]:
            rows += _pair_checks(a, b, chunks, hier_top_sections, chunk_stats or {})
    return pl.DataFrame(rows, schema=CHECKS_SCHEMA) if rows else pl.DataFrame(
        schema=CHECKS_SCHEMA)


def _pair_checks(a, b, chunks, k, stats) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(check, count, total, detail):
        out.append({"cond_a": a.name, "cond_b": b.name, "check": check,
                    "value": count / total if total else float("nan"), "count": count,
                    "total": total, "detail": detail})

    if a.chunkset == b.chunkset and a.retrieval != b.retrieval:
        if a.chunkset not in chunks:
            raise KeyError(f"comparison_checks: no chunk table for chunkset {a.chunkset!r} "
                           f"({a.name} vs {b.name})")
        pool = routing_pool(chunks[a.chunkset], k)
        add("routing_pool", pool["kept"], pool["n_sections"],
            f"stage 1 keeps {pool['kept']} of the corpus's {pool['n_sections']} sections "
            f"(hier_top_sections {k})")
        add("routing_single_top", pool["single_top_docs"], pool["n_docs"],
            "documents with a single top-level section")
        return out
    if not (study.is_flat(a) and study.is_flat(b)) or a.chunkset == b.chunkset:
        return out
    if not study.same_boundaries(a, b):
        return out
    for cs in (a.chunkset, b.chunkset):
        if cs not in chunks:
            raise KeyError(f"comparison_checks: no chunk table for chunkset {cs!r} "
                           f"({a.name} vs {b.name})")
    same, total = same_text(chunks[a.chunkset], chunks[b.chunkset])
    add("same_text", same, total, f"chunks whose embedded text (span and prefix) is the same "
        f"under {a.name} and {b.name}")
    for c in (a, b):
        rep = (stats.get(c.chunkset) or {}).get("placebo") if study.uses_placebo(c) else None
        if rep and rep.get("n_pairs"):
            add("placebo_pairs_identical", int(rep.get("identical_paths", 0)),
                int(rep["n_pairs"]), "unique (document, path) pairs whose placebo path is "
                "textually their own")
    return out


# ---------------------------------------------------------------- one corpus


def corpus_structure_report(
    paragraphs: pl.DataFrame,
    gold_sections: pl.DataFrame | None,
    induced_sections: pl.DataFrame | None,
    chunks: Mapping[str, pl.DataFrame],
    conditions: Sequence[str],
    *,
    hier_top_sections: int,
    inducer: str | None = None,
    chunk_stats: Mapping[str, Mapping] | None = None,
    extra_sources: Mapping[str, pl.DataFrame] | None = None,
    seed: int = Settings.seed,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(structure_quality, comparison_checks)`` of one corpus, for the report.

    Sources: ``gold`` (``gold_sections``), ``induced:<inducer>`` (``induced_sections``), then
    any ``extra_sources`` (e.g. a TextTiling induction kept for comparison). Structural chunk
    tables for ``chunk_span_identity`` are taken from ``chunks``: the first structural chunkset
    of each structure among the conditions (all chunksets of one structure share their spans).
    ``seed`` seeds the random segmentations of the ``*_chance`` columns.
    """
    gold = study.Structure.GOLD.value
    sources: dict[str, pl.DataFrame] = {}
    if gold_sections is not None:
        sources[gold] = gold_sections
    label = f"induced:{inducer or 'unknown'}"
    if induced_sections is not None:
        sources[label] = induced_sections
    sources |= dict(extra_sources or {})
    structural: dict[str, pl.DataFrame] = {}
    for c in conditions:
        cond = study.condition(c)
        if not study.is_structural(cond) or cond.chunkset not in chunks:
            continue
        name = gold if study.on_gold(cond) else label
        structural.setdefault(name, chunks[cond.chunkset])
    quality = structure_quality(paragraphs, sources, gold=gold if gold in sources else None,
                                structural_chunks=structural, seed=seed)
    checks = comparison_checks(conditions, chunks, hier_top_sections=hier_top_sections,
                               chunk_stats=chunk_stats)
    return quality, checks

