"""Embedding with sentence-transformers, batch-invariant, behind a content-addressed cache.

Batch invariance: a transformer's output for one text can change in its last bits with the
other texts of its batch (padding length and matrix shapes pick different kernels). To make a
text's vector a function of the text alone, every batch has a fixed shape: texts are bucketed
by token length rounded up to a multiple of ``length_bucket`` (capped at the model's maximum
sequence length), padded to that length, and each batch is filled to ``batch_size`` rows with
empty texts. So the same text gives byte-identical vectors whichever condition, order or cache
state it is embedded in, and the measured half stays deterministic.

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
"""

from __future__ import annotations

import functools
import hashlib
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from structablate.errors import StructablateError
from structablate.model_paths import resolve_model_path
from structablate.settings import EmbedderSettings
from structablate.store import (
    LockSettings,
    StageLock,
    StoreError,
    StoreSettings,
    VectorStore,
    fill_found,
)

DTYPES = ("float32", "float16", "bfloat16", "auto")
BACKENDS = ("torch", "openvino")
_OV_PRECISION = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


class EmbedderConfigError(StructablateError, ValueError):
    """An embedder setting is invalid or cannot run here; the message names the field."""


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 dot-product instructions (x86 AVX512-BF16 or AMX-BF16).

    Without them PyTorch emulates bf16 (slower than float32) and OpenVINO falls back to
    float32; an explicit ``bfloat16`` on such a CPU warns (torch) or is refused (openvino).
    """
    import torch

    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        if fn is not None:
            try:
                if fn():
                    return True
            except RuntimeError:  # pragma: no cover - torch built without cpuinfo
                pass
    return False


@functools.cache
def resolve_dtype(dtype: str, device: str = "cpu") -> str:
    """The precision that ``dtype`` means on ``device``: never ``auto``.

    ``auto`` is ``bfloat16`` on a CUDA device whose GPU computes bf16 natively
    (``torch.cuda.is_bf16_supported(including_emulation=False)``, Ampere and later), and
    ``float32`` everywhere else: older GPUs, Apple MPS, and every CPU. On the CPU, bf16 is
    explicit opt-in only: it passes the cosine part of the fidelity gate of
    ``bench/bench_embedding.py`` (>= 0.9999 against float32 for every QASPER text) but not the
    ranking part (the exact top-10 of only ~70 % of QASPER questions is identical to float32's,
    the gate asks 99 %), and without AVX512-BF16/AMX it is emulated and slower than float32.
    Explicit values are returned unchanged.
    """
    if dtype not in DTYPES:
        raise EmbedderConfigError(f"embedder dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    if device.split(":", 1)[0] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise EmbedderConfigError(f"embedder device {device!r}: CUDA is not available here")
        index = torch.device(device).index
        with torch.cuda.device(index if index is not None else torch.cuda.current_device()):
            try:
                ok = torch.cuda.is_bf16_supported(including_emulation=False)
            except TypeError:  # pragma: no cover - older torch without the keyword
                ok = torch.cuda.is_bf16_supported()
        return "bfloat16" if ok else "float32"
    return "float32"


def check_embedder(cfg: EmbedderSettings, where: str = "embedder") -> None:
    """What the schema cannot say about an embedder's settings: OpenVINO runs on the CPU only.
    Raises :class:`EmbedderConfigError` naming the key."""
    if cfg.backend == "openvino" and cfg.device != "cpu":
        raise EmbedderConfigError(
            f"{where}.backend: 'openvino' runs on device 'cpu' only, not {cfg.device!r} (use "
            "backend 'torch' on GPUs)")


def embedder_signature(cfg: EmbedderSettings) -> str:
    """What a cached vector depends on besides the text (``dtype: auto`` resolved on this
    machine): model, truncation length, batch shape, precision and runtime."""
    return (
        f"{cfg.model}|len={cfg.max_seq_length}|bucket={cfg.length_bucket}|"
        f"batch={cfg.batch_size}|norm=1|"
        f"dtype={resolve_dtype(cfg.dtype, cfg.device)}|backend={cfg.backend}"
    )


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


def padded_tokens(plan: Sequence[tuple[int, list[int]]], batch_size: int) -> int:
    """Tokens a plan computes, empty filler rows included (``batch_size * padded`` each)."""
    return sum(batch_size * padded for padded, _ in plan)


class _OpenVinoTransformer:
    """A sentence-transformers transformer module compiled by OpenVINO for the CPU."""

    def __init__(self, module, input_names: Sequence[str], dtype: str, threads: int):
        try:
            import openvino as ov
        except ImportError as exc:
            raise EmbedderConfigError(
                "embedder backend 'openvino' needs the openvino package "
                "(pip install 'structablate[openvino]')") from exc
        import torch

        self.input_names = list(input_names)
        names = self.input_names

        class _Tokens(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *tensors):
                return self.inner(dict(zip(names, tensors, strict=True)))["token_embeddings"]

        example = tuple(torch.ones((2, 16), dtype=torch.long) for _ in names)
        with torch.inference_mode(False), torch.no_grad():
            converted = ov.convert_model(_Tokens(module).eval(), example_input=example)
        for port, name in zip(converted.inputs, names, strict=True):
            port.get_tensor().set_names({name})
        precision = _OV_PRECISION[dtype]
        self.compiled = ov.Core().compile_model(converted, "CPU", {
            "INFERENCE_PRECISION_HINT": precision,
            "INFERENCE_NUM_THREADS": int(threads),
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False,
        })
        got = self.compiled.get_property("INFERENCE_PRECISION_HINT")
        got = getattr(got, "get_type_name", lambda: str(got))()
        if got != precision:
            raise EmbedderConfigError(
                f"embedder dtype {dtype!r}: OpenVINO runs this model in {got} on this CPU "
                f"(no native {dtype} support); set dtype 'float32' or 'auto'")
        self.request = self.compiled.create_infer_request()

    def __call__(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {n: np.ascontiguousarray(feats[n], dtype=np.int64) for n in self.input_names}
        result = self.request.infer(inputs)
        return np.array(result[self.compiled.output(0)], dtype=np.float32, copy=True)


class Embedder:
    """A sentence-transformers model run with fixed batch shapes (see module docstring)."""

    def __init__(self, cfg: EmbedderSettings):
        import torch
        from sentence_transformers import SentenceTransformer

        self.cfg = cfg
        self._torch = torch
        check_embedder(cfg)
        self.dtype = resolve_dtype(cfg.dtype, cfg.device)
        self.model = SentenceTransformer(resolve_model_path(cfg.model), device=cfg.device)
        if cfg.max_seq_length is not None:
            self.model.max_seq_length = cfg.max_seq_length
        self.model.eval()
        self.max_seq_length = int(self.model.max_seq_length)
        self.dim = int(self.model.get_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self._transformer = self.model[0]
        self._rest = list(self.model)[1:]
        self._autocast = None
        self._ov: _OpenVinoTransformer | None = None
        if cfg.backend == "openvino":
            names = list(self.tokenizer(["a"], return_tensors="np").keys())
            self._ov = _OpenVinoTransformer(self._transformer, names, self.dtype,
                                            torch.get_num_threads())
        elif self.dtype != "float32":
            tdtype = getattr(torch, self.dtype)
            if torch.device(cfg.device).type == "cpu":
                if self.dtype == "bfloat16" and not cpu_has_native_bf16():
                    warnings.warn(
                        f"embedder {cfg.model!r}: dtype bfloat16 on a CPU without AVX512-BF16/"
                        "AMX is emulated and slower than float32",
                        stacklevel=2)
                # weights stay float32; matmuls run in dtype, norms and softmax in float32
                self._autocast = tdtype
            else:
                self._transformer.to(tdtype)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts including the model's special tokens, without truncation."""
        enc = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def plan(self, texts: Sequence[str]) -> list[tuple[int, list[int]]]:
        """The fixed-shape batches that :meth:`encode` runs for ``texts``."""
        return plan_batches(self.token_lengths(texts), self.cfg.length_bucket,
                            self.cfg.batch_size, self.max_seq_length)

    def _embed_batch(self, batch: list[str], padded: int) -> np.ndarray:
        torch = self._torch
        if self._ov is not None:
            feats_np = self.tokenizer(batch, padding="max_length", truncation=True,
                                      max_length=padded, return_tensors="np")
            tokens = torch.from_numpy(self._ov(feats_np))
            feats = {k: torch.from_numpy(np.asarray(v)) for k, v in feats_np.items()}
            feats["token_embeddings"] = tokens
        else:
            feats = self.tokenizer(batch, padding="max_length", truncation=True,
                                   max_length=padded, return_tensors="pt")
            feats = {key: v.to(self.cfg.device) for key, v in feats.items()}
            with torch.inference_mode():
                if self._autocast is not None:
                    with torch.autocast("cpu", dtype=self._autocast):
                        feats = self._transformer(feats)
                else:
                    feats = self._transformer(feats)
        with torch.inference_mode():
            feats["token_embeddings"] = feats["token_embeddings"].float()
            for module in self._rest:
                feats = module(feats)
            emb = feats["sentence_embedding"].float()
            # vectors are L2-normalised: the inner product of retrieval is the cosine
            emb = torch.nn.functional.normalize(emb, p=2, dim=-1)
            return emb.cpu().numpy()

    def encode_batches(self, texts: Sequence[str], progress: bool = False,
                       desc: str = "embed") -> Iterator[tuple[list[int], np.ndarray]]:
        """Yield ``(rows, vectors)`` batch by batch: ``vectors[j]`` is ``texts[rows[j]]``'s.

        Lets a caller hand over all its texts at once (fewer half-empty batches, so less padding)
        and still store vectors as they come.
        """
        plan = self.plan(texts) if len(texts) else []
        bs = self.cfg.batch_size
        bar = tqdm(total=len(plan), desc=desc, disable=not progress, unit="batch")
        try:
            for padded, rows in plan:
                batch = [texts[i] for i in rows] + [""] * (bs - len(rows))
                yield rows, self._embed_batch(batch, padded)[: len(rows)]
                bar.update(1)
        finally:
            bar.close()

    def encode(self, texts: Sequence[str], progress: bool = False, desc: str = "embed"
               ) -> np.ndarray:
        """float32 vectors (L2-normalised if configured), row ``i`` for ``texts[i]``."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, vecs in self.encode_batches(texts, progress=progress, desc=desc):
            out[rows] = vecs
        return out


@dataclass
class EmbeddingStats:
    """Bookkeeping of one :func:`embed_texts` call."""

    texts: int = 0
    unique_texts: int = 0
    cache_hits: int = 0
    computed: int = 0
    truncated: int = 0
    seconds_computing: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {
            "texts": self.texts,
            "unique_texts": self.unique_texts,
            "cache_hits": self.cache_hits,
            "computed": self.computed,
            "truncated": self.truncated,
            "truncation_rate": self.truncated / self.texts if self.texts else 0.0,
            "seconds_computing": round(self.seconds_computing, 3),
            "texts_per_second": (
                round(self.computed / self.seconds_computing, 2) if self.seconds_computing else None
            ),
        }
        d.update(self.extra)
        return d


class EmbeddingCache:
    """Content-addressed float32 vectors in a store folder shared by many jobs.

    ``path`` is a folder (created if missing). Each :meth:`put_many` commits one shard at once,
    so a killed job loses at most the batch it was computing. An unwritable folder raises
    :class:`~structablate.store.StoreUnwritable` naming it; corrupt shards are moved to
    ``<path>/quarantine/`` with a warning and their vectors recomputed.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False,
                 settings: StoreSettings | None = None):
        self.path = Path(path)
        self.store = VectorStore(self.path, readonly=readonly, settings=settings,
                                 label="embedding cache", setting="`results:`")

    @staticmethod
    def key(signature: str, text: str) -> bytes:
        return hashlib.sha256(signature.encode() + b"\x00" + text.encode()).digest()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors (read-only float32 arrays) of the keys that have one."""
        return self.store.get_vectors(keys)

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors and commit them (one shard) before returning."""
        self.store.put_vectors(items)
        self.store.flush()

    def refresh(self) -> int:
        """Pick up vectors other jobs committed since; return the number of new shards."""
        return self.store.refresh(force=True)

    @property
    def quarantined(self) -> list[str]:
        """Corrupt shards met so far (moved aside; their vectors were recomputed)."""
        return self.store.quarantined

    def stage_lock(self, stage: str, settings: LockSettings | None = None) -> StageLock:
        """A lock that keeps a second job of ``stage`` off this cache (not yet acquired)."""
        return self.store.stage_lock(stage, settings=settings)

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        self.store.close()


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    progress: bool = True,
    desc: str = "embed",
    commit_every: int = 2048,
) -> tuple[np.ndarray, EmbeddingStats]:
    """Vectors for ``texts`` (row per text), computing only what the cache lacks."""
    stats = EmbeddingStats(texts=len(texts))
    sig = embedder_signature(embedder.cfg)
    order: dict[str, int] = {}
    for t in texts:
        order.setdefault(t, len(order))
    unique = list(order)
    stats.unique_texts = len(unique)
    lengths = embedder.token_lengths(texts) if texts else []
    stats.truncated = sum(n > embedder.max_seq_length for n in lengths)
    keys = [EmbeddingCache.key(sig, t) for t in unique]
    vecs = np.zeros((len(unique), embedder.dim), dtype=np.float32)
    missing = list(range(len(unique)))
    if cache is not None:
        missing = _fill_from_cache(cache, keys, missing, vecs, stats)
    t0 = time.perf_counter()
    done = 0
    for c in range(0, len(missing), commit_every):
        part = missing[c : c + commit_every]
        if cache is not None and c > 0:
            # jobs running at the same time may have committed some of these meanwhile
            cache.refresh()
            part = _fill_from_cache(cache, keys, part, vecs, stats)
        done += len(part)
        if not part:
            continue
        got = embedder.encode([unique[i] for i in part], progress=progress,
                              desc=f"{desc} [{c + len(part)}/{len(missing)}]")
        vecs[part] = got
        if cache is not None:
            cache.put_many([(keys[i], got[j]) for j, i in enumerate(part)])
    stats.seconds_computing = time.perf_counter() - t0
    stats.computed = done
    if cache is not None and cache.quarantined:
        stats.extra["cache_quarantined"] = list(cache.quarantined)
    return vecs[[order[t] for t in texts]], stats


def _fill_from_cache(cache: EmbeddingCache, keys: Sequence[bytes], rows: list[int],
                     vecs: np.ndarray, stats: EmbeddingStats) -> list[int]:
    """Copy cached vectors of ``rows`` into ``vecs``; return the rows still missing."""

    def place(i: int, v: np.ndarray) -> None:
        if v.shape != (vecs.shape[1],):
            raise StoreError(
                f"embedding cache {cache.path}: a cached vector has {v.shape[0]} dimensions, "
                f"the embedder gives {vecs.shape[1]}; the cache is inconsistent: delete "
                f"{cache.path} (it only saves recomputation)")
        vecs[i] = v

    still = fill_found(cache.get_many([keys[i] for i in rows]), keys, rows, place)
    stats.cache_hits += len(rows) - len(still)
    return still
