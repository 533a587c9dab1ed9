"""Embedding with sentence-transformers, batch-invariant, behind a content-addressed cache.

Batch invariance: a transformer's output for one text can change in its last bits with the
other texts of its batch (padding length and matrix shapes pick different kernels). To make a
text's vector a function of the text alone, every batch has a fixed shape: texts are bucketed
by token length rounded up to a multiple of ``length_bucket`` (capped at the model's maximum
sequence length), padded to that length, and each batch is filled to ``batch_size`` rows with
empty texts. So the same text gives byte-identical vectors whichever condition, order or cache
state it is embedded in, and the measured half stays deterministic. Where a row's output does
not depend on the number of rows (OpenVINO on the CPU, checked when the embedder is built:
``Embedder.rows_invariant``), a bucket's last batch runs with its real rows only
(``Embedder.fill_batches`` False), giving the same bytes without computing empty rows.

Precision and backend (per embedder, part of the cache signature because vectors differ):

* ``dtype`` sets the precision of the transformer layers: ``float32``, ``float16``,
  ``bfloat16`` or ``auto``. Pooling, any dense layer and the L2 normalisation always run in
  float32, and vectors are stored as float32. ``auto`` resolves (see :func:`resolve_dtype`) to
  ``bfloat16`` on CUDA GPUs that support it and to ``float32`` everywhere else, CPUs included
  (bf16 fails the ranking half of the fidelity gate there); it never picks ``float16``.
* ``backend`` is ``torch`` (sentence-transformers as loaded; bf16/fp16 through autocast on the
  CPU, through ``.to(dtype)`` of the transformer on GPUs) or ``openvino`` (CPU only: the
  transformer module converted once per process with ``openvino.convert_model`` and compiled
  for the CPU with the dtype as OpenVINO's inference precision; needs the ``openvino`` package).

The cache is a folder of immutable shards (:mod:`structablate.store`) keyed by
``sha256(model signature, text)``; a text shared by several conditions (or by a rerun) is
embedded once. Every job commits its own shards (temp file, fsync, atomic rename), so any number
of jobs on any number of nodes share one cache over NFS, and a killed job loses only the batch
it had not committed.

The package, by concern (every public name is importable from here):

* :mod:`.batches` fixed-shape batches: planning, tokenizing once, the input arrays (no torch;
  the rerankers share them);
* :mod:`.device` the precision a ``dtype`` means on this machine, native bf16, fused attention,
  host-to-device copies (the precision from the settings alone is
  :func:`structablate.settings.planned_dtype`);
* :mod:`.backends` the registry of backends (:data:`~.backends.FACTORIES`, keyed by
  :data:`structablate.settings.EMBEDDING_BACKENDS`);
* :mod:`.embedder` the :class:`Embedder` and the cache signature of its vectors;
* :mod:`.cache` the vector cache and :func:`embed_texts`.
"""

from structablate.errors import EmbedderConfigError
from structablate.settings import DTYPES, planned_dtype

from .backends import FACTORIES, OpenVinoTransformer, TorchTransformer, TransformerBackend
from .batches import BatchBuilder, Tokenized, padded_tokens, plan_batches, tokenize_once
from .cache import EmbeddingCache, EmbeddingStats, embed_texts
from .device import (
    autocast_dtype,
    cpu_has_native_bf16,
    in_background,
    on_device,
    resolve_dtype,
    use_sdpa,
)
from .embedder import Embedder, check_embedder, embedder_signature

__all__ = [
    "DTYPES",
    "FACTORIES",
    "BatchBuilder",
    "Embedder",
    "EmbedderConfigError",
    "EmbeddingCache",
    "EmbeddingStats",
    "OpenVinoTransformer",
    "Tokenized",
    "TorchTransformer",
    "TransformerBackend",
    "autocast_dtype",
    "check_embedder",
    "cpu_has_native_bf16",
    "embed_texts",
    "embedder_signature",
    "in_background",
    "on_device",
    "padded_tokens",
    "plan_batches",
    "planned_dtype",
    "resolve_dtype",
    "tokenize_once",
    "use_sdpa",
]
