"""Build a condition's chunk table from the corpus tables.

This is the one entry point the workflow calls for chunking: it plans boundaries
(:mod:`structural` or :mod:`fixed`), renders prefixes (:mod:`prefix`), and counts content and
prefix tokens with the embedder's tokenizer.

The documents are tokenized once per corpus and tokenizer (:func:`tokenize_corpus`, stored with
:func:`write_corpus_tokens`) and every chunkset reads that table: planning needs each document's
token starts, and for whitespace-local tokenizers (:attr:`TokenCounter.whitespace_local`) a
chunk's content tokens are the document tokens that start inside it, because chunks begin and
end at whitespace. Either way the chunk table is the same, byte for byte, as counting every
chunk's content with the tokenizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
import polars as pl
from tqdm import tqdm

from structablate import study
from structablate.chunking.fixed import fixed_windows
from structablate.chunking.prefix import render_breadcrumb
from structablate.chunking.structural import ChunkSpan, structural_chunks
from structablate.chunking.tokens import CorpusTokens, TokenCounter, tokenize_corpus
from structablate.corpus.flatten import (
    Section,
    paragraphs_from_frame,
    sections_from_frame,
    top_section_ids,
)
from structablate.ids import id_token  # the chunk-id form of a doc_id (re-exported)
from structablate.mechanisms import MECHANISMS
from structablate.settings import ChunkingSettings, Settings
from structablate.study import Boundaries, Condition, Prefix
from structablate.tables import frame
from structablate.text.sentences import sentence_spans

log = logging.getLogger(__name__)

VERIFY_EVERY = 40
"""With counts read from the token table, every ``VERIFY_EVERY``-th chunk is also re-tokenized
on its own; a disagreement (a tokenizer that is not local after all) makes every chunk count by
re-tokenizing."""


def build_chunks(
    cond: Condition,
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    counter: TokenCounter,
    params: ChunkingSettings,
    *,
    size_reference: pl.DataFrame | None = None,
    placebo_seed: int = Settings.seed,
    placebo_paths: Mapping[tuple[str, tuple[str, ...]], tuple[str, ...]] | None = None,
    progress: bool = True,
    report: dict | None = None,
    tokens: CorpusTokens | None = None,
) -> pl.DataFrame:
    """The chunk table of ``cond``'s chunkset.

    ``tokens`` is the corpus token table of ``documents`` (and, if it holds sentences, of
    ``paragraphs``) under ``counter``'s tokenizer
    (:func:`~structablate.chunking.tokens.tokenize_corpus`); without it the documents are
    tokenized here. A table of another tokenizer, other text or other paragraphs raises
    ``ValueError``. The result does not depend on whether a table is given.

    ``sections`` is the structure the boundaries follow (gold or induced) for structural
    conditions; for fixed windows it only labels each window with a section. ``size_reference``
    is the sections table whose structural chunks set each document's fixed-window target
    (required for fixed windows). ``placebo_paths`` maps ``(doc_id, real path)`` to the
    assigned path for the placebo condition; without it, the placebo paths are assigned here
    from the chunk table's own (document, depth-truncated path) pairs with
    ``placebo_seed`` (:func:`structablate.chunking.placebo.assign_placebo_paths`), and
    the assignment report lands in ``report["placebo"]`` when ``report`` is a dict.
    A document without paragraphs is an error.
    Rows are ordered by document (as in ``documents``) and position; an extra column
    ``size_target`` holds the fixed-window target (null for structural chunks).
    """
    paras = paragraphs_from_frame(paragraphs)
    secs = sections_from_frame(sections)
    ref = sections_from_frame(size_reference) if size_reference is not None else None
    render_prefix = prefix_renderer(cond)
    if cond.boundaries not in PLANNED_BOUNDARIES:
        raise ValueError(f"{cond.name}: build_chunks plans no {cond.boundaries.value!r} "
                         "boundaries: add a branch for them and to PLANNED_BOUNDARIES")
    if study.is_fixed_window(cond) and ref is None:
        raise ValueError(f"{cond.name}: fixed windows need a size_reference sections table")
    if tokens is None:
        tokens = tokenize_corpus(documents, counter, progress=progress)
    else:
        tokens.check(documents, counter, cond.name,
                     {d: [(q.start, q.end) for q in ps] for d, ps in paras.items()})
    rows: dict[str, list] = {k: [] for k in (
        "chunk_id", "doc_id", "start", "end", "section_idx", "top_section", "prefix",
        "size_target")}
    # plan every document's boundaries once; the placebo assignment needs all of them
    planned: list[tuple[str, str, list[ChunkSpan], float | None]] = []
    docs = documents.select("doc_id", "title", "text").iter_rows()
    for doc_id, title, text in tqdm(
        docs, total=documents.height, desc=f"chunk {cond.chunkset}", disable=not progress,
        unit="doc",
    ):
        if doc_id not in paras or doc_id not in secs:
            raise ValueError(f"{cond.name}: document {doc_id!r} has no paragraphs or sections")
        p, s = paras[doc_id], secs[doc_id]
        starts = tokens.token_starts(doc_id)
        if tokens.has_sentences:
            para_sents = tokens.paragraph_sentences(doc_id, [(q.start, q.end) for q in p])
        else:
            para_sents = [sentence_spans(text, q.start, q.end) for q in p]
        target = None
        if study.is_structural(cond):
            spans = structural_chunks(text, p, s, starts, t_max=params.t_max, t_min=params.t_min,
                                      paragraph_sentences=para_sents)
        else:
            if doc_id not in ref:
                raise ValueError(f"{cond.name}: document {doc_id!r} missing from size reference")
            ref_spans = structural_chunks(
                text, p, ref[doc_id], starts, t_max=params.t_max, t_min=params.t_min,
                paragraph_sentences=para_sents,
            )
            target = sum(c.tokens for c in ref_spans) / len(ref_spans)
            tops = top_section_ids(s)
            bounds = [(x.start, x.end, x.section_idx, t) for x, t in zip(s, tops, strict=True)]
            sents = [x for ps in para_sents for x in ps]  # document_sentence_spans
            spans = fixed_windows(
                text, sents, starts, target, snap_tokens=params.fixed_snap_tokens,
                section_bounds=bounds,
            )
        planned.append((doc_id, title, spans, target))
    if study.uses_placebo(cond) and placebo_paths is None:
        placebo_paths = _assign_placebo(cond, planned, secs, params, placebo_seed, report)
    for doc_id, title, spans, target in planned:
        s = secs[doc_id]
        for k, c in enumerate(spans):
            rows["chunk_id"].append(f"{cond.chunkset}:{id_token(doc_id)}:{k}")
            rows["doc_id"].append(doc_id)
            rows["start"].append(c.start)
            rows["end"].append(c.end)
            rows["section_idx"].append(c.section_idx)
            rows["top_section"].append(c.top_section)
            rows["prefix"].append(render_prefix(cond, doc_id, title, s[c.section_idx], params,
                                                placebo_paths))
            rows["size_target"].append(target)
    if len(set(rows["chunk_id"])) != len(rows["chunk_id"]):
        raise ValueError(f"{cond.name}: two documents give the same chunk id; doc_ids that "
                         "differ only in whitespace are not supported")
    rows["content_tokens"] = _content_tokens(cond, rows, documents, counter, tokens)
    unique_prefixes = sorted(set(rows["prefix"]))
    prefix_counts = dict(zip(unique_prefixes, counter.count(unique_prefixes), strict=True))
    rows["prefix_tokens"] = [prefix_counts[x] if x else 0 for x in rows["prefix"]]
    size_target = rows.pop("size_target")
    df = frame("chunks", rows)
    return df.with_columns(pl.Series("size_target", size_target, dtype=pl.Float64))


def _content_tokens(
    cond: Condition, rows: dict[str, list], documents: pl.DataFrame, counter: TokenCounter,
    tokens: CorpusTokens,
) -> list[int]:
    """``len(tokenize(text[start:end]))`` of every chunk, read from the token table where that
    is exact (see the module docstring), else by re-tokenizing the content."""
    texts_by_doc = dict(documents.select("doc_id", "text").iter_rows())

    def recount(which) -> list[int]:
        return counter.count([texts_by_doc[rows["doc_id"][i]][rows["start"][i]:rows["end"][i]]
                              for i in which])

    n = len(rows["doc_id"])
    if not (counter.whitespace_local and tokens.sorted_starts):
        return recount(range(n))
    doc_rows = np.fromiter((tokens.row(d) for d in rows["doc_id"]), dtype=np.int64, count=n)
    counts = tokens.count_spans(doc_rows, np.asarray(rows["start"], dtype=np.int64),
                                np.asarray(rows["end"], dtype=np.int64))
    # a document with zero-width tokens: where they fall at a chunk edge is not certain
    odd = np.flatnonzero((tokens.eptr[doc_rows + 1] - tokens.eptr[doc_rows]) > 0)
    if odd.size:
        counts[odd] = recount(odd.tolist())
    probe = np.arange(0, n, VERIFY_EVERY)
    if probe.size and not np.array_equal(counts[probe], recount(probe.tolist())):
        log.warning("%s: token counts from the corpus token table disagree with re-tokenized "
                    "chunks; counting every chunk by re-tokenizing", cond.name)
        return recount(range(n))
    return counts.tolist()


def _assign_placebo(cond, planned, secs, params, placebo_seed, report):
    """Placebo paths for the (document, truncated path) pairs that own at least one chunk of
    the planned boundaries."""
    from structablate.chunking.placebo import assign_placebo_paths

    pairs = [
        (doc_id, tuple(secs[doc_id][idx].path[: cond.depth]))
        for doc_id, _, spans, _ in planned
        for idx in sorted({c.section_idx for c in spans})
    ]
    mapping, rep = assign_placebo_paths(pairs, placebo_seed, params.placebo_forbid_identical)
    if report is not None:
        report["placebo"] = rep
    return mapping


def structural_bound(params: ChunkingSettings) -> int:
    """The most content tokens a structural chunk can have: ``t_max + 3·(t_min − 1)`` (see
    :mod:`structablate.chunking.structural`; a whitespace-free word over ``t_max`` tokens, never
    cut, can exceed it by its own excess)."""
    return params.t_max + 3 * max(params.t_min - 1, 0)


def chunk_stats(
    chunks: pl.DataFrame,
    params: ChunkingSettings | None = None,
    sections: pl.DataFrame | None = None,
) -> dict:
    """Size-matching figures of a chunk table: counts and content/prefix token means.

    ``content_tokens_max`` is the realised maximum. With ``params``, the structural chunks
    (rows without ``size_target``) also report ``structural_bound`` (:func:`structural_bound`),
    ``structural_tokens_max`` and ``n_over_t_max`` (chunks over ``t_max``, all from merges).
    With the ``sections`` table the boundaries followed, they report ``n_cross_section`` and
    ``n_cross_top``: structural chunks whose text lies in two or more sections, or in two or
    more top-level sections (:func:`~structablate.corpus.flatten.top_section_ids`).
    """
    n = chunks.height
    ct, pt = chunks["content_tokens"], chunks["prefix_tokens"]
    target = chunks["size_target"].drop_nulls() if "size_target" in chunks.columns else None
    out = {
        "n_chunks": n,
        "n_docs": chunks["doc_id"].n_unique(),
        "content_tokens_mean": round(float(ct.mean()), 3) if n else None,
        "content_tokens_min": int(ct.min()) if n else None,
        "content_tokens_max": int(ct.max()) if n else None,
        "prefix_tokens_mean": round(float(pt.mean()), 3) if n else None,
        "size_target_mean": round(float(target.mean()), 3) if target is not None and len(target)
        else None,
    }
    structural = (chunks.filter(pl.col("size_target").is_null())
                  if "size_target" in chunks.columns else chunks)
    has = structural.height > 0
    if params is not None:
        sct = structural["content_tokens"]
        out["structural_bound"] = structural_bound(params) if has else None
        out["structural_tokens_max"] = int(sct.max()) if has else None
        out["n_over_t_max"] = int((sct > params.t_max).sum()) if has else None
    if sections is not None:
        out.update(_crossings(structural, sections) if has
                   else {"n_cross_section": None, "n_cross_top": None})
    return out


def _crossings(chunks: pl.DataFrame, sections: pl.DataFrame) -> dict[str, int]:
    """Chunks whose first and last characters lie in different sections / top-level sections."""
    secs = sections_from_frame(sections)
    doc_code = {d: i for i, d in enumerate(secs)}
    big = np.int64(1) << np.int64(40)
    keys, sec_id, top_id = [], [], []
    for d, ss in secs.items():
        tops = top_section_ids(ss)
        for x, t in zip(ss, tops, strict=True):
            keys.append(doc_code[d] * big + x.start)
            sec_id.append(doc_code[d] * big + x.section_idx)
            top_id.append(doc_code[d] * big + t)
    order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
    keys_s = np.asarray(keys, dtype=np.int64)[order]
    sec_s, top_s = np.asarray(sec_id)[order], np.asarray(top_id)[order]
    missing = [d for d in chunks["doc_id"].unique().to_list() if d not in doc_code]
    if missing:
        raise ValueError(f"chunk_stats: documents without sections: {missing[:5]}")
    dc = np.asarray([doc_code[d] for d in chunks["doc_id"].to_list()], dtype=np.int64)
    first = np.searchsorted(keys_s, dc * big + chunks["start"].to_numpy(), side="right") - 1
    last = np.searchsorted(keys_s, dc * big + chunks["end"].to_numpy() - 1, side="right") - 1
    return {
        "n_cross_section": int((sec_s[first] != sec_s[last]).sum()),
        "n_cross_top": int((top_s[first] != top_s[last]).sum()),
    }


PrefixRenderer = Callable[
    [Condition, str, str, Section, ChunkingSettings, Mapping | None], str]
"""``(condition, doc_id, title, section, params, placebo_paths) -> prefix``: the text that
precedes a chunk's content when it is embedded, with its trailing space, or ``""``."""


def no_prefix(cond: Condition, doc_id: str, title: str, section: Section,
              params: ChunkingSettings, placebo_paths: Mapping | None) -> str:
    """:attr:`~structablate.study.Prefix.NONE`: nothing precedes the content."""
    return ""


def own_breadcrumb(cond: Condition, doc_id: str, title: str, section: Section,
                   params: ChunkingSettings, placebo_paths: Mapping | None) -> str:
    """:attr:`~structablate.study.Prefix.BREADCRUMB`: the chunk's own heading path, to
    ``cond.depth`` levels below the title."""
    return render_breadcrumb(
        title, tuple(section.path[: cond.depth]), cond.depth,
        separator=params.breadcrumb_separator, include_title=params.breadcrumb_include_title)


def placebo_breadcrumb(cond: Condition, doc_id: str, title: str, section: Section,
                       params: ChunkingSettings, placebo_paths: Mapping | None) -> str:
    """:attr:`~structablate.study.Prefix.PLACEBO`: the heading path of the same depth that
    ``placebo_paths`` assigns to the chunk's own ``(doc_id, truncated path)``, under the
    chunk's own title."""
    if placebo_paths is None:
        raise ValueError(f"{cond.name}: placebo condition needs placebo path assignments")
    path = tuple(placebo_paths[(doc_id, tuple(section.path[: cond.depth]))])
    return render_breadcrumb(
        title, path, cond.depth,
        separator=params.breadcrumb_separator, include_title=params.breadcrumb_include_title)


PREFIX_RENDERERS: Mapping[Prefix, PrefixRenderer] = MappingProxyType({
    Prefix.NONE: no_prefix,
    Prefix.BREADCRUMB: own_breadcrumb,
    Prefix.PLACEBO: placebo_breadcrumb,
})
"""The prefixes the chunk rule renders, by :class:`~structablate.study.Prefix` member: every
member whose :data:`structablate.mechanisms.MECHANISMS` entry names the ``chunk`` rule
(``tests/test_mechanisms.py`` keeps the two equal). A situating context
(:attr:`~structablate.study.Prefix.CONTEXT`) is written by the ``contextualize`` rule on
windows this rule cut for another condition."""

PLANNED_BOUNDARIES: frozenset[Boundaries] = frozenset({Boundaries.FIXED, Boundaries.STRUCTURAL})
"""The boundaries :func:`build_chunks` plans (a branch each)."""


def prefix_renderer(cond: Condition) -> PrefixRenderer:
    """The renderer of ``cond``'s prefix; a prefix the chunk rule does not render raises
    ``ValueError`` naming the rule that writes it, or where a renderer is missing."""
    found = PREFIX_RENDERERS.get(cond.prefix)
    if found is not None:
        return found
    entry = MECHANISMS.get(cond.prefix)
    if entry is not None and entry.rule != "chunk":
        raise ValueError(f"{cond.name}: its prefix {cond.prefix.value!r} is written by the "
                         f"{entry.rule} rule (structablate.mechanisms), not by the chunk rule")
    raise ValueError(f"{cond.name}: no renderer for prefix {cond.prefix.value!r}: add one to "
                     "PREFIX_RENDERERS in structablate/chunking/build.py and its entry to "
                     "MECHANISMS in structablate/mechanisms.py")


def chunk_texts(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    """The embedded text of every chunk: ``prefix + text[start:end]``, in table order."""
    texts = dict(documents.select("doc_id", "text").iter_rows())
    return [
        (prefix or "") + texts[d][a:b]
        for d, a, b, prefix in chunks.select("doc_id", "start", "end", "prefix").iter_rows()
    ]
