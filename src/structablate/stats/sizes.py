"""Realized chunk sizes per chunkset (the size-matching guard of C1, paper Appendix J) and the
truncation rate per embedder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from structablate import study
from structablate.tables import span_identity


def _stat(x) -> float:
    return float("nan") if x is None else float(x)


def _mean(s: pl.Series) -> float:
    """Mean over non-null values; NaN when there are none."""
    return _stat(s.drop_nulls().mean())


def size_matching(
    chunks: Mapping[str, pl.DataFrame],
    embed_stats: Mapping[tuple[str, str], Mapping],
    conditions: Sequence[str],
) -> pl.DataFrame:
    """Realized chunk sizes per chunkset and the truncation rate per embedder.

    ``chunks``: chunkset -> chunk table; ``embed_stats``: (embedder, chunkset) -> the
    embedding stats JSON (``truncation_rate``). Columns: chunkset, conditions, boundaries,
    structure, n_chunks, n_docs, mean_content_tokens, sd_content_tokens, max_content_tokens,
    mean_prefix_tokens, mean_total_tokens, mean_size_target, gold_span_identity (induced
    structural chunksets: the share of their chunk spans ``(doc_id, start, end)`` that equal a
    gold structural chunk span, the paper's 78.9% / 75.8%; NaN for other chunksets or without
    a gold structural chunkset), then ``truncation_rate:<embedder>`` per embedder. Token counts
    are in the embedder's tokenizer (content without the prefix, prefix separately).
    """
    embedders = list(dict.fromkeys(e for e, _ in embed_stats))
    gold = next((df for cs, df in chunks.items()
                 if study.is_structural(cs) and study.on_gold(cs)), None)
    rows = []
    for cs, df in chunks.items():
        users = [c for c in conditions if study.condition(c).chunkset == cs]
        structure = study.structure_of(cs)
        ct = df["content_tokens"].cast(pl.Float64)
        pt = df["prefix_tokens"].cast(pl.Float64)
        row = {
            "chunkset": cs, "conditions": ", ".join(users),
            "boundaries": study.condition(cs).boundaries.value,
            "structure": structure.value if structure else "",
            "n_chunks": df.height, "n_docs": df["doc_id"].n_unique(),
            "mean_content_tokens": _mean(ct), "sd_content_tokens": _stat(ct.std()),
            "max_content_tokens": _stat(ct.max()), "mean_prefix_tokens": _mean(pt),
            "mean_total_tokens": _mean(ct + pt),
            "mean_size_target": (_mean(df["size_target"].cast(pl.Float64))
                                 if "size_target" in df.columns else float("nan")),
            "gold_span_identity": (span_identity(df, gold) if gold is not None
                                   and study.is_structural(cs) and study.on_induced(cs)
                                   else float("nan")),
        }
        for e in embedders:
            st = embed_stats.get((e, cs))
            rate = st.get("truncation_rate") if st else None
            row[f"truncation_rate:{e}"] = float(rate) if rate is not None else float("nan")
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def size_gap(sm: pl.DataFrame, structure: str, default: str | None = None) -> float | None:
    """Mean content tokens of the fixed windows sized to ``structure`` (gold / induced) minus
    those of that structure's structural chunks; None when either is absent. A fixed-window
    chunkset is sized to its condition's ``size_match`` (A0g: gold), else to ``default`` (the
    ``size_match_structure`` setting; ``structure`` when not given), so A0 and A0g are never
    averaged together. Chunksets with the same boundaries share their content, so the first
    structural one stands for all. The paper reports at most 4 tokens."""
    if not sm.height:
        return None
    structure = study.Structure(structure)
    default = structure if default is None else default
    names = sm["chunkset"].to_list()
    sized = [cs for cs in names if study.size_reference(cs, default) is structure]
    fixed = sm.filter(pl.col("chunkset").is_in(sized))["mean_content_tokens"]
    ref = sm.filter(pl.col("chunkset").is_in(
        [cs for cs in names if study.is_structural(cs) and study.structure_of(cs) is structure]))
    if not fixed.len() or not ref.height:
        return None
    return float(fixed.mean() - ref["mean_content_tokens"][0])
