"""Token counting with the embedder's own tokenizer.

:class:`TokenCounter` wraps a Hugging Face fast tokenizer. Counts never include special tokens
(``[CLS]``, ``[SEP]`` …): "content tokens" and "prefix tokens" in the chunk tables are exactly
``len(tokenizer(text, add_special_tokens=False).input_ids)``.

For planning cuts, :meth:`TokenCounter.token_starts` tokenizes a whole document once and returns
the character offset where each token starts; the number of tokens of a trimmed span
``[a, b)`` that starts at a word boundary is then the number of token starts inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from structablate.models import resolve_model_path


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

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (batched)."""
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def token_starts(self, text: str) -> np.ndarray:
        """Sorted character offsets (int64) of the start of every token of ``text``."""
        enc = self._tok.encode(text, add_special_tokens=False)
        starts = [s for s, e in enc.offsets if e > s]
        return np.asarray(starts, dtype=np.int64)

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
