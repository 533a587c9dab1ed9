"""Token counting with the embedder's own tokenizer, and the corpus token table.

:class:`TokenCounter` wraps a Hugging Face fast tokenizer. Counts never include special tokens
(``[CLS]``, ``[SEP]`` …): "content tokens" and "prefix tokens" in the chunk tables are exactly
``len(tokenizer(text, add_special_tokens=False).input_ids)``.

For planning cuts, a whole document is tokenized once and the character offset where each token
starts is kept; the number of tokens of a trimmed span ``[a, b)`` that starts at a word boundary
is then the number of token starts inside it.

Every chunkset of a corpus reads the same documents, so the token starts of the whole corpus are
computed once per corpus and tokenizer (:func:`tokenize_corpus`) and stored in one table
(:func:`write_corpus_tokens` / :func:`read_corpus_tokens`, one Parquet file) that every chunking
job reads. The table carries a fingerprint of the tokenizer and a SHA-256 of every document's
text, so a table built from another tokenizer or from older text is refused with an error that
names the document, never used silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import polars as pl
from tqdm import tqdm

from structablate.model_paths import resolve_model_path

# Normalizers and pre-tokenizers that act on each character or on whitespace-delimited words
# alone: under them, the tokens of a span cut at whitespace are the document's tokens inside it.
_LOCAL_NORMALIZERS = frozenset({
    "BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Strip",
})
_LOCAL_PRE_TOKENIZERS = frozenset({
    "BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits",
})


def _all_local(node: dict | None, allowed: frozenset[str], key: str) -> bool:
    if node is None:
        return True
    if node.get("type") == "Sequence":
        return all(_all_local(n, allowed, key) for n in node.get(key, []))
    return node.get("type") in allowed


PIECE_CHARS = 1_000_000
"""Characters per tokenizer call of :meth:`TokenCounter.offsets` (bounds its memory)."""


def _whitespace_cut(text: str, base: int, piece_chars: int) -> int | None:
    """The index of the last whitespace character in ``text[base + 1 : base + piece_chars]``
    (a piece ``text[base:cut]`` ends before it), else of the first one after it; None when
    the rest of the text has no whitespace."""
    end = base + piece_chars
    for j in range(end - 1, base, -1):
        if text[j].isspace():
            return j
    for j in range(end, len(text)):
        if text[j].isspace():
            return j
    return None


class TokenCounter:
    """Counts tokens of a fast tokenizer (``tokenizers`` backend), without special tokens."""

    def __init__(self, tokenizer):
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        self._tok = backend
        # make sure no truncation or padding is configured on the backend
        self._tok.no_truncation()
        self._tok.no_padding()

    @classmethod
    def from_model(cls, model: str) -> TokenCounter:
        """The tokenizer of an embedder named as in the config (hub id, path or ``pkg:``)."""
        return _counter_for(model)

    @cached_property
    def _config(self) -> str:
        return self._tok.to_str()

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the tokenizer's full serialisation (vocabulary, normalizer, …)."""
        return hashlib.sha256(self._config.encode("utf-8")).hexdigest()

    @cached_property
    def whitespace_local(self) -> bool:
        """Whether the tokens of a span cut at whitespace equal the document's tokens in it.

        True when the normalizer works character by character, the pre-tokenizer splits at
        whitespace (and punctuation/digits) before the model sees a word, and no added token
        contains whitespace or strips it (WordPiece/BERT tokenizers such as MiniLM and bge).
        Byte-level BPE (the leading ``Ġ`` depends on the character before a word) and
        SentencePiece-style tokenizers are not local: their chunk counts are re-tokenized.
        """
        cfg = json.loads(self._config)
        if not _all_local(cfg.get("normalizer"), _LOCAL_NORMALIZERS, "normalizers"):
            return False
        pre = cfg.get("pre_tokenizer")
        if pre is None or not _all_local(pre, _LOCAL_PRE_TOKENIZERS, "pretokenizers"):
            return False
        for t in cfg.get("added_tokens", []):
            content = str(t.get("content", ""))
            if any(c.isspace() for c in content) or t.get("lstrip") or t.get("rstrip") \
                    or t.get("single_word"):
                return False
        return True

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (batched)."""
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def offsets(self, texts: Sequence[str], piece_chars: int = PIECE_CHARS
                ) -> list[np.ndarray]:
        """``[n_tokens, 2]`` int64 character offsets ``[start, end)`` of every token of each
        text (zero-width tokens included).

        Memory is bounded by ``piece_chars``, not by the longest text: with a
        :attr:`whitespace_local` tokenizer a text longer than ``piece_chars`` characters is
        tokenized in pieces cut at whitespace (the same tokens, offsets shifted back), and each
        tokenizer call gets at most about ``piece_chars`` characters, so the tokenizer's own
        per-token objects (token strings, Python offset tuples; ~100 bytes per token) exist
        for one piece at a time and only the int64 offsets of whole texts are kept. A
        tokenizer that is not whitespace-local sees every text whole.
        """
        if not texts:
            return []
        pieces: list[tuple[int, int, str]] = []  # (text index, first char, piece)
        local = self.whitespace_local
        for i, text in enumerate(texts):
            base = 0
            while local and len(text) - base > piece_chars:
                cut = _whitespace_cut(text, base, piece_chars)
                if cut is None:
                    break
                pieces.append((i, base, text[base:cut]))
                base = cut
            pieces.append((i, base, text[base:]))
        found: list[list[np.ndarray]] = [[] for _ in texts]
        k = 0
        while k < len(pieces):
            group, chars = [], 0
            while k < len(pieces) and (not group or chars + len(pieces[k][2]) <= piece_chars):
                group.append(pieces[k])
                chars += len(pieces[k][2])
                k += 1
            encs = self._tok.encode_batch([p for _, _, p in group], add_special_tokens=False)
            for (i, base, _), e in zip(group, encs, strict=True):
                found[i].append(np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) + base)
            del encs
        return [parts[0] if len(parts) == 1 else np.concatenate(parts) for parts in found]

    def token_starts(self, text: str) -> np.ndarray:
        """Sorted character offsets (int64) of the start of every token of ``text``."""
        off = self.offsets([text])[0]
        return np.ascontiguousarray(off[off[:, 1] > off[:, 0], 0])

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut after its first ``max_tokens`` tokens (on the original characters)."""
        enc = self._tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= max_tokens:
            return text
        return text[: enc.offsets[max_tokens - 1][1]].rstrip()


@lru_cache(maxsize=8)
def _counter_for(model: str) -> TokenCounter:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_model_path(model), use_fast=True)
    return TokenCounter(tok)


# --------------------------------------------------------------------------------------------
# the corpus token table


def text_digest(text: str) -> str:
    """SHA-256 (hex) of a document's flat text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def paragraphs_digest(spans: Sequence[tuple[int, int]]) -> str:
    """SHA-256 (hex) of a document's paragraph spans ``[(start, end), ...]`` in order."""
    arr = np.asarray(list(spans), dtype="<i8").reshape(-1, 2)
    return hashlib.sha256(arr.tobytes()).hexdigest()


@dataclass(frozen=True, eq=False)
class CorpusTokens:
    """Token start offsets (and optionally sentence spans) of every document of a corpus under
    one tokenizer.

    ``starts[ptr[i]:ptr[i+1]]`` are the character offsets where the non-empty tokens of document
    ``doc_ids[i]`` start, in token order (what :meth:`TokenCounter.token_starts` returns);
    ``empty[eptr[i]:eptr[i+1]]`` are the offsets of its zero-width tokens (almost always none).
    ``text_sha256[i]`` is the digest of the text they were computed from and ``tokenizer`` the
    tokenizer's :attr:`TokenCounter.fingerprint`.

    When built with the paragraphs table, ``sentences[sptr[i]:sptr[i+1]]`` holds the document's
    sentence spans ``[start, end)`` in document order, each paragraph split by
    :func:`~structablate.text.sentences.sentence_spans` (tokenizer-independent, stored
    here so that every chunkset reads them instead of splitting again), and
    ``paragraphs_sha256[i]`` the :func:`paragraphs_digest` of the paragraphs they came from.
    """

    doc_ids: tuple[str, ...]
    text_sha256: tuple[str, ...]
    tokenizer: str
    ptr: np.ndarray
    starts: np.ndarray
    eptr: np.ndarray
    empty: np.ndarray
    paragraphs_sha256: tuple[str, ...] | None = None
    sptr: np.ndarray | None = None
    sentences: np.ndarray | None = None

    @property
    def has_sentences(self) -> bool:
        return self.sentences is not None

    @cached_property
    def _row(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    def row(self, doc_id: str) -> int:
        """The table row of ``doc_id`` (``KeyError`` naming it when absent)."""
        try:
            return self._row[doc_id]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in the corpus token table") from None

    def token_starts(self, doc_id: str) -> np.ndarray:
        """The int64 token starts of one document (a view)."""
        i = self.row(doc_id)
        return self.starts[self.ptr[i] : self.ptr[i + 1]]

    def paragraph_sentences(
        self, doc_id: str, paragraph_spans: Sequence[tuple[int, int]]
    ) -> list[list[tuple[int, int]]]:
        """The stored sentence spans of each paragraph ``[start, end)`` of one document."""
        if self.sentences is None or self.sptr is None:
            raise ValueError("the corpus token table holds no sentence spans")
        i = self.row(doc_id)
        sent = self.sentences[self.sptr[i] : self.sptr[i + 1]]
        bounds = np.asarray(list(paragraph_spans), dtype=np.int64).reshape(-1, 2)
        lo = np.searchsorted(sent[:, 0], bounds[:, 0]).tolist()
        hi = np.searchsorted(sent[:, 0], bounds[:, 1]).tolist()
        pairs = list(zip(sent[:, 0].tolist(), sent[:, 1].tolist(), strict=True))
        return [pairs[a:b] for a, b in zip(lo, hi, strict=True)]

    @cached_property
    def sorted_starts(self) -> bool:
        """Whether every document's token starts are non-decreasing (true for every tokenizer
        whose offsets follow the text; :meth:`count_spans` needs it)."""
        for ptr, vals in ((self.ptr, self.starts), (self.eptr, self.empty)):
            drops = np.flatnonzero(np.diff(vals) < 0) + 1  # positions where a value drops
            if not np.isin(drops, ptr).all():
                return False
        return True

    def check(
        self,
        documents: pl.DataFrame,
        counter: TokenCounter,
        where: str = "",
        paragraphs: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    ) -> None:
        """Raise ``ValueError`` unless the table covers every document of ``documents`` with the
        same text (and, when the table holds sentences and ``paragraphs`` maps doc_id to its
        paragraph spans, the same paragraphs) and was built with ``counter``'s tokenizer."""
        at = f"{where}: " if where else ""
        if self.tokenizer != counter.fingerprint:
            raise ValueError(
                f"{at}corpus token table was built with another tokenizer (field tokenizer "
                f"{self.tokenizer[:12]}…, this one {counter.fingerprint[:12]}…); rebuild it"
            )
        for doc_id, text in documents.select("doc_id", "text").iter_rows():
            if doc_id not in self._row:
                raise ValueError(f"{at}document {doc_id!r} is missing from the corpus token table")
            i = self._row[doc_id]
            if self.text_sha256[i] != text_digest(text):
                raise ValueError(
                    f"{at}document {doc_id!r}: the corpus token table was built from other text "
                    "(field text_sha256 differs); rebuild it"
                )
            if self.paragraphs_sha256 is not None and paragraphs is not None and (
                self.paragraphs_sha256[i] != paragraphs_digest(paragraphs.get(doc_id, ()))
            ):
                raise ValueError(
                    f"{at}document {doc_id!r}: the corpus token table was built from other "
                    "paragraphs (field paragraphs_sha256 differs); rebuild it"
                )

    def count_spans(self, doc_rows: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Number of token starts (non-empty and zero-width) in each ``[start, end)`` of the
        documents at table rows ``doc_rows`` (int64 arrays, one entry per span; needs
        :attr:`sorted_starts`)."""
        doc_rows = np.asarray(doc_rows, dtype=np.int64)
        big = np.int64(1) << np.int64(40)
        out = np.zeros(len(doc_rows), dtype=np.int64)
        for ptr, vals in ((self.ptr, self.starts), (self.eptr, self.empty)):
            if not len(vals):
                continue
            owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
            key = owner * big + vals
            lo = np.searchsorted(key, doc_rows * big + np.asarray(start, dtype=np.int64))
            hi = np.searchsorted(key, doc_rows * big + np.asarray(end, dtype=np.int64))
            out += hi - lo
        return out


def tokenize_corpus(
    documents: pl.DataFrame,
    counter: TokenCounter,
    *,
    paragraphs: pl.DataFrame | None = None,
    batch: int = 32,
    progress: bool = True,
) -> CorpusTokens:
    """Tokenize every document of a ``documents`` table once (rows in table order).

    With the corpus ``paragraphs`` table, the sentence spans of every paragraph are computed
    and stored too (every document of ``documents`` needs paragraphs then).
    """
    from structablate.text.sentences import sentence_spans

    doc_ids = documents["doc_id"].to_list()
    texts = documents["text"].to_list()
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError("tokenize_corpus: the documents table repeats a doc_id")
    starts: list[np.ndarray] = []
    empty: list[np.ndarray] = []
    for b0 in tqdm(range(0, len(texts), batch), desc="tokenize corpus", unit="batch",
                   disable=not progress):
        for off in counter.offsets(texts[b0 : b0 + batch]):
            nonempty = off[:, 1] > off[:, 0]
            starts.append(off[nonempty, 0])
            empty.append(off[~nonempty, 0])
    tokens = _make_tokens(doc_ids, [text_digest(t) for t in texts], counter.fingerprint,
                          starts, empty)
    if paragraphs is None:
        return tokens
    by_doc = _paragraph_spans(paragraphs)
    digests, sents = [], []
    for doc_id, text in zip(doc_ids, texts, strict=True):
        if doc_id not in by_doc:
            raise ValueError(f"tokenize_corpus: document {doc_id!r} has no paragraphs")
        spans = by_doc[doc_id]
        digests.append(paragraphs_digest(spans))
        doc_sents = [x for a, b in spans for x in sentence_spans(text, a, b)]
        sents.append(np.asarray(doc_sents, dtype=np.int64).reshape(-1, 2))
    sptr, flat = _csr(sents)
    return dataclasses.replace(tokens, paragraphs_sha256=tuple(digests), sptr=sptr,
                               sentences=flat.reshape(-1, 2))


def _paragraph_spans(paragraphs: pl.DataFrame) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    rows = paragraphs.select("doc_id", "para_idx", "start", "end").sort("doc_id", "para_idx")
    for doc_id, _, a, b in rows.iter_rows():
        out.setdefault(doc_id, []).append((a, b))
    return out


def _csr(parts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=ptr[1:])
    vals = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return ptr, vals


def _make_tokens(doc_ids, digests, tokenizer, starts, empty) -> CorpusTokens:
    ptr, s = _csr(starts)
    eptr, e = _csr(empty)
    return CorpusTokens(tuple(doc_ids), tuple(digests), tokenizer, ptr, s, eptr, e)


TOKEN_TABLE_COLUMNS = (
    "doc_id", "text_sha256", "tokenizer", "token_starts", "empty_token_starts",
    "paragraphs_sha256", "sentence_starts", "sentence_ends",
)


def write_corpus_tokens(tokens: CorpusTokens, path: str | os.PathLike[str]) -> None:
    """Write the table as Parquet, atomically and byte-deterministically: one row per document,
    columns :data:`TOKEN_TABLE_COLUMNS`, offsets as ``list[int32]`` (the sentence columns and
    ``paragraphs_sha256`` are null when the table holds no sentences)."""
    from structablate.io import write_parquet

    for arr in (tokens.starts, tokens.sentences):
        if arr is not None and len(arr) and int(arr.max()) >= 2**31:
            raise ValueError("corpus token table: a document is longer than 2**31 characters")
    n = len(tokens.doc_ids)
    if tokens.sentences is not None and tokens.sptr is not None:
        p_sha = pl.Series(list(tokens.paragraphs_sha256 or ()), dtype=pl.String)
        s_start = _list_column(tokens.sptr, tokens.sentences[:, 0])
        s_end = _list_column(tokens.sptr, tokens.sentences[:, 1])
    else:
        p_sha = pl.Series([None] * n, dtype=pl.String)
        s_start = s_end = pl.Series([None] * n, dtype=pl.List(pl.Int32))
    df = pl.DataFrame({
        "doc_id": pl.Series(list(tokens.doc_ids), dtype=pl.String),
        "text_sha256": pl.Series(list(tokens.text_sha256), dtype=pl.String),
        "tokenizer": pl.Series([tokens.tokenizer] * n, dtype=pl.String),
        "token_starts": _list_column(tokens.ptr, tokens.starts),
        "empty_token_starts": _list_column(tokens.eptr, tokens.empty),
        "paragraphs_sha256": p_sha,
        "sentence_starts": s_start,
        "sentence_ends": s_end,
    })
    write_parquet(df, path)


def _list_column(ptr: np.ndarray, vals: np.ndarray) -> pl.Series:
    """A ``list[int32]`` column from CSR offsets and values (no Python loop)."""
    import pyarrow as pa

    arr = pa.LargeListArray.from_arrays(pa.array(ptr.astype(np.int64)),
                                       pa.array(np.ascontiguousarray(vals).astype(np.int32)))
    return pl.Series(pl.from_arrow(arr)).cast(pl.List(pl.Int32))


def read_corpus_tokens(path: str | os.PathLike[str]) -> CorpusTokens:
    """Read a table written by :func:`write_corpus_tokens` (errors name the file and field)."""
    from structablate.io import read_parquet

    df = read_parquet(path)
    missing = [c for c in TOKEN_TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a corpus token table (missing column(s) {missing})")
    fps = df["tokenizer"].unique().to_list()
    if len(fps) > 1:
        raise ValueError(f"{path}: field tokenizer holds {len(fps)} different fingerprints")

    def csr(col: str) -> tuple[np.ndarray, np.ndarray]:
        s = df[col]
        if s.null_count():
            raise ValueError(f"{path}: field {col} has nulls")
        ptr = np.zeros(df.height + 1, dtype=np.int64)
        np.cumsum(s.list.len().to_numpy(), out=ptr[1:])
        vals = s.explode(empty_as_null=False).drop_nulls().to_numpy().astype(np.int64)
        if len(vals) != ptr[-1]:
            raise ValueError(f"{path}: field {col} holds null offsets")
        return ptr, vals

    ptr, starts = csr("token_starts")
    eptr, empty = csr("empty_token_starts")
    tokens = CorpusTokens(
        tuple(df["doc_id"].to_list()), tuple(df["text_sha256"].to_list()),
        fps[0] if fps else "", ptr, starts, eptr, empty,
    )
    n_null = df["sentence_starts"].null_count()
    if n_null == df.height and df.height:
        return tokens
    if n_null or df["paragraphs_sha256"].null_count():
        raise ValueError(f"{path}: field sentence_starts is null for some documents only")
    sptr, s0 = csr("sentence_starts")
    sptr1, s1 = csr("sentence_ends")
    if not np.array_equal(sptr, sptr1):
        raise ValueError(f"{path}: fields sentence_starts and sentence_ends differ in length")
    return dataclasses.replace(
        tokens, paragraphs_sha256=tuple(df["paragraphs_sha256"].to_list()), sptr=sptr,
        sentences=np.stack([s0, s1], axis=1),
    )
