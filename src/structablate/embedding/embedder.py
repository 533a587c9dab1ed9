"""The embedder: a sentence-transformers model run with fixed batch shapes, so a text's vector
is a function of the text alone (see :mod:`structablate.embedding`), and what a cached vector
depends on besides the text (:func:`embedder_signature`).

Its transformer layers run through the backend its settings name
(:data:`~structablate.embedding.backends.FACTORIES`); pooling, any dense layer and the L2
normalisation always run in float32 with torch, and vectors are float32.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from tqdm import tqdm

from structablate.errors import EmbedderConfigError
from structablate.model_paths import model_digest, resolve_model_path
from structablate.settings import EmbedderSettings, backend_device_problem, is_gpu

from .backends import FACTORIES
from .batches import BatchBuilder, Tokenized, padded_tokens, plan_batches, tokenize_once
from .device import in_background, resolve_dtype, use_sdpa


def check_embedder(cfg: EmbedderSettings, where: str = "embedder") -> None:
    """What the schema cannot say about an embedder's settings: its backend runs on its device
    (:func:`structablate.settings.backend_device_problem`: OpenVINO on the CPU only). Raises
    :class:`EmbedderConfigError` naming the key."""
    if why := backend_device_problem(cfg.backend, cfg.device):
        raise EmbedderConfigError(f"{where}.backend: {why}")


def embedder_signature(cfg: EmbedderSettings, weights: str | None = None) -> str:
    """What a cached vector depends on besides the text (``dtype: auto`` resolved on this
    machine): model, truncation length, batch shape, precision and runtime, and ``weights``,
    the digest of the model's files (:func:`structablate.model_paths.model_digest`; ``None``:
    a hub model, known by its name), so a model folder whose files were replaced in place
    misses the vectors of the old ones."""
    return (
        f"{cfg.model}|len={cfg.max_seq_length}|bucket={cfg.length_bucket}|"
        f"batch={cfg.batch_size}|norm=1|"
        f"dtype={resolve_dtype(cfg.dtype, cfg.device)}|backend={cfg.backend}"
        + (f"|weights={weights}" if weights else "")
    )


class Embedder:
    """A sentence-transformers model run with fixed batch shapes (see
    :mod:`structablate.embedding`)."""

    def __init__(self, cfg: EmbedderSettings):
        import torch
        from sentence_transformers import SentenceTransformer

        self.cfg = cfg
        self._torch = torch
        check_embedder(cfg)
        self.dtype = resolve_dtype(cfg.dtype, cfg.device)
        path = resolve_model_path(cfg.model)  # a split model's folder is verified here
        self.weights = model_digest(cfg.model)
        """The digest of the model's files (:func:`~structablate.model_paths.model_digest`),
        taken before they load."""
        self.signature = embedder_signature(cfg, self.weights)
        """What a cached vector depends on besides the text (:func:`embedder_signature`)."""
        self.model = SentenceTransformer(path, device=cfg.device)
        if cfg.max_seq_length is not None:
            self.model.max_seq_length = cfg.max_seq_length
        self.model.eval()
        self.max_seq_length = int(self.model.max_seq_length)
        self.dim = int(self.model.get_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self._transformer = self.model[0]
        self._rest = list(self.model)[1:]
        self.backend = FACTORIES[cfg.backend](self._transformer, self.tokenizer, self.dtype, cfg)
        """The backend that runs the transformer layers (its settings' ``backend``)."""
        self._cuda = is_gpu(cfg.device)
        self.attention = str(getattr(getattr(self._transformer.auto_model, "config", None),
                                     "_attn_implementation", "unknown"))
        if self._cuda:
            self.attention = use_sdpa(self._transformer.auto_model)
        self._builder = BatchBuilder(self.tokenizer, self.tokenize([""]))
        self.fill_batches = not (getattr(self.backend, "rows_independent", False)
                                 and self.rows_invariant())
        """Whether each batch is filled with empty texts to ``batch_size`` rows (the last one
        of each bucket). False only where the backend claims that a row's output does not
        depend on the number of rows (OpenVINO) *and* :meth:`rows_invariant` confirms it on
        this machine: then a bucket's last batch runs with its real rows only, and the vectors
        are the same bytes as with filler rows (small calls no longer pay for empty rows)."""
        self.padded_tokens = 0
        """Tokens of the batches :meth:`encode_tokens` ran so far, filler rows included
        (none where :attr:`fill_batches` is False)."""
        self.real_tokens = 0
        """Tokens of the texts those batches held (after truncation)."""

    def rows_invariant(self) -> bool:
        """Whether every probe text's vector is the same bytes in a batch of ``1 ..
        batch_size`` rows, at two padded lengths (the bucket and eight buckets, capped at the
        model's length): the check that lets :attr:`fill_batches` be False. A few small
        forward passes when the embedder is built."""
        bs = self.cfg.batch_size
        tok = self.tokenize([f"probe {i}: structure of a document, chunk {i * 7}."
                             for i in range(bs)])
        longest = max(tok.lengths)
        lengths = sorted({min(self.max_seq_length, n * self.cfg.length_bucket) for n in (1, 8)})
        for padded in (n for n in lengths if n >= longest):
            full = self._forward(self._builder.build(tok, range(bs), padded, bs)).cpu().numpy()
            for rows in range(1, bs):
                part = self._forward(self._builder.build(tok, range(rows), padded, rows))
                if not np.array_equal(part.cpu().numpy(), full[:rows]):
                    return False
        return True

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts including the model's special tokens, without truncation."""
        enc = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False,
                             return_attention_mask=False, return_token_type_ids=False)
        return [len(ids) for ids in enc["input_ids"]]

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """``texts`` tokenized once (one batch call), truncated to ``max_seq_length``."""
        return tokenize_once(self.tokenizer, texts, None, self.max_seq_length)

    def plan(self, texts: Sequence[str] | Tokenized) -> list[tuple[int, list[int]]]:
        """The fixed-shape batches that :meth:`encode` runs for ``texts``."""
        lengths = texts.lengths if isinstance(texts, Tokenized) else self.token_lengths(texts)
        return plan_batches(lengths, self.cfg.length_bucket, self.cfg.batch_size,
                            self.max_seq_length)

    def _forward(self, arrays: dict[str, np.ndarray]):
        """L2-normalised float32 vectors of one fixed-shape batch, as a tensor on the device."""
        torch = self._torch
        with torch.inference_mode():
            feats = self.backend(arrays)
            feats["token_embeddings"] = feats["token_embeddings"].float()
            for module in self._rest:
                feats = module(feats)
            emb = feats["sentence_embedding"].float()
            # vectors are L2-normalised: the inner product of retrieval is the cosine
            return torch.nn.functional.normalize(emb, p=2, dim=-1)

    def _batches(self, tok: Tokenized, plan: list[tuple[int, list[int]]]
                 ) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        bs = self.cfg.batch_size
        for padded, rows in plan:
            yield rows, self._builder.build(tok, rows, padded, bs if self.fill_batches
                                            else len(rows))

    def encode_tokens(self, tok: Tokenized, progress: bool = False, desc: str = "embed"
                      ) -> np.ndarray:
        """float32 vectors of tokenized texts, row ``i`` for item ``i``.

        Batches are assembled from the token ids (on a GPU in a producer thread, pinned and
        copied without blocking); vectors stay on the device until all batches ran and come
        back in one copy.
        """
        out = np.zeros((len(tok), self.dim), dtype=np.float32)
        if not len(tok):
            return out
        plan = self.plan(tok)
        batches = self._batches(tok, plan)
        if self._cuda:
            batches = in_background(batches)
        rows_done: list[int] = []
        parts = []
        bar = tqdm(total=len(plan), desc=desc, disable=not progress, unit="batch")
        try:
            for rows, arrays in batches:
                parts.append(self._forward(arrays)[: len(rows)])
                rows_done.extend(rows)
                bar.update(1)
        finally:
            bar.close()
            if hasattr(batches, "close"):
                batches.close()
        out[rows_done] = self._torch.cat(parts).cpu().numpy()
        self.padded_tokens += padded_tokens(plan, self.cfg.batch_size if self.fill_batches
                                            else None)
        self.real_tokens += sum(min(n, self.max_seq_length) for n in tok.lengths)
        return out

    def encode_batches(self, texts: Sequence[str], progress: bool = False,
                       desc: str = "embed") -> Iterator[tuple[list[int], np.ndarray]]:
        """Yield ``(rows, vectors)`` batch by batch: ``vectors[j]`` is ``texts[rows[j]]``'s."""
        tok = self.tokenize(texts)
        plan = self.plan(tok)
        bar = tqdm(total=len(plan), desc=desc, disable=not progress, unit="batch")
        try:
            for rows, arrays in self._batches(tok, plan):
                yield rows, self._forward(arrays)[: len(rows)].cpu().numpy()
                bar.update(1)
        finally:
            bar.close()

    def encode(self, texts: Sequence[str], progress: bool = False, desc: str = "embed"
               ) -> np.ndarray:
        """float32 vectors (L2-normalised), row ``i`` for ``texts[i]``."""
        return self.encode_tokens(self.tokenize(texts), progress=progress, desc=desc)

