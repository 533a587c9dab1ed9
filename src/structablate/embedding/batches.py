"""Fixed-shape batches: which texts share a batch and at what padded length, the texts
tokenized once, and the int64 input arrays of each batch.

Pure numpy and tokenizer calls (no torch): the embedders (:mod:`.embedder`) and the rerankers
(:mod:`structablate.retrieval.rerank`) build their batches here, and the benchmarks plan them
without a model. Lengths are token counts with the model's special tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def plan_batches(lengths: Sequence[int], length_bucket: int, batch_size: int,
                 max_seq_length: int) -> list[tuple[int, list[int]]]:
    """Fixed-shape batches: ``(padded_length, rows)`` with ``len(rows) <= batch_size``.

    ``lengths[i]`` is text ``i``'s token count with special tokens. A text goes to the bucket
    ``min(max_seq_length, ceil(length / length_bucket) * length_bucket)``; buckets in ascending
    order, rows in input order within a bucket, ``batch_size`` rows per batch (the last batch
    of a bucket is filled with empty texts when run). Every batch runs at shape
    ``(batch_size, padded_length)`` whatever the rows are.
    """
    buckets: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        padded = min(max_seq_length, -(-length // length_bucket) * length_bucket)
        buckets.setdefault(padded, []).append(i)
    return [(padded, idx[k : k + batch_size])
            for padded in sorted(buckets) for idx in [buckets[padded]]
            for k in range(0, len(idx), batch_size)]


def padded_tokens(plan: Sequence[tuple[int, list[int]]], batch_size: int | None) -> int:
    """Tokens a plan computes: ``batch_size * padded`` per batch when batches are filled with
    empty rows to ``batch_size``; ``len(rows) * padded`` when ``batch_size`` is None (batches
    run with their real rows only, :attr:`structablate.embedding.Embedder.fill_batches`)."""
    return sum((len(rows) if batch_size is None else batch_size) * padded
               for padded, rows in plan)


@dataclass
class Tokenized:
    """Texts (or text pairs) tokenized once, for planning and for the batches.

    ``ids[i]``: token ids of item ``i`` with the model's special tokens, truncated to the
    truncation length; ``type_ids[i]``: its segment ids (None for a model without
    ``token_type_ids``); ``lengths[i]``: its token count *before* truncation (so
    ``lengths[i] > max_length`` means item ``i`` was cut).
    """

    ids: list[list[int]]
    type_ids: list[list[int]] | None
    lengths: list[int]
    seconds: float = 0.0
    """Wall seconds the tokenizer took."""

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, rows: Sequence[int]) -> Tokenized:
        """The items ``rows`` (in that order)."""
        return Tokenized([self.ids[i] for i in rows],
                         None if self.type_ids is None else [self.type_ids[i] for i in rows],
                         [self.lengths[i] for i in rows])


def tokenize_once(tokenizer, first: Sequence[str], second: Sequence[str] | None,
                  max_length: int, truncation: str | bool = True) -> Tokenized:
    """One batch call of a (fast) tokenizer over all items, giving the ids the fixed-shape
    batches are built from and the untruncated lengths the plan and statistics use.

    Items longer than ``max_length`` are tokenized a second time with ``truncation`` at
    ``max_length`` (only those), so every item's ids equal what the tokenizer gives with
    truncation at the model's length, as the batches of earlier versions (tokenized per batch
    at the bucket length, which is the truncation length for every cut item) did.
    """
    t0 = time.perf_counter()
    want_tt = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    kw = {"add_special_tokens": True, "return_attention_mask": False,
          "return_token_type_ids": want_tt, "verbose": False}
    args = (list(first),) if second is None else (list(first), list(second))
    if not args[0]:
        return Tokenized([], [] if want_tt else None, [], 0.0)
    enc = tokenizer(*args, truncation=False, **kw)
    ids = list(enc["input_ids"])
    tt = list(enc["token_type_ids"]) if want_tt else None
    lengths = [len(x) for x in ids]
    cut = [i for i, n in enumerate(lengths) if n > max_length]
    if cut:
        sub = tokenizer(*([a[i] for i in cut] for a in args), truncation=truncation,
                        max_length=max_length, **kw)
        for j, i in enumerate(cut):
            ids[i] = sub["input_ids"][j]
            if tt is not None:
                tt[i] = sub["token_type_ids"][j]
    return Tokenized(ids, tt, lengths, time.perf_counter() - t0)


class BatchBuilder:
    """Fixed-shape int64 input arrays from :class:`Tokenized` items, as the tokenizer would pad
    them (``input_ids`` padded with the pad token, ``attention_mask`` 0 on padding,
    ``token_type_ids`` with the pad segment id; left or right as the tokenizer pads). Rows
    beyond the items are filled with ``filler`` (the tokenized empty text or pair)."""

    def __init__(self, tokenizer, filler: Tokenized):
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self.left = getattr(tokenizer, "padding_side", "right") == "left"
        self.names = [n for n in ("input_ids", "token_type_ids", "attention_mask")
                      if n in getattr(tokenizer, "model_input_names", ())
                      or n != "token_type_ids"]
        if filler.type_ids is None and "token_type_ids" in self.names:
            self.names.remove("token_type_ids")
        self.filler = filler

    def build(self, tok: Tokenized, rows: Sequence[int], padded: int, n_rows: int
              ) -> dict[str, np.ndarray]:
        """Arrays of shape ``(n_rows, padded)``: row ``j`` is item ``rows[j]``, the rest filler."""
        ids = np.full((n_rows, padded), self.pad_id, dtype=np.int64)
        mask = np.zeros((n_rows, padded), dtype=np.int64)
        tt = (np.full((n_rows, padded), self.pad_type, dtype=np.int64)
              if "token_type_ids" in self.names else None)
        items = [(tok, i) for i in rows] + [(self.filler, 0)] * (n_rows - len(rows))
        for r, (src, i) in enumerate(items):
            seq = src.ids[i]
            n = len(seq)
            sl = slice(padded - n, padded) if self.left else slice(0, n)
            ids[r, sl] = seq
            mask[r, sl] = 1
            if tt is not None:
                tt[r, sl] = src.type_ids[i]
        out = {"input_ids": ids}
        if tt is not None:
            out["token_type_ids"] = tt
        out["attention_mask"] = mask
        return out

